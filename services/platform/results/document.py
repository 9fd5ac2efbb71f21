"""A report's ``results.json`` as database rows, and the report's files as job artifacts.

:func:`result_rows_from_document` turns the document into long-format result rows, one name per
catalogued metric (``services.metrics.catalogue``);
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
from services.metrics.catalogue import AGGREGATE_SEED
from services.pipeline.workspace import media_type_of
from services.pipeline.zoo import BASELINE, row_attacker
from services.platform.leaderboard import det_key
from services.platform.results import service as result_records
from services.scoring.trial_scores import TRIALS_DIR
from services.storage.blob_interface import BlobStore


def result_rows_from_document(document: Mapping[str, Any]) -> list[result_records.ResultRow]:
    """Long-format result rows of a report's ``results.json``, named by the metric catalogue.

    Per seed: one row per catalogued metric of each score row (``catalogue.result_values``; what
    the catalogue does not name stays in ``results.json`` only). Seed ``AGGREGATE_SEED``: each
    ``summary`` entry's means, standard deviations (``<key>_std``) and ``n_seeds``
    (``catalogue.summary_values``), and the ``utility`` block's values (scenario ``utility``,
    back-end ``-``; ``usable_speech`` as 1 / 0; ``catalogue.utility_values``). A metric therefore
    has the same name at every seed and in the aggregate. Each row carries its zoo ``attacker``
    (``baseline`` for a document without a zoo, and for the utility rows).
    """
    rows: dict[tuple[str, str, str, int, str], float | None] = {}
    for row in document.get("rows", []):
        key = (row_attacker(row), str(row["scenario"]), str(row["backend"]), int(row["seed"]))
        for metric, value in catalogue.result_values(row):
            rows[(*key, metric)] = value
    for entry in document.get("summary", []):
        key = (row_attacker(entry), str(entry["scenario"]), str(entry["backend"]), AGGREGATE_SEED)
        for metric, value in catalogue.summary_values(entry):
            rows[(*key, metric)] = value
    utility = document.get("utility")
    if isinstance(utility, Mapping):
        # One value per job (utility does not depend on the attacker's seed or back-end).
        key = (BASELINE, catalogue.UTILITY_SCENARIO, catalogue.UTILITY_BACKEND, AGGREGATE_SEED)
        for metric, value in catalogue.utility_values(utility).items():
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
    """The trust mark, the DET points, the zoo's worst case and the challenger block a job
    summary keeps (see :class:`ReportSummary`). With a zoo, the DET curves are those of each
    scenario's worst-case attacker."""
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
    block = document.get("challenger")
    challenger = dict(block) if isinstance(block, Mapping) and block else None
    return result_records.ReportSummary(trustworthy, reasons, curves, worst_case, challenger)


def upload_report(
    store: BlobStore, job_id: int, job_dir: Path
) -> list[result_records.ArtifactRecord]:
    """Upload ``results.json``, the plots and each row's trials (the compare page reads them) of
    a job folder under ``jobs/<id>/``."""
    files = [job_dir / "results.json"]
    for folder in (job_dir / "plots", job_dir / TRIALS_DIR):
        if folder.is_dir():
            files += sorted(p for p in folder.rglob("*") if p.is_file())
    records = []
    for path in files:
        relative = path.relative_to(job_dir).as_posix()
        info = store.put_file(f"jobs/{job_id}/{relative}", path, media_type=media_type_of(path))
        assert info.sha256 is not None
        records.append(
            result_records.ArtifactRecord(info.key, info.size_bytes, info.sha256, info.media_type)
        )
    return records
