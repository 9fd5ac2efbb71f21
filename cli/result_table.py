"""The CLI's result tables: one renderer for ``evaluate``, ``demo`` and ``submit``.

Columns are the catalogue's table metrics (``services.metrics.catalogue``), so a metric added
there shows here with no other change. Values are mean ± sample std over seeds. Results of an
attacker zoo (rows naming more than one ``attacker``) get an attacker column.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from services.metrics import catalogue
from services.metrics.catalogue import AGGREGATE_SEED
from services.pipeline.zoo import row_attacker
from services.vocab import scenario_rank


def _cell(metric: catalogue.Metric, mean: float | None, std: float | None) -> str:
    text = metric.format(mean)
    if mean is not None and std:
        text += f" ± {std:.{metric.digits}f}"
    return text


def aggregate_attacker_rows(
    results: Sequence[Mapping[str, Any]],
) -> dict[tuple[str, str, str], dict[str, float | None]]:
    """``{(attacker, scenario, backend): {metric: value}}`` from long-format result rows, each
    value ``catalogue.aggregate_over_seeds`` of its rows (the aggregate row where present, else
    the mean over the per-seed rows). Rows without an ``attacker`` are the baseline's
    (evaluations without an attacker zoo)."""
    aggregate: dict[tuple[str, str, str, str], float | None] = {}
    per_seed: dict[tuple[str, str, str, str], list[float | None]] = {}
    for row in results:
        key = (row_attacker(row), str(row["scenario"]), str(row["backend"]), str(row["metric"]))
        value = None if row["value"] is None else float(row["value"])
        if row["seed"] == AGGREGATE_SEED:
            aggregate[key] = value
        else:
            per_seed.setdefault(key, []).append(value)
    out: dict[tuple[str, str, str], dict[str, float | None]] = {}
    for key in dict.fromkeys([*aggregate, *per_seed]):
        value = catalogue.aggregate_over_seeds(aggregate.get(key), per_seed.get(key, []))
        out.setdefault(key[:3], {})[key[3]] = value
    return out


def rows_table(results: Sequence[Mapping[str, Any]], title: str) -> Table:
    """Table of long-format result rows (the API's ``/results``), scenarios in reference order."""
    metrics = catalogue.table_metrics()
    # The utility block has its own lines in the verdict, none of these columns.
    values = {
        k: v
        for k, v in aggregate_attacker_rows(results).items()
        if k[1] != catalogue.UTILITY_SCENARIO
    }
    several = len({k[0] for k in values}) > 1
    table = Table(title=escape(title))
    table.add_column("scenario", no_wrap=True, min_width=13)
    if several:  # an attacker zoo: one row per attacker
        table.add_column("attacker", no_wrap=True)
    table.add_column("back-end", no_wrap=True)
    for m in metrics:
        table.add_column(m.label, justify="right")
    for attacker, scenario, backend in sorted(
        values, key=lambda k: (scenario_rank(k[1]), k[0], k[2])
    ):
        row = values[(attacker, scenario, backend)]
        cells = [_cell(m, row.get(m.key), row.get(f"{m.key}_std")) for m in metrics]
        table.add_row(scenario, *([attacker] if several else []), backend, *cells)
    return table


def summary_table(document: Mapping[str, Any]) -> Table:
    """Table of a ``results.json`` document's seed summary."""
    metrics = catalogue.table_metrics()
    title = (
        f"{document['name']}: {document['anonymizer']['name']} on {document['protocol']['name']}"
    )
    several = len({row_attacker(e) for e in document["summary"]}) > 1
    table = Table(title=escape(title))
    table.add_column("scenario", no_wrap=True, min_width=13)
    if several:  # an attacker zoo: one row per attacker
        table.add_column("attacker", no_wrap=True)
    table.add_column("back-end", no_wrap=True)
    table.add_column("seeds", justify="right")
    for m in metrics:
        table.add_column(m.label, justify="right")
    entries = sorted(
        document["summary"],
        key=lambda s: (scenario_rank(s["scenario"]), row_attacker(s), s["backend"]),
    )
    for entry in entries:
        cells = []
        for m in metrics:
            value = entry.get(m.key)
            if isinstance(value, Mapping):
                cells.append(_cell(m, value.get("mean"), value.get("std")))
            else:
                cells.append(_cell(m, value, None))
        attacker = [row_attacker(entry)] if several else []
        table.add_row(entry["scenario"], *attacker, entry["backend"], str(entry["n_seeds"]), *cells)
    return table
