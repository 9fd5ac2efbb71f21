"""pYIN speed: ``librosa.pyin`` against ``services.attacks.pyin_fast``, same run, same audio.

The audio is the utility phase's: eSpeak NG sentences (the original side; synthetic-corpus speech
when espeak-ng is missing) and their anonymized versions (the pitch built-in, +-5 semitones, and
McAdams alpha 0.8). Every variant analyses all of it with the attacks' (65-450 Hz) and the
utility's (40-800 Hz) settings; the variants run in interleaved rounds and each one's median
round counts, so that a load that changes during the run weighs on all of them alike. Columns:
audio seconds analysed per wall-clock second, speed ratio against ``librosa.pyin`` in this run,
the largest |F0 difference| (Hz) over frames voiced in both, the agreement of the voiced flags
(% of frames), and whether F0, voiced flags and voiced probabilities are all bit-identical.

Variants: ``librosa.pyin`` (the reference); ``pyin_fast`` (what ``pyin_track`` runs); and two
halves of it, to show where the time goes: the vectorized trough step with librosa's Viterbi, and
librosa's trough loop with the exact banded Viterbi.

    PYTHONPATH=$PWD nice -n 5 .venv/bin/python benchmarks/f0_speed.py [--utterances 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from services.attacks import pyin_fast
from services.attacks.f0 import F0Params
from services.audio import SAMPLE_RATE_HZ
from services.utility.prosody import UTILITY_F0_PARAMS

Pyin = Callable[..., tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]]


def _speech(n: int) -> tuple[list[NDArray[np.float32]], str]:
    from services.corpus.espeak import draw_voices, espeak_path, render, sentence

    espeak = espeak_path()
    if espeak is not None:
        rng = np.random.default_rng(0)
        return [render(v, sentence(rng), espeak) for v in draw_voices(n, seed=0)], "eSpeak NG"
    from services.corpus.synthetic import sample_speakers, synthesize_utterance

    speakers = sample_speakers(n, seed=0)
    waves = [synthesize_utterance(s, np.random.default_rng(i)) for i, s in enumerate(speakers)]
    return [w.astype(np.float32) for w in waves], "synthetic corpus"


def _anonymized(originals: list[NDArray[np.float32]]) -> list[NDArray[np.float32]]:
    from services.anonymizers.mcadams import mcadams_transform
    from services.anonymizers.pitch import pitch_shift

    out = []
    for i, x in enumerate(originals):
        y = mcadams_transform(x, 0.8) if i % 3 == 2 else pitch_shift(x, 5.0 if i % 3 else -5.0)
        out.append(np.asarray(y, dtype=np.float32))
    return out


def _librosa_pyin(x: NDArray[np.floating], **kw: Any) -> Any:
    import librosa

    return librosa.pyin(x, **kw)


def _with_librosa_viterbi(x: NDArray[np.floating], **kw: Any) -> Any:
    import librosa

    exact = pyin_fast.viterbi_exact
    pyin_fast.viterbi_exact = lambda p, t, p_init: librosa.sequence.viterbi(p, t, p_init=p_init)  # type: ignore[assignment]
    try:
        return pyin_fast.pyin(x, **kw)
    finally:
        pyin_fast.viterbi_exact = exact


def _with_librosa_troughs(x: NDArray[np.floating], **kw: Any) -> Any:
    from librosa.core import pitch as lp

    helper = getattr(lp, "__pyin_helper")
    observation = pyin_fast.observation_probs

    def loop(
        yin: Any, shifts: Any, sr: float, fmin: float, min_period: int, n: int, per: int
    ) -> Any:
        thresholds = np.linspace(0, 1, pyin_fast.N_THRESHOLDS + 1)
        import scipy.stats

        beta = np.diff(scipy.stats.beta.cdf(thresholds, *pyin_fast.BETA_PARAMETERS))
        obs, voiced = helper(
            yin, shifts, sr, thresholds, pyin_fast.BOLTZMANN_PARAMETER, beta,
            pyin_fast.NO_TROUGH_PROB, min_period, fmin, n, per,
        )  # fmt: skip
        return obs[0], voiced

    pyin_fast.observation_probs = loop  # type: ignore[assignment]
    try:
        return pyin_fast.pyin(x, **kw)
    finally:
        pyin_fast.observation_probs = observation


VARIANTS: dict[str, Pyin] = {
    "librosa.pyin (reference)": _librosa_pyin,
    "pyin_fast (vectorized troughs + exact banded Viterbi)": pyin_fast.pyin,
    "vectorized troughs, librosa Viterbi": _with_librosa_viterbi,
    "librosa trough loop, exact banded Viterbi": _with_librosa_troughs,
}


def _kwargs(params: F0Params) -> dict[str, Any]:
    return {
        "fmin": params.fmin_hz,
        "fmax": params.fmax_hz,
        "sr": SAMPLE_RATE_HZ,
        "frame_length": params.frame_length,
        "hop_length": params.hop_length,
        "resolution": params.resolution_semitones,
    }


def _agreement(ref: list[Any], out: list[Any]) -> tuple[float, float, bool]:
    """(max |F0 difference| in Hz over frames voiced in both, voiced-flag agreement %, whether
    F0, voiced flags and voiced probabilities are all bit-identical)."""
    worst, same, total, identical = 0.0, 0, 0, True
    for (f0_r, v_r, p_r), (f0_o, v_o, p_o) in zip(ref, out, strict=True):
        both = v_r & v_o
        if both.any():
            worst = max(worst, float(np.max(np.abs(f0_r[both] - f0_o[both]))))
        same += int(np.count_nonzero(v_r == v_o))
        total += v_r.size
        identical &= bool(
            np.array_equal(f0_r, f0_o, equal_nan=True)
            and np.array_equal(v_r, v_o)
            and np.array_equal(p_r, p_o)
        )
    return worst, 100.0 * same / max(total, 1), identical


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--utterances", type=int, default=8, help="original utterances")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per variant")
    args = parser.parse_args()
    originals, source = _speech(args.utterances)
    waves = originals + _anonymized(originals)
    audio_s = sum(w.size for w in waves) / SAMPLE_RATE_HZ
    for fn in VARIANTS.values():  # warm-up: imports and Numba compilation (or its cache)
        fn(waves[0][:SAMPLE_RATE_HZ], **_kwargs(F0Params()))
    print(f"{len(originals)} {source} utterances + {len(originals)} anonymized = {audio_s:.1f} s")
    print(f"of 16 kHz audio; median of {args.rounds} interleaved rounds per variant")
    print()
    print(
        "| setting | variant | audio s/s | vs librosa.pyin | max abs F0 diff Hz | voiced agree % "
        "| bit-identical |"
    )
    print("|---|---|---|---|---|---|---|")
    for setting, params in (("65-450 Hz", F0Params()), ("40-800 Hz", UTILITY_F0_PARAMS)):
        kw = _kwargs(params)
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        outputs: dict[str, list[Any]] = {}
        for _ in range(args.rounds):
            for name, fn in VARIANTS.items():
                start = time.perf_counter()
                outputs[name] = [fn(w, **kw) for w in waves]
                times[name].append(time.perf_counter() - start)
        ref_name = next(iter(VARIANTS))
        ref_time = statistics.median(times[ref_name])
        for name in VARIANTS:
            secs = statistics.median(times[name])
            worst, agree, identical = _agreement(outputs[ref_name], outputs[name])
            print(
                f"| {setting} | {name} | {audio_s / secs:.0f} | {ref_time / secs:.2f}x | "
                f"{worst:.3g} | {agree:.2f} | {'yes' if identical else 'NO'} |"
            )


if __name__ == "__main__":
    main()
