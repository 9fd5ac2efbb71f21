"""Calibration of the trust check: does "NOT TRUSTWORTHY" mean a stronger attacker was in reach?

Runs (built-ins x seeds x epochs caps x init): pitch, VTLN, McAdams; seeds 0, 1, 2; caps 2 and 6
(the demo's); init scratch and original: 36 semi-informed attackers (`tiny`, cosine, the
demo-size synthetic corpus; the configs of ``benchmarks/attacker_transfer.py``, so both share
one stage store). Ground truth per run: "improvable" when a 3x longer attacker (same init, cap
3c) or a fine-tuned one (init original, cap c or 3c) reaches a semi-informed EER below the lower
end of the run's 95 % bootstrap interval (without ``--complete``, over the alternatives that
were run: the run table says how many). The trust check (``services.pipeline.trust``) is
re-applied to each run's results.json under a grid of thresholds (``UNMASK_TRUST_MAX_VER_S_PERCENT``
x ``UNMASK_TRUST_STILL_FALLING_VER_S_POINTS``); "NOT TRUSTWORTHY" is the check's positive.
Printed: per run its numbers and verdict under the chosen thresholds, and per threshold pair the
check's precision (of the runs it flags, how many were improvable) and recall (of the improvable
runs, how many it flags), F1 and the share of runs flagged.

    OMP_NUM_THREADS=1 UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/trust_calibration.py \
        --out out/transfer
    .venv/bin/python benchmarks/trust_calibration.py --out out/transfer --report-only
    .venv/bin/python benchmarks/trust_calibration.py --out out/quick --quick   # minutes
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path
from typing import Any

from attacker_transfer import Attacker, load_or_run, make_config

from services.pipeline.trust import assess_trust
from services.settings import Settings

VER_S_THRESHOLDS = (20.0, 30.0, 40.0, 50.0, 60.0, math.inf)
FALLING_THRESHOLDS = (0.5, 1.0, 2.0, 5.0, 10.0, math.inf)


def semi_row(result: dict[str, Any], seed: int) -> dict[str, Any]:
    return next(r for r in result["rows"] if r["scenario"] == "semi-informed" and r["seed"] == seed)


def seed_document(result: dict[str, Any], seed: int) -> dict[str, Any]:
    """The result document as if the run had this one seed (the check judges one verdict)."""
    training = {k: v for k, v in result["training"].items() if v.get("seed") == seed}
    summary = [
        {"scenario": r["scenario"], "backend": r["backend"], "eer_percent": r["eer_percent"]}
        for r in result["rows"]
        if r["seed"] == seed
    ]
    return {"summary": summary, "training": training}


def flagged(document: dict[str, Any], ver_s: float, falling: float) -> bool:
    settings = Settings(
        trust_max_ver_s_percent=min(ver_s, 100.0),
        trust_still_falling_ver_s_points=falling if math.isfinite(falling) else 1e9,
    )
    return not assess_trust(document, settings).trustworthy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/transfer"))
    ap.add_argument("--anonymizers", default="pitch,vtln,mcadams")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--caps", default="2,6", help="epochs caps of the judged runs")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="tiny corpus, pitch, seed 0, cap 1")
    ap.add_argument("--ver-s", type=float, default=40.0, help="VER_S threshold of the run table")
    ap.add_argument(
        "--falling", type=float, default=10.0, help="still-falling threshold of the run table"
    )
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--complete",
        action="store_true",
        help="judge only runs whose every alternative exists (default: any; the run table "
        "names the alternatives found)",
    )
    args = ap.parse_args()
    anonymizers = ["pitch"] if args.quick else [a for a in args.anonymizers.split(",") if a]
    seeds = [0] if args.quick else [int(s) for s in args.seeds.split(",") if s]
    caps = [1] if args.quick else [int(c) for c in args.caps.split(",") if c]
    needed = sorted({(i, e) for c in caps for i in ("scratch", "original") for e in (c, 3 * c)})
    results: dict[tuple[str, str, int, int], dict[str, Any]] = {}
    # Seed by seed, shortest caps first (the short runs are judged once the next cap is done).
    for seed, (init, epochs), anonymizer in itertools.product(
        seeds, sorted(needed, key=lambda k: (k[1], k[0])), anonymizers
    ):
        attacker = Attacker(init, epochs)  # type: ignore[arg-type]
        cfg = make_config(anonymizer, attacker, seed=seed, quick=args.quick)
        result = load_or_run(args.out, cfg, run=not args.report_only)
        if result is not None:
            results[(anonymizer, init, epochs, seed)] = result

    runs = []
    for anonymizer, seed, cap, init in itertools.product(
        anonymizers, seeds, caps, ("scratch", "original")
    ):
        own = results.get((anonymizer, init, cap, seed))
        if own is None:
            continue
        alternatives = [(init, 3 * cap), ("original", 3 * cap)]
        if init == "scratch":
            alternatives.append(("original", cap))
        alt = [
            (semi_row(results[(anonymizer, i, e, seed)], seed)["eer_percent"], f"{i} {e}")
            for i, e in alternatives
            if (anonymizer, i, e, seed) in results
        ]
        if not alt or (args.complete and len(alt) < len(alternatives)):
            continue  # no ground truth (or, with --complete, not every alternative was run)
        row = semi_row(own, seed)
        low = row["eer_ci95_percent"][0]
        best_alt, best_name = min(alt)
        entry = own["training"][f"anonymized-seed{seed}"]
        used = next(h for h in entry["history"] if h["epoch"] == entry["best_epoch"])
        runs.append(
            {
                "anonymizer": anonymizer,
                "seed": seed,
                "cap": cap,
                "init": init,
                "eer": row["eer_percent"],
                "ci_low": low,
                "best_alternative": best_alt,
                "best_alternative_name": best_name,
                "alternatives": f"{len(alt)}/{len(alternatives)}",
                "improvable": best_alt < low,
                "ver_s": used["ver_source"],
                "epochs_run": len(entry["history"]),
                "stopped": entry.get("stopped"),
                "document": seed_document(own, seed),
            }
        )

    print(f"{len(runs)} runs judged")
    print(
        f"| anonymizer | seed | cap | init | EER % [95 % low] | best alternative EER % | "
        f"improvable | VER_S % used | epochs run | stopped | flagged (VER_S {args.ver_s:g}, "
        f"falling {args.falling:g}) |"
    )
    print("|---|---:|---:|---|---:|---:|:---:|---:|---:|---|:---:|")
    for r in runs:
        flag = flagged(r["document"], args.ver_s, args.falling)
        print(
            f"| {r['anonymizer']} | {r['seed']} | {r['cap']} | {r['init']} | "
            f"{r['eer']:.1f} [{r['ci_low']:.1f}] | {r['best_alternative']:.1f} "
            f"({r['best_alternative_name']}; {r['alternatives']} run) | "
            f"{'yes' if r['improvable'] else 'no'} | "
            f"{r['ver_s']:.0f} | {r['epochs_run']} | {r['stopped']} | {'yes' if flag else 'no'} |"
        )
    print()
    print(
        "| VER_S threshold % | still-falling threshold (points) | flagged | precision | recall "
        "| F1 |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    positives = sum(r["improvable"] for r in runs)
    table = []
    for ver_s, falling in itertools.product(VER_S_THRESHOLDS, FALLING_THRESHOLDS):
        flags = [flagged(r["document"], ver_s, falling) for r in runs]
        tp = sum(f and r["improvable"] for f, r in zip(flags, runs, strict=True))
        n_flag = sum(flags)
        precision = tp / n_flag if n_flag else float("nan")
        recall = tp / positives if positives else float("nan")
        f1 = (
            2 * precision * recall / (precision + recall)
            if n_flag and positives and precision + recall > 0
            else float("nan")
        )
        table.append((ver_s, falling, n_flag, precision, recall, f1))
        print(
            f"| {ver_s:g} | {falling:g} | {n_flag}/{len(runs)} | {precision:.2f} | "
            f"{recall:.2f} | {f1:.2f} |"
        )
    print(f"\nimprovable runs (ground truth): {positives}/{len(runs)}")
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "runs": [{k: v for k, v in r.items() if k != "document"} for r in runs],
                    "thresholds": table,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
