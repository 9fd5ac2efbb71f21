"""Utility beside privacy: what an anonymizer leaves of the speech.

- ``config``: the ``utility:`` block of an evaluation config (no torch import);
- ``asr``: the CTC recognizer Unmask trains on the protocol's original speech, or a pretrained
  SpeechBrain ASR folder an operator supplies; ``wer``: WER / CER (jiwer) with a speaker-level
  bootstrap interval of original vs anonymized;
- ``prosody``: pitch correlation rho_F0; ``distinctiveness``: gain of voice distinctiveness GVD;
- ``degenerate``: the usable-speech guard (silence, noise, one voice for everyone, clipping).
"""
