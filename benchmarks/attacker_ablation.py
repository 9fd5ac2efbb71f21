"""Ablation of the attacker's levers on the synthetic corpus (issue 15).

For each built-in anonymizer (pitch, VTLN, McAdams; same-gender TSA at utterance level) the
semi-informed attacker is trained on anonymized speech with 3 seeds, once without and once with
augmentation (speed perturbation, generated noise, DropFreq, DropChunk: the defaults of
``AugmentationConfig``), and scored with cosine and PLDA, each without and with AS-norm. The
levers, each alone and all together, against the baseline (no augmentation, cosine, no
normalization):

    baseline        plain training, cosine, no normalization
    +augmentation   augmented training, cosine
    +PLDA           plain training, PLDA back-end
    +AS-norm        plain training, cosine, AS-norm
    all (PLDA)      augmented training, PLDA, AS-norm
    all (cosine)    augmented training, cosine, AS-norm

Every configuration is a normal ``unmask evaluate`` run (one ``results.json`` each) in a shared
stage store, so a recognizer is trained once and reused by the scorings that need it. Rerunning
reuses every finished stage; runs for different anonymizers may go in parallel processes
(``--anonymizers pitch`` in one, ``--anonymizers vtln,mcadams`` in another) and the table is then
printed from all of them with ``--report-only``.

    UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/attacker_ablation.py --out out/ablation
    .venv/bin/python benchmarks/attacker_ablation.py --out out/ablation --quick   # minutes

Reported per (anonymizer, lever): semi-informed EER (%), mean per-speaker EER (%), min Cllr
(bits), each mean +- sample std over the seeds, the relative change of the mean EER against the
baseline, whether the change exceeds the seed spread (|delta| > std_baseline + std_lever), and
the lever's compute time (s, all seeds): recognizer training plus embedding plus scoring.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from services.attacker.training_config import AugmentationConfig, TrainingConfig
from services.corpus.protocol import TargetSelection
from services.pipeline.config import (
    AnonymizerSpec,
    EvaluationConfig,
    MetricsSpec,
    ScoringSpec,
    SyntheticCorpusSpec,
)
from services.pipeline.evaluation import run_evaluation

LEVERS: dict[str, tuple[bool, str, str]] = {
    # lever: (augmentation, back-end, normalization)
    "baseline": (False, "cosine", "none"),
    "+augmentation": (True, "cosine", "none"),
    "+PLDA": (False, "plda", "none"),
    "+AS-norm": (False, "cosine", "as-norm"),
    "all (PLDA)": (True, "plda", "as-norm"),
    "all (cosine)": (True, "cosine", "as-norm"),
}


def make_config(
    anonymizer: str, augment: bool, normalization: str, quick: bool
) -> EvaluationConfig:
    """One evaluation of the ablation: semi-informed, both back-ends, 3 seeds (1 if quick)."""
    synthetic = (
        SyntheticCorpusSpec(
            n_speakers=12,
            utts_per_speaker=8,
            n_attacker_train_speakers=6,
            n_eval_speakers=4,
            n_target_speakers=2,
            enrollments_per_speaker=3,
            trials_per_speaker=3,
        )
        if quick
        else SyntheticCorpusSpec()
    )
    return EvaluationConfig(
        name=f"ablation-{anonymizer}-{'aug' if augment else 'plain'}-{normalization}",
        synthetic=synthetic,
        anonymizer=AnonymizerSpec(name=anonymizer),
        tsa=TargetSelection(strategy="same-gender", granularity="utterance", seed=0),
        scenarios=["semi-informed"],
        training=TrainingConfig(
            preset="tiny",
            epochs=1 if quick else 8,
            batch_size=32,
            augmentation=AugmentationConfig() if augment else None,
        ),
        seeds=[0] if quick else [0, 1, 2],
        backends=["cosine", "plda"],
        scoring=ScoringSpec(normalization=normalization),  # type: ignore[arg-type]
        metrics=MetricsSpec(bootstrap_resamples=0, srd=False),
    )


def run_dir(out: Path, cfg: EvaluationConfig) -> Path:
    return out / cfg.name


def compute_seconds_by_stage(result: dict[str, Any]) -> dict[str, float]:
    """Compute seconds (s) per phase of one result, each distinct stage key counted once."""
    seen: dict[tuple[str, str], float] = {}
    for s in result["stages"]:
        if s.get("compute_seconds") is not None:
            seen[(s["stage"], s["key"])] = float(s["compute_seconds"])
    out: dict[str, float] = {}
    for (stage, _), sec in seen.items():
        out[stage] = out.get(stage, 0.0) + sec
    return out


def lever_row(results: dict[tuple[bool, str], dict[str, Any]], lever: str) -> dict[str, Any] | None:
    augment, backend, normalization = LEVERS[lever]
    result = results.get((augment, normalization))
    if result is None:
        return None
    rows = [
        r for r in result["rows"] if r["scenario"] == "semi-informed" and r["backend"] == backend
    ]
    eer = np.array([r["eer_percent"] for r in rows])
    per_speaker = np.array([r["per_speaker_eer"]["mean_percent"] for r in rows])
    min_cllr = np.array([r["min_cllr_bits"] for r in rows])
    stages = compute_seconds_by_stage(result)
    seconds = sum(stages.get(k, 0.0) for k in ("train", "embed", "score"))
    return {
        "eer": eer,
        "per_speaker": per_speaker,
        "min_cllr": min_cllr,
        "seconds": seconds,
        "train_seconds": stages.get("train", 0.0),
    }


def mean_std(x: np.ndarray) -> str:
    if x.size == 0:
        return "-"
    std = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
    return f"{float(np.mean(x)):.1f} ± {std:.1f}"


def print_table(out: Path, anonymizers: list[str], quick: bool) -> list[dict[str, Any]]:
    print(
        "| anonymizer | lever | EER % | per-speaker EER % | min Cllr (bits) | "
        "EER change vs baseline | beyond seed spread | compute (s) |"
    )
    print("|---|---|---:|---:|---:|---:|:---:|---:|")
    records = []
    for anonymizer in anonymizers:
        results: dict[tuple[bool, str], dict[str, Any]] = {}
        for augment in (False, True):
            for normalization in ("none", "as-norm"):
                path = run_dir(out, make_config(anonymizer, augment, normalization, quick))
                path = path / "results.json"
                if path.is_file():
                    results[(augment, normalization)] = json.loads(path.read_text())
        base = lever_row(results, "baseline")
        for lever in LEVERS:
            row = lever_row(results, lever)
            if row is None:
                continue
            change = "-"
            beyond = "-"
            rel = None
            if base is not None and lever != "baseline":
                b, x = base["eer"], row["eer"]
                rel = (float(np.mean(x)) - float(np.mean(b))) / float(np.mean(b)) * 100.0
                change = f"{rel:+.0f} %"
                spread = (np.std(b, ddof=1) if b.size > 1 else 0.0) + (
                    np.std(x, ddof=1) if x.size > 1 else 0.0
                )
                if b.size > 1 and x.size > 1:
                    beyond = "yes" if abs(np.mean(x) - np.mean(b)) > spread else "no"
            min_cllr = row["min_cllr"]
            cllr_text = (
                f"{float(np.mean(min_cllr)):.2f} ± "
                f"{float(np.std(min_cllr, ddof=1)) if min_cllr.size > 1 else 0.0:.2f}"
            )
            print(
                f"| {anonymizer} | {lever} | {mean_std(row['eer'])} | "
                f"{mean_std(row['per_speaker'])} | {cllr_text} | {change} | {beyond} | "
                f"{row['seconds']:.0f} |"
            )
            records.append(
                {
                    "anonymizer": anonymizer,
                    "lever": lever,
                    "eer_percent": row["eer"].tolist(),
                    "per_speaker_eer_percent": row["per_speaker"].tolist(),
                    "min_cllr_bits": row["min_cllr"].tolist(),
                    "relative_change_percent": rel,
                    "beyond_seed_spread": beyond,
                    "compute_seconds": row["seconds"],
                }
            )
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/ablation"))
    ap.add_argument("--anonymizers", default="pitch,vtln,mcadams")
    ap.add_argument("--quick", action="store_true", help="tiny corpus, 1 epoch, 1 seed")
    ap.add_argument("--report-only", action="store_true", help="print the table, run nothing")
    ap.add_argument("--json", type=Path, default=None, help="also write the table's records")
    args = ap.parse_args()
    anonymizers = [a for a in args.anonymizers.split(",") if a]
    stages = args.out / "stages"
    if not args.report_only:
        for anonymizer in anonymizers:
            for augment in (False, True):
                for normalization in ("none", "as-norm"):
                    cfg = make_config(anonymizer, augment, normalization, args.quick)
                    print(f"running {cfg.name}", flush=True)
                    run_evaluation(cfg, run_dir(args.out, cfg), stages_dir=stages)
    records = print_table(args.out, anonymizers, args.quick)
    if args.json is not None:
        args.json.write_text(json.dumps(records, indent=2))


if __name__ == "__main__":
    main()
