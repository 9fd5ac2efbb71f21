"""Speed of the built-in anonymizers: x real time on one core, against a per-frame reference.

    .venv/bin/python benchmarks/anonymizers.py [--quick]

Input: 10 s of synthetic speech (one synthetic-corpus speaker). Each built-in is timed in fixed
mode (the transform alone) and in target mode (plus the source-voice analysis it needs). The
reference column is the straightforward way, timed in the same run: ``librosa.effects.
pitch_shift`` for pitch, a Python loop over frames with ``np.interp`` for VTLN, and the VPC B2
recipe (per frame ``librosa.lpc``, ``np.roots``, two ``scipy.signal.lfilter``) for McAdams.
The contract is >= 20x real time on one core.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"  # one core: set before NumPy loads its BLAS

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.anonymizers.base import AnonymizationItem, TargetVoice, VoiceProfile  # noqa: E402
from services.anonymizers.registry import build_anonymizer  # noqa: E402
from services.anonymizers.warps import warp  # noqa: E402
from services.corpus.synthetic import sample_speakers, synthesize_utterance  # noqa: E402

SR = 16_000
TARGET_X_REALTIME = 20.0


def timed(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time (s) of ``repeats`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def reference_vtln(x: np.ndarray, a: float) -> np.ndarray:
    """Per-frame loop: STFT frame, np.interp of the magnitude on the warped axis, overlap-add."""
    n_fft, hop = 512, 128
    win = np.hanning(n_fft + 1)[:-1]
    padded = np.concatenate([np.zeros(n_fft), x, np.zeros(n_fft)])
    out = np.zeros_like(padded)
    norm = np.zeros_like(padded)
    omega = np.linspace(0, np.pi, n_fft // 2 + 1)
    src = warp("bilinear", omega, a)
    for start in range(0, len(padded) - n_fft, hop):
        spec = np.fft.rfft(padded[start : start + n_fft] * win)
        mag = np.interp(src, omega, np.abs(spec))
        out[start : start + n_fft] += np.fft.irfft(mag * np.exp(1j * np.angle(spec)), n_fft) * win
        norm[start : start + n_fft] += win**2
    return (out / np.maximum(norm, 1e-3))[n_fft : n_fft + len(x)]


def reference_mcadams(x: np.ndarray, alpha: float) -> np.ndarray:
    """The VPC 2020 B2 recipe, one frame at a time."""
    import librosa
    from scipy.signal import lfilter

    frame, hop, order = 320, 160, 20
    win = np.hanning(frame + 1)[:-1]
    out = np.zeros(len(x) + frame)
    padded = np.concatenate([x, np.zeros(frame)])
    for start in range(0, len(x), hop):
        seg = padded[start : start + frame] * win
        if not np.any(seg):
            continue
        a = librosa.lpc(seg, order=order)
        res = lfilter(a, [1.0], seg)
        poles = np.roots(a)
        complex_poles = poles[np.imag(poles) > 0]
        new = np.abs(complex_poles) * np.exp(1j * np.angle(complex_poles) ** alpha)
        real_poles = poles[np.imag(poles) == 0]
        a_new = np.real(np.poly(np.concatenate([real_poles, new, np.conj(new)])))
        out[start : start + frame] += lfilter([1.0], a_new, res) * win
    return out[: len(x)]


def reference_pitch(x: np.ndarray, semitones: float) -> np.ndarray:
    import librosa

    return librosa.effects.pitch_shift(x, sr=SR, n_steps=semitones)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one timed repeat instead of five")
    args = parser.parse_args()
    repeats = 1 if args.quick else 5

    speaker = sample_speakers(2, seed=0)[1]
    x = synthesize_utterance(speaker, np.random.default_rng(0), duration_s=10.0)
    seconds = len(x) / SR
    target = TargetVoice("target", "f", VoiceProfile(median_f0_hz=210.0, formant_scale=1.12))

    def run(name: str, params: dict[str, object], with_target: bool) -> Callable[[], object]:
        anonymizer = build_anonymizer(name, params)
        item = AnonymizationItem("u", x, SR, "s", speaker.gender, target if with_target else None)
        return lambda: anonymizer.anonymize([item], seed=0)

    rows: list[tuple[str, Callable[[], object], Callable[[], object] | None, str]] = [
        (
            "pitch (fixed +4 st)",
            run("pitch", {"semitones": 4.0}, False),
            lambda: reference_pitch(x, 4.0),
            "librosa.effects.pitch_shift",
        ),
        ("pitch (target mode)", run("pitch", {}, True), None, ""),
        (
            "vtln bilinear (fixed 0.1)",
            run("vtln", {"alpha": 0.1}, False),
            lambda: reference_vtln(x, 0.1),
            "per-frame np.interp loop",
        ),
        (
            "vtln power, spectrum mode",
            run("vtln", {"warp": "power", "alpha": 0.2, "mode": "spectrum"}, False),
            None,
            "",
        ),
        ("vtln bilinear (target mode)", run("vtln", {}, True), None, ""),
        (
            "mcadams (fixed 0.8)",
            run("mcadams", {"alpha": 0.8}, False),
            lambda: reference_mcadams(x, 0.8),
            "VPC B2 per-frame loop",
        ),
        ("mcadams (target mode)", run("mcadams", {}, True), None, ""),
    ]
    print(f"{seconds:.1f} s of synthetic speech, 1 thread, median of {repeats} run(s)")
    header = (
        f"{'anonymizer':30} {'time s':>7} {'x RT':>7} {'>=20x':>6} {'ref x RT':>9} "
        f"{'speed-up':>9}  reference"
    )
    print(header)
    print("-" * len(header))
    worst = float("inf")
    for label, fn, ref, ref_name in rows:
        t = timed(fn, repeats)
        xrt = seconds / t
        worst = min(worst, xrt)
        ref_cols = f"{'':>9} {'':>9}"
        if ref is not None:
            t_ref = timed(ref, 1 if args.quick else 2)
            ref_cols = f"{seconds / t_ref:9.1f} {t_ref / t:8.1f}x"
        ok = "yes" if xrt >= TARGET_X_REALTIME else "NO"
        print(f"{label:30} {t:7.3f} {xrt:7.1f} {ok:>6} {ref_cols}  {ref_name}")
    print(f"slowest: {worst:.1f}x real time (target {TARGET_X_REALTIME:.0f}x)")


if __name__ == "__main__":
    main()
