"""benchmarks/outside_attackers.py: its zoo and its table, on a constructed result document."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module() -> ModuleType:
    path = ROOT / "benchmarks" / "outside_attackers.py"
    spec = importlib.util.spec_from_file_location("outside_attackers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(attacker: str, scenario: str, backend: str, eer: float) -> dict[str, Any]:
    return {
        "attacker": attacker,
        "scenario": scenario,
        "backend": backend,
        "seed": 0,
        "eer_percent": eer,
        "eer_ci95_percent": [eer - 2.0, eer + 3.0],
    }


def test_every_family_runs_and_the_table_names_the_verdict_and_the_challenger() -> None:
    bench = _module()
    names = [a.name for a in bench.attackers()]
    assert names == ["baseline", "scratch-3x", "finetuned", "ge2e", "ge2e-finetuned"]
    finetuned_verifier = bench.attackers()[-1]
    assert finetuned_verifier.pretrained == "ge2e" and finetuned_verifier.finetune
    cfg = bench.make_config("synthetic", 1, bench.sizes(smoke=True), "pitch", None)
    assert cfg.scenarios == bench.SCENARIOS and cfg.seeds == [1]
    assert cfg.backends == ["cosine", "plda"] and cfg.training.epochs == 2
    result = {
        "rows": [_row("baseline", "semi-informed", "plda", 9.6)]
        + [_row("ge2e", s, "cosine", e) for s, e in (("ignorant", 40.4), ("lazy-informed", 23.4))],
        "worst_case": {
            "semi-informed": {"attacker": "baseline", "backend": "plda", "eer_percent": 9.6}
        },
        "trust": {"trustworthy": False, "reasons": [{"code": "challenger_stronger"}]},
        "challenger": {
            "attacker": "ge2e",
            "eer_percent": 5.0,
            "headline": {"attacker": "baseline", "eer_percent": 9.6},
            "difference_points": -4.6,
            "interval_points": [-7.0, -1.5],
            "stronger": True,
            "cpu_seconds": 3.2,
            "compute_seconds": 12.0,
        },
    }
    text = "\n".join(bench.table("espeak", [result]))
    assert "| baseline | plda |  |  |  | 9.6 (7.6-12.6) |" in text
    assert "| ge2e | cosine |  | 40.4 (38.4-43.4) | 23.4 (21.4-26.4) |  |" in text
    assert "verdict EER 9.6 % (baseline, plda); NOT TRUSTWORTHY (challenger_stronger)" in text
    assert (
        "challenger ge2e 5.0 % vs baseline 9.6 %, difference -4.6 (-7.0 to -1.5), stronger" in text
    )


def test_judged_runs_give_precision_and_recall_against_the_zoo() -> None:
    bench = _module()
    base = bench.make_config("synthetic", 0, bench.sizes(smoke=True), "pitch", None)
    alone = bench.judged_config(base, 1, "scratch")
    assert alone.attackers is None and alone.training.epochs == 1
    assert alone.training.start == "scratch" and alone.name.endswith("-alone-scratch-cap1")
    # The default start stays unset, so the default-cap run shares the zoo's baseline stages.
    assert bench.judged_config(base, 2, "original").training.start is None
    zoo = {
        "rows": [
            _row("baseline", "semi-informed", "plda", 9.0),
            _row("ge2e", "semi-informed", "cosine", 20.0),
        ]
    }

    def run(eer: float, trustworthy: bool) -> dict[str, Any]:
        # The judged run's trust is re-assessed from its history: still falling at its cap of
        # 2 epochs (flagged), or already rising (trustworthy).
        ver_s = [30.0, 31.0] if trustworthy else [30.0, 15.0]
        history = [
            {"epoch": e, "ver_source": v, "loss_source": 5.0 - e} for e, v in enumerate(ver_s, 1)
        ]
        return {
            "rows": [
                _row("baseline", "semi-informed", "cosine", eer),
                _row("baseline", "semi-informed", "plda", eer + 1.0),
            ],
            "training": {
                "anonymized-seed0": {
                    "stopped": "cap",
                    "epochs_cap": 2,
                    "best_epoch": 1 if trustworthy else 2,
                    "history": history,
                }
            },
            "trust": {"trustworthy": True, "reasons": []},
        }

    short = bench.judged_run(run(15.0, False), zoo, start="original", cap=2, default_cap=10)
    # 9.0 (baseline, plda) lies below 13.0, the lower end of the judged cosine verdict.
    assert short["improvable"] and short["flagged"] and short["backend"] == "cosine"
    assert short["best_alternative"] == "baseline, plda 9.0 %"
    missed = bench.judged_run(run(12.0, True), zoo, start="scratch", cap=2, default_cap=10)
    assert missed["improvable"] and not missed["flagged"]
    # The default cap is the zoo's own baseline: only the other families can make it improvable.
    itself = bench.judged_run(run(9.0, False), zoo, start="original", cap=10, default_cap=10)
    assert itself["best_alternative"].startswith("ge2e") and not itself["improvable"]
    text = "\n".join(bench.trust_table("espeak", [short, missed, itself]))
    assert "3 runs: 2 improvable, 2 flagged; precision 1/2 = 0.50, recall 1/2 = 0.50" in text
    assert "NOT TRUSTWORTHY (ver_s_still_falling)" in text


def test_a_reduced_zoo_keeps_the_baseline_and_gets_its_own_name() -> None:
    bench = _module()
    size = bench.sizes(smoke=True)
    full = bench.make_config("synthetic", 0, size, "pitch", None)
    reduced = bench.make_config("synthetic", 0, size, "pitch", None, ["baseline", "finetuned"])
    assert [a.name for a in reduced.attackers] == ["baseline", "finetuned"]
    assert len(full.attackers) == len(bench.FAMILIES)
    assert reduced.name == full.name + "-zoo-baseline-finetuned"
    with pytest.raises(SystemExit, match="must include baseline"):
        bench.attackers(["finetuned"])


def test_a_zoo_without_the_baseline_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _module().main(["--families", "finetuned"]) == 2
    assert capsys.readouterr().err == "outside_attackers: --families must include baseline\n"
