"""A report's ``results.json`` as database rows, and the report's files as job artifacts.

:func:`result_rows_from_document` flattens the document into long-format result rows;
:func:`upload_report` stores ``results.json`` and the plots under ``jobs/<id>/`` in the blob store.
The ``report`` phase records both in the transaction that marks the job succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.pipeline.workspace import media_type_of
from services.platform.results import service as result_records
from services.storage.blobstore import BlobStore
from services.storage.models import AGGREGATE_SEED

_ROW_IDENTITY = {"scenario", "backend", "seed", "stage_key", "det"}


def _flatten_metrics(prefix: str, value: Any, out: dict[str, float | None]) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        out[prefix] = float(value)
    elif value is None:
        out[prefix] = None
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if key in ("pmf", "category"):
                continue
            _flatten_metrics(f"{prefix}_{key}" if prefix else str(key), inner, out)
    elif isinstance(value, list | tuple) and len(value) == 2 and "ci95" in prefix:
        _flatten_metrics(f"{prefix}_low", value[0], out)
        _flatten_metrics(f"{prefix}_high", value[1], out)


def result_rows_from_document(document: Mapping[str, Any]) -> list[result_records.ResultRow]:
    """Long-format result rows of a report's ``results.json``.

    One row per (scenario, back-end, seed, metric) from ``rows`` (nested values flattened with
    ``_``: ``zebra_expected_disclosure_bits``, ``srd_empirical_mean_disclosure_bits``,
    ``eer_ci95_percent_low``, ...), plus seed ``AGGREGATE_SEED`` rows from ``summary``: the mean
    over seeds under the metric's own name and the standard deviation under ``<metric>_std``.
    """
    rows: dict[tuple[str, str, int, str], float | None] = {}
    for row in document.get("rows", []):
        metrics: dict[str, float | None] = {}
        for key, value in row.items():
            if key not in _ROW_IDENTITY:
                _flatten_metrics(key, value, metrics)
        for metric, value in metrics.items():
            rows[(row["scenario"], row["backend"], int(row["seed"]), metric[:64])] = value
    for entry in document.get("summary", []):
        for metric, value in entry.items():
            if metric in ("scenario", "backend"):
                continue
            key = (entry["scenario"], entry["backend"], AGGREGATE_SEED)
            if metric == "n_seeds":
                rows[(*key, "n_seeds")] = float(value)
            elif isinstance(value, Mapping):
                rows[(*key, metric[:64])] = value.get("mean")
                rows[(*key, f"{metric}_std"[:64])] = value.get("std")
            elif value is None:
                rows[(*key, metric[:64])] = None
    return [
        result_records.ResultRow(scenario, backend, seed, metric, value)
        for (scenario, backend, seed, metric), value in rows.items()
    ]


def upload_report(
    store: BlobStore, job_id: int, job_dir: Path
) -> list[result_records.ArtifactRecord]:
    """Upload ``results.json`` and the plots of a job folder under ``jobs/<id>/``."""
    files = [job_dir / "results.json"]
    plots = job_dir / "plots"
    if plots.is_dir():
        files += sorted(p for p in plots.rglob("*") if p.is_file())
    records = []
    for path in files:
        relative = path.relative_to(job_dir).as_posix()
        info = store.put_file(f"jobs/{job_id}/{relative}", path, media_type=media_type_of(path))
        assert info.sha256 is not None
        records.append(
            result_records.ArtifactRecord(info.key, info.size_bytes, info.sha256, info.media_type)
        )
    return records
