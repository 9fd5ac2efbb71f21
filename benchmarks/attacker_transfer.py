"""Transfer: the semi-informed attacker started from the original-speech recognizer vs scratch.

For each built-in anonymizer (pitch, VTLN, McAdams; same-gender TSA at utterance level) and each
seed, three semi-informed attackers (`tiny`, cosine) are trained on the anonymized speech:

    scratch E       random weights, the epochs cap E (the demo's 6), patience 3
    scratch 3E      random weights, cap 3E (the `strongest` zoo's `long` schedule)
    original E      started from the same seed's recognizer trained on original speech (cap E,
                    the original scenario trains it anyway) and fine-tuned (`training.start:
                    original` with the documented `finetune_lr` / warm-up defaults), cap E
    original C      the same for each cap C of ``--transfer-caps`` (e.g. 12, the demo's cap)

Every run is a normal evaluation (scenarios original and semi-informed, 200 bootstrap resamples
for the 95 % interval) in one shared stage store, so a recognizer is trained once and reused by
every configuration (and by ``benchmarks/trust_calibration.py``, whose grid holds the demo-size
runs of this one: run it with the same ``--out`` and this table reads them).

    OMP_NUM_THREADS=1 UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/attacker_transfer.py \
        --out out/transfer
    OMP_NUM_THREADS=1 UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/attacker_transfer.py \
        --out out/transfer --eval-speakers 48 --transfer-caps 12
    .venv/bin/python benchmarks/attacker_transfer.py --out out/transfer --quick   # a minute

Reported per (anonymizer, attacker): semi-informed EER (%) mean +- sample std over the seeds, VER_S
(%) at the epoch the recognizer uses, epochs run (patience may stop before the cap), training
seconds of the anonymized-speech recognizer (the sum of its epochs' CPU times, which other
processes on the cores do not inflate, and the wall times beside; for `original E`
the fine-tune alone: the original-speech recognizer is trained by the evaluation anyway, and its
seconds are given beside; the plan's upper-bound estimate of both, from
services/pipeline/estimates.py, is printed next to them for comparison). The goal line per
anonymizer: transfer reaches the 3x-epoch scratch attacker's EER (mean not above it by more than
the two spreads) in at most half its training time; one goal line per transfer attacker.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from services.anonymizers.kinds.builtin import BuiltinAnonymizerConfig
from services.attacker.training_config import StartPoint, TrainingConfig
from services.corpus.protocol import TargetSelection
from services.pipeline.config import (
    EvaluationConfig,
    MetricsSpec,
    SyntheticCorpusSpec,
)
from services.pipeline.estimates import (
    recognizer_plan,
    synthetic_training_audio,
    training_seconds,
)
from services.pipeline.evaluation import run_evaluation

TsaStrategy = Literal["same-gender", "random"]


class Attacker(NamedTuple):
    """One semi-informed attacker of a run: where it starts and its epochs cap."""

    start: StartPoint
    epochs: int


def make_config(
    anonymizer: str,
    attacker: Attacker,
    *,
    seed: int,
    quick: bool = False,
    eval_speakers: int | None = None,
    tsa: TsaStrategy = "same-gender",
) -> EvaluationConfig:
    """One evaluation: scenarios original and semi-informed, cosine, one attacker, one seed (so
    that a table of the seeds done so far can be printed while the others run).

    ``eval_speakers``: evaluation speakers instead of the demo-size corpus's 16 (the attacker's
    training speakers and the targets stay as many), for EERs 128 target trials cannot resolve.
    ``tsa``: the target selection strategy (utterance level); ``random`` (targets of either
    gender, the demo's and the protocol default) hides more of the speaker than ``same-gender``.
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
    suffix = "-quick" if quick else ""
    if eval_speakers is not None:
        default = synthetic.n_eval_speakers
        synthetic = synthetic.model_copy(
            update={
                "n_eval_speakers": eval_speakers,
                "n_speakers": synthetic.n_speakers - default + eval_speakers,
            }
        )
        suffix += f"-eval{eval_speakers}"
    if tsa != "same-gender":
        suffix += f"-{tsa}"
    return EvaluationConfig(
        name=f"transfer-{anonymizer}-{attacker.start}{attacker.epochs}-seed{seed}{suffix}",
        synthetic=synthetic,
        anonymizer=BuiltinAnonymizerConfig(name=anonymizer),
        tsa=TargetSelection(strategy=tsa, granularity="utterance", seed=0),
        scenarios=["original", "semi-informed"],
        training=TrainingConfig(
            preset="tiny", epochs=attacker.epochs, batch_size=32, start=attacker.start
        ),
        seeds=[seed],
        backends=["cosine"],
        metrics=MetricsSpec(srd=False, linkability=False, zebra=False),
    )


def run_dir(out: Path, cfg: EvaluationConfig) -> Path:
    return out / cfg.name


def load_or_run(out: Path, cfg: EvaluationConfig, *, run: bool) -> dict[str, Any] | None:
    """The run's results.json; computed first (reusing the shared stage store) when ``run``."""
    path = run_dir(out, cfg) / "results.json"
    if path.is_file():
        result: dict[str, Any] = json.loads(path.read_text())
        return result
    if not run:
        return None
    print(f"running {cfg.name}", flush=True)
    return run_evaluation(cfg, run_dir(out, cfg), stages_dir=out / "stages")


def per_seed(results: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Per seed (one result each, ordered): semi-informed EER (%) and its 95 % interval, VER_S
    (%) at the epoch used, epochs run, training seconds of the anonymized- and original-speech
    recognizers, the trust verdict."""
    rows = sorted(
        (r for result in results for r in result["rows"] if r["scenario"] == "semi-informed"),
        key=lambda r: r["seed"],
    )
    training = {k: v for result in results for k, v in result["training"].items()}
    trust = {
        r["seed"]: result["trust"]["trustworthy"] for result in results for r in result["rows"]
    }

    def used_ver(entry: dict[str, Any]) -> float:
        rec = next(h for h in entry["history"] if h["epoch"] == entry["best_epoch"])
        return float(rec["ver_source"])

    def seconds(entry: dict[str, Any]) -> float:
        return float(sum(h["epoch_seconds"] for h in entry["history"]))

    def cpu_seconds(entry: dict[str, Any]) -> float:
        """CPU seconds of the epochs (nan for a history recorded before CPU time was)."""
        values = [h.get("cpu_seconds") for h in entry["history"]]
        return float("nan") if None in values else float(sum(values))

    anon = [training[f"anonymized-seed{r['seed']}"] for r in rows]
    orig = [training[f"original-seed{r['seed']}"] for r in rows]
    ci = [r.get("eer_ci95_percent") or [np.nan, np.nan] for r in rows]
    return {
        "seed": np.array([r["seed"] for r in rows]),
        "eer": np.array([r["eer_percent"] for r in rows]),
        "ci_low": np.array([c[0] for c in ci], dtype=float),
        "ci_high": np.array([c[1] for c in ci], dtype=float),
        "ver_s": np.array([used_ver(e) for e in anon]),
        "epochs": np.array([len(e["history"]) for e in anon]),
        "train_s": np.array([seconds(e) for e in anon]),
        "original_train_s": np.array([seconds(e) for e in orig]),
        "train_cpu_s": np.array([cpu_seconds(e) for e in anon]),
        "original_cpu_s": np.array([cpu_seconds(e) for e in orig]),
        "trustworthy": np.array([bool(trust[r["seed"]]) for r in rows]),
    }


def std(x: np.ndarray) -> float:
    """Sample standard deviation; 0 for one value."""
    return float(np.std(x, ddof=1)) if x.size > 1 else 0.0


def mean_std(x: np.ndarray, digits: int = 1) -> str:
    return f"{float(np.mean(x)):.{digits}f} ± {std(x):.{digits}f} (n={x.size})"


def attackers(
    epochs: int, long_scale: int, transfer_caps: tuple[int, ...] = ()
) -> dict[str, Attacker]:
    """scratch E, scratch E x ``long_scale`` (the reference), then the transfer attackers: cap E
    and each of ``transfer_caps``."""
    table = {
        f"scratch {epochs}": Attacker("scratch", epochs),
        f"scratch {epochs * long_scale}": Attacker("scratch", epochs * long_scale),
    }
    for cap in dict.fromkeys((epochs, *transfer_caps)):
        table[f"original {cap}"] = Attacker("original", cap)
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/transfer"))
    ap.add_argument("--anonymizers", default="pitch,vtln,mcadams")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=6, help="E, the short cap (the demo's)")
    ap.add_argument("--long-scale", type=int, default=3, help="the long scratch cap = E x this")
    ap.add_argument("--eval-speakers", type=int, default=None)
    ap.add_argument(
        "--transfer-caps",
        default="",
        help="more epochs caps for the transfer attacker beside E (e.g. 12, the demo's), each "
        "a row and a goal line",
    )
    ap.add_argument("--quick", action="store_true", help="tiny corpus, E = 2, seed 0, pitch")
    ap.add_argument("--report-only", action="store_true", help="print the table, run nothing")
    ap.add_argument(
        "--order",
        default="seed",
        choices=["seed", "anonymizer"],
        help="run every anonymizer of a seed before the next seed (a partial table has all "
        "anonymizers), or every seed of an anonymizer first",
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the per-seed records")
    args = ap.parse_args()
    anonymizers = ["pitch"] if args.quick else [a for a in args.anonymizers.split(",") if a]
    seeds = [0] if args.quick else [int(s) for s in args.seeds.split(",") if s]
    epochs = 2 if args.quick else args.epochs
    transfer_caps = tuple(int(c) for c in args.transfer_caps.split(",") if c)
    table = attackers(epochs, args.long_scale, transfer_caps)
    records: list[dict[str, Any]] = []
    lines = [
        "| anonymizer | attacker | semi-informed EER % | VER_S % at epoch used | epochs run | "
        "training CPU s (anonymized recognizer) | training CPU s (original recognizer) | "
        "training wall s (anonymized) | plan's estimate, both (s, cap) | trustworthy |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    goals = []

    def config(anonymizer: str, attacker: Attacker, seed: int) -> EvaluationConfig:
        return make_config(
            anonymizer, attacker, seed=seed, quick=args.quick, eval_speakers=args.eval_speakers
        )

    if not args.report_only:
        order = (
            [(s, a) for s in seeds for a in anonymizers]
            if args.order == "seed"
            else [(s, a) for a in anonymizers for s in seeds]
        )
        for seed, anonymizer in order:
            # The short runs first: scratch E and transfer, then the 3x-epoch reference.
            for attacker in sorted(table.values(), key=lambda a: a.epochs):
                load_or_run(args.out, config(anonymizer, attacker, seed), run=True)
    for anonymizer in anonymizers:
        found: dict[str, dict[str, np.ndarray]] = {}
        for label, attacker in table.items():
            results = [
                r
                for seed in seeds
                if (r := load_or_run(args.out, config(anonymizer, attacker, seed), run=False))
            ]
            if not results:
                continue
            values = found[label] = per_seed(results)
            cfg = config(anonymizer, attacker, seeds[0])
            estimate = training_seconds(
                recognizer_plan(cfg), synthetic_training_audio(cfg), cfg.training.crop_seconds
            )
            lines.append(
                f"| {anonymizer} | {label} | {mean_std(values['eer'])} | "
                f"{mean_std(values['ver_s'])} | {mean_std(values['epochs'])} | "
                f"{mean_std(values['train_cpu_s'], 0)} | "
                f"{mean_std(values['original_cpu_s'], 0)} | {mean_std(values['train_s'], 0)} | "
                f"{'-' if estimate is None else f'{estimate:.0f}'} | "
                f"{int(values['trustworthy'].sum())}/{len(values['seed'])} |"
            )
            records.append(
                {"anonymizer": anonymizer, "attacker": label}
                | {k: v.tolist() for k, v in values.items()}
            )
        long_label = list(table)[1]
        for transfer_label in list(table)[2:]:
            if long_label not in found or transfer_label not in found:
                continue
            long, tr = found[long_label], found[transfer_label]
            spread = std(long["eer"]) + std(tr["eer"])
            diff = float(np.mean(tr["eer"]) - np.mean(long["eer"]))
            # CPU seconds (one torch thread per run): wall times grow with whatever else shares
            # the cores; histories without CPU times fall back to the wall time.
            clock = (
                "train_cpu_s"
                if np.isfinite([*tr["train_cpu_s"], *long["train_cpu_s"]]).all()
                else "train_s"
            )
            ratio = float(np.mean(tr[clock]) / np.mean(long[clock]))
            reached = diff <= spread
            met = reached and ratio <= 0.5
            goals.append(
                f"{anonymizer}: transfer ({transfer_label}) EER {np.mean(tr['eer']):.1f} vs "
                f"{long_label} {np.mean(long['eer']):.1f} (difference {diff:+.1f}, spread "
                f"{spread:.1f}: {'reached' if reached else 'not reached'}; "
                f"{'lower beyond the spread' if diff < -spread else 'not lower beyond it'}), "
                f"training {'CPU' if clock == 'train_cpu_s' else 'wall'} time {ratio:.2f}x "
                f"-> goal {'MET' if met else 'not met'}"
            )
    print("\n".join(lines))
    print()
    print("\n".join(goals))
    if args.json is not None:
        args.json.write_text(json.dumps(records, indent=2))


if __name__ == "__main__":
    main()
