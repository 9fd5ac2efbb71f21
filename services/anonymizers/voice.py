"""Cheap voice profiles (median F0, formant scale) that built-in anonymizers derive parameters from.

* ``median_f0_hz``: median YIN F0 (`services.anonymizers.dsp.yin_f0`) of the voiced frames, computed
  on the signal decimated to 8 kHz (enough for F0 up to 420 Hz, and half the cost).
* ``formant_scale``: geometric mean of ``F_i / F_i^ref`` for the medians of the first three LPC
  formants over voiced frames, with the uniform-tube (17.5 cm, schwa) reference
  ``F^ref = (500, 1500, 2500) Hz``. A 10 % shorter vocal tract raises all formants by ~11 %, so the
  scale grows by ~11 %; only ratios of scales matter to the anonymizers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.signal import resample_poly

from services.anonymizers.base import VoiceProfile
from services.anonymizers.dsp import frame_signal, lpc, polynomial_roots, yin_f0
from services.audio import SAMPLE_RATE_HZ

REFERENCE_F0_HZ = 150.0
"""Fallback median F0 (Hz) when a recording has no voiced frame."""

REFERENCE_FORMANTS_HZ = np.array([500.0, 1500.0, 2500.0])
"""Formants of a uniform 17.5 cm tube (schwa): the reference of ``formant_scale = 1``."""

_HOP_S = 0.01
_LPC_ORDER = 18
_LPC_FRAME_S = 0.025
_MAX_FORMANT_FRAMES = 400


def _as_list(waveforms: np.ndarray | Sequence[np.ndarray]) -> list[np.ndarray]:
    if isinstance(waveforms, np.ndarray) and waveforms.ndim == 1:
        return [waveforms]
    return [np.asarray(w, dtype=np.float64).reshape(-1) for w in waveforms]


def f0_track(
    waveform: np.ndarray, sample_rate: int = SAMPLE_RATE_HZ
) -> tuple[np.ndarray, np.ndarray]:
    """``(f0_hz, voiced)`` per 10 ms frame of a 16 kHz waveform (YIN on the 8 kHz decimation)."""
    x = np.asarray(waveform, dtype=np.float64)
    if sample_rate == 2 * 8000:
        x8 = resample_poly(x, 1, 2)
        return yin_f0(x8, 8000, hop_s=_HOP_S)
    return yin_f0(x, sample_rate, hop_s=_HOP_S)


def median_f0_hz(
    waveforms: np.ndarray | Sequence[np.ndarray], sample_rate: int = SAMPLE_RATE_HZ
) -> float:
    """Median F0 (Hz) of the voiced frames of all ``waveforms``; `REFERENCE_F0_HZ` if none."""
    voiced_f0 = [f[v] for f, v in (f0_track(w, sample_rate) for w in _as_list(waveforms))]
    f0 = np.concatenate(voiced_f0) if voiced_f0 else np.zeros(0)
    return float(np.median(f0)) if f0.size else REFERENCE_F0_HZ


def frame_formants(
    waveform: np.ndarray, sample_rate: int = SAMPLE_RATE_HZ, voiced: np.ndarray | None = None
) -> np.ndarray:
    """First three LPC formants (Hz) of (voiced) 10 ms-hop frames; ``(n, 3)``, NaN if unclear.

    Candidates are LPC pole angles between 150 Hz and 5 kHz with bandwidth below 400 Hz; at most
    400 frames (evenly spaced) are analysed to bound the cost.
    """
    x = np.asarray(waveform, dtype=np.float64)
    x = np.append(x[0], x[1:] - 0.97 * x[:-1])  # pre-emphasis flattens the glottal tilt
    hop = round(_HOP_S * sample_rate)
    frame_length = round(_LPC_FRAME_S * sample_rate)
    frames = frame_signal(x, frame_length, hop)
    if voiced is not None:
        keep = np.zeros(len(frames), dtype=bool)
        n = min(len(frames), len(voiced))
        keep[:n] = voiced[:n]
        frames = frames[keep]
    energy = np.sum(frames**2, axis=1)
    frames = frames[energy > 1e-6 * max(float(energy.max(initial=0.0)), 1e-20)]
    if len(frames) == 0:
        return np.full((0, 3), np.nan)
    if len(frames) > _MAX_FORMANT_FRAMES:
        frames = frames[np.linspace(0, len(frames) - 1, _MAX_FORMANT_FRAMES).astype(int)]
    frames = frames * np.hanning(frame_length)[None, :]
    roots = polynomial_roots(lpc(frames, _LPC_ORDER))
    freq = np.angle(roots) * sample_rate / (2.0 * np.pi)
    bandwidth = -np.log(np.maximum(np.abs(roots), 1e-12)) * sample_rate / np.pi
    ok = (freq > 150.0) & (freq < 5000.0) & (bandwidth < 400.0)
    cand = np.sort(np.where(ok, freq, np.inf), axis=1)[:, :3]
    return np.where(np.isfinite(cand), cand, np.nan)


def estimate_voice_profile(
    waveforms: np.ndarray | Sequence[np.ndarray], sample_rate: int = SAMPLE_RATE_HZ
) -> VoiceProfile:
    """Median F0 (Hz) and formant scale of one voice from one or more 16 kHz waveforms.

    Cost: about 10 ms of CPU per second of audio.
    """
    waves = [w for w in _as_list(waveforms) if w.size > 0]
    f0_parts: list[np.ndarray] = []
    formant_parts: list[np.ndarray] = []
    for w in waves:
        f0, voiced = f0_track(w, sample_rate)
        f0_parts.append(f0[voiced])
        formant_parts.append(frame_formants(w, sample_rate, voiced))
    f0_all = np.concatenate(f0_parts) if f0_parts else np.zeros(0)
    median_f0 = float(np.median(f0_all)) if f0_all.size else REFERENCE_F0_HZ
    formants = np.concatenate(formant_parts) if formant_parts else np.full((0, 3), np.nan)
    formants = formants[np.all(np.isfinite(formants), axis=1)]
    if len(formants) >= 3:
        medians = np.median(formants, axis=0)
        scale = float(np.exp(np.mean(np.log(medians / REFERENCE_FORMANTS_HZ))))
    else:
        scale = 1.0
    return VoiceProfile(median_f0_hz=median_f0, formant_scale=scale)
