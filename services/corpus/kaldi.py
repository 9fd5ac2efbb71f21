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
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from services.audio import audio_info
from services.corpus.manifest import Gender, Manifest, Utterance
from services.corpus.validation import ManifestProblem, normalize_gender, one_line
from services.errors import CorpusError

WAV_SCP = "wav.scp"
_HEADER_THREADS = 8  # header reads are I/O bound
_SUFFIX_SEPARATORS = ("_", "-")

VPC_FOLDER = re.compile(r"^(?P<dataset>.+?)_(?P<role>enrolls|trials_f|trials_m|trials)$")
"""A VoicePrivacy list folder: ``<dataset>_enrolls``, ``<dataset>_trials_f|_m`` or
``<dataset>_trials`` (a mixed-gender list)."""


def read_table(path: Path, *, what: str) -> list[tuple[int, str, str]]:
    """``(line number, key, rest)`` of a Kaldi table (``<key> <rest>``), blank lines skipped.

    A line with a key and nothing after it raises ``CorpusError`` naming the line.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: unreadable {what} ({one_line(exc)})") from None
    rows = []
    for n, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        key, _, rest = text.partition(" ")
        rest = rest.strip()
        if not rest:
            raise CorpusError(f"{path}:{n}: expected '<id> <value>', got {text!r:.80}")
        rows.append((n, key, rest))
    return rows


def _read_map(path: Path, *, what: str) -> dict[str, tuple[int, str]]:
    """key -> (line, value); a key given twice raises ``CorpusError`` naming both lines."""
    out: dict[str, tuple[int, str]] = {}
    for n, key, rest in read_table(path, what=what):
        if key in out:
            raise CorpusError(f"{path}:{n}: duplicate id {key!r} (also line {out[key][0]})")
        out[key] = (n, rest)
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


def _resolve_audio(folder: Path, value: str) -> Path | None:
    p = Path(value)
    if p.is_absolute():
        return p if p.is_file() else None
    for base in (folder, folder.parent, folder.parent.parent):
        if (base / p).is_file():
            return (base / p).resolve()
    return None


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
    return {k: v for k, (_, v) in _read_map(path, what="utt2spk").items()}


def _read_folder(folder: Path) -> tuple[list[_Row], list[ManifestProblem]]:
    """Rows of one data folder; structural errors raise ``CorpusError`` (one line)."""
    if (folder / "segments").is_file():
        raise CorpusError(
            f"{folder / 'segments'}:1: segments (utterances cut from longer recordings) are not "
            "supported; write one audio file per utterance"
        )
    scp = _read_map(folder / WAV_SCP, what=WAV_SCP)
    for utt, (n, value) in scp.items():
        if value.endswith("|") or value.startswith("|") or " | " in f" {value} ":
            raise CorpusError(
                f"{folder / WAV_SCP}:{n}: a pipe command ({value!r:.60}) is not supported for "
                f"utterance {utt!r}; decode to audio files and list their paths"
            )
    speakers = utterance_speakers(folder)
    gender_file = folder / "spk2gender"
    if not gender_file.is_file():
        raise CorpusError(f"{folder}: no spk2gender (Unmask needs each speaker's gender)")
    genders: dict[str, Gender] = {}
    for speaker, (n, value) in _read_map(gender_file, what="spk2gender").items():
        try:
            genders[speaker] = normalize_gender(value)
        except ValueError as exc:
            raise CorpusError(f"{gender_file}:{n}: speaker {speaker!r}: {exc}") from None
    texts = (
        {k: v for k, (_, v) in _read_map(folder / "text", what="text").items()}
        if (folder / "text").is_file()
        else {}
    )
    durations: dict[str, float] = {}
    if (folder / "utt2dur").is_file():
        for utt, (n, value) in _read_map(folder / "utt2dur", what="utt2dur").items():
            try:
                durations[utt] = float(value)
            except ValueError:
                raise CorpusError(
                    f"{folder / 'utt2dur'}:{n}: duration {value!r} is not a number"
                ) from None
    rows: list[_Row] = []
    problems: list[ManifestProblem] = []
    for utt, (n, value) in scp.items():
        spk_of = speakers.get(utt)
        if spk_of is None:
            raise CorpusError(f"{folder / WAV_SCP}:{n}: utterance {utt!r} is not in utt2spk")
        spk = spk_of
        gender = genders.get(spk)
        if gender is None:
            raise CorpusError(f"{gender_file}: speaker {spk!r} (of utterance {utt!r}) has no line")
        path = _resolve_audio(folder, value)
        if path is None:
            problems.append(
                ManifestProblem(str(folder / WAV_SCP), n, f"audio file {value!r} not found")
            )
            continue
        rows.append(_Row(utt, spk, gender, path, durations.get(utt), texts.get(utt), folder.name))
    return rows, problems


def _header(path: Path) -> tuple[float, int] | str:
    try:
        return audio_info(path)
    except CorpusError as exc:
        return one_line(exc).removeprefix(f"{path}: ")


def import_kaldi(src: str | Path) -> tuple[Manifest, list[ManifestProblem]]:
    """One manifest of every data folder of ``src`` (see `data_folders`), plus file problems.

    Durations come from ``utt2dur`` where given, else from the audio header. An utterance id in
    two folders must name the same audio file (then it is kept once); different audio raises
    ``CorpusError``. Paths are absolute (the manifest writer makes them relative to its folder).
    """
    root = Path(src)
    rows: list[_Row] = []
    problems: list[ManifestProblem] = []
    for folder in data_folders(root):
        got, bad = _read_folder(folder)
        rows += got
        problems += bad
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
                problems.append(ManifestProblem(str(r.path), None, header))
                continue
            duration, rate = header
        if duration <= 0:
            problems.append(
                ManifestProblem(str(r.path), None, f"duration {duration} s (empty audio)")
            )
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
