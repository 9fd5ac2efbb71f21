"""benchmarks/outside_attackers.py: its zoo and its table, on a constructed result document."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

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
