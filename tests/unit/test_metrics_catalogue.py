"""The metric catalogue: its own invariants and the docs table it generates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.metrics import catalogue, catalogue_docs
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
    assert "min_cllr_bits" not in summary  # no row carries it: left out, as from the rows
    carried = catalogue.summarize_seed_values([{"min_cllr_bits": None}, {"min_cllr_bits": None}])
    assert carried["min_cllr_bits"] is None  # carried without a value: null
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
    assert "`dummy_score`" in catalogue_docs.markdown_table()


def test_docs_table_is_current() -> None:
    text = (ROOT / "docs" / "metrics.md").read_text()
    embedded = text.split(catalogue_docs.DOCS_BEGIN)[1].split(catalogue_docs.DOCS_END)[0]
    assert embedded.strip() == catalogue_docs.markdown_table().strip(), (
        "docs/metrics.md is stale: regenerate with python -m services.metrics.catalogue"
    )


def _row_with_every_metric(seed: int) -> dict[str, Any]:
    """A results.json score row carrying every catalogued metric at its path (plus detail the
    catalogue does not name), values depending on the seed."""
    row: dict[str, Any] = {"scenario": "semi-informed", "backend": "cosine", "seed": seed}
    for i, m in enumerate(catalogue.all_metrics()):
        if m.path is None or m in catalogue.UTILITY_METRICS:
            continue
        *parents, leaf = m.path
        node: Any = row
        for part, following in zip(parents, m.path[1:], strict=True):
            empty: Any = [0.0, 0.0] if isinstance(following, int) else {}
            node = node.setdefault(part, empty) if isinstance(node, dict) else node[part]
        node[leaf] = 10.0 + i + seed
    row["srd"]["empirical"]["pmf"] = [0.5, 0.5]  # uncatalogued detail: results.json only
    row["zebra"]["category"] = "B"
    row["det"] = {"pfa": [0.1, 0.2], "pmiss": [0.2, 0.1]}
    return row


def test_every_catalogued_metric_has_one_name_at_every_seed_and_in_the_aggregate() -> None:
    from services.platform.results import result_rows_from_document

    rows = [_row_with_every_metric(seed) for seed in (0, 1)]
    summary = {"scenario": "semi-informed", "backend": "cosine", "n_seeds": 2}
    summary.update(catalogue.summarize_seed_values(rows))
    stored = result_rows_from_document({"rows": rows, "summary": [summary]})
    names: dict[int, set[str]] = {}
    for r in stored:
        names.setdefault(r.seed, set()).add(r.metric)
    in_rows = {
        m.key for m in catalogue.all_metrics() if m.path and m not in catalogue.UTILITY_METRICS
    }
    assert in_rows and names[0] == names[1] == in_rows  # nothing uncatalogued is stored
    aggregate = names[catalogue.AGGREGATE_SEED]
    for m in catalogue.seed_summary_metrics():
        assert m.key in aggregate and m.std_key in aggregate, m.key
    assert aggregate <= {
        catalogue.N_SEEDS_KEY,
        *(k for m in catalogue.all_metrics() for k in (m.key, m.std_key)),
    }
    # Every stored name is a catalogued key (or its std / the seed count), never cut short.
    assert all(catalogue.is_catalogued(r.metric.removesuffix("_std")) or
               r.metric == catalogue.N_SEEDS_KEY for r in stored)  # fmt: skip
    # The mean over seeds of the per-seed rows is the aggregate row (same name, same value).
    by_key = {(r.seed, r.metric): r.value for r in stored}
    for m in catalogue.seed_summary_metrics():
        seed_mean = catalogue.aggregate_over_seeds(None, [by_key[(0, m.key)], by_key[(1, m.key)]])
        assert by_key[(catalogue.AGGREGATE_SEED, m.key)] == pytest.approx(seed_mean), m.key


def test_aggregate_over_seeds_prefers_the_aggregate_row() -> None:
    assert catalogue.aggregate_over_seeds(24.0, [20.0, 30.0]) == 24.0
    assert catalogue.aggregate_over_seeds(None, [20.0, None, 30.0]) == 25.0
    assert catalogue.aggregate_over_seeds(float("nan"), [20.0]) == 20.0
    assert catalogue.aggregate_over_seeds(None, [None]) is None


def test_worst_for_maker_reads_each_metrics_direction() -> None:
    eers = {"long": 12.0, "baseline": 20.0, "augmented": 12.0, "broken": None}
    # Lowest EER is worst for the maker; the tie goes to the first name in sorted order.
    assert catalogue.worst_for_maker(catalogue.EER.key, eers) == "augmented"
    disclosure = {"baseline": 0.2, "long": 0.9}
    assert catalogue.worst_for_maker(catalogue.SRD_MEAN_DISCLOSURE.key, disclosure) == "long"
    assert catalogue.worst_for_maker(catalogue.EER.key, {"a": None}) is None


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


def test_cllr_applies_to_log_likelihood_ratio_scores_only() -> None:
    """The catalogue decides once where a metric applies: Cllr on PLDA scores left as they are,
    not on cosine similarities nor on AS-normalized PLDA scores; every other metric everywhere."""
    cllr = catalogue.CLLR
    assert cllr.applies("plda") and cllr.applies("plda", "none")
    assert not cllr.applies("cosine") and not cllr.applies("plda", "as-norm")
    assert cllr.applies_note is not None and "plda" in cllr.applies_note
    others = [m for m in catalogue.all_metrics() if m is not cllr]
    assert all(m.applies("cosine", "as-norm") and m.applies_note is None for m in others)


@pytest.mark.parametrize("backend", ["cosine", "plda"])
def test_a_metric_has_one_name_at_every_seed_where_it_applies_and_none_elsewhere(
    backend: str,
) -> None:
    """A row where Cllr does not apply leaves it out; the aggregate then leaves it out too
    (no NULL row at the aggregate seed beside no row at the seeds), and where it applies it is
    stored at every seed and in the aggregate."""
    from services.platform.results import result_rows_from_document

    rows = []
    for seed in (0, 1):
        row = _row_with_every_metric(seed) | {"backend": backend}
        if not catalogue.CLLR.applies(backend):
            del row[catalogue.CLLR.key]  # what the score stage writes (metrics_row)
        rows.append(row)
    summary = {"scenario": "semi-informed", "backend": backend, "n_seeds": 2}
    summary.update(catalogue.summarize_seed_values(rows))
    stored = result_rows_from_document({"rows": rows, "summary": [summary]})
    seeds_with_cllr = {r.seed for r in stored if r.metric == catalogue.CLLR.key}
    if catalogue.CLLR.applies(backend):
        assert seeds_with_cllr == {0, 1, catalogue.AGGREGATE_SEED}
    else:
        assert seeds_with_cllr == set()
        assert catalogue.CLLR.std_key not in {r.metric for r in stored}
    assert all(r.value is not None for r in stored if r.metric == catalogue.CLLR.key)
