"""Dataset-size study at Georgiou et al.'s scale on synthetic embeddings.

796 evaluation speakers (train-other-500 after Georgiou et al.'s filter), 20 enrollment and 1..50
trial utterances per speaker, 5 target seeds x 5 draws = 25 repetitions per point, LDA + PLDA
scoring with per-utterance enrollment and LLRs averaged per speaker pair (Georgiou et al.'s
framework).

The reference way is Georgiou et al.'s: score every trial utterance against every enrollment
utterance and average per speaker pair (``speaker_pair_method="explicit"``, blocked float32 matrix
products); Unmask computes the same averages from per-speaker moments. Both give the same EER
(checked here). The explicit path is timed for one repetition per point.

    .venv/bin/python benchmarks/size_study.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from services.scoring import PLDABackend, TrialSet, eer_report, score_trials, train_plda
from services.scoring.synthetic import make_synthetic_speakers
from services.studies.dataset_size import (
    EmbeddingTable,
    SizePoint,
    SizeStudyConfig,
    draw_trial_enrollment,
    prepare_tables,
    run_point,
)

N_EVAL = 796
N_TRAIN = 400
DIM = 192
PER_SPEAKER = 70  # 20 enrollment + 50 trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer points and repetitions")
    args = parser.parse_args()
    trial_counts = [1, 5, 50] if args.quick else [1, 2, 5, 10, 20, 30, 40, 50]
    explicit_at = {1, 5} if args.quick else {1, 5, 20, 50}
    n_seeds, samples = (5, 1) if args.quick else (5, 5)

    start = time.perf_counter()
    rng = np.random.default_rng(0)
    pop = make_synthetic_speakers(N_EVAL + N_TRAIN, DIM, rng, between_scale=1.0, within_scale=40.0)
    x, spk, _ = pop.sample(10, np.random.default_rng(1))
    train = np.isin(spk, pop.speaker_ids[N_EVAL:])
    plda = PLDABackend(train_plda(x[train], spk[train], lda_dim=200, n_iter=10))
    eval_ids = pop.speaker_ids[:N_EVAL]
    tables = {}
    for ts in range(n_seeds):
        # Each target seed = another anonymization: a fresh draw of every utterance's embedding.
        e, s, g = pop.sample(PER_SPEAKER, np.random.default_rng([2, ts]))
        keep = np.isin(s, eval_ids)
        tables[ts] = EmbeddingTable(e[keep], s[keep], g[keep])
    setup_s = time.perf_counter() - start

    cfg = SizeStudyConfig(samples=samples, trial_sweep_enrollment=20)
    prepared, backend, prep_s = prepare_tables(tables, plda)
    print(
        f"{N_EVAL} speakers x {PER_SPEAKER} utterances x {n_seeds} target seeds, d={DIM}; "
        f"setup {setup_s:.1f} s, PLDA projection once per seed {prep_s:.2f} s"
    )
    print()
    header = (
        "| trials/spk | reps | EER mean % | EER std % | s/point | ms/rep | explicit s/rep "
        "| speedup | same EER |"
    )
    print(header)
    print("|" + "---|" * 9)
    sweep_start = time.perf_counter()
    for n_trials in trial_counts:
        point = SizePoint("trials", n_trials, None, n_trials, 20)
        row = run_point(point, prepared, backend, cfg)
        explicit = speedup = same = "-"
        if n_trials in explicit_at:
            table, index = prepared[0].table, prepared[0].index
            draw_rng = np.random.default_rng([cfg.seed, 3, n_trials + 1, 0, 0])
            t_rows, e_rows, _ = draw_trial_enrollment(index, draw_rng, None, n_trials, 20)
            ts_ = TrialSet.from_arrays(
                table.embeddings[t_rows],
                table.speaker_ids[t_rows],
                table.genders[t_rows],
                table.embeddings[e_rows],
                table.speaker_ids[e_rows],
                table.genders[e_rows],
            )
            t0 = time.perf_counter()
            scored = score_trials(
                backend,
                ts_,
                enrollment="per_utterance",
                aggregation="speaker_pair_mean",
                speaker_pair_method="explicit",
            )
            eer_explicit = eer_report(scored).eer_percent
            t_explicit = time.perf_counter() - t0
            explicit = f"{t_explicit:.2f}"
            speedup = f"{t_explicit / row['seconds_per_repetition']:.0f}x"
            same = "yes" if abs(eer_explicit - row["eer_percent"][0]) < 0.01 else "NO"
        print(
            f"| {n_trials} | {row['repetitions']} | {row['eer_mean_percent']:.2f} | "
            f"{row['eer_std_percent']:.2f} | {row['seconds']:.2f} | "
            f"{1000 * row['seconds_per_repetition']:.0f} | {explicit} | {speedup} | {same} |"
        )
    total = time.perf_counter() - sweep_start
    print()
    print(f"whole trial sweep ({len(trial_counts)} points): {total:.1f} s (explicit runs included)")


if __name__ == "__main__":
    main()
