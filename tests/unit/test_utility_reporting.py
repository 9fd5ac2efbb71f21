"""Utility beside privacy, from the result document to the ranking: result rows, the leaderboard's
ranking rule (a submission that destroys speech never ranks above one that keeps it), the CLI
verdict and the ``--max-wer-increase`` gate."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from services.metrics import catalogue
from services.platform.leaderboard import (
    USABLE_KEY,
    WER_INCREASE_KEY,
    LeaderboardTableRow,
    rank_rows,
    utility_tier,
)
from services.storage.models import AGGREGATE_SEED

PRIVACY = ("semi-informed", "eer_percent")


def _row(i: int, eer: float | None, increase: float | None, usable: float | None) -> Any:
    values = {PRIVACY: eer, WER_INCREASE_KEY: increase, USABLE_KEY: usable}
    return LeaderboardTableRow(
        submission_id=i,
        submission_name=f"s{i}",
        kind="builtin",
        visibility="public",
        team_slug="t",
        job_id=i,
        submitted_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=i),
        evaluated_at=None,
        values=values,
    )


def test_ranking_puts_usable_speech_within_the_bound_first_then_by_privacy() -> None:
    rows = [
        _row(1, 30.0, 2.0, 1.0),  # useful, moderately private
        _row(2, 50.0, 0.0, 0.0),  # silence: perfect "privacy", unusable
        _row(3, 45.0, 35.0, 1.0),  # very private but above the bound
        _row(4, 40.0, 5.0, 1.0),  # useful and more private than 1
        _row(5, 48.0, None, None),  # utility not measured (an older job)
    ]
    ranked = rank_rows(rows, key=PRIVACY, descending=True, utility_measured=True, wer_bound=20.0)
    assert [r.submission_id for r in ranked] == [4, 1, 5, 3, 2]
    assert [utility_tier(r, True, 20.0) for r in ranked] == [0, 0, 1, 2, 3]
    # Without a bound only unusable speech and unmeasured utility move down.
    unbounded = rank_rows(rows, key=PRIVACY, descending=True, utility_measured=True, wer_bound=None)
    assert [r.submission_id for r in unbounded] == [3, 4, 1, 5, 2]


def test_without_utility_on_the_protocol_privacy_alone_ranks_but_unusable_is_last() -> None:
    rows = [_row(1, 30.0, None, None), _row(2, 50.0, None, 0.0), _row(3, 40.0, None, None)]
    ranked = rank_rows(rows, key=PRIVACY, descending=True, utility_measured=False, wer_bound=20.0)
    assert [r.submission_id for r in ranked] == [3, 1, 2]


def _document(usable: bool) -> dict[str, Any]:
    return {
        "rows": [
            {"scenario": "semi-informed", "backend": "cosine", "seed": 0, "eer_percent": 31.0}
        ],
        "summary": [],
        "utility": {
            "wer": {
                "wer_original_percent": 4.0,
                "wer_anonymized_percent": 9.5,
                "wer_increase_percent": 5.5,
                "wer_increase_ci95_percent": [3.0, 8.0],
            },
            "pitch_correlation": {"mean": 0.82},
            "voice_distinctiveness": {"gvd_db": -1.5},
            "usable_speech": {"usable": usable, "reasons": [] if usable else ["silence"]},
        },
    }


def test_result_rows_carry_the_utility_block_once_per_job() -> None:
    from services.platform.results.document import result_rows_from_document

    rows = {
        (r.scenario, r.backend, r.seed, r.metric): r.value
        for r in result_rows_from_document(_document(usable=False))
    }
    key = (catalogue.UTILITY_SCENARIO, catalogue.UTILITY_BACKEND, AGGREGATE_SEED)
    assert rows[(*key, "wer_increase_percent")] == 5.5
    assert rows[(*key, "wer_increase_ci95_percent_low")] == 3.0
    assert rows[(*key, "pitch_correlation")] == 0.82
    assert rows[(*key, "gvd_db")] == -1.5
    assert rows[(*key, "usable_speech")] == 0.0
    assert ("semi-informed", "cosine", 0, "eer_percent") in rows


def test_verdict_and_gate_read_the_utility_rows() -> None:
    from cli.client import Thresholds, check_thresholds
    from cli.verdict import document_rows, verdict_lines

    good = document_rows(_document(usable=True))
    text = "\n".join(verdict_lines(good, None))
    assert "WER 9.5 % on anonymized vs 4.0 % on original speech (+5.5 points [3.0, 8.0])" in text
    assert "pitch correlation 0.82" in text and "GVD -1.5 dB" in text
    assert "usable speech" in text
    assert check_thresholds(good, Thresholds(max_wer_increase=6.0)).passed
    tight = check_thresholds(good, Thresholds(max_wer_increase=5.0))
    assert not tight.passed and "WER increase" in tight.failures[0]

    bad = document_rows(_document(usable=False))
    assert "UNUSABLE SPEECH" in "\n".join(verdict_lines(bad, None))
    verdict = check_thresholds(bad, Thresholds(max_wer_increase=50.0))
    assert not verdict.passed and any("usable speech" in f for f in verdict.failures)

    no_utility = [r for r in good if r["scenario"] != catalogue.UTILITY_SCENARIO]
    missing = check_thresholds(no_utility, Thresholds(max_wer_increase=50.0))
    assert not missing.passed and "missing" in missing.failures[0]


def test_utility_config_keeps_old_hashes_and_needs_anonymized_speech() -> None:
    from services.errors import ConfigError
    from services.pipeline.config import EvaluationConfig, parse_config

    plain = EvaluationConfig()
    assert "utility" not in plain.model_dump(mode="json")
    with_utility = parse_config({"utility": {"asr": {"epochs": 3}}})
    assert with_utility.content_hash() != plain.content_hash()
    assert with_utility.utility is not None and with_utility.utility.asr.epochs == 3
    with pytest.raises(ConfigError, match="anonymized scenario"):
        parse_config({"scenarios": ["original"], "utility": {}})
    with pytest.raises(ConfigError, match="pretrained_path"):
        parse_config({"utility": {"asr": {"source": "pretrained"}}})
