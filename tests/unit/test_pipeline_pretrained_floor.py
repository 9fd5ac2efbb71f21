"""On the synthetic corpus: the ignorant and lazy-informed rows of a verdict are never weaker
than the pretrained verifier's (the challenger, scored on the same trials), and a row the
pretrained verifier gave names it, in results.json and in the printed verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.verdict import document_rows, verdict_lines
from services.metrics import catalogue
from services.pipeline.challenger import PRETRAINED_FLOOR_SCENARIOS
from services.pipeline.config import parse_config
from services.pipeline.evaluation import run_evaluation
from support.configs import OMIT, tiny_config

pytestmark = pytest.mark.slow
pytest.importorskip("resemblyzer", reason="resemblyzer is a dependency (pyproject.toml)")

EER = catalogue.EER.key


def test_a_weak_trained_attacker_gives_way_to_the_pretrained_verifier(tmp_path: Path) -> None:
    # A recognizer trained one epoch on 4 utterances per speaker is weak; GE2E has seen
    # thousands of speakers: on the rows of the original-speech recognizer it is the stronger.
    cfg = parse_config(
        tiny_config(
            synthetic={"n_speakers": 12, "utts_per_speaker": 5, "enrollments_per_speaker": 2,
                       "trials_per_speaker": 2},
            scenarios=["ignorant", "lazy-informed", "semi-informed"],
            training={"epochs": 1, "target_classifier": OMIT},
            backends=["cosine"],
            metrics={"bootstrap_resamples": 10, "legal": None},
        )
    )  # fmt: skip
    result = run_evaluation(cfg, tmp_path / "out")
    scenarios = result["challenger"]["scenarios"]
    assert set(scenarios) == {"ignorant", "lazy-informed", "semi-informed"}
    trained = {r["scenario"]: r[EER] for r in result["rows"]}
    gave_way = []
    for scenario, entry in scenarios.items():
        row, pretrained = entry["row"], entry[EER]
        assert entry["headline"][EER] == pytest.approx(trained[scenario])
        if scenario in PRETRAINED_FLOOR_SCENARIOS:
            # The invariant: never weaker than the pretrained verifier on the same trials.
            assert row[EER] <= pretrained
            assert row[EER] == pytest.approx(min(trained[scenario], pretrained))
        else:
            assert row[EER] == pytest.approx(trained[scenario]) and row["attacker"] == "baseline"
        if row["pretrained"]:
            assert row["attacker"] == "ge2e" and row[EER] == pytest.approx(pretrained)
            assert pretrained < trained[scenario]
            gave_way.append(scenario)
    assert gave_way, {s: (trained[s], e[EER]) for s, e in scenarios.items()}
    # The document's trust block carries the rows (the API and the printed verdict read it).
    assert result["trust"]["challenger"]["scenarios"] == scenarios
    text = "\n".join(verdict_lines(document_rows(result), result["trust"]))
    for scenario in gave_way:
        eer = scenarios[scenario]["row"][EER]
        assert f"  {scenario}: EER {eer:.1f} % by ge2e (pretrained), below the trained" in text
