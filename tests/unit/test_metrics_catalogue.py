"""The metric catalogue: its own invariants and the docs table it generates."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.metrics import catalogue
from support.metrics import dummy_metric

ROOT = Path(__file__).resolve().parents[2]


def test_keys_are_unique_and_fit_the_results_column() -> None:
    keys = [m.key for m in catalogue.all_metrics()]
    assert len(keys) == len(set(keys))
    # results.metric is VARCHAR(64); "<key>_std" rows must fit too.
    assert all(len(f"{k}_std") <= 64 for k in keys)


def test_interval_bounds_are_catalogued_metrics() -> None:
    for m in catalogue.all_metrics():
        if m.interval is not None:
            low, high = m.interval
            assert catalogue.is_catalogued(low) and catalogue.is_catalogued(high), m.key


def test_value_in_follows_the_path_and_ignores_non_numbers() -> None:
    row = {"srd": {"empirical": {"mean_disclosure_bits": 0.25}}, "eer_percent": True}
    assert catalogue.SRD_MEAN_DISCLOSURE.value_in(row) == 0.25
    assert catalogue.EER.value_in(row) is None  # a boolean is not a metric value
    assert catalogue.MIN_CLLR.value_in(row) is None
    assert catalogue.PRERESTORE_EER.value_in(row) is None  # computed by the report, no path


def test_seed_summary_is_mean_and_sample_std() -> None:
    rows = [{"eer_percent": 10.0}, {"eer_percent": 14.0}, {"eer_percent": 18.0}]
    summary = catalogue.summarize_seed_values(rows)
    assert summary["eer_percent"] == pytest.approx({"mean": 14.0, "std": 4.0})
    assert summary["min_cllr_bits"] is None
    single = catalogue.summarize_seed_values(rows[:1])
    assert single["eer_percent"] == {"mean": 10.0, "std": 0.0}


def test_unknown_key_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="eer_percent"):
        catalogue.metric("no_such_metric")


def test_extending_the_catalogue_reaches_every_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    dummy = dummy_metric()
    monkeypatch.setattr(catalogue, "METRICS", (*catalogue.METRICS, dummy))
    for select in (
        catalogue.seed_summary_metrics,
        catalogue.summarized_metrics,
        catalogue.leaderboard_metrics,
        catalogue.event_metrics,
        catalogue.table_metrics,
    ):
        assert dummy in select(), select.__name__
    assert catalogue.summarize_seed_values([{"dummy_score": 2.0}])["dummy_score"] == {
        "mean": 2.0,
        "std": 0.0,
    }
    assert "`dummy_score`" in catalogue.markdown_table()


def test_docs_table_is_current() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text()
    embedded = text.split(catalogue.DOCS_BEGIN)[1].split(catalogue.DOCS_END)[0]
    assert embedded.strip() == catalogue.markdown_table().strip(), (
        "docs/metrics.md is stale: regenerate with python -m services.metrics.catalogue"
    )


def test_legal_metrics_reach_every_surface_with_their_chance_levels() -> None:
    for m in (catalogue.LINKABILITY_TOP1, catalogue.SINGLING_OUT):
        assert m in catalogue.leaderboard_metrics() and m in catalogue.event_metrics()
        assert m in catalogue.table_metrics() and m in catalogue.summarized_metrics()
        assert not m.higher_is_better and m.unit == "%"
        assert m.chance_key is not None
        chance = catalogue.metric(m.chance_key)
        assert chance in catalogue.seed_summary_metrics() and chance in catalogue.event_metrics()
        row = {"legal": {"headline": {m.key: 61.0, m.chance_key: 6.25}}}
        assert m.value_in(row) == 61.0 and chance.value_in(row) == 6.25
