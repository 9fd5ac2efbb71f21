"""Ablation of the attacker's levers on the synthetic corpus.

For each built-in anonymizer (pitch, VTLN, McAdams; same-gender TSA at utterance level) the
semi-informed attacker is trained on anonymized speech with several seeds, in up to four training
variants: plain or augmented (speed perturbation, generated noise, DropFreq, DropChunk: the
defaults of ``AugmentationConfig``), each for ``--epochs`` (the baseline schedule, 8) and, with
``--long-epochs N``, for N epochs. Every recognizer is scored with cosine and PLDA, each without
and with AS-norm. The levers, each alone and together, against the baseline (plain training for
``--epochs``, cosine, no normalization):

    baseline              plain training, cosine, no normalization
    +augmentation         augmented training, cosine
    +PLDA                 plain training, PLDA back-end
    +AS-norm              plain training, cosine, AS-norm
    +PLDA +AS-norm        plain training, PLDA, AS-norm
    all (PLDA)            augmented training, PLDA, AS-norm
    all (cosine)          augmented training, cosine, AS-norm
  with --long-epochs N:
    N epochs              plain training for N epochs, cosine
    N epochs +PLDA +AS-norm
    +augmentation, N epochs
    all, N epochs         augmented training for N epochs, PLDA, AS-norm

Every configuration is a normal ``unmask evaluate`` run (one ``results.json`` each) in a shared
stage store, so a recognizer is trained once and reused by the scorings that need it. Rerunning
reuses every finished stage; runs for different anonymizers may go in parallel processes
(``--anonymizers pitch`` in one, ``--anonymizers vtln,mcadams`` in another) and the table is then
printed from all of them with ``--report-only``.

    UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/attacker_ablation.py --out out/ablation \
        --long-epochs 24
    .venv/bin/python benchmarks/attacker_ablation.py --out out/ablation --quick   # minutes

Reported per (anonymizer, lever): semi-informed EER (%), mean per-speaker EER (%), min Cllr
(bits), each mean +- sample std over the seeds; the relative change of the mean EER against the
baseline; two tests of that change: "beyond the seed spread" (|mean difference| > std_baseline +
std_lever, the issue's criterion: unpaired) and the paired one (the same seed's recognizers share
their initialization and data order, and scoring-only levers share the recognizer itself: the
lever lowers the EER for every seed and the mean of the per-seed differences exceeds twice their
standard error); and the lever's compute time (s, all seeds): training plus embedding plus scoring.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from services.anonymizers.kinds.builtin import BuiltinAnonymizerConfig
from services.attacker.training_config import AugmentationConfig, TrainingConfig
from services.corpus.protocol import TargetSelection
from services.pipeline.config import (
    EvaluationConfig,
    MetricsSpec,
    ScoringSpec,
    SyntheticCorpusSpec,
)
from services.pipeline.evaluation import run_evaluation

NORMALIZATIONS = ("none", "as-norm")


class Lever(NamedTuple):
    """One row of the table: a training variant scored with a back-end and a normalization."""

    augment: bool
    long: bool
    backend: str
    normalization: str


def levers(long_epochs: int | None) -> dict[str, Lever]:
    """The table's rows; the long-schedule rows only with ``--long-epochs``."""
    rows = {
        "baseline": Lever(False, False, "cosine", "none"),
        "+augmentation": Lever(True, False, "cosine", "none"),
        "+PLDA": Lever(False, False, "plda", "none"),
        "+AS-norm": Lever(False, False, "cosine", "as-norm"),
        "+PLDA +AS-norm": Lever(False, False, "plda", "as-norm"),
        "all (PLDA)": Lever(True, False, "plda", "as-norm"),
        "all (cosine)": Lever(True, False, "cosine", "as-norm"),
    }
    if long_epochs is not None:
        n = long_epochs
        rows |= {
            f"{n} epochs": Lever(False, True, "cosine", "none"),
            f"{n} epochs +PLDA +AS-norm": Lever(False, True, "plda", "as-norm"),
            f"+augmentation, {n} epochs": Lever(True, True, "cosine", "none"),
            f"all, {n} epochs": Lever(True, True, "plda", "as-norm"),
        }
    return rows


def make_config(
    anonymizer: str,
    augment: bool,
    normalization: str,
    *,
    epochs: int,
    seeds: list[int],
    quick: bool,
    eval_speakers: int | None = None,
) -> EvaluationConfig:
    """One evaluation of the ablation: semi-informed, both back-ends, one training variant.

    ``eval_speakers``: evaluation (enrollment/trial) speakers instead of the demo-size corpus's
    16 (the attacker-train and target speakers stay as they are), for EERs too low for 128
    target trials to resolve; such runs get their own folders.
    """
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
    suffix = ""
    if eval_speakers is not None:
        default = synthetic.n_eval_speakers
        synthetic = synthetic.model_copy(
            update={
                "n_eval_speakers": eval_speakers,
                "n_speakers": synthetic.n_speakers - default + eval_speakers,
            }
        )
        suffix = f"-eval{eval_speakers}"
    variant = f"{'aug' if augment else 'plain'}{epochs}"
    return EvaluationConfig(
        name=f"ablation-{anonymizer}-{variant}-{normalization}{suffix}",
        synthetic=synthetic,
        anonymizer=BuiltinAnonymizerConfig(name=anonymizer),
        tsa=TargetSelection(strategy="same-gender", granularity="utterance", seed=0),
        scenarios=["semi-informed"],
        training=TrainingConfig(
            preset="tiny",
            epochs=epochs,
            batch_size=32,
            augmentation=AugmentationConfig() if augment else None,
        ),
        seeds=seeds,
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


Results = dict[tuple[bool, bool, str], dict[str, Any]]
"""results.json per (augment, long schedule, normalization)."""


def lever_row(results: Results, lever: Lever) -> dict[str, Any] | None:
    """The lever's per-seed numbers (arrays ordered by seed) and its compute seconds."""
    result = results.get((lever.augment, lever.long, lever.normalization))
    if result is None:
        return None
    rows = sorted(
        (
            r
            for r in result["rows"]
            if r["scenario"] == "semi-informed" and r["backend"] == lever.backend
        ),
        key=lambda r: int(r["seed"]),
    )
    stages = compute_seconds_by_stage(result)
    return {
        "seeds": [int(r["seed"]) for r in rows],
        "eer": np.array([r["eer_percent"] for r in rows]),
        "per_speaker": np.array([r["per_speaker_eer"]["mean_percent"] for r in rows]),
        "min_cllr": np.array([r["min_cllr_bits"] for r in rows]),
        "seconds": sum(stages.get(k, 0.0) for k in ("train", "embed", "score")),
    }


def mean_std(x: np.ndarray, digits: int = 1) -> str:
    if x.size == 0:
        return "-"
    std = float(np.std(x, ddof=1)) if x.size > 1 else 0.0
    return f"{float(np.mean(x)):.{digits}f} ± {std:.{digits}f}"


def compare(base: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """Relative change of the mean EER (%), the unpaired spread test and the paired test."""
    b, x = base["eer"], row["eer"]
    rel = (float(np.mean(x)) - float(np.mean(b))) / float(np.mean(b)) * 100.0
    out: dict[str, Any] = {"relative_change_percent": rel, "beyond_spread": "-", "paired": "-"}
    if b.size > 1 and x.size > 1:
        spread = float(np.std(b, ddof=1) + np.std(x, ddof=1))
        worse = " (worse)" if rel > 0 else ""
        out["beyond_spread"] = ("yes" + worse) if abs(np.mean(x) - np.mean(b)) > spread else "no"
    if base["seeds"] == row["seeds"] and len(row["seeds"]) > 1:
        d = x - b
        se = float(np.std(d, ddof=1)) / np.sqrt(d.size)
        lower = int(np.sum(d < 0))
        significant = abs(float(np.mean(d))) > 2.0 * se and (lower in (0, d.size))
        verdict = ("lower" if lower == d.size else "higher") if significant else "no"
        out["paired"] = f"{verdict} ({lower}/{d.size} lower, {float(np.mean(d)):+.1f} ± {se:.1f})"
    return out


def print_table(
    out: Path,
    anonymizers: list[str],
    *,
    epochs: int,
    long_epochs: int | None,
    seeds: list[int],
    quick: bool,
    eval_speakers: int | None = None,
) -> list[dict[str, Any]]:
    print(
        "| anonymizer | lever | EER % | per-speaker EER % | min Cllr (bits) | "
        "EER change vs baseline | beyond seed spread | paired (seeds lower, mean diff ± s.e.) | "
        "compute (s) |"
    )
    print("|---|---|---:|---:|---:|---:|:---:|:---:|---:|")
    records = []
    table = levers(long_epochs)
    for anonymizer in anonymizers:
        results: Results = {}
        for augment in (False, True):
            for long in (False, True) if long_epochs is not None else (False,):
                for normalization in NORMALIZATIONS:
                    cfg = make_config(
                        anonymizer,
                        augment,
                        normalization,
                        epochs=long_epochs if long and long_epochs is not None else epochs,
                        seeds=seeds,
                        quick=quick,
                        eval_speakers=eval_speakers,
                    )
                    path = run_dir(out, cfg) / "results.json"
                    if path.is_file():
                        results[(augment, long, normalization)] = json.loads(path.read_text())
        base = lever_row(results, table["baseline"])
        for name, lever in table.items():
            row = lever_row(results, lever)
            if row is None:
                continue
            cmp = (
                compare(base, row)
                if base is not None and name != "baseline"
                else {"relative_change_percent": None, "beyond_spread": "-", "paired": "-"}
            )
            rel = cmp["relative_change_percent"]
            print(
                f"| {anonymizer} | {name} | {mean_std(row['eer'])} | "
                f"{mean_std(row['per_speaker'])} | {mean_std(row['min_cllr'], 2)} | "
                f"{'-' if rel is None else f'{rel:+.0f} %'} | {cmp['beyond_spread']} | "
                f"{cmp['paired']} | {row['seconds']:.0f} |"
            )
            records.append(
                {
                    "anonymizer": anonymizer,
                    "lever": name,
                    "seeds": row["seeds"],
                    "eer_percent": row["eer"].tolist(),
                    "per_speaker_eer_percent": row["per_speaker"].tolist(),
                    "min_cllr_bits": row["min_cllr"].tolist(),
                    **cmp,
                    "compute_seconds": row["seconds"],
                }
            )
    return records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/ablation"))
    ap.add_argument("--anonymizers", default="pitch,vtln,mcadams")
    ap.add_argument("--seeds", default="0,1,2", help="training seeds, comma-separated")
    ap.add_argument("--epochs", type=int, default=8, help="the baseline schedule (epochs)")
    ap.add_argument(
        "--long-epochs", type=int, default=None, help="also train every variant this many epochs"
    )
    ap.add_argument(
        "--variants",
        default="plain,aug",
        help="training variants to run (plain, aug); the table reads whatever exists",
    )
    ap.add_argument(
        "--eval-speakers",
        type=int,
        default=None,
        help="evaluation speakers (default: the corpus's 16); more resolve lower EERs",
    )
    ap.add_argument("--quick", action="store_true", help="tiny corpus, 1 epoch, 1 seed")
    ap.add_argument("--report-only", action="store_true", help="print the table, run nothing")
    ap.add_argument("--json", type=Path, default=None, help="also write the table's records")
    args = ap.parse_args()
    anonymizers = [a for a in args.anonymizers.split(",") if a]
    seeds = [0] if args.quick else [int(s) for s in args.seeds.split(",") if s]
    epochs = 1 if args.quick else args.epochs
    long_epochs = (2 if args.quick else args.long_epochs) if args.long_epochs else None
    variants = {v.strip() for v in args.variants.split(",")}
    stages = args.out / "stages"
    if not args.report_only:
        for anonymizer in anonymizers:
            for augment in (False, True):
                if ("aug" if augment else "plain") not in variants:
                    continue
                for n_epochs in [epochs] + ([long_epochs] if long_epochs else []):
                    for normalization in NORMALIZATIONS:
                        cfg = make_config(
                            anonymizer,
                            augment,
                            normalization,
                            epochs=n_epochs,
                            seeds=seeds,
                            quick=args.quick,
                            eval_speakers=args.eval_speakers,
                        )
                        print(f"running {cfg.name}", flush=True)
                        run_evaluation(cfg, run_dir(args.out, cfg), stages_dir=stages)
    records = print_table(
        args.out,
        anonymizers,
        epochs=epochs,
        long_epochs=long_epochs,
        seeds=seeds,
        quick=args.quick,
        eval_speakers=args.eval_speakers,
    )
    if args.json is not None:
        args.json.write_text(json.dumps(records, indent=2))


if __name__ == "__main__":
    main()
