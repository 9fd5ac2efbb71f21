"""A report's ``results.json`` as database rows, and the report's files as job artifacts.

:func:`result_rows_from_document` flattens the document into long-format result rows;
:func:`report_summary_from_document` reads what the leaderboard shows besides metrics (the trust
mark, DET points); :func:`upload_report` stores ``results.json`` and the plots under
``jobs/<id>/`` in the blob store.
The ``report`` phase records both in the transaction that marks the job succeeded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.metrics import catalogue
from services.pipeline.workspace import media_type_of
from services.pipeline.zoo import BASELINE, row_attacker
from services.platform.leaderboard import det_key
from services.platform.results import service as result_records
from services.storage.blobstore import BlobStore
from services.storage.models import AGGREGATE_SEED

_ROW_IDENTITY = {"attacker", "scenario", "backend", "seed", "stage_key", "det"}


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
    over seeds under the metric's own name and the standard deviation under ``<metric>_std``,
    plus the ``utility`` block's values (scenario ``utility``, back-end ``-``, seed
    ``AGGREGATE_SEED``; ``usable_speech`` as 1 / 0). Each row carries its zoo ``attacker``
    (``baseline`` for a document without a zoo, and for the utility rows).
    """
    rows: dict[tuple[str, str, str, int, str], float | None] = {}
    for row in document.get("rows", []):
        metrics: dict[str, float | None] = {}
        for key, value in row.items():
            if key not in _ROW_IDENTITY:
                _flatten_metrics(key, value, metrics)
        attacker = row_attacker(row)
        for metric, value in metrics.items():
            rows[(attacker, row["scenario"], row["backend"], int(row["seed"]), metric[:64])] = value
    for entry in document.get("summary", []):
        for metric, value in entry.items():
            if metric in ("attacker", "scenario", "backend"):
                continue
            key = (row_attacker(entry), entry["scenario"], entry["backend"], AGGREGATE_SEED)
            if metric == "n_seeds":
                rows[(*key, "n_seeds")] = float(value)
            elif isinstance(value, Mapping):
                rows[(*key, metric[:64])] = value.get("mean")
                rows[(*key, f"{metric}_std"[:64])] = value.get("std")
            elif value is None:
                rows[(*key, metric[:64])] = None
    utility = document.get("utility")
    if isinstance(utility, Mapping):
        # One value per job (utility does not depend on the attacker's seed or back-end).
        key = (BASELINE, catalogue.UTILITY_SCENARIO, catalogue.UTILITY_BACKEND, AGGREGATE_SEED)
        for metric, value in catalogue.utility_values(utility).items():
            rows[(*key, metric)] = value
        wer = utility.get("wer")
        if isinstance(wer, Mapping):
            flat: dict[str, float | None] = {}
            for name in ("wer_anonymized_ci95_percent", "wer_increase_ci95_percent"):
                _flatten_metrics(name, wer.get(name), flat)
            for metric, value in flat.items():
                rows[(*key, metric)] = value
    return [
        result_records.ResultRow(scenario, backend, seed, metric, value, attacker)
        for (attacker, scenario, backend, seed, metric), value in rows.items()
    ]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def read_trust(document: Mapping[str, Any]) -> tuple[bool | None, list[dict[str, Any]]]:
    """The report's ``trust`` block, read defensively: (trustworthy or None, reasons).

    A missing or malformed block is unknown (None, []); reasons that are not objects are
    skipped, and each kept one has a string ``code`` and ``message`` and numeric-or-None
    ``value`` / ``threshold``.
    """
    block = document.get("trust")
    if not isinstance(block, Mapping) or not isinstance(block.get("trustworthy"), bool):
        return None, []
    reasons = []
    for reason in block.get("reasons") or []:
        if not isinstance(reason, Mapping):
            continue
        code = str(reason.get("code") or "")[:64]
        reasons.append(
            {
                "code": code,
                "message": str(reason.get("message") or code)[:500],
                "value": _number(reason.get("value")),
                "threshold": _number(reason.get("threshold")),
            }
        )
    return bool(block["trustworthy"]), reasons


def _det_points(row: Mapping[str, Any]) -> tuple[list[float], list[float]] | None:
    det = row.get("det")
    if not isinstance(det, Mapping):
        return None
    pfa, pmiss = det.get("pfa"), det.get("pmiss")
    if not isinstance(pfa, list) or not isinstance(pmiss, list) or len(pfa) != len(pmiss):
        return None
    points = [(_number(a), _number(b)) for a, b in zip(pfa, pmiss, strict=True)]
    kept = [(a, b) for a, b in points if a is not None and b is not None]
    if len(kept) < 2:
        return None
    return [round(a, 6) for a, _ in kept], [round(b, 6) for _, b in kept]


def report_summary_from_document(document: Mapping[str, Any]) -> result_records.ReportSummary:
    """The trust mark, the DET points and the zoo's worst case a job summary keeps (see
    :class:`ReportSummary`). With a zoo, the DET curves are those of each scenario's worst-case
    attacker."""
    trustworthy, reasons = read_trust(document)
    curves: dict[str, Any] = {}
    rows = [r for r in document.get("rows") or [] if isinstance(r, Mapping)]
    worst = document.get("worst_case")
    worst_case = dict(worst) if isinstance(worst, Mapping) and worst else None
    if worst_case is not None:
        rows = [
            r
            for r in rows
            if isinstance(worst_case.get(str(r.get("scenario"))), Mapping)
            and row_attacker(r) == worst_case[str(r.get("scenario"))].get("attacker")
        ]
    for row in sorted(rows, key=lambda r: _number(r.get("seed")) or 0.0):
        key = det_key(str(row.get("scenario")), str(row.get("backend")))
        points = _det_points(row)
        if key in curves or points is None:
            continue
        curves[key] = {
            "seed": row.get("seed"),
            "pfa": points[0],
            "pmiss": points[1],
            "eer": catalogue.EER.value_in(row),
        }
    return result_records.ReportSummary(trustworthy, reasons, curves, worst_case)


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
