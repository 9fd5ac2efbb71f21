"""Importers of corpus folder layouts: LibriSpeech, LibriTTS, and plain CSV/JSONL manifests.

LibriSpeech: ``<subset>/<spk>/<chapter>/<spk>-<chapter>-<utt>.flac`` (or ``.wav``), transcripts in
``<spk>-<chapter>.trans.txt`` (``<utt_id> TEXT`` per line), gender from ``SPEAKERS.TXT``.
LibriTTS: ``<subset>/<spk>/<chapter>/<spk>_<chapter>_<...>.wav``, one ``<stem>.normalized.txt``
transcript per file, gender from ``speakers.tsv`` or ``SPEAKERS.txt``.

Folder (``--layout folder``, a maker's own recordings): audio files (``.wav``, ``.flac``,
``.ogg``) under ``src``, either ``<src>/<speaker>/<...>/<file>`` (the first folder below ``src``
names the speaker) or flat ``<src>/<speaker>_<name>.wav`` / ``<speaker>-<name>.wav`` (the longest
speaker id of the table that prefixes the name); a speakers table ``speakers.csv`` (or ``.tsv``)
in ``src`` with a header naming the ``speaker`` (or ``speaker_id``) and ``gender`` (or ``sex``)
columns; transcripts optional, from a ``<stem>.txt`` next to the audio or a ``transcripts.csv``
(columns ``file``, ``text``; ``file`` is the path below ``src``, with or without suffix).
Utterance ids are the paths below ``src`` without suffix, ``/`` replaced by ``-``.

``src`` may be the corpus folder (holding the speaker file and subset folders) or one subset folder
(speaker file in its parent). Durations and original sample rates come from the audio headers;
audio is resampled to 16 kHz when read (``services.audio.read_audio``), not at import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from services.audio import audio_info
from services.corpus.loaders import load_manifest
from services.corpus.manifest import Gender, Manifest, Utterance
from services.corpus.validation import (
    DurationFilter,
    LoadReport,
    ManifestProblem,
    normalize_gender,
    one_line,
    raise_if_problems,
)
from services.errors import CorpusError

Layout = Literal["librispeech", "libritts", "librispeech-tts", "folder", "kaldi", "csv", "jsonl"]
LAYOUTS: tuple[str, ...] = (
    "librispeech",
    "libritts",
    "librispeech-tts",
    "folder",
    "kaldi",
    "csv",
    "jsonl",
)

_FOLDER_AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")
_FOLDER_SPEAKER_TABLES = ("speakers.csv", "speakers.tsv")
_SPEAKER_COLUMNS = ("speaker", "speaker_id")
_GENDER_COLUMNS = ("gender", "sex")

_SPEAKER_FILE_NAMES = ("speakers.tsv", "speakers.txt")
_HEADER_THREADS = 8  # reading headers is I/O bound; threads overlap the file system latency


def parse_speaker_file(path: Path) -> tuple[dict[str, Gender], list[ManifestProblem]]:
    """Speaker id -> gender from a LibriSpeech ``SPEAKERS.TXT`` or a LibriTTS ``speakers.tsv``.

    ``SPEAKERS.TXT``: ``;`` comment lines, rows ``ID | SEX | SUBSET | MINUTES | NAME`` (the name
    may itself contain ``|``). ``speakers.tsv``: header ``READER<TAB>GENDER<TAB>SUBSET<TAB>NAME``.
    Rows with an unknown gender become problems naming the line.
    """
    genders: dict[str, Gender] = {}
    problems: list[ManifestProblem] = []
    try:
        lines = path.read_text(encoding="utf-8-sig", errors="replace").splitlines()
    except OSError as exc:
        raise CorpusError(f"{path}: unreadable speaker file ({one_line(exc)})") from exc
    tsv = bool(lines) and lines[0].split("\t")[0].strip().upper() == "READER"
    for n, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith(";") or (tsv and n == 1):
            continue
        cells = [c.strip() for c in (line.split("\t") if tsv else line.split("|", 4))]
        if len(cells) < 2 or not cells[0]:
            problems.append(ManifestProblem(str(path), n, f"malformed speaker row {text!r:.60}"))
            continue
        try:
            genders[cells[0]] = normalize_gender(cells[1])
        except ValueError as exc:
            problems.append(ManifestProblem(str(path), n, f"speaker {cells[0]!r}: {exc}"))
    return genders, problems


def find_speaker_file(src: Path) -> Path:
    """The speaker/gender file in ``src`` or its parent (names matched case-insensitively)."""
    for folder in (src, src.parent):
        if not folder.is_dir():
            continue
        found = {p.name.lower(): p for p in folder.iterdir() if p.is_file()}
        for name in _SPEAKER_FILE_NAMES:
            if name in found:
                return found[name]
    raise CorpusError(
        f"{src}: no speaker file (SPEAKERS.TXT or speakers.tsv) in this folder or its parent"
    )


@dataclass(frozen=True)
class _Found:
    """An audio file recognised by a layout: ids and transcript, before the header is read."""

    path: Path
    utt_id: str
    speaker_id: str
    chapter_id: str
    text: str | None


_LIBRISPEECH_NAME = re.compile(r"^(?P<spk>[^-/]+)-(?P<chapter>[^-/]+)-(?P<utt>[^/]+)$")
_LIBRITTS_NAME = re.compile(r"^(?P<spk>[^_/]+)_(?P<chapter>[^_/]+)_(?P<rest>[^/]+)$")


def _check_folders(path: Path, spk: str, chapter: str) -> str | None:
    if path.parent.name != chapter or path.parent.parent.name != spk:
        return f"file name says speaker {spk}, chapter {chapter} but it lies in {path.parent}"
    return None


def _scan_librispeech(src: Path) -> tuple[list[_Found], list[ManifestProblem]]:
    found: list[_Found] = []
    problems: list[ManifestProblem] = []
    transcripts: dict[Path, dict[str, str]] = {}
    files = sorted(p for p in src.rglob("*") if p.suffix.lower() in (".flac", ".wav"))
    for path in files:
        m = _LIBRISPEECH_NAME.match(path.stem)
        if m is None:
            problems.append(
                ManifestProblem(str(path), None, "name is not <speaker>-<chapter>-<utt>")
            )
            continue
        spk, chapter = m["spk"], m["chapter"]
        bad = _check_folders(path, spk, chapter)
        if bad:
            problems.append(ManifestProblem(str(path), None, bad))
            continue
        trans_file = path.parent / f"{spk}-{chapter}.trans.txt"
        if trans_file not in transcripts:
            transcripts[trans_file] = _read_trans(trans_file)
        text = transcripts[trans_file].get(path.stem)
        found.append(_Found(path, path.stem, spk, chapter, text))
    return found, problems


def _read_trans(path: Path) -> dict[str, str]:
    """``<utt_id> TEXT`` lines of a LibriSpeech transcript file (empty if absent)."""
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        utt, _, text = line.strip().partition(" ")
        if utt:
            out[utt] = text.strip()
    return out


def _scan_libritts(src: Path) -> tuple[list[_Found], list[ManifestProblem]]:
    found: list[_Found] = []
    problems: list[ManifestProblem] = []
    for path in sorted(p for p in src.rglob("*") if p.suffix.lower() == ".wav"):
        m = _LIBRITTS_NAME.match(path.stem)
        if m is None:
            problems.append(
                ManifestProblem(str(path), None, "name is not <speaker>_<chapter>_<...>")
            )
            continue
        spk, chapter = m["spk"], m["chapter"]
        bad = _check_folders(path, spk, chapter)
        if bad:
            problems.append(ManifestProblem(str(path), None, bad))
            continue
        text = None
        for kind in ("normalized", "original"):
            t = path.with_name(f"{path.stem}.{kind}.txt")
            if t.is_file():
                text = " ".join(t.read_text(encoding="utf-8", errors="replace").split())
                break
        found.append(_Found(path, path.stem, spk, chapter, text))
    return found, problems


def _header(path: Path) -> tuple[float, int] | str:
    try:
        return audio_info(path)
    except CorpusError as exc:
        return one_line(exc).removeprefix(f"{path}: ")


def read_speaker_table(path: Path) -> tuple[dict[str, Gender], list[ManifestProblem]]:
    """Speaker id -> gender from a ``speakers.csv``/``.tsv`` with a header row naming the
    ``speaker`` (or ``speaker_id``) and ``gender`` (or ``sex``) columns; other columns ignored."""
    import csv

    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: unreadable speakers table ({one_line(exc)})") from None
    rows = list(csv.reader(text.splitlines(), delimiter="\t" if path.suffix == ".tsv" else ","))
    header = [c.strip().lower() for c in rows[0]] if rows else []
    spk_col = next((header.index(c) for c in _SPEAKER_COLUMNS if c in header), None)
    gen_col = next((header.index(c) for c in _GENDER_COLUMNS if c in header), None)
    if spk_col is None or gen_col is None:
        raise CorpusError(
            f"{path}:1: the header must name a speaker column ({' or '.join(_SPEAKER_COLUMNS)}) "
            f"and a gender column ({' or '.join(_GENDER_COLUMNS)}), got {header[:6]}"
        )
    genders: dict[str, Gender] = {}
    problems: list[ManifestProblem] = []
    for n, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) <= max(spk_col, gen_col) or not row[spk_col].strip():
            problems.append(
                ManifestProblem(str(path), n, f"malformed speaker row {','.join(row)!r:.60}")
            )
            continue
        spk = row[spk_col].strip()
        try:
            genders[spk] = normalize_gender(row[gen_col])
        except ValueError as exc:
            problems.append(ManifestProblem(str(path), n, f"speaker {spk!r}: {exc}"))
    return genders, problems


def _read_transcript_table(path: Path) -> dict[str, str]:
    """``file`` (below ``src``, suffix optional) -> ``text`` of a ``transcripts.csv``."""
    import csv

    if not path.is_file():
        return {}
    try:
        rows = list(csv.DictReader(path.read_text(encoding="utf-8-sig").splitlines()))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CorpusError(f"{path}: unreadable transcripts table ({one_line(exc)})") from None
    out: dict[str, str] = {}
    for row in rows:
        file, text = (row.get("file") or "").strip(), (row.get("text") or "").strip()
        if file:
            out[file] = text
            out[Path(file).with_suffix("").as_posix()] = text
    return out


def _scan_plain_folder(src: Path, speakers: set[str]) -> tuple[list[_Found], list[ManifestProblem]]:
    found: list[_Found] = []
    problems: list[ManifestProblem] = []
    transcripts = _read_transcript_table(src / "transcripts.csv")
    by_length = sorted(speakers, key=len, reverse=True)
    files = sorted(
        p for p in src.rglob("*") if p.is_file() and p.suffix.lower() in _FOLDER_AUDIO_SUFFIXES
    )
    for path in files:
        rel = path.relative_to(src)
        spk = rel.parts[0]
        if len(rel.parts) == 1:
            prefixed = (s for s in by_length if path.stem.startswith((f"{s}_", f"{s}-")))
            spk = next(prefixed, "")
            if not spk:
                problems.append(
                    ManifestProblem(
                        str(path),
                        None,
                        "a file directly in the corpus folder must be named <speaker>_<name> "
                        "or <speaker>-<name> with a speaker of the speakers table",
                    )
                )
                continue
        stem = rel.with_suffix("").as_posix()
        text = transcripts.get(rel.as_posix(), transcripts.get(stem))
        sidecar = path.with_suffix(".txt")
        if text is None and sidecar.is_file():
            text = " ".join(sidecar.read_text(encoding="utf-8", errors="replace").split())
        found.append(_Found(path, stem.replace("/", "-"), spk, "", text or None))
    return found, problems


def _import_folder(
    src: Path,
    scan: Callable[[Path], tuple[list[_Found], list[ManifestProblem]]],
    speakers: tuple[dict[str, Gender], list[ManifestProblem]] | None = None,
) -> tuple[Manifest, list[ManifestProblem]]:
    if not src.is_dir():
        raise CorpusError(f"{src}: corpus folder not found")
    genders, problems = speakers or parse_speaker_file(find_speaker_file(src))
    found, scan_problems = scan(src)
    problems += scan_problems
    if not found and not scan_problems:
        problems.append(ManifestProblem(str(src), None, "no audio files found for this layout"))
    with ThreadPoolExecutor(max_workers=_HEADER_THREADS) as pool:
        headers = list(pool.map(_header, [f.path for f in found]))
    root = src.resolve()
    unknown: dict[str, list[Path]] = {}
    rows: list[Utterance] = []
    for f, header in zip(found, headers, strict=True):
        if isinstance(header, str):
            problems.append(ManifestProblem(str(f.path), None, header))
            continue
        gender = genders.get(f.speaker_id)
        if gender is None:
            unknown.setdefault(f.speaker_id, []).append(f.path)
            continue
        rows.append(
            Utterance(
                utt_id=f.utt_id,
                speaker_id=f.speaker_id,
                gender=gender,
                path=f.path.resolve().relative_to(root).as_posix(),
                duration_s=header[0],
                text=f.text,
                chapter_id=f.chapter_id or None,
                original_sample_rate=header[1],
            )
        )
    for spk, paths in sorted(unknown.items()):
        problems.append(
            ManifestProblem(
                str(paths[0].parent.parent),
                None,
                f"speaker {spk!r} ({len(paths)} files) is not in the speaker file (no gender)",
            )
        )
    seen: dict[str, Path] = {}
    unique: list[Utterance] = []
    for u in rows:
        if u.utt_id in seen:
            problems.append(
                ManifestProblem(
                    str(root / u.path),
                    None,
                    f"duplicate utt_id {u.utt_id!r} (also {seen[u.utt_id]})",
                )
            )
            continue
        seen[u.utt_id] = root / u.path
        unique.append(u)
    return Manifest(utterances=tuple(unique), root=str(root)), problems


def import_librispeech(src: str | Path) -> tuple[Manifest, list[ManifestProblem]]:
    """Every readable, gendered utterance of a LibriSpeech tree, plus the problems found."""
    return _import_folder(Path(src), _scan_librispeech)


def import_libritts(src: str | Path) -> tuple[Manifest, list[ManifestProblem]]:
    """Every readable, gendered utterance of a LibriTTS tree, plus the problems found."""
    return _import_folder(Path(src), _scan_libritts)


def import_plain_folder(src: str | Path) -> tuple[Manifest, list[ManifestProblem]]:
    """Every readable, gendered audio file of a plain folder with a speakers table (module
    docstring: ``folder`` layout), plus the problems found."""
    root = Path(src)
    if not root.is_dir():
        raise CorpusError(f"{root}: corpus folder not found")
    table = next((root / n for n in _FOLDER_SPEAKER_TABLES if (root / n).is_file()), None)
    if table is None:
        raise CorpusError(
            f"{root}: no speakers table ({' or '.join(_FOLDER_SPEAKER_TABLES)} with columns "
            "speaker,gender) in this folder"
        )
    genders, problems = read_speaker_table(table)
    return _import_folder(root, lambda s: _scan_plain_folder(s, set(genders)), (genders, problems))


def import_corpus(
    layout: str,
    src: str | Path,
    *,
    skip_invalid: bool = False,
    duration_filter: DurationFilter | None = None,
    allow_audio_under: Sequence[str | Path] = (),
) -> LoadReport:
    """Import ``src`` in the given layout, check it, and apply the duration filter.

    ``layout``: ``librispeech``, ``libritts`` (``librispeech-tts`` is an alias), ``folder`` (audio
    files plus a speakers table), ``kaldi`` (Kaldi / VoicePrivacy data folders,
    ``services.corpus.kaldi``), ``csv`` or ``jsonl``. Problems (unreadable/empty audio,
    unknown speaker gender, bad rows, speakers left with no utterance by the filter) raise one
    ``CorpusError`` listing them, or with ``skip_invalid=True`` are skipped and returned in the
    report. ``allow_audio_under``: folders besides the toolkit root that a Kaldi ``wav.scp`` may
    name audio files in (``kaldi`` only).
    """
    if layout not in LAYOUTS:
        raise CorpusError(f"unknown layout {layout!r} (expected one of {', '.join(LAYOUTS)})")
    if allow_audio_under and layout != "kaldi":
        raise CorpusError(f"--allow-audio-under applies to the kaldi layout only, not {layout}")
    omitted = 0
    if layout in ("csv", "jsonl"):
        if Path(src).suffix.lower() not in (
            (".csv",) if layout == "csv" else (".jsonl", ".ndjson")
        ):
            raise CorpusError(f"{src}: layout {layout} expects a .{layout} file")
        report = load_manifest(src, skip_invalid=True)
        manifest, problems = report.manifest, list(report.problems)
    elif layout == "librispeech":
        manifest, problems = import_librispeech(src)
    elif layout == "folder":
        manifest, problems = import_plain_folder(src)
    elif layout == "kaldi":
        from services.corpus.kaldi import import_kaldi

        manifest, log = import_kaldi(src, allow_audio_under=allow_audio_under)
        problems, omitted = log.kept, log.omitted
    else:
        manifest, problems = import_libritts(src)
    if duration_filter is not None:
        filtered = duration_filter.apply(manifest, source=str(src))
        manifest = filtered.manifest
        problems += filtered.problems
    if not skip_invalid:
        raise_if_problems(problems, omitted=omitted)
    return LoadReport(manifest, problems, omitted)
