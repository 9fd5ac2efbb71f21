"""Cost of the attacker zoo: total job time of the ``strongest`` zoo vs the baseline attacker.

    .venv/bin/python benchmarks/attacker_cost.py [--reduced] [--json OUT.json]

Both jobs run the demo protocol (``services.pipeline.config.demo_config()``: the pitch
anonymizer on the synthetic corpus, the tiny recognizer, 3 scenarios), each in its own empty
stage store, so every stage (corpus, anonymization, training, embedding, scoring, report) is
computed: the wall time is what a fresh job of each kind costs. The ``strongest`` zoo is the
baseline attacker plus ``long`` (3x the epochs) and ``augmented`` (3x the epochs, augmentation
with the ``AugmentationConfig`` defaults), both with cosine and PLDA and AS-norm; its report also
gives the EER of each attacker and the worst case.

``--reduced``: the demo at a reduced size (24 speakers x 12 utterances, 2 epochs) for a shared
or slow machine; the ratio is then that of the reduced jobs, not of the demo.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.metrics import catalogue
from services.pipeline.config import EvaluationConfig, SyntheticCorpusSpec, demo_config
from services.pipeline.evaluation import run_evaluation


def reduced(cfg: EvaluationConfig) -> EvaluationConfig:
    """The demo at a reduced size (24 speakers x 12 utterances, 2 epochs)."""
    synthetic = SyntheticCorpusSpec(
        n_speakers=24,
        utts_per_speaker=12,
        n_attacker_train_speakers=12,
        n_eval_speakers=8,
        n_target_speakers=4,
        enrollments_per_speaker=4,
        trials_per_speaker=4,
    )
    training = cfg.training.model_copy(update={"epochs": 2, "adversarial_start_epoch": 1})
    return cfg.model_copy(update={"synthetic": synthetic, "training": training})


def stage_seconds(result: dict[str, Any]) -> dict[str, float]:
    """Compute time (s) per stage family of a result, distinct stage keys counted once."""
    out: dict[str, float] = {}
    seen: set[tuple[str, str]] = set()
    for s in result["stages"]:
        if (s["stage"], s["key"]) in seen or s["compute_seconds"] is None:
            continue
        seen.add((s["stage"], s["key"]))
        out[s["stage"]] = out.get(s["stage"], 0.0) + float(s["compute_seconds"])
    return out


def run(cfg: EvaluationConfig, label: str) -> dict[str, Any]:
    """One fresh job (its own empty stage store); its wall time (s) and headline numbers."""
    with tempfile.TemporaryDirectory(prefix=f"attacker-cost-{label}-") as tmp:
        usage0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        result = run_evaluation(cfg, Path(tmp) / "out")
        wall = time.perf_counter() - t0
        usage1 = resource.getrusage(resource.RUSAGE_SELF)
    # CPU time (s, user + system, every thread of this process): less sensitive than the wall
    # time to other work on a shared machine.
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    eer = catalogue.EER.key
    rows = {
        f"{r.get('attacker', 'baseline')}|{r['scenario']}|{r['backend']}": r[eer]
        for r in result["rows"]
    }
    return {
        "label": label,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "stage_seconds": {k: round(v, 1) for k, v in stage_seconds(result).items()},
        "eer_percent": rows,
        "worst_case": {
            s: {"attacker": w["attacker"], "backend": w["backend"], eer: w[eer]}
            for s, w in (result.get("worst_case") or {}).items()
        },
        "trust": result["trust"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reduced", action="store_true", help="a reduced demo (see the doc)")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    base = demo_config()
    if args.reduced:
        base = reduced(base)
    strongest = base.model_copy(update={"attackers": "strongest"})
    # Re-validate: the zoo is checked against the config's training.
    strongest = EvaluationConfig.model_validate(strongest.model_dump(mode="json"))
    results = [run(base, "baseline"), run(strongest, "strongest")]
    ratio = results[1]["wall_seconds"] / results[0]["wall_seconds"]
    cpu_ratio = results[1]["cpu_seconds"] / max(results[0]["cpu_seconds"], 1e-9)
    print(f"demo protocol{' (reduced)' if args.reduced else ''}: total job time (s)")
    print(f"{'zoo':<10} {'wall s':>8} {'CPU s':>8}  per stage family (compute s)")
    for r in results:
        stages = ", ".join(f"{k} {v}" for k, v in sorted(r["stage_seconds"].items()))
        print(f"{r['label']:<10} {r['wall_seconds']:>8.1f} {r['cpu_seconds']:>8.1f}  {stages}")
    print(f"strongest / baseline: {ratio:.2f}x wall, {cpu_ratio:.2f}x CPU")
    for r in results:
        print(f"{r['label']}: EER % by attacker|scenario|backend: {r['eer_percent']}")
        if r["worst_case"]:
            print(f"{r['label']}: worst case: {r['worst_case']}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"reduced": args.reduced, "ratio": ratio, "cpu_ratio": cpu_ratio, "runs": results},
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
