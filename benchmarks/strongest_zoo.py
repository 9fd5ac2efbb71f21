"""The `strongest` zoo with and without transfer: worst-case EER against training CPU.

For each built-in anonymizer (pitch, VTLN, McAdams) and seed, on the configs of
``benchmarks/attacker_transfer.py`` (demo-size synthetic corpus, `tiny`, epochs cap E = 6,
scenarios original and semi-informed), four zoos:

    before transfer   the `strongest` zoo before `training.start` existed: baseline, `long` and
                      `augmented` (3E epochs, from scratch), each with and without AS-norm,
                      cosine and PLDA
    + finetuned       the same plus `finetuned` (started from the original-speech recognizer,
                      cap 3E, cosine and PLDA): the zoo as transfer first joined it
    transfer first    baseline, `finetuned` and `augmented` both started from the
                      original-speech recognizer (cap 3E; patience stops them once VER_S stops
                      improving), each with and without AS-norm
    today's strongest ``services.pipeline.zoo``: baseline, `finetuned` (transfer, in place of
                      `long`) and `augmented` from scratch, each with and without AS-norm

Printed per (anonymizer, zoo): the semi-informed worst case (EER % and the attacker and
back-end giving it; mean +- std over seeds) and the training CPU seconds of the zoo's distinct
anonymized-speech recognizers (each counted once, though AS-norm variants share one; the
original-speech recognizers are given apart). Recognizers are shared with
``attacker_transfer.py`` and ``trust_calibration.py`` through the stage store, so run it with
the same ``--out`` after them and only the augmented recognizers train anew.

    OMP_NUM_THREADS=1 UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/strongest_zoo.py \\
        --out out/transfer --seeds 0
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from attacker_transfer import Attacker, load_or_run, make_config, mean_std

from services.attacker.recipes import (
    BASELINE,
    FINETUNED,
    NAMED_ZOOS,
    STRONGEST_EPOCHS_SCALE,
    AttackerSpec,
    long_attacker_pair,
)
from services.attacker.training_config import AugmentationConfig
from services.pipeline.config import EvaluationConfig


def zoos() -> dict[str, tuple[str, list[AttackerSpec]]]:
    """{label: (run-name slug, attackers)}."""
    augmentation = {"augmentation": AugmentationConfig().model_dump(mode="json")}
    scratch, transfer = {"start": "scratch"}, {"start": "original"}
    before = [
        AttackerSpec(name=BASELINE),
        *long_attacker_pair("long", scratch),
        *long_attacker_pair("augmented", scratch | augmentation),
    ]
    finetuned = AttackerSpec(
        name=FINETUNED,
        training=transfer,
        epochs_scale=STRONGEST_EPOCHS_SCALE,
        backends=["cosine", "plda"],
        normalization="none",
    )
    return {
        "before transfer": ("before_transfer", before),
        "+ finetuned": ("strongest", [*before, finetuned]),
        "transfer first": (
            "transfer_first",
            [
                AttackerSpec(name=BASELINE),
                *long_attacker_pair(FINETUNED, transfer),
                *long_attacker_pair("augmented", transfer | augmentation),
            ],
        ),
        "today's strongest": ("strongest_today", NAMED_ZOOS["strongest"]()),
    }


def zoo_config(anonymizer: str, seed: int, slug: str, attackers: list[AttackerSpec]) -> Any:
    base = make_config(anonymizer, Attacker("scratch", 6), seed=seed)
    data = base.model_dump(mode="json")
    data["name"] = f"zoo-{anonymizer}-{slug}-seed{seed}"
    data["attackers"] = [a.model_dump(mode="json") for a in attackers]
    return EvaluationConfig.model_validate(data)


def training_cpu(result: dict[str, Any]) -> tuple[float, float]:
    """CPU seconds of the distinct (anonymized, original)-speech recognizers of a result."""
    seen: dict[str, tuple[str, float]] = {}
    for entry in result["training"].values():
        cpu = [h.get("cpu_seconds") for h in entry["history"]]
        seconds = float("nan") if None in cpu else float(sum(cpu))
        seen[entry["stage_key"]] = (entry["condition"], seconds)
    anonymized = sum(s for c, s in seen.values() if c == "anonymized")
    original = sum(s for c, s in seen.values() if c == "original")
    return anonymized, original


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/transfer"))
    ap.add_argument("--anonymizers", default="pitch,vtln,mcadams")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    anonymizers = [a for a in args.anonymizers.split(",") if a]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    lines = [
        "| anonymizer | zoo | attackers | worst-case semi-informed EER % | worst attacker "
        "(back-end) | training CPU s, anonymized recognizers | training CPU s, original |",
        "|---|---|---:|---:|---|---:|---:|",
    ]
    for anonymizer in anonymizers:
        for label, (slug, attackers) in zoos().items():
            eers, cpus, originals, worst = [], [], [], []
            for seed in seeds:
                cfg = zoo_config(anonymizer, seed, slug, attackers)
                result = load_or_run(args.out, cfg, run=not args.report_only)
                if result is None:
                    continue
                case = result["worst_case"]["semi-informed"]
                eers.append(float(case["eer_percent"]))
                worst.append(f"{case['attacker']} ({case['backend']})")
                anonymized, original = training_cpu(result)
                cpus.append(anonymized)
                originals.append(original)
            if not eers:
                continue
            lines.append(
                f"| {anonymizer} | {label} | {len(attackers)} | {mean_std(np.array(eers))} | "
                f"{', '.join(sorted(set(worst)))} | {mean_std(np.array(cpus), 0)} | "
                f"{mean_std(np.array(originals), 0)} |"
            )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
