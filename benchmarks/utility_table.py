"""Utility beside privacy on the synthetic corpus: docs/results-synthetic.md's table.

Five anonymizers on the demo-size synthetic corpus (48 speakers x 24 utterances, same-gender TSA
at utterance level): the three DSP built-ins (pitch, VTLN, McAdams) and the two test-only
degenerate ones (silence, noise). Each is one ``unmask evaluate`` run with a ``utility:`` block
(ASR trained on the protocol's original attacker-train speech, default settings) and the ignorant
scenario (its recognizer, trained on original speech, is the one GVD needs), in a shared stage
store: the corpus, the original-speech recognizer and the ASR are computed once.

    UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/utility_table.py --out out/utility
    .venv/bin/python benchmarks/utility_table.py --out out/utility --quick   # tiny, minutes

Printed per anonymizer: WER % on original and anonymized trials, the increase (points) with its
speaker-bootstrap 95 % interval, CER % anonymized, rho_F0, GVD (dB), usable speech (with the
guard's reasons), the ignorant attacker's EER (%), and the leaderboard tier the ranking rule puts
it in; then the cost of the utility stages (compute seconds, this machine).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from services.anonymizers.kinds.builtin import BuiltinAnonymizerConfig
from services.attacker.training_config import TrainingConfig
from services.corpus.protocol import TargetSelection
from services.pipeline.config import (
    EvaluationConfig,
    MetricsSpec,
    SyntheticCorpusSpec,
)
from services.pipeline.evaluation import run_evaluation
from services.utility.config import AsrSpec, UtilityConfig

ANONYMIZERS = ("pitch", "vtln", "mcadams", "silence", "noise")


def make_config(anonymizer: str, quick: bool) -> EvaluationConfig:
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
        name=f"utility-{anonymizer}",
        synthetic=synthetic,
        anonymizer=BuiltinAnonymizerConfig(name=anonymizer),
        tsa=TargetSelection(strategy="same-gender", granularity="utterance", seed=0),
        scenarios=["ignorant"],
        training=TrainingConfig(preset="tiny", epochs=2 if quick else 8, batch_size=32),
        seeds=[0],
        backends=["cosine"],
        metrics=MetricsSpec(bootstrap_resamples=0, srd=False),
        utility=UtilityConfig(asr=AsrSpec(epochs=2) if quick else AsrSpec()),
    )


def _fmt(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{float(value):.{digits}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/utility"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--anonymizers", default=",".join(ANONYMIZERS))
    args = ap.parse_args()
    stages = args.out / "stages"
    results = {}
    for name in [a for a in args.anonymizers.split(",") if a]:
        cfg = make_config(name, args.quick)
        print(f"running {cfg.name}", flush=True)
        results[name] = run_evaluation(cfg, args.out / cfg.name, stages_dir=stages)
    bound = UtilityConfig().max_wer_increase_percent
    print(
        "| anonymizer | WER % original | WER % anonymized | WER increase (points) [95 % CI] | "
        "CER % anonymized | ρF0 | GVD (dB) | usable speech | ignorant EER % | tier |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
    costs: dict[str, float] = {}
    for name, result in results.items():
        u = result["utility"]
        wer = u.get("wer") or {}
        ci = wer.get("wer_increase_ci95_percent")
        ci_text = f" [{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else ""
        usable = u["usable_speech"]
        usable_text = "yes" if usable["usable"] else "no: " + ", ".join(usable["reasons"])
        eer = next(r["eer_percent"] for r in result["rows"] if r["scenario"] == "ignorant")
        increase = wer.get("wer_increase_percent")
        if not usable["usable"]:
            tier = "unusable (last)"
        elif bound is not None and increase is not None and increase > bound:
            tier = f"above the bound ({bound:g} points)"
        else:
            tier = "within the bound"
        print(
            f"| {name} | {_fmt(wer.get('wer_original_percent'))} | "
            f"{_fmt(wer.get('wer_anonymized_percent'))} | {_fmt(increase)}{ci_text} | "
            f"{_fmt(wer.get('cer_anonymized_percent'))} | "
            f"{_fmt(u['pitch_correlation']['mean'], 2)} | "
            f"{_fmt(u['voice_distinctiveness']['gvd_db'])} | {usable_text} | {_fmt(eer)} | {tier} |"
        )
        for stage in result["stages"]:
            if stage["stage"].startswith("utility-") and stage["compute_seconds"] is not None:
                costs[f"{stage['stage']} {stage['key']}"] = stage["compute_seconds"]
    print()
    print("| utility stage | compute seconds |")
    print("|---|---:|")
    for key, seconds in costs.items():
        print(f"| {key} | {seconds:.1f} |")
    (args.out / "utility-table.json").write_text(
        json.dumps({k: v["utility"] for k, v in results.items()}, indent=1)
    )


if __name__ == "__main__":
    main()
