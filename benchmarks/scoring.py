"""Scoring back-ends at Georgiou et al.'s scale against the per-pair marginal-likelihood path.

796 evaluation speakers, 20 enrollment and 5 (or 50) trial utterances each; synthetic Gaussian
embeddings with between- and within-speaker covariance: 192-dim for cosine, 512-dim reduced by
LDA to 200 for PLDA (trained on a synthetic attacker-train set).

Reference path (as per-pair toolkits do): the two-covariance PLDA LLR of every trial x
enrollment utterance pair from the marginal likelihoods, in chunks of 5000 pairs, then the mean
per (trial speaker, enrollment speaker). Its rate is measured on a random subset of pairs and
extrapolated to the full pair count. Each heavy step runs in a forked child process so that its
peak RSS (``ru_maxrss``, which includes the inherited input arrays) is its own.

    .venv/bin/python benchmarks/scoring.py            # full size (a few minutes, ~4 GB RAM)
    .venv/bin/python benchmarks/scoring.py --quick    # small sizes, seconds
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.metrics.eer import compute_eer
from services.scoring import (
    CosineBackend,
    PLDABackend,
    PLDAModel,
    StreamingEER,
    TrialSet,
    eer_report,
    marginal_likelihood_llr,
    score_all_pairs,
    score_trials,
    train_plda,
)
from services.scoring.synthetic import make_synthetic_speakers

WITHIN = 25.0  # within-speaker variance per dimension (between = 1): EERs of a few percent
ISSUE_PAIRS_PER_S = 57_000.0  # the issue's measurement of the existing per-pair path


@dataclass
class Row:
    step: str
    size: str
    seconds: float
    peak_mb: float | None
    note: str = ""
    extrapolated: bool = False


def _child(fn: Callable[[], Any], queue: Any) -> None:
    t0 = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    queue.put((elapsed, peak_mb, out))


def isolated(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(seconds, peak RSS in MB, result) of ``fn`` run in a forked child."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(fn, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result  # type: ignore[no-any-return]


def best_of(fn: Callable[[], Any], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def make_eval(
    n_spk: int, n_enr: int, n_trial: int, dim: int, seed: int
) -> tuple[TrialSet, np.ndarray, np.ndarray]:
    """Evaluation trial set plus attacker-train embeddings/labels from the same population."""
    rng = np.random.default_rng(seed)
    pop = make_synthetic_speakers(n_spk, dim, rng, between_scale=1.0, within_scale=WITHIN)
    e, e_ids, e_gen = pop.sample(n_enr, rng)
    t, t_ids, t_gen = pop.sample(n_trial, rng)
    train_pop = make_synthetic_speakers(
        max(n_spk, 400), dim, np.random.default_rng(seed + 1), 1.0, WITHIN, prefix="tr"
    )
    # Same covariances for the attacker-train speakers, new speaker offsets.
    offsets = (
        rng.standard_normal((train_pop.speaker_ids.size, dim)) @ np.linalg.cholesky(pop.between).T
    )
    train_pop = type(pop)(
        pop.between,
        pop.within,
        pop.gender_means,
        offsets,
        train_pop.speaker_ids,
        train_pop.speaker_genders,
    )
    x, x_ids, _ = train_pop.sample(10, rng)
    return TrialSet.from_arrays(t, t_ids, t_gen, e, e_ids, e_gen), x, x_ids


def full_pipeline(
    plda: PLDAModel, ts_plda: TrialSet, ts_cos: TrialSet, method: str
) -> tuple[float, float]:
    """All-pairs PLDA averaged per speaker pair + cosine (speaker-mean enrollment) + EERs."""
    plda_scores = score_trials(
        PLDABackend(plda),
        ts_plda,
        enrollment="per_utterance",
        aggregation="speaker_pair_mean",
        speaker_pair_method=method,  # type: ignore[arg-type]
    )
    cos_scores = score_trials(CosineBackend(), ts_cos)
    return eer_report(plda_scores).eer_percent, eer_report(cos_scores).eer_percent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a short run")
    args = parser.parse_args()
    n_spk = 80 if args.quick else 796
    n_enr = 20
    trials = (5, 10) if args.quick else (5, 50)
    ref_pairs = 10_000 if args.quick else 60_000
    rows: list[Row] = []

    print(f"building synthetic data: {n_spk} speakers, {n_enr} enrollment utterances ...")
    data = {}
    for n_trial in trials:
        ts_plda, x_train, y_train = make_eval(n_spk, n_enr, n_trial, 512, seed=1)
        ts_cos, _, _ = make_eval(n_spk, n_enr, n_trial, 192, seed=2)
        data[n_trial] = (ts_plda, ts_cos)
    t0 = time.perf_counter()
    plda = train_plda(x_train, y_train, lda_dim=200, n_iter=10)
    train_s = time.perf_counter() - t0
    rows.append(
        Row(
            "PLDA training (LDA 512->200, 10 EM steps)",
            f"{x_train.shape[0]} utts",
            train_s,
            None,
            "not part of the compared paths",
        )
    )

    # Reference: per-pair marginal likelihoods, chunks of 5000 pairs, on a random subset.
    ts5 = data[trials[0]][0]
    rng = np.random.default_rng(0)
    xs = plda.project(ts5.trials.embeddings)
    ys = plda.project(ts5.enrollment.embeddings)
    i = rng.integers(0, xs.shape[0], ref_pairs)
    j = rng.integers(0, ys.shape[0], ref_pairs)
    ref_s = best_of(lambda: marginal_likelihood_llr(plda, xs[i], ys[j], chunk_pairs=5000), 2)
    rate = ref_pairs / ref_s
    closed = plda.llr(xs[i], ys[j])
    max_diff = float(np.abs(closed - marginal_likelihood_llr(plda, xs[i], ys[j])).max())
    rows.append(
        Row(
            "reference: marginal-likelihood LLR per pair (measured)",
            f"{ref_pairs:,} pairs",
            ref_s,
            None,
            f"{rate:,.0f} pairs/s; closed form max abs diff {max_diff:.1e}",
        )
    )

    reference_total: dict[int, float] = {}
    for n_trial in trials:
        ts_plda, ts_cos = data[n_trial]
        n_pairs = len(ts_plda.trials) * len(ts_plda.enrollment)
        reference_total[n_trial] = n_pairs / rate
        rows.append(
            Row(
                f"reference path end to end, {n_trial} trials/spk (extrapolated)",
                f"{n_pairs / 1e6:,.1f} M pairs",
                reference_total[n_trial],
                None,
                "= pairs / measured rate",
                extrapolated=True,
            )
        )
        for method in ("explicit", "moments"):
            secs, peak, (eer_p, eer_c) = isolated(
                lambda ts_plda=ts_plda, ts_cos=ts_cos, method=method: full_pipeline(
                    plda, ts_plda, ts_cos, method
                )
            )
            label = "all pairs scored" if method == "explicit" else "moment shortcut"
            rows.append(
                Row(
                    f"PLDA ({label}) + cosine + EERs, {n_trial} trials/spk",
                    f"{n_pairs / 1e6:,.1f} M pairs",
                    secs,
                    peak,
                    f"EER PLDA {eer_p:.2f} %, cosine {eer_c:.2f} %",
                )
            )

    # Pair-scoring step vs a bare float32 matmul of the same shape.
    terms = PLDABackend(plda).score_terms(xs, ys)
    n_t, n_e = xs.shape[0], ys.shape[0]
    a = np.random.default_rng(1).standard_normal((n_t, 200)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((200, n_e)).astype(np.float32)
    bare_s = best_of(lambda: a @ b)
    ours_s = best_of(lambda: score_all_pairs(terms))
    rows.append(
        Row(
            "bare float32 matmul (n_trial x 200) @ (200 x n_enr)",
            f"{n_t} x {n_e}",
            bare_s,
            None,
            "floor for pair scoring",
        )
    )
    rows.append(
        Row(
            "pair-scoring step: all-pairs PLDA LLR matrix (float32, blocked)",
            f"{n_t} x {n_e}",
            ours_s,
            None,
            f"{ours_s / bare_s:.2f}x the bare matmul",
        )
    )

    # EER of 10^7 scores: in memory and streamed in blocks.
    n_scores = 10**6 if args.quick else 10**7
    rs = np.random.default_rng(3)
    tgt = rs.normal(2.0, 1.0, n_scores // 100).astype(np.float32)
    non = rs.normal(0.0, 1.0, n_scores - tgt.size).astype(np.float32)
    secs, peak, eer_mem = isolated(lambda: compute_eer(tgt, non))
    rows.append(
        Row(
            "compute_eer in memory",
            f"{n_scores:,} scores",
            secs,
            peak,
            f"EER {eer_mem.eer_percent:.3f} %",
        )
    )

    def streamed() -> Any:
        acc = StreamingEER()
        for tb, nb in zip(np.array_split(tgt, 20), np.array_split(non, 20), strict=True):
            acc.update(tb, nb)
        return acc.result()

    secs, peak, eer_str = isolated(streamed)
    rows.append(
        Row(
            "StreamingEER, 20 blocks",
            f"{n_scores:,} scores",
            secs,
            peak,
            f"EER {eer_str.eer_percent:.3f} % (equal: "
            f"{eer_str.eer_percent == eer_mem.eer_percent})",
        )
    )

    base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    ref5 = reference_total[trials[0]]
    print()
    print("| step | size | time (s) | ratio vs reference | peak RSS (MB) | note |")
    print("|---|---|---:|---:|---:|---|")
    for r in rows:
        ratio = ""
        if "trials/spk" in r.step and not r.extrapolated:
            n_trial = int(r.step.rsplit(",", 1)[1].split()[0])
            issue = reference_total[n_trial] * rate / ISSUE_PAIRS_PER_S
            ratio = (
                f"{reference_total[n_trial] / r.seconds:,.0f}x faster "
                f"({issue / r.seconds:,.0f}x at 57k pairs/s)"
            )
        elif r.extrapolated and r.step.endswith("(extrapolated)"):
            ratio = "1x"
        t = f"{r.seconds:,.3f}" + (" (extrapolated)" if r.extrapolated else "")
        peak = f"{r.peak_mb:,.0f}" if r.peak_mb is not None else ""
        print(f"| {r.step} | {r.size} | {t} | {ratio} | {peak} | {r.note} |")
    print()
    print(
        f"parent process peak RSS (data generation, training, reference): {base_mb:,.0f} MB; "
        f"reference 5-trial total {ref5 / 60:,.1f} min extrapolated"
    )


if __name__ == "__main__":
    main()
