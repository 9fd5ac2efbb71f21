"""Calibration of the trust check: does "NOT TRUSTWORTHY" mean a stronger attacker was in reach?

Runs (built-ins x seeds x epochs caps x init, per target-selection arm ``--tsa``): by default
pitch, VTLN, McAdams; seeds 0, 1, 2; caps 2 and 6; init scratch and original: 36 semi-informed
attackers (`tiny`, cosine, the demo-size synthetic corpus, same-gender TSA at utterance level; the
configs of ``benchmarks/attacker_transfer.py``, so both share one stage store). The ``random`` arm
is the demo's target selection (targets of either gender), which hides more of the speaker: the
recorded round runs it for pitch with caps 2, 6 and 12 (its seed-0, cap-12, init-original run is
the demo's recognizer at one torch thread). Ground truth per run: "improvable" when a 3x longer
attacker (same init, cap 3c) or a fine-tuned one (init original, cap c or 3c) reaches a
semi-informed EER below the lower end of the run's 95 % bootstrap interval (without
``--complete``, over the alternatives that were run: the run table says how many). The trust
check (``services.pipeline.trust``) is re-applied to each run's results.json under a grid of
thresholds (``UNMASK_TRUST_MAX_VER_S_PERCENT`` x ``UNMASK_TRUST_STILL_FALLING_VER_S_POINTS``, the
still-falling test over the window in force, ``UNMASK_TRUST_STILL_FALLING_WINDOW_EPOCHS``);
"NOT TRUSTWORTHY" is the check's positive. Printed: per run its numbers and verdict under the
chosen thresholds (``--ver-s``, ``--falling``: today's defaults), and per threshold pair the
check's precision (of the runs it flags, how many were improvable), recall (of the improvable
runs, how many it flags), F1 over all runs, its 95 % interval and the F1 per arm, and in what
share of bootstrap resamples of the runs (drawn within each arm) the pair's F1 is above the
chosen pair's. The rule the last line applies: the thresholds move to the best-F1 pair only when
it beats today's in at least 95 % of the resamples; a smaller lead is within what 50-odd runs
can tell apart.

    OMP_NUM_THREADS=1 UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/trust_calibration.py \
        --out out/transfer
    OMP_NUM_THREADS=1 UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/trust_calibration.py \
        --out out/transfer --tsa random --anonymizers pitch --caps 2,6,12
    .venv/bin/python benchmarks/trust_calibration.py --out out/transfer --report-only \
        --tsa same-gender,random --caps 2,6,12
    .venv/bin/python benchmarks/trust_calibration.py --out out/quick --quick   # minutes
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from attacker_transfer import Attacker, TsaStrategy, load_or_run, make_config

from services.pipeline.trust import assess_trust
from services.settings import Settings

VER_S_THRESHOLDS = (20.0, 30.0, 35.0, 40.0, 45.0, 50.0, 60.0, math.inf)
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


def f1_scores(
    flags: np.ndarray, improvable: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """F1 of each threshold pair against ``improvable`` (runs), 2 TP / (flagged + improvable);
    ``flags``: pairs x runs, the check's positives. ``weights`` (resamples x runs, how often each
    run was drawn) gives one F1 per resample and pair: (resamples, pairs); without it, (pairs,).
    nan where the check flags nothing or no run is improvable."""
    w = np.ones((1, improvable.size)) if weights is None else weights
    tp = w @ (flags & improvable).T.astype(float)
    n_flag = w @ flags.T.astype(float)
    positives = (w @ improvable.astype(float))[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = 2 * tp / (n_flag + positives)
    f1 = np.where((n_flag > 0) & (positives > 0), f1, np.nan)
    return f1[0] if weights is None else f1


def bootstrap_f1(
    flags: np.ndarray, improvable: np.ndarray, arm: np.ndarray, n: int, rng: np.random.Generator
) -> np.ndarray:
    """F1 of every pair (rows of ``flags``) in ``n`` resamples of the runs, drawn with
    replacement within each arm (so each arm keeps its number of runs): (n, pairs)."""
    counts = np.zeros((n, flags.shape[1]))
    for a in np.unique(arm):
        idx = np.flatnonzero(arm == a)
        draws = rng.integers(0, idx.size, size=(n, idx.size))
        np.add.at(counts, (np.arange(n)[:, None], idx[draws]), 1.0)
    return f1_scores(flags, improvable, counts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/transfer"))
    ap.add_argument("--anonymizers", default="pitch,vtln,mcadams")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--caps", default="2,6", help="epochs caps of the judged runs")
    ap.add_argument(
        "--tsa",
        default="same-gender",
        help="target selection strategies, each an arm of runs (same-gender, random: the demo's)",
    )
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="tiny corpus, pitch, seed 0, cap 1")
    ap.add_argument("--ver-s", type=float, default=40.0, help="VER_S threshold of the run table")
    ap.add_argument(
        "--falling", type=float, default=10.0, help="still-falling threshold of the run table"
    )
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--bootstrap", type=int, default=2000, help="resamples of the runs for the F1 spread"
    )
    ap.add_argument("--bootstrap-seed", type=int, default=0)
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
    if args.ver_s not in VER_S_THRESHOLDS or args.falling not in FALLING_THRESHOLDS:
        ap.error(
            f"--ver-s must be one of {VER_S_THRESHOLDS} and --falling one of {FALLING_THRESHOLDS}"
        )
    arms: list[TsaStrategy] = []
    for name in args.tsa.split(","):
        if name not in ("same-gender", "random"):
            ap.error(f"--tsa: unknown strategy {name!r} (same-gender, random)")
        arms.append(name)
    needed = sorted({(i, e) for c in caps for i in ("scratch", "original") for e in (c, 3 * c)})
    results: dict[tuple[str, str, str, int, int], dict[str, Any]] = {}
    # Seed by seed, shortest caps first (the short runs are judged once the next cap is done).
    for seed, (init, epochs), tsa, anonymizer in itertools.product(
        seeds, sorted(needed, key=lambda k: (k[1], k[0])), arms, anonymizers
    ):
        attacker = Attacker(init, epochs)  # type: ignore[arg-type]
        cfg = make_config(anonymizer, attacker, seed=seed, quick=args.quick, tsa=tsa)
        result = load_or_run(args.out, cfg, run=not args.report_only)
        if result is not None:
            results[(tsa, anonymizer, init, epochs, seed)] = result

    runs = []
    for tsa, anonymizer, seed, cap, init in itertools.product(
        arms, anonymizers, seeds, caps, ("scratch", "original")
    ):
        own = results.get((tsa, anonymizer, init, cap, seed))
        if own is None:
            continue
        alternatives = [(init, 3 * cap), ("original", 3 * cap)]
        if init == "scratch":
            alternatives.append(("original", cap))
        alt = [
            (semi_row(results[(tsa, anonymizer, i, e, seed)], seed)["eer_percent"], f"{i} {e}")
            for i, e in alternatives
            if (tsa, anonymizer, i, e, seed) in results
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
                "tsa": tsa,
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
        f"| TSA | anonymizer | seed | cap | init | EER % [95 % low] | best alternative EER % | "
        f"improvable | VER_S % used | epochs run | stopped | flagged (VER_S {args.ver_s:g}, "
        f"falling {args.falling:g}) |"
    )
    print("|---|---|---:|---:|---|---:|---:|:---:|---:|---:|---|:---:|")
    for r in runs:
        flag = flagged(r["document"], args.ver_s, args.falling)
        print(
            f"| {r['tsa']} | {r['anonymizer']} | {r['seed']} | {r['cap']} | {r['init']} | "
            f"{r['eer']:.1f} [{r['ci_low']:.1f}] | {r['best_alternative']:.1f} "
            f"({r['best_alternative_name']}; {r['alternatives']} run) | "
            f"{'yes' if r['improvable'] else 'no'} | "
            f"{r['ver_s']:.0f} | {r['epochs_run']} | {r['stopped']} | {'yes' if flag else 'no'} |"
        )
    print()
    if not runs:
        print("no run to judge yet")
        return
    pairs = list(itertools.product(VER_S_THRESHOLDS, FALLING_THRESHOLDS))
    flags = np.array(
        [[flagged(r["document"], v, f) for r in runs] for v, f in pairs], dtype=bool
    )  # (pairs, runs)
    improvable = np.array([r["improvable"] for r in runs], dtype=bool)
    arm_of_run = np.array([r["tsa"] for r in runs])
    present = [a for a in arms if (arm_of_run == a).any()]
    per_arm = {
        a: f1_scores(flags[:, arm_of_run == a], improvable[arm_of_run == a]) for a in present
    }
    today = pairs.index((args.ver_s, args.falling))
    rng = np.random.default_rng(args.bootstrap_seed)
    boot = bootstrap_f1(flags, improvable, arm_of_run, args.bootstrap, rng)  # (B, pairs)
    better = (boot > boot[:, [today]]).mean(axis=0)
    low = np.full(len(pairs), np.nan)
    high = np.full(len(pairs), np.nan)
    defined = ~np.isnan(boot).all(axis=0)  # a pair that flags nothing has no F1 at all
    if defined.any():
        low[defined], high[defined] = np.nanpercentile(boot[:, defined], [2.5, 97.5], axis=0)
    arm_columns = "".join(f" F1 {a} |" for a in present) if len(present) > 1 else ""
    print(
        "| VER_S threshold % | still-falling threshold (points) | flagged | precision | recall "
        f"| F1 | F1 95 % interval |{arm_columns} F1 above "
        f"{args.ver_s:g}/{args.falling:g} in |"
    )
    print(
        "|---:|---:|---:|---:|---:|---:|---:|"
        + "---:|" * (len(present) if arm_columns else 0)
        + "---:|"
    )
    positives = int(improvable.sum())
    pooled = f1_scores(flags, improvable)
    table = []
    for k, (ver_s, falling) in enumerate(pairs):
        n_flag = int(flags[k].sum())
        tp = int((flags[k] & improvable).sum())
        precision = tp / n_flag if n_flag else float("nan")
        recall = tp / positives if positives else float("nan")
        f1 = float(pooled[k])
        table.append((ver_s, falling, n_flag, precision, recall, f1, float(better[k])))
        arm_cells = "".join(f" {per_arm[a][k]:.2f} |" for a in present) if arm_columns else ""
        print(
            f"| {ver_s:g} | {falling:g} | {n_flag}/{len(runs)} | {precision:.2f} | "
            f"{recall:.2f} | {f1:.2f} | {low[k]:.2f}-{high[k]:.2f} |{arm_cells} "
            f"{100 * better[k]:.0f} % |"
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
    if np.isnan(pooled).all():
        print("no threshold pair has an F1 (no run was improvable): nothing to choose from")
        return
    best = int(np.nanargmax(pooled))
    print(
        f"best F1: VER_S {pairs[best][0]:g} %, still-falling {pairs[best][1]:g} points "
        f"({pooled[best]:.2f}); above {args.ver_s:g}/{args.falling:g} ({pooled[today]:.2f}) in "
        f"{100 * better[best]:.0f} % of {args.bootstrap} resamples of the runs (within each arm). "
        + (
            "Evidence to move the thresholds (95 % or more)."
            if better[best] >= 0.95
            else "Not evidence enough to move the thresholds (under 95 %)."
        )
    )


if __name__ == "__main__":
    main()
