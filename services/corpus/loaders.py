"""Read and write utterance manifests as CSV or JSONL.

Columns (CSV header / JSONL keys): ``utt_id, speaker_id, gender, path, duration_s`` and optionally
``text, chapter_id, original_sample_rate, target_id``. Unknown columns are ignored. Relative
``path`` values resolve against the manifest file's folder. Every bad row becomes a
``ManifestProblem`` naming the file and its 1-based line number.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from services.audio import audio_info
from services.corpus.manifest import Manifest, Utterance
from services.corpus.validation import (
    DURATION_TOLERANCE_S,
    MANIFEST_FIELDS,
    REQUIRED_FIELDS,
    ConsistencyTracker,
    LoadReport,
    ManifestProblem,
    one_line,
    raise_if_problems,
    utterance_from_row,
)
from services.errors import CorpusError

ManifestFormat = Literal["csv", "jsonl"]

_SUFFIX_FORMAT: dict[str, ManifestFormat] = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def manifest_format(path: str | Path) -> ManifestFormat:
    """``csv`` or ``jsonl`` from the file name; ``CorpusError`` for any other suffix."""
    fmt = _SUFFIX_FORMAT.get(Path(path).suffix.lower())
    if fmt is None:
        raise CorpusError(f"{path}: unknown manifest format (expected a .csv or .jsonl file)")
    return fmt


def _csv_rows(path: Path, check_audio: bool) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, row dict) for each CSV record; header problems raise at once."""
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        header = [h.strip() for h in (reader.fieldnames or [])]
        required = [f for f in REQUIRED_FIELDS if not (f == "duration_s" and check_audio)]
        missing = [f for f in required if f not in header]
        if not header:
            raise CorpusError(f"{path}:1: empty file (expected a header row)")
        if missing:
            raise CorpusError(
                f"{path}:1: missing column(s) {', '.join(missing)} (header: {', '.join(header)})"
            )
        reader.fieldnames = header
        line = reader.line_num
        for record in reader:
            start, line = line + 1, reader.line_num
            if None in record:  # more cells than header columns
                yield start, f"{len(header) + len(record[None])} cells for {len(header)} columns"
                continue
            if all(v is None or v.strip() == "" for v in record.values()):
                continue
            yield start, record


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line number, row dict or error text) for each non-blank JSONL line."""
    with path.open(encoding="utf-8-sig") as fh:
        for n, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                yield n, f"invalid JSON ({exc.msg} at column {exc.colno})"
                continue
            yield n, obj if isinstance(obj, dict) else f"expected a JSON object, got {obj!r:.40}"


def load_manifest(
    path: str | Path, *, skip_invalid: bool = False, check_audio: bool = True
) -> LoadReport:
    """Read a CSV or JSONL manifest, checking every row.

    With ``check_audio`` each file must exist, be readable and non-empty, and match its declared
    ``duration_s`` (within ``DURATION_TOLERANCE_S``); a blank or absent ``duration_s`` is then
    read from the audio header. Problems: with ``skip_invalid=False`` one ``CorpusError`` lists
    them all (up to a limit); with ``skip_invalid=True`` the bad rows are dropped and reported.
    """
    p = Path(path)
    if not p.is_file():
        raise CorpusError(f"{p}: manifest file not found")
    root = str(p.resolve().parent)
    probe = Manifest(utterances=(), root=root)
    rows = _csv_rows(p, check_audio) if manifest_format(p) == "csv" else _jsonl_rows(p)
    tracker = ConsistencyTracker()
    kept: list[Utterance] = []
    problems: list[ManifestProblem] = []
    source = str(p)
    for line, row in rows:
        if isinstance(row, str):
            problems.append(ManifestProblem(source, line, row))
            continue
        messages = _row_problems(row, line, probe, tracker, check_audio, kept)
        problems.extend(ManifestProblem(source, line, m) for m in messages)
    if not kept and not problems:
        problems.append(ManifestProblem(source, None, "no utterances"))
    if not skip_invalid:
        raise_if_problems(problems)
    return LoadReport(Manifest(utterances=tuple(kept), root=root), problems)


def _row_problems(
    row: dict[str, Any],
    line: int,
    probe: Manifest,
    tracker: ConsistencyTracker,
    check_audio: bool,
    kept: list[Utterance],
) -> list[str]:
    """Every problem of one row (fields, consistency, audio); a clean row goes into ``kept``."""
    messages: list[str] = []
    header: tuple[float, int] | None = None
    raw_path = str(row.get("path") or "").strip()
    if check_audio and raw_path:
        path = Path(raw_path)
        try:
            header = audio_info(path if path.is_absolute() else Path(probe.root) / path)
        except CorpusError as exc:
            messages.append(one_line(exc))
        if header is not None and str(row.get("duration_s") or "").strip() == "":
            row = {**row, "duration_s": header[0]}
    try:
        utt = utterance_from_row(row)
    except ValueError as exc:
        return [one_line(exc), *messages]
    messages = tracker.check(utt) + messages
    if header is not None and abs(header[0] - utt.duration_s) > DURATION_TOLERANCE_S:
        messages.append(
            f"duration_s {utt.duration_s:g} differs from the audio header's {header[0]:.3f} s"
        )
    if not messages:
        tracker.add(utt, line)
        kept.append(utt)
    return messages


def read_manifest(path: str | Path, *, check_audio: bool = True) -> Manifest:
    """Read a manifest, raising one ``CorpusError`` that lists every problem."""
    return load_manifest(path, check_audio=check_audio).manifest


def _relative_paths(manifest: Manifest, out_dir: Path) -> list[Utterance]:
    """Utterances whose relative paths resolve the same way from ``out_dir``.

    Files inside ``out_dir`` get a path relative to it; others an absolute path.
    """
    out = out_dir.resolve()
    rows: list[Utterance] = []
    for u in manifest.utterances:
        p = Path(u.path)
        if not p.is_absolute() and Path(manifest.root).resolve() == out:
            rows.append(u)
            continue
        absolute = manifest.resolve(u)
        try:
            new = absolute.relative_to(out).as_posix()
        except ValueError:
            new = str(absolute)
        rows.append(u if new == u.path else u.model_copy(update={"path": new}))
    return rows


def write_manifest(manifest: Manifest, path: str | Path) -> Manifest:
    """Write a manifest as CSV or JSONL (from the suffix), atomically.

    Relative paths are rewritten so they still point at the same files from the new folder.
    Returns the manifest as a later ``read_manifest(path)`` sees it (same rows, new root).
    """
    p = Path(path)
    fmt = manifest_format(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    rows = _relative_paths(manifest, p.parent)
    buf = io.StringIO(newline="")
    if fmt == "csv":
        writer = csv.DictWriter(buf, fieldnames=list(MANIFEST_FIELDS), lineterminator="\n")
        writer.writeheader()
        for u in rows:
            d = u.model_dump(mode="json")
            writer.writerow({k: ("" if d[k] is None else d[k]) for k in MANIFEST_FIELDS})
    else:
        for u in rows:
            buf.write(json.dumps(u.model_dump(mode="json", exclude_none=True), ensure_ascii=False))
            buf.write("\n")
    tmp = p.with_name(p.name + ".part")
    tmp.write_text(buf.getvalue(), encoding="utf-8", newline="")
    os.replace(tmp, p)
    return Manifest(utterances=tuple(rows), root=str(p.resolve().parent))
