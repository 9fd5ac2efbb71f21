"""The challenger's decision rule (services/pipeline/challenger.py) on constructed scores, and
what the trust check makes of its block."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from services.metrics import SpeakerTrials, catalogue
from services.pipeline.challenger import challenge_decision, challenger_message
from services.pipeline.trust import assess_trust, trust_from_document
from services.settings import Settings

N_SPEAKERS = 20


def _trials(separation: float, seed: int, noise_of: np.ndarray | None = None) -> SpeakerTrials:
    """4 target and 20 non-target trials per speaker; target scores ``separation`` above the
    non-targets (unit-variance Gaussians). ``noise_of``: reuse these base scores (paired)."""
    rng = np.random.default_rng(seed)
    speakers = np.repeat([f"s{i:02d}" for i in range(N_SPEAKERS)], 24)
    is_target = np.tile(np.r_[np.ones(4, bool), np.zeros(20, bool)], N_SPEAKERS)
    base = rng.standard_normal(speakers.size) if noise_of is None else noise_of
    return SpeakerTrials(base + separation * is_target, is_target, speakers.astype(np.str_))


def test_a_challenger_far_ahead_is_stronger_beyond_the_interval() -> None:
    headline = [_trials(1.0, seed) for seed in (1, 2, 3)]  # EER about 31 %
    decision = challenge_decision(headline, _trials(4.0, 9))  # EER about 2 %
    low, high = decision["interval_points"]
    assert decision["stronger"] and low <= decision["difference_points"] <= high < 0
    assert decision["difference_points"] < -15 and decision["n_speakers"] == N_SPEAKERS


def test_a_challenger_within_the_interval_or_weaker_is_not_acted_on() -> None:
    headline = [_trials(2.0, 0)]
    # Slightly better, but its errors fall on other speakers: inside the speakers' spread.
    near = challenge_decision(headline, _trials(2.1, 11))
    assert near["difference_points"] < 0
    assert not near["stronger"] and near["interval_points"][1] >= 0
    # The same gain on the same trials (paired: a uniform shift of the targets) is beyond it.
    base = np.random.default_rng(5).standard_normal(N_SPEAKERS * 24)
    paired = challenge_decision([_trials(2.0, 0, noise_of=base)], _trials(2.6, 0, noise_of=base))
    assert paired["stronger"]
    weaker = challenge_decision(headline, _trials(0.5, 7))
    assert not weaker["stronger"] and weaker["difference_points"] > 0


def test_unpaired_trials_are_refused() -> None:
    other = _trials(1.0, 1)
    other = SpeakerTrials(other.scores, other.is_target, np.char.add(other.speaker_ids, "x"))
    with pytest.raises(ValueError, match="not paired"):
        challenge_decision([_trials(1.0, 0)], other)


SETTINGS = Settings(trust_max_original_eer_percent=10.0, trust_max_ver_s_percent=40.0)


def _block(stronger: bool) -> dict[str, Any]:
    return {
        "attacker": "ge2e",
        "family": "pretrained GE2E verifier (Resemblyzer), not trained on this corpus",
        "scenario": "semi-informed",
        "backend": "cosine",
        "eer_percent": 23.4,
        "headline": {"attacker": "baseline", "backend": "plda", "eer_percent": 35.7},
        "difference_points": -12.3,
        "interval_points": [-16.0, -8.1] if stronger else [-16.0, 0.4],
        "confidence": 0.95,
        "n_speakers": 24,
        "stronger": stronger,
        "cpu_seconds": 12.0,
    }


def _document(block: dict[str, Any] | None, zoo: bool = False) -> dict[str, Any]:
    eer = {catalogue.EER.key: {"mean": 35.7}}
    document: dict[str, Any] = {
        "summary": [
            {"scenario": "semi-informed", "backend": "plda", **eer},
            {"scenario": "original", "backend": "plda", catalogue.EER.key: {"mean": 2.0}},
        ],
        "training": {},
    }
    if block is not None:
        document["challenger"] = block
    if zoo:
        document["worst_case"] = {"semi-informed": {"attacker": "baseline", "backend": "plda"}}
    return document


@pytest.mark.parametrize("zoo", [False, True])
def test_a_stronger_challenger_makes_the_verdict_not_trustworthy_and_is_named(zoo: bool) -> None:
    trust = assess_trust(_document(_block(True), zoo=zoo), SETTINGS)
    assert not trust.trustworthy
    [reason] = trust.reasons
    assert reason.code == "challenger_stronger"
    assert "challenger ge2e" in reason.message and "EER 23.4 %" in reason.message
    assert "35.7 %" in reason.message and "-16.0 to -8.1" in reason.message
    assert reason.value == pytest.approx(23.4) and reason.threshold == pytest.approx(35.7)
    again = trust_from_document({"trust": trust.to_json()})
    assert again is not None and again.challenger is not None
    assert again.challenger["attacker"] == "ge2e"


def test_a_challenger_within_the_interval_keeps_the_verdict_trustworthy() -> None:
    trust = assess_trust(_document(_block(False)), SETTINGS)
    assert trust.trustworthy
    assert trust.to_json()["challenger"]["eer_percent"] == pytest.approx(23.4)
    assert challenger_message(_block(False)) is None
    assert assess_trust(_document(None), SETTINGS).to_json() == {
        "trustworthy": True,
        "reasons": [],
    }


def _challenge(challenger_eer: float, trained_eer: float | None) -> dict[str, Any]:
    return {
        "eer_percent": challenger_eer,
        "headline": {"attacker": "baseline", "backend": "plda", "eer_percent": trained_eer},
    }


@pytest.mark.parametrize("scenario", ["ignorant", "lazy-informed"])
def test_an_original_speech_row_is_never_weaker_than_the_pretrained_verifier(
    scenario: str,
) -> None:
    from services.pipeline.challenger import verdict_row

    stronger = verdict_row(scenario, _challenge(23.4, 31.0))
    assert stronger == {
        "attacker": "ge2e",
        "backend": "cosine",
        "eer_percent": 23.4,
        "pretrained": True,
    }
    weaker = verdict_row(scenario, _challenge(40.4, 31.0))
    assert (weaker["attacker"], weaker["backend"], weaker["eer_percent"]) == (
        "baseline",
        "plda",
        31.0,
    )
    assert weaker["pretrained"] is False
    # A tie keeps the trained attacker; a trained row without an EER gives way.
    assert verdict_row(scenario, _challenge(31.0, 31.0))["attacker"] == "baseline"
    assert verdict_row(scenario, _challenge(31.0, None))["attacker"] == "ge2e"


def test_the_semi_informed_row_stays_the_trained_attackers() -> None:
    from services.pipeline.challenger import verdict_row

    # There the challenger acts through the trust check (beyond the paired interval), not here.
    row = verdict_row("semi-informed", _challenge(5.0, 9.6))
    assert (row["attacker"], row["eer_percent"], row["pretrained"]) == ("baseline", 9.6, False)
