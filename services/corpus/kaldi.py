"""Kaldi / VoicePrivacy Challenge data folders: import into a manifest, read the fixed lists.

A Kaldi data folder holds ``wav.scp`` (``<utt> <audio file>``), ``utt2spk`` (``<utt> <speaker>``),
``spk2gender`` (``<speaker> f|m``), optionally ``text`` (``<utt> TRANSCRIPT``) and ``utt2dur``
(``<utt> <seconds>``). The VoicePrivacy Challenge adds ``enrolls`` (enrollment utterance ids, in
the ``*_enrolls`` folders) and ``trials`` (``<enroll speaker> <trial utt> target|nontarget``, in
``*_trials_f`` / ``*_trials_m``); an anonymizer's output is the same folders with a suffix
(``libri_dev_enrolls_b1``). Only file paths are read from ``wav.scp``: a pipe command
(``flac -c -d ... |``) or a ``segments`` file is refused, naming the line, because Unmask reads
audio files, never runs commands.

Relative paths in ``wav.scp`` are resolved against the data folder, then its parent (``data/``),
then the grandparent (the toolkit root the VoicePrivacy scripts run from), first existing wins.
Every path must lie under that toolkit root, or under a folder the operator allows
(``allow_audio_under``): a ``wav.scp`` naming ``../../../../etc/passwd`` or ``/etc/hostname``
gets a problem naming the line, and the file is never opened. The check is on the path as written
(``..`` cannot climb out); symbolic links inside the allowed folders are followed, so a toolkit
whose ``corpora`` links to another disk imports as before.

The tables are read line by line and the problems capped (``ProblemLog``): a ``wav.scp`` of
300 000 missing files costs the memory of its ``utt2spk``, not of 300 000 problems.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from services.audio import audio_info
from services.corpus.manifest import Gender, Manifest, Utterance
from services.corpus.validation import ManifestProblem, ProblemLog, normalize_gender, one_line
from services.errors import CorpusError

WAV_SCP = "wav.scp"
_HEADER_THREADS = 8  # header reads are I/O bound
_SUFFIX_SEPARATORS = ("_", "-")

VPC_FOLDER = re.compile(r"^(?P<dataset>.+?)_(?P<role>enrolls|trials_f|trials_m|trials)$")
"""A VoicePrivacy list folder: ``<dataset>_enrolls``, ``<dataset>_trials_f|_m`` or
``<dataset>_trials`` (a mixed-gender list)."""


def iter_table(path: Path, *, what: str) -> Iterator[tuple[int, str, str]]:
    """``(line number, key, rest)`` of a Kaldi table (``<key> <rest>``), read line by line,
    blank lines skipped.

    A line with a key and nothing after it raises ``CorpusError`` naming the line.
    """
    try:
        with path.open(encoding="utf-8") as lines:
            for n, line in enumerate(lines, start=1):
                text = line.strip()
                if not text:
                    continue
                key, _, rest = text.partition(" ")
                rest = rest.strip()
                if not rest:
                    raise CorpusError(f"{path}:{n}: expected '<id> <value>', got {text!r:.80}")
                yield n, key, rest
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: unreadable {what} ({one_line(exc)})") from None


def read_table(path: Path, *, what: str) -> list[tuple[int, str, str]]:
    """Every row of :func:`iter_table` (small lists: ``trials``)."""
    return list(iter_table(path, what=what))


def _first_line(path: Path, key: str, *, what: str) -> int:
    """The line of ``key``'s first row in ``path`` (error messages only: reads the file again)."""
    return next(n for n, k, _ in iter_table(path, what=what) if k == key)


def _read_map(path: Path, *, what: str) -> dict[str, str]:
    """key -> value; a key given twice raises ``CorpusError`` naming both lines. Equal values
    share one string (a speaker id repeated on 300 000 lines is stored once)."""
    out: dict[str, str] = {}
    values: dict[str, str] = {}
    for n, key, rest in iter_table(path, what=what):
        if key in out:
            first = _first_line(path, key, what=what)
            raise CorpusError(f"{path}:{n}: duplicate id {key!r} (also line {first})")
        out[key] = values.setdefault(rest, rest)
    return out


def is_data_folder(path: Path) -> bool:
    """Whether ``path`` is a Kaldi data folder (holds a ``wav.scp``)."""
    return (path / WAV_SCP).is_file()


def is_suffixed_copy(name: str, others: set[str]) -> bool:
    """Whether the folder ``name`` is another folder's name plus a suffix (``_b1``, ``-anon``):
    an anonymizer's output beside the original data, which importing the originals skips."""
    return any(
        name != o and name.startswith(o) and name[len(o)] in _SUFFIX_SEPARATORS for o in others
    )


def data_folders(src: Path) -> list[Path]:
    """The data folders of ``src``: ``src`` itself when it holds a ``wav.scp``, else its
    sub-folders that do, minus suffixed (anonymized) copies of another one. Sorted by name."""
    if not src.is_dir():
        raise CorpusError(f"{src}: data folder not found")
    if is_data_folder(src):
        return [src]
    found = sorted(p for p in src.iterdir() if p.is_dir() and is_data_folder(p))
    names = {p.name for p in found}
    kept = [p for p in found if not is_suffixed_copy(p.name, names)]
    if not kept:
        raise CorpusError(
            f"{src}: no Kaldi data folder (a folder holding {WAV_SCP}) here or one level below"
        )
    return kept


@dataclass(frozen=True)
class AudioRoots:
    """The folders audio files named in ``wav.scp`` may lie under (absolute, as written: no
    symbolic link resolved, so that ``..`` is judged on the path the table names)."""

    roots: tuple[str, ...]

    @classmethod
    def of(cls, folders: Sequence[str | Path]) -> AudioRoots:
        """The roots ``folders`` (made absolute and normalized, duplicates dropped), each also
        as its real folder (a path a table names through the real folder is inside too)."""
        seen = dict.fromkeys(
            root
            for f in folders
            for root in (os.path.normpath(os.path.abspath(f)), os.path.realpath(f))
        )
        return cls(tuple(seen))

    def holds(self, path: str) -> bool:
        """Whether the absolute, normalized ``path`` lies under one of the roots."""
        return any(
            path == root or path.startswith(root if root == os.sep else root + os.sep)
            for root in self.roots
        )

    def __str__(self) -> str:
        return " or ".join(self.roots)


def lookup_folders(folder: Path) -> tuple[str, str, str]:
    """Where a relative ``wav.scp`` path of ``folder`` is looked up, in order: the folder, its
    parent (``data/``), its grandparent (the toolkit root); absolute, as written."""
    base = os.path.abspath(folder)
    parent = os.path.dirname(base)
    return base, parent, os.path.dirname(parent)


def _resolve_audio(bases: tuple[str, ...], value: str, roots: AudioRoots) -> Path | str:
    """The audio file a ``wav.scp`` line names (``value``, relative to ``bases`` in turn), or
    why not (a problem). Candidates outside ``roots`` (which hold the last of ``bases``) are
    never looked at, not even with a ``stat``.
    """
    if not os.path.isabs(value) and ".." not in value:
        # Below each lookup folder, hence below the toolkit root: no check needed (the common
        # case, kept cheap for lists of a million lines).
        inside = [f"{base}{os.sep}{value}" for base in bases]
    else:
        candidates = [value] if os.path.isabs(value) else [os.path.join(b, value) for b in bases]
        inside = [p for p in map(os.path.normpath, candidates) if roots.holds(p)]
    if not inside:
        return (
            f"audio file {value!r} lies outside {roots}: refused (a wav.scp may name files "
            "under the toolkit root only; allow another folder with --allow-audio-under)"
        )
    for path in inside:
        if os.path.isfile(path):
            return Path(path).resolve()
    return f"audio file {value!r} not found"


@dataclass(frozen=True)
class _Row:
    utt_id: str
    speaker_id: str
    gender: Gender
    path: Path
    duration_s: float | None
    text: str | None
    folder: str


def utterance_speakers(folder: Path) -> dict[str, str]:
    """utt id -> speaker id of a data folder (its ``utt2spk``, which must exist)."""
    path = folder / "utt2spk"
    if not path.is_file():
        raise CorpusError(f"{folder}: no utt2spk (every Kaldi data folder needs one)")
    return _read_map(path, what="utt2spk")


def _check_folder_files(folder: Path) -> None:
    """What a data folder must not hold (``segments``) and must hold besides ``wav.scp``."""
    if (folder / "segments").is_file():
        raise CorpusError(
            f"{folder / 'segments'}:1: segments (utterances cut from longer recordings) are not "
            "supported; write one audio file per utterance"
        )
    if not (folder / "spk2gender").is_file():
        raise CorpusError(f"{folder}: no spk2gender (Unmask needs each speaker's gender)")


def _read_genders(gender_file: Path) -> dict[str, Gender]:
    genders: dict[str, Gender] = {}
    for n, speaker, value in iter_table(gender_file, what="spk2gender"):
        if speaker in genders:
            first = _first_line(gender_file, speaker, what="spk2gender")
            raise CorpusError(f"{gender_file}:{n}: duplicate id {speaker!r} (also line {first})")
        try:
            genders[speaker] = normalize_gender(value)
        except ValueError as exc:
            raise CorpusError(f"{gender_file}:{n}: speaker {speaker!r}: {exc}") from None
    return genders


def _read_durations(folder: Path) -> dict[str, float]:
    durations: dict[str, float] = {}
    path = folder / "utt2dur"
    if not path.is_file():
        return durations
    for utt, value in _read_map(path, what="utt2dur").items():
        try:
            seconds = float(value)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds):
            n = _first_line(path, utt, what="utt2dur")
            raise CorpusError(f"{path}:{n}: duration {value!r} is not a finite number")
        durations[utt] = seconds
    return durations


def _scp_speaker(scp: Path, n: int, utt: str, value: str, speakers: dict[str, str]) -> str:
    """The speaker of ``wav.scp`` line ``n`` (``utt``), taken out of ``speakers`` so that the
    table shrinks as ``wav.scp`` is read and a second line of ``utt`` is found (no second table
    of ids); ``CorpusError`` for a pipe command, a duplicate or an id missing from utt2spk."""
    if value.endswith("|") or value.startswith("|") or " | " in f" {value} ":
        raise CorpusError(
            f"{scp}:{n}: a pipe command ({value!r:.60}) is not supported for utterance {utt!r}; "
            "decode to audio files and list their paths"
        )
    speaker = speakers.pop(utt, None)
    if speaker is None:
        first = _first_line(scp, utt, what=WAV_SCP)
        if first != n:
            raise CorpusError(f"{scp}:{n}: duplicate id {utt!r} (also line {first})")
        raise CorpusError(f"{scp}:{n}: utterance {utt!r} is not in utt2spk")
    return speaker


def _read_folder(folder: Path, roots: AudioRoots, problems: ProblemLog) -> list[_Row]:
    """Rows of one data folder (``wav.scp`` streamed); file problems go to ``problems``;
    structural errors raise ``CorpusError`` (one line)."""
    _check_folder_files(folder)
    speakers = utterance_speakers(folder)
    gender_file = folder / "spk2gender"
    genders = _read_genders(gender_file)
    texts = _read_map(folder / "text", what="text") if (folder / "text").is_file() else {}
    durations = _read_durations(folder)
    scp = folder / WAV_SCP
    bases = lookup_folders(folder)
    rows: list[_Row] = []
    for n, utt, value in iter_table(scp, what=WAV_SCP):
        spk = _scp_speaker(scp, n, utt, value, speakers)
        gender = genders.get(spk)
        if gender is None:
            raise CorpusError(f"{gender_file}: speaker {spk!r} (of utterance {utt!r}) has no line")
        path = _resolve_audio(bases, value, roots)
        if isinstance(path, str):
            problems.add(ManifestProblem(str(scp), n, path))
            continue
        rows.append(_Row(utt, spk, gender, path, durations.get(utt), texts.get(utt), folder.name))
    return rows


def _header(path: Path) -> tuple[float, int] | str:
    try:
        return audio_info(path)
    except CorpusError as exc:
        return one_line(exc).removeprefix(f"{path}: ")


def import_kaldi(
    src: str | Path, *, allow_audio_under: Sequence[str | Path] = ()
) -> tuple[Manifest, ProblemLog]:
    """One manifest of every data folder of ``src`` (see `data_folders`), plus file problems
    (the first :data:`~services.corpus.validation.MAX_KEPT_PROBLEMS` kept, the rest counted).

    Audio paths must lie under the data folders' toolkit root (:func:`lookup_folders`) or under
    one of ``allow_audio_under`` (the operator's explicit choice); others are problems, never
    opened. Durations come from ``utt2dur`` where given, else from the audio header. An
    utterance id in two folders must name the same audio file (then it is kept once); different
    audio raises ``CorpusError``. Paths are absolute (the manifest writer makes them relative to
    its folder).
    """
    root = Path(src)
    rows: list[_Row] = []
    problems = ProblemLog()
    for folder in data_folders(root):
        # The widest folder relative paths are looked up in: the toolkit root.
        roots = AudioRoots.of([lookup_folders(folder)[-1], *allow_audio_under])
        rows += _read_folder(folder, roots, problems)
    seen: dict[str, _Row] = {}
    unique: list[_Row] = []
    for r in rows:
        first = seen.get(r.utt_id)
        if first is None:
            seen[r.utt_id] = r
            unique.append(r)
        elif first.path != r.path or first.speaker_id != r.speaker_id:
            raise CorpusError(
                f"{root}: utterance id {r.utt_id!r} is in {first.folder} ({first.path.name}, "
                f"speaker {first.speaker_id}) and in {r.folder} ({r.path.name}, speaker "
                f"{r.speaker_id}) with different audio"
            )
    spk_gender: dict[str, tuple[Gender, str]] = {}
    for r in unique:
        g = spk_gender.setdefault(r.speaker_id, (r.gender, r.folder))
        if g[0] != r.gender:
            raise CorpusError(
                f"{root}: speaker {r.speaker_id!r} is {g[0]} in {g[1]}/spk2gender and "
                f"{r.gender} in {r.folder}/spk2gender"
            )
    need_header = [r.path for r in unique if r.duration_s is None]
    with ThreadPoolExecutor(max_workers=_HEADER_THREADS) as pool:
        headers = dict(zip(need_header, pool.map(_header, need_header), strict=True))
    utterances: list[Utterance] = []
    for r in unique:
        duration, rate = r.duration_s, None
        if duration is None:
            header = headers[r.path]
            if isinstance(header, str):
                problems.add(ManifestProblem(str(r.path), None, header))
                continue
            duration, rate = header
        if duration <= 0:
            problems.add(ManifestProblem(str(r.path), None, f"duration {duration} s (empty audio)"))
            continue
        utterances.append(
            Utterance(
                utt_id=r.utt_id,
                speaker_id=r.speaker_id,
                gender=r.gender,
                path=r.path.as_posix(),
                duration_s=duration,
                text=r.text,
                original_sample_rate=rate,
            )
        )
    return Manifest(utterances=tuple(utterances), root=str(root.resolve())), problems
