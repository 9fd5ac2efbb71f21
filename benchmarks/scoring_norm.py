"""Cost of AS-norm next to the fast scoring path (benchmarks/scoring.py's sizes).

Georgiou et al.'s scale: 796 evaluation speakers, 20 enrollment and 5 trial utterances each, and a
cohort of 921 attacker-train speakers (LibriSpeech train-clean-360's count) x 10 utterances,
drawn from the same synthetic Gaussian population (between-speaker variance 1, within 25 per
dimension). Cosine: 192-dim, speaker-mean enrollment. PLDA: 512-dim, LDA to 200, per-utterance
enrollment. Each path is timed without and with AS-norm (K = 200 unless ``--top-k``), scoring
plus EERs (pooled and per-gender breakdown), PLDA training excluded; best of ``--repeats``.

    .venv/bin/python benchmarks/scoring_norm.py            # full size (about a minute)
    .venv/bin/python benchmarks/scoring_norm.py --quick    # small sizes, seconds
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from services.scoring import (
    ASNorm,
    CosineBackend,
    EmbeddingSet,
    PLDABackend,
    TrialSet,
    eer_report,
    score_trials,
    train_plda,
)
from services.scoring.synthetic import SyntheticSpeakers, make_synthetic_speakers

WITHIN = 25.0


def population(n_eval: int, n_cohort: int, dim: int, seed: int) -> tuple[Any, Any]:
    """Evaluation and cohort speakers with the same covariances, disjoint speaker offsets."""
    rng = np.random.default_rng(seed)
    pop = make_synthetic_speakers(n_eval, dim, rng, 1.0, WITHIN)
    offsets = rng.standard_normal((n_cohort, dim)) @ np.linalg.cholesky(pop.between).T
    ids = np.array([f"co{i:05d}" for i in range(n_cohort)])
    genders = np.array(["f" if i % 2 == 0 else "m" for i in range(n_cohort)])
    cohort = SyntheticSpeakers(pop.between, pop.within, pop.gender_means, offsets, ids, genders)
    return pop, cohort


def data(
    n_eval: int, n_enr: int, n_trial: int, n_cohort: int, dim: int, seed: int
) -> tuple[TrialSet, EmbeddingSet]:
    rng = np.random.default_rng(seed + 100)
    pop, cohort_pop = population(n_eval, n_cohort, dim, seed)
    e, e_spk, e_gen = pop.sample(n_enr, rng)
    t, t_spk, t_gen = pop.sample(n_trial, rng)
    c, c_spk, c_gen = cohort_pop.sample(10, rng)
    return (
        TrialSet.from_arrays(t, t_spk, t_gen, e, e_spk, e_gen),
        EmbeddingSet(c, c_spk, c_gen, "cohort"),
    )


def best_of(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a short run")
    parser.add_argument("--top-k", type=int, default=200, help="AS-norm K (default 200)")
    parser.add_argument("--repeats", type=int, default=2, help="best of this many runs")
    args = parser.parse_args()
    n_eval, n_cohort = (80, 120) if args.quick else (796, 921)
    n_enr, n_trial = 20, 5

    print(f"building data: {n_eval} speakers x ({n_enr} enr + {n_trial} trial), "
          f"cohort {n_cohort} speakers x 10, K = {args.top_k} ...")  # fmt: skip
    ts_cos, cohort_cos = data(n_eval, n_enr, n_trial, n_cohort, 192, seed=2)
    ts_plda, cohort_plda = data(n_eval, n_enr, n_trial, n_cohort, 512, seed=1)
    t0 = time.perf_counter()
    plda = PLDABackend(
        train_plda(cohort_plda.embeddings, cohort_plda.speaker_ids, lda_dim=200, n_iter=10)
    )
    print(
        f"PLDA training (on the cohort speakers, excluded below): {time.perf_counter() - t0:.1f} s"
    )

    cosine = CosineBackend()
    paths: list[tuple[str, Callable[[ASNorm | None], Any], EmbeddingSet, int]] = [
        (
            "cosine, speaker-mean enrollment",
            lambda n: eer_report(score_trials(cosine, ts_cos, normalization=n)),
            cohort_cos,
            len(ts_cos.trials) * np.unique(ts_cos.enrollment.speaker_ids).size,
        ),
        (
            "PLDA, all utterance pairs",
            lambda n: eer_report(
                score_trials(plda, ts_plda, enrollment="per_utterance", normalization=n)
            ),
            cohort_plda,
            len(ts_plda.trials) * len(ts_plda.enrollment),
        ),
        (
            "PLDA, per-speaker-pair means (moments)",
            lambda n: eer_report(
                score_trials(
                    plda,
                    ts_plda,
                    enrollment="per_utterance",
                    aggregation="speaker_pair_mean",
                    normalization=n,
                )
            ),
            cohort_plda,
            len(ts_plda.trials) * len(ts_plda.enrollment),
        ),
    ]
    threads = os.environ.get("UNMASK_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or "all"
    load = os.getloadavg()[0]
    print(f"\nthreads {threads}, 1-min load average {load:.1f}, best of {args.repeats}\n")
    print("| path | pairs | raw s | AS-norm s | ratio | EER raw % | EER AS-norm % |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, run, cohort, pairs in paths:
        raw_s, raw = best_of(lambda run=run: run(None), args.repeats)
        norm = ASNorm(cohort, top_k=args.top_k)
        norm_s, normed = best_of(lambda run=run, norm=norm: run(norm), args.repeats)
        print(
            f"| {name} | {pairs / 1e6:.1f} M | {raw_s:.3f} | {norm_s:.3f} | "
            f"{norm_s / raw_s:.2f}x | {raw.eer_percent:.2f} | {normed.eer_percent:.2f} |"
        )


if __name__ == "__main__":
    main()
