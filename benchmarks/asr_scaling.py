"""WER of trained utility ASRs versus a fixed spectral scaling of the demo trial speech.

Usage: .venv/bin/python benchmarks/asr_scaling.py --corpus-dir DIR --model LABEL=FOLDER ...
       [--semitones -9,-5,-3,3,5,9] [--threads 1]

For each shift ``s`` (semitones; every frequency scaled by ``r = 2^(s/12)``) the trial set is
transformed two ways: ``resample`` (polyphase resampling only: a pure scaling of the spectrum,
the duration changes by 1/r) and ``pitch`` (the ``pitch`` built-in's ``pitch_shift``: the same
resampling, then its phase vocoder (1024-sample window, 256 hop) stretches back to the original
duration). Their difference is what the phase vocoder costs the recognizer, which a frequency
warp of the training features cannot teach it. Models: folders ``asr_cost.py --model-dir`` wrote.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from fractions import Fraction  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from scipy.signal import resample_poly  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.anonymizers.pitch import pitch_shift  # noqa: E402
from services.audio import read_audio  # noqa: E402
from services.corpus.manifest import Manifest  # noqa: E402
from services.corpus.protocol import build_protocol  # noqa: E402
from services.corpus.synthetic import generate_synthetic_corpus  # noqa: E402
from services.pipeline.config import SyntheticCorpusSpec  # noqa: E402
from services.utility.asr import load_asr  # noqa: E402
from services.utility.wer import error_rates  # noqa: E402


def _trial(corpus_dir: Path) -> Manifest:
    spec = SyntheticCorpusSpec()
    manifest = generate_synthetic_corpus(
        corpus_dir,
        n_speakers=spec.n_speakers,
        utts_per_speaker=spec.utts_per_speaker,
        seed=spec.seed,
        min_duration_s=spec.min_duration_s,
        max_duration_s=spec.max_duration_s,
    )
    protocol = build_protocol(
        manifest,
        n_attacker_train_speakers=spec.n_attacker_train_speakers,
        n_eval_speakers=spec.n_eval_speakers,
        n_target_speakers=spec.n_target_speakers,
        trials_per_speaker=spec.trials_per_speaker,
        enrollments_per_speaker=spec.enrollments_per_speaker,
        seed=spec.seed,
    )
    return manifest.subset(protocol.trial)


def _resample(x: np.ndarray, semitones: float) -> np.ndarray:
    ratio = Fraction(2.0 ** (semitones / 12.0)).limit_denominator(200)
    return resample_poly(x, ratio.denominator, ratio.numerator).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus-dir", type=Path, required=True)
    parser.add_argument("--model", action="append", required=True, help="LABEL=FOLDER")
    parser.add_argument("--semitones", type=str, default="-9,-5,-3,3,5,9")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    trial = _trial(args.corpus_dir)
    audio = [read_audio(trial.resolve(u))[0].astype(np.float32) for u in trial]
    refs = [u.text or "" for u in trial]
    shifts = [float(s) for s in args.semitones.split(",")]
    sets: dict[str, list[np.ndarray]] = {"original": audio}
    for s in shifts:
        sets[f"resample {s:+g} st (x{2 ** (s / 12):.2f})"] = [_resample(x, s) for x in audio]
        sets[f"pitch {s:+g} st (x{2 ** (s / 12):.2f})"] = [
            pitch_shift(x, s).astype(np.float32) for x in audio
        ]
    models = dict(m.split("=", 1) for m in args.model)
    asrs = {label: load_asr(Path(folder)) for label, folder in models.items()}
    print("| trial speech | " + " | ".join(f"WER {label} (%)" for label in asrs) + " |")
    print("|---|" + "---|" * len(asrs))
    for name, wavs in sets.items():
        wers = [error_rates(refs, asr.transcribe(wavs))["wer_percent"] for asr in asrs.values()]
        print(f"| {name} | " + " | ".join(f"{w:.1f}" for w in wers) + " |", flush=True)


if __name__ == "__main__":
    main()
