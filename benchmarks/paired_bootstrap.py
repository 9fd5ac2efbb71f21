"""The compare page's paired speaker bootstrap: time per (scenario, back-end), against the
naive way (per resample, gather the drawn speakers' trials of both jobs and compute each EER
with ``compute_eer``).

    .venv/bin/python benchmarks/paired_bootstrap.py [--resamples 1000] [--naive-resamples 50]

Trial sets: the demo-size synthetic protocol (16 speakers, 2,048 trials), a VoicePrivacy-size
test set (40 speakers, about 43,000 trials per gender partition, both partitions pooled: 86,000)
and one seed or three per side. The naive way runs fewer resamples and is scaled to the same
count; both give the same interval for the same draws (checked on the first size).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from services.metrics import SpeakerTrials, compute_eer, paired_bootstrap_eer_difference
from services.metrics.bootstrap import _speaker_multiplicities


def trial_set(n_speakers: int, n_trials: int, shift: float, seed: int) -> SpeakerTrials:
    rng = np.random.default_rng(seed)
    speaker = rng.integers(0, n_speakers, n_trials)
    target = rng.random(n_trials) < 0.05
    hardness = rng.normal(0.0, 0.5, n_speakers)[speaker]
    scores = rng.normal(size=n_trials) + (2.0 - shift) * target + hardness
    return SpeakerTrials(scores, target, np.array([f"s{k:03d}" for k in speaker]))


def naive(
    a: list[SpeakerTrials], b: list[SpeakerTrials], n_resamples: int, seed: int
) -> np.ndarray:
    """Per resample: every drawn speaker's trials concatenated (once per draw), EER per set."""
    universe = np.array(sorted({str(s) for t in a + b for s in np.unique(t.speaker_ids)}))
    weights = _speaker_multiplicities(universe.size, n_resamples, np.random.default_rng(seed))
    owners = [
        [np.flatnonzero(t.speaker_ids == name) for name in universe] for t in a + b
    ]  # trial indices per speaker, per set

    def side_eer(sets: list[SpeakerTrials], index: list[list[np.ndarray]], w: np.ndarray) -> float:
        eers = []
        for t, per_speaker in zip(sets, index, strict=True):
            take = np.concatenate(
                [np.tile(ix, int(k)) for ix, k in zip(per_speaker, w, strict=True)]
            )
            s, y = t.scores[take], t.is_target[take]
            eers.append(compute_eer(s[y], s[~y]).eer_percent)
        return float(np.mean(eers))

    out = []
    for w in weights:
        out.append(side_eer(b, owners[len(a) :], w) - side_eer(a, owners[: len(a)], w))
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--naive-resamples", type=int, default=50)
    args = ap.parse_args()
    print(
        "| trial set | seeds per side | trials per set | paired bootstrap s "
        f"({args.resamples} resamples) | naive s (scaled) | naive / paired |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    checked = False
    for label, n_speakers, n_trials in (
        ("demo-size", 16, 2048),
        ("VoicePrivacy-size", 40, 86_000),
    ):
        for seeds in (1, 3):
            a = [trial_set(n_speakers, n_trials, 0.0, 10 + k) for k in range(seeds)]
            b = [trial_set(n_speakers, n_trials, 0.3, 20 + k) for k in range(seeds)]
            t0 = time.perf_counter()
            paired_bootstrap_eer_difference([a], [b], n_resamples=args.resamples, seed=1)
            fast = time.perf_counter() - t0
            t0 = time.perf_counter()
            samples = naive(a, b, args.naive_resamples, seed=1)
            slow = (time.perf_counter() - t0) * args.resamples / args.naive_resamples
            if not checked:  # the same draws give the same differences
                ci = paired_bootstrap_eer_difference(
                    [a], [b], n_resamples=args.naive_resamples, seed=1, confidence=0.5
                )
                low, high = np.percentile(samples, [25, 75])
                assert np.isclose(ci.low, low) and np.isclose(ci.high, high), (ci, low, high)
                checked = True
            print(
                f"| {label} | {seeds} | {n_trials:,} | {fast:.2f} | {slow:.1f} | "
                f"{slow / fast:.1f}x |"
            )


if __name__ == "__main__":
    main()
