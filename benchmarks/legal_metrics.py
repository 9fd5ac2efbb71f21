"""Cost of the legal metrics' curves next to the EER path, on the same embeddings.

1,000 speakers x 30 trial utterances (plus 10 enrollment utterances each) of 192-dim embeddings
from a synthetic Gaussian population (between-speaker variance 1, within 25 per dimension, so
that neither metric saturates). Timed, in process, best of ``--repeats``:

- the EER path: what the score stage computes per row with the default metrics (cosine scores of
  every trial against every speaker-mean enrollment, EER, 200-resample speaker bootstrap,
  per-speaker EER, detection rates, Cllr / min Cllr, D_sys, ZEBRA, DET points), and the scores
  plus EER alone;
- the legal curves with Unmask's defaults (8 log-spaced N from 2 to 1,000, L in 1, 3, 10, 30
  for linkability and 1, 3, 10 for singling out (2 L of 30 utterances), 5 draws, 5 folds, M = 9),
  split into linkability and singling out;
- singling out at L = 1 on one fold three ways: the batched sampler (default), the reference
  sampler (the package's random streams, identical outcomes) and the reference package's own
  ``singling_out_sweep`` (a Python loop over speakers and draws).

    .venv/bin/python benchmarks/legal_metrics.py            # full size (a few minutes)
    .venv/bin/python benchmarks/legal_metrics.py --quick    # 200 speakers, seconds
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from legal_eval.sweeps import singling_out_sweep  # noqa: E402

from services.metrics import legal  # noqa: E402
from services.pipeline.config import MetricsSpec  # noqa: E402
from services.pipeline.stages.score import metrics_row  # noqa: E402
from services.scoring import CosineBackend, TrialSet, eer_report, score_trials  # noqa: E402

DIM = 192
WITHIN = 25.0


def population(n_speakers: int, n_trials: int, n_enroll: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_speakers, DIM))

    def draw(per: int) -> np.ndarray:
        noise = np.sqrt(WITHIN) * rng.standard_normal((n_speakers, per, DIM))
        return (centres[:, None, :] + noise).reshape(-1, DIM)

    speakers = np.array([f"s{i:04d}" for i in range(n_speakers)])
    genders = np.array(["f" if i % 2 == 0 else "m" for i in range(n_speakers)])
    trial_spk = np.repeat(speakers, n_trials)
    return {
        "enroll": draw(n_enroll),
        "enroll_spk": np.repeat(speakers, n_enroll),
        "enroll_gender": np.repeat(genders, n_enroll),
        "trial": draw(n_trials),
        "trial_spk": trial_spk,
        "trial_gender": np.repeat(genders, n_trials),
        "trial_ids": [f"{s}-{j % n_trials:02d}" for j, s in enumerate(trial_spk)],
    }


def best_of(repeats: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 speakers")
    parser.add_argument("--speakers", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    n = 200 if args.quick else args.speakers
    data = population(n, 30, 10, args.seed)
    trials = TrialSet.from_arrays(
        data["trial"], data["trial_spk"], data["trial_gender"],
        data["enroll"], data["enroll_spk"], data["enroll_gender"],
    )  # fmt: skip

    def eer_only() -> float:
        scored = score_trials(CosineBackend(), trials, gender_mode="pooled")
        return float(eer_report(scored).eer_percent)

    def eer_path() -> dict[str, Any]:
        scored = score_trials(CosineBackend(), trials, gender_mode="pooled")
        return metrics_row(scored, MetricsSpec(), args.seed, llr_scores=False)

    spec = MetricsSpec().legal
    assert spec is not None
    grid = legal.log_spaced_counts(n, spec.grid_points)
    enroll = legal.enrollment_embeddings(data["enroll"], list(data["enroll_spk"]))
    trial_spk = list(data["trial_spk"])

    def linkability_curves() -> list[legal.Curve]:
        return [
            legal.linkability_curve(
                enroll, data["trial"], trial_spk, L, grid, draws=spec.draws, seed=args.seed
            )
            for L in legal.PAPER_CONVERSATION_LENGTHS
        ]

    def singling_out_curves(
        lengths: tuple[int, ...] = (1, 3, 10),
        folds: int = spec.folds,
        sampler: legal.Sampler = "batched",
    ) -> list[legal.Curve]:
        return [
            legal.singling_out_curve(
                enroll, data["trial"], data["trial_ids"], trial_spk, L, grid,
                draws=spec.draws, folds=folds,
                calibration_conversations=spec.calibration_conversations,
                seed=args.seed, sampler=sampler,
            )
            for L in lengths
        ]  # fmt: skip

    def package_sweep() -> Any:
        spk2utt: dict[str, list[str]] = {}
        for u, s in zip(data["trial_ids"], trial_spk, strict=True):
            spk2utt.setdefault(s, []).append(u)
        u2e = {u: data["trial"][i] for i, u in enumerate(data["trial_ids"])}
        return singling_out_sweep(
            enroll, spk2utt, u2e, 1, speaker_counts=grid, n_runs=spec.draws, n_folds=1,
            max_calibration=spec.calibration_conversations, seed=args.seed,
        )  # fmt: skip

    rows: list[tuple[str, float, str]] = []

    def pct(curve: legal.Curve) -> float:
        point = curve.at(n)
        assert point is not None
        return 100.0 * float(point.draws.mean())

    t, eer = best_of(args.repeats, eer_only)
    rows.append(("EER path: cosine scores + EER", t, f"EER {eer:.2f} %"))
    t_eer, row = best_of(args.repeats, eer_path)
    note = f"EER {row['eer_percent']:.2f} %"
    rows.append(("EER path: score stage's metrics_row (defaults)", t_eer, note))
    t_link, link = best_of(args.repeats, linkability_curves)
    note = f"top-1 at N={n}, L=1: {pct(link[0]):.1f} %"
    rows.append(("legal: linkability, 4 L x 8 N", t_link, note))
    t_so, so = best_of(args.repeats, singling_out_curves)
    note = f"at N={n}, L=1: {pct(so[0]):.1f} %"
    rows.append(("legal: singling out, 3 L x 8 N, 5 folds", t_so, note))
    note = f"{(t_link + t_so) / t_eer:.2f}x the metrics_row path"
    rows.append(("legal: both curves (Unmask defaults)", t_link + t_so, note))
    t_b, b = best_of(args.repeats, lambda: singling_out_curves((1,), 1))
    t_r, r = best_of(args.repeats, lambda: singling_out_curves((1,), 1, "reference"))
    t_p, p = best_of(args.repeats, package_sweep)
    ref = 100.0 * float(np.mean(p.values[n]))
    note = f"{t_p / t_b:.1f}x faster than the package; at N={n}: {pct(b[0]):.2f} %"
    rows.append(("singling out L=1, 1 fold: batched sampler", t_b, note))
    note = f"{t_p / t_r:.1f}x faster; at N={n}: {pct(r[0]):.2f} % (package: {ref:.2f} %)"
    rows.append(("singling out L=1, 1 fold: reference sampler", t_r, note))
    rows.append(("singling out L=1, 1 fold: legal_eval package", t_p, f"at N={n}: {ref:.2f} %"))

    print(f"{n} speakers x 30 trial (+10 enrollment) utterances, {DIM}-dim, N grid {grid}")
    print("| path | seconds | note |\n|---|---:|---|")
    for name, seconds, text in rows:
        print(f"| {name} | {seconds:.2f} | {text} |")


if __name__ == "__main__":
    main()
