"""Pre-anonymized audio archives: the request a maker answers, the validator, the `Anonymizer`.

A maker who cannot ship a container anonymizes the protocol's audio themselves and uploads one
zip or tar(.gz/.bz2/.xz) archive. The archive is untrusted input: `validate_archive` lists it
first (no byte is written before every member's name, type and declared size passed), then
extracts the audio members with byte counting, then decodes and checks every file. The layout and
every rule are in docs/container-contract.md ("Pre-anonymized archives").

* `protocol_request` (in ``archive_request.py``) - the JSON a maker needs: every
  utterance of the protocol's four sets with its source gender and the target voice the TSA
  chose (same structure as the container job file).
* `validate_archive` - archive -> `ArchiveValidation` (files extracted under ``out_dir``, a report
  with every problem found, written as ``out_dir/validation.json``).
* `ArchiveAnonymizer` - an `Anonymizer` that returns the validated audio of each item's utt id,
  so `anonymize_manifest` treats an archive like any other anonymizer.

The contract's layout, audio and metadata rules and limits (shared with the container runner) are
in `services.anonymizers.contract`; listing and reading members safely is
``archive_members.py``. This module reads no settings (pass `ArchiveLimits`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tarfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import soundfile as sf

from services.anonymizers.archive_members import (
    DECODER_ERRORS,
    EXTRA_MEMBERS_LISTED,
    ArchiveError,
    _check_zip_directory,
    _compressed_tar_mode,
    _copy_bounded,
    _Entry,
    _Fatal,
    _folder_entries,
    _normalize_expected,
    _SizeGuard,
    _tar_entries,
    _zip_entries,
    source_fingerprint,
)
from services.anonymizers.base import AnonymizationItem, Anonymizer
from services.anonymizers.contract import (
    AUDIO_EXTENSIONS,
    CONTRACT_VERSION,
    METADATA_NAME,
    ArchiveLimits,
    check_audio_file,
    exception_line,
    fit_length,
    output_stem,
    parse_metadata,
)
from services.audio import SAMPLE_RATE_HZ
from services.errors import ConfigError

REPORT_NAME = "validation.json"
AUDIO_DIR = "audio"
MAX_LISTED_PROBLEMS = 20
"""Problems of one kind listed by name; the rest are counted."""


# --------------------------------------------------------------------------------------------
# The report (the limits are `contract.ArchiveLimits`).
# --------------------------------------------------------------------------------------------


@dataclass
class ArchiveValidation:
    """What `validate_archive` found. ``ok`` when ``problems`` is empty.

    ``files``: utt id -> path of its audio relative to ``out_dir``; ``durations_s`` (seconds) and
    ``sha256`` per utt id; ``unpacked_bytes``: bytes written. ``metadata``: the parsed optional
    ``metadata.json`` (a JSON object) or None.
    """

    archive: str
    archive_sha256: str
    out_dir: str
    n_members: int = 0
    unpacked_bytes: int = 0
    files: dict[str, str] = field(default_factory=dict)
    durations_s: dict[str, float] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    contract_version: int = CONTRACT_VERSION
    vpc_suffix: str | None = None
    """The suffix of the VoicePrivacy-layout folders (``_b1`` in ``libri_dev_enrolls_b1``), when
    the archive used that layout."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_for_problems(self) -> ArchiveValidation:
        """Self when valid; `ArchiveError` listing the problems otherwise."""
        if self.problems:
            head = "; ".join(self.problems[:MAX_LISTED_PROBLEMS])
            more = len(self.problems) - MAX_LISTED_PROBLEMS
            tail = f"; and {more} more problem(s)" if more > 0 else ""
            raise ArchiveError(f"{self.archive}: {head}{tail}")
        return self

    def content_hash(self) -> str:
        """SHA-256 over (utt id, file SHA-256) pairs: names the audio this archive provides."""
        blob = json.dumps(sorted(self.sha256.items()), separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ArchiveValidation:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


class _Problems:
    """Collects problems per kind, so thousands of missing files make one readable line."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[str]] = {}

    def add(self, kind: str, item: str) -> None:
        self.by_kind.setdefault(kind, []).append(item)

    def lines(self) -> list[str]:
        out = []
        for kind, items in self.by_kind.items():
            shown = ", ".join(items[:MAX_LISTED_PROBLEMS])
            more = len(items) - MAX_LISTED_PROBLEMS
            tail = f" (and {more} more, {len(items)} in all)" if more > 0 else ""
            out.append(f"{kind}: {shown}{tail}")
        return out

    def __bool__(self) -> bool:
        return bool(self.by_kind)


def validate_archive(
    archive_path: str | Path,
    expected: Mapping[str, Iterable[str]] | Iterable[str],
    out_dir: str | Path,
    limits: ArchiveLimits | None = None,
    original_durations_s: Mapping[str, float] | None = None,
    vpc_folders: Mapping[str, str] | None = None,
) -> ArchiveValidation:
    """Validate a pre-anonymized archive (or local folder) and extract its audio into ``out_dir``.

    ``expected``: set name -> utterance ids (e.g. `expected_from_protocol`), or one flat list.
    ``original_durations_s``: utt id -> original duration (seconds), to check durations. Layout
    (docs/container-contract.md): ``<stem>.wav|.flac`` at the top, or ``<set>/<stem>.wav|.flac``
    in the utterance's own set folder, optionally all inside one wrapper folder, plus an optional
    ``metadata.json``; `output_stem` gives the stem of an utt id.

    Order: the archive is listed first (unsafe names, links, devices, member count, declared
    sizes and compression ratios stop it at once; missing, duplicate and extra members are all
    reported) and nothing is written unless the listing is clean. Then each audio member is
    copied with a byte count capped at its declared size, hashed, decoded and checked. Valid
    audio lands in ``out_dir/audio/<stem><ext>``; the report goes to ``out_dir/validation.json``.
    On any problem the extracted audio is deleted again. The returned report has ``ok`` False
    and the problems; call ``raise_for_problems()`` to turn that into `ArchiveError`.

    ``archive_path`` may be a folder: its files are the members (same rules; its
    ``archive_sha256`` is that of the folder's listing). ``vpc_folders`` (utt id -> VoicePrivacy
    data folder, `vpc_folders_of`): the archive may use the VoicePrivacy layout instead,
    ``<folder><suffix>/wav/<stem>.wav`` with one suffix for all folders (detected, recorded as
    ``vpc_suffix``); the Kaldi files beside ``wav/`` and folders of no protocol set are ignored.
    """
    lim = limits or ArchiveLimits()
    src = Path(archive_path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    audio_dir = out / AUDIO_DIR
    if audio_dir.exists():
        shutil.rmtree(audio_dir)
    if not src.is_file() and not src.is_dir():
        raise ArchiveError(f"{src}: archive not found")
    set_of = _normalize_expected(expected)
    stem_to_utt = _stems_to_utterances(set_of)
    durations = dict(original_durations_s or {})
    report = ArchiveValidation(
        archive=src.name,
        archive_sha256=source_fingerprint(src),
        out_dir=str(out.resolve()),
    )
    budget = _unpacked_budget(lim, set_of, durations)

    # A valid archive holds the expected files, their set folders (two each in the VoicePrivacy
    # layout: `<set><suffix>/wav/`), one wrapper folder and metadata.json: more members than that
    # (plus a few, so that extras are still reported) is refused while the listing is read,
    # before its memory grows with the member count.
    n_sets = len(set(set_of.values()))
    cap = min(lim.max_members, len(set_of) + 2 * n_sets + EXTRA_MEMBERS_LISTED)
    lim = dataclasses.replace(lim, max_members=cap)
    check = _MemberCheck(
        report, lim, budget, set_of, stem_to_utt, durations, audio_dir, dict(vpc_folders or {})
    )
    _check_members(src, check, cap, report)
    if report.problems:
        shutil.rmtree(audio_dir, ignore_errors=True)
        report.files, report.durations_s, report.sha256 = {}, {}, {}
    _write_report(out, report)
    return report


def _stems_to_utterances(set_of: Mapping[str, str]) -> dict[str, str]:
    """Output file stem -> utterance id; two utterances may not share a stem."""
    stem_to_utt: dict[str, str] = {}
    for utt in set_of:
        stem = output_stem(utt)
        if stem in stem_to_utt:
            raise ValueError(f"utterances {stem_to_utt[stem]!r} and {utt!r} share a file name")
        stem_to_utt[stem] = utt
    return stem_to_utt


def _unpacked_budget(
    lim: ArchiveLimits, set_of: Mapping[str, str], durations: Mapping[str, float]
) -> int:
    """Bytes the archive may unpack to: the limit, tightened by the original durations (when
    every expected utterance has one) to what audio of those lengths can take."""
    budget = lim.max_unpacked_bytes
    if durations and set(durations) >= set(set_of):
        need = sum(lim.max_audio_bytes(d) for u, d in durations.items() if u in set_of)
        budget = min(budget, need)
    return budget


def _check_members(src: Path, check: _MemberCheck, cap: int, report: ArchiveValidation) -> None:
    """List and check the members of the folder, zip or tar at ``src``; every problem, the
    decoders' errors included, lands in ``report.problems``."""
    lim, budget = check.lim, check.budget
    try:
        if src.is_dir():
            # A folder is not compressed: the ratio bound is moot, its own size stands in.
            folder_guard = _SizeGuard(1 << 62, budget, lim)
            check.run(None, list(_folder_entries(src.resolve(), lim, folder_guard)))
        elif zipfile.is_zipfile(src):
            _check_zip_directory(src, cap)
            guard = _SizeGuard(src.stat().st_size, budget, lim)
            with zipfile.ZipFile(src) as zf:
                check.run(zf, list(_zip_entries(zf, lim, guard)))
        elif (mode := _compressed_tar_mode(src)) is not None or tarfile.is_tarfile(str(src)):
            guard = _SizeGuard(src.stat().st_size, budget, lim)
            # A compressed stream that does not open as a tar is a corrupt archive (not "not an
            # archive"): tarfile.open names the decoder's error.
            with tarfile.open(str(src), mode=mode or "r:") as tf:
                check.run(tf, list(_tar_entries(tf, lim, guard)))
        else:
            raise _Fatal("not a zip or tar archive")
    except _Fatal as exc:
        report.problems.append(str(exc))
    except DECODER_ERRORS as exc:
        # Every decoder's own error: zlib (zip deflate, gzip), lzma (xz), bz2 (OSError), the
        # containers' format errors, and zipfile's RuntimeError ("File ... is encrypted",
        # unsupported compression).
        report.problems.append(f"corrupt archive ({exception_line(exc)})")
    except NotImplementedError as exc:
        report.problems.append(f"unsupported archive feature ({exception_line(exc)})")


def _write_report(out: Path, report: ArchiveValidation) -> None:
    """Write ``out/validation.json`` atomically (a reader never sees half a report)."""
    tmp = out / (REPORT_NAME + ".part")
    tmp.write_text(json.dumps(report.to_json(), indent=1, sort_keys=True) + "\n", "utf-8")
    os.replace(tmp, out / REPORT_NAME)


@dataclass
class _MemberCheck:
    report: ArchiveValidation
    lim: ArchiveLimits
    budget: int
    set_of: Mapping[str, str]
    stem_to_utt: Mapping[str, str]
    durations: Mapping[str, float]
    audio_dir: Path
    vpc_folders: Mapping[str, str] = field(default_factory=dict)

    def run(
        self, container: zipfile.ZipFile | tarfile.TarFile | None, entries: list[_Entry]
    ) -> None:
        """Match and extract ``entries`` (``container`` None: a local folder's files)."""
        self.report.n_members = len(entries)
        vpc = self._vpc_layout(entries)
        chosen, metadata_entry = self._match_vpc(entries, *vpc) if vpc else self._match(entries)
        if chosen is not None:
            self._extract(container, chosen, metadata_entry)

    def _match(
        self, entries: list[_Entry]
    ) -> tuple[dict[str, tuple[_Entry, str]] | None, _Entry | None]:
        """Member -> utterance for every entry; None (and problems recorded) when any is off."""
        set_of = self.set_of
        set_names = {s for s in set_of.values() if s}
        files = [e for e in entries if e.kind == "file"]
        # One wrapper folder around everything (``zip -r out.zip out/``) is stripped.
        prefix = ""
        tops = {e.name.split("/", 1)[0] for e in entries if e.name}
        if (
            len(tops) == 1
            and files
            and all("/" in e.name for e in files)
            and next(iter(tops)) not in set_names
        ):
            prefix = next(iter(tops)) + "/"
        problems = _Problems()
        chosen: dict[str, tuple[_Entry, str]] = {}
        metadata_entry: _Entry | None = None
        for e in entries:
            if prefix and e.name == prefix[:-1]:
                continue
            rel = e.name[len(prefix) :] if prefix else e.name
            parts = rel.split("/") if rel else []
            if e.kind == "dir":
                if not parts or (len(parts) == 1 and parts[0] in set_names):
                    continue
                problems.add("unexpected folder(s)", repr(e.raw))
                continue
            if parts == [METADATA_NAME]:
                if metadata_entry is not None:
                    problems.add("duplicate member(s)", f"{e.raw!r} and {metadata_entry.raw!r}")
                metadata_entry = e
                continue
            if len(parts) > 2 or (len(parts) == 2 and parts[0] not in set_names):
                problems.add("unexpected path(s)", repr(e.raw))
                continue
            stem, ext = os.path.splitext(parts[-1])
            if ext.lower() not in AUDIO_EXTENSIONS:
                problems.add("unexpected file(s) (not .wav/.flac)", repr(e.raw))
                continue
            utt = self.stem_to_utt.get(stem)
            if utt is None:
                problems.add("file(s) for no utterance of the protocol", repr(e.raw))
                continue
            if len(parts) == 2 and parts[0] != set_of[utt]:
                problems.add(
                    "file(s) in the wrong set folder", f"{e.raw!r} (belongs to {set_of[utt]})"
                )
                continue
            if utt in chosen:
                problems.add("duplicate utterance(s)", f"{e.raw!r} and {chosen[utt][0].raw!r}")
                continue
            chosen[utt] = (e, ext.lower())
        for u in set_of:
            if u not in chosen:
                problems.add("missing utterance(s)", repr(u))
        if problems:
            self.report.problems.extend(problems.lines())
            return None, None
        return chosen, metadata_entry

    def _vpc_layout(self, entries: list[_Entry]) -> tuple[str, dict[str, str]] | None:
        """(wrapper prefix, top folder -> its protocol folder) when the entries use the
        VoicePrivacy layout (an audio file at ``<folder><suffix>/wav/<name>``), else None."""
        if not self.vpc_folders:
            return None
        known = sorted(set(self.vpc_folders.values()), key=len, reverse=True)

        def base_of(top: str) -> str | None:
            return next((k for k in known if top.startswith(k)), None)

        for prefix_parts in (0, 1):
            tops: dict[str, str] = {}
            prefix = ""
            for e in entries:
                parts = e.name.split("/")
                head, rest = parts[:prefix_parts], parts[prefix_parts:]
                if e.kind == "file" and len(rest) == 3 and rest[1] == "wav":
                    base = base_of(rest[0])
                    if base is not None:
                        tops[rest[0]] = base
                        prefix = "".join(f"{h}/" for h in head)
            if tops:
                return prefix, tops
        return None

    def _match_vpc(
        self, entries: list[_Entry], prefix: str, tops: dict[str, str]
    ) -> tuple[dict[str, tuple[_Entry, str]] | None, _Entry | None]:
        """`_match` for the VoicePrivacy layout: ``<folder><suffix>/wav/<stem>.wav``."""
        problems = _Problems()
        suffixes = sorted({top[len(base) :] for top, base in tops.items()})
        if len(suffixes) > 1:
            problems.add(
                "several anonymized copies (suffixes)",
                ", ".join(repr(x) for x in suffixes) + "; submit one system's folders",
            )
        chosen: dict[str, tuple[_Entry, str]] = {}
        metadata_entry: _Entry | None = None
        for e in entries:
            if e.kind == "dir" or (prefix and not e.name.startswith(prefix)):
                continue
            parts = e.name[len(prefix) :].split("/")
            if parts == [METADATA_NAME]:
                metadata_entry = e
                continue
            stem, ext = os.path.splitext(parts[-1])
            is_audio = ext.lower() in AUDIO_EXTENSIONS
            base = tops.get(parts[0])
            if base is None:
                if is_audio:  # audio outside every anonymized folder of the protocol
                    problems.add("extra file(s) outside the protocol's folders", repr(e.raw))
                continue  # Kaldi files, original data folders, other datasets: not submitted
            if len(parts) == 2 and not is_audio:
                continue  # wav.scp, utt2spk, ... beside wav/
            if len(parts) != 3 or parts[1] != "wav" or not is_audio:
                problems.add("unexpected path(s)", repr(e.raw))
                continue
            utt = self.stem_to_utt.get(stem)
            if utt is None:
                problems.add("extra utterance(s) (not in the protocol)", repr(e.raw))
                continue
            if self.vpc_folders.get(utt) != base:
                problems.add(
                    "file(s) in the wrong folder",
                    f"{e.raw!r} (belongs to {self.vpc_folders.get(utt)}{suffixes[0]})",
                )
                continue
            if utt in chosen:
                problems.add("duplicate utterance(s)", f"{e.raw!r} and {chosen[utt][0].raw!r}")
                continue
            chosen[utt] = (e, ext.lower())
        for u in self.set_of:
            if u not in chosen:
                problems.add("missing utterance(s)", repr(u))
        if problems:
            self.report.problems.extend(problems.lines())
            return None, None
        self.report.vpc_suffix = suffixes[0]
        return chosen, metadata_entry

    def _extract(
        self,
        container: zipfile.ZipFile | tarfile.TarFile | None,
        chosen: dict[str, tuple[_Entry, str]],
        metadata_entry: _Entry | None,
    ) -> None:
        report, lim = self.report, self.lim
        problems = _Problems()
        self.audio_dir.mkdir(parents=True, exist_ok=True)
        remaining = self.budget
        for utt, (e, ext) in chosen.items():
            dest = self.audio_dir / f"{output_stem(utt)}{ext}"
            with _open_member(container, e) as stream:
                n, digest = _copy_bounded(stream, dest, min(e.size, remaining), e.raw)
            if n != e.size:
                raise _Fatal(f"member {e.raw!r}: {n} bytes extracted, {e.size} declared")
            remaining -= n
            report.unpacked_bytes += n
            wav, problem = check_audio_file(dest, f"member {e.raw!r}", self.durations.get(utt), lim)
            if problem is not None or wav is None:
                problems.add("bad audio", str(problem))
                dest.unlink()
                continue
            report.files[utt] = f"{AUDIO_DIR}/{dest.name}"
            report.durations_s[utt] = wav.size / SAMPLE_RATE_HZ
            report.sha256[utt] = digest
        if metadata_entry is not None:
            with _open_member(container, metadata_entry) as stream:
                blob = stream.read(min(metadata_entry.size, lim.max_metadata_bytes) + 1)
            meta, why = parse_metadata(blob, lim)
            if why:
                problems.add("bad metadata", f"{metadata_entry.raw!r}: {why}")
            report.metadata = meta
        report.problems.extend(problems.lines())


def _open_member(container: zipfile.ZipFile | tarfile.TarFile | None, e: _Entry) -> IO[bytes]:
    if container is None:  # a local folder's file
        fd = os.open(e.handle, os.O_RDONLY | os.O_NOFOLLOW)
        return os.fdopen(fd, "rb")
    if isinstance(container, zipfile.ZipFile):
        return container.open(e.handle)
    stream = container.extractfile(e.handle)
    if stream is None:
        raise _Fatal(f"member {e.raw!r}: not a regular file")
    return stream


# --------------------------------------------------------------------------------------------
# The Anonymizer over a validated archive.
# --------------------------------------------------------------------------------------------


class ArchiveAnonymizer(Anonymizer):
    """The audio of a validated pre-anonymized archive, looked up by each item's utt id.

    ``folder``: the ``out_dir`` of a successful `validate_archive` (it holds ``validation.json``
    and ``audio/``). Outputs are cropped or zero-padded to the input's length (the validator
    already bounded the difference). ``seed`` is ignored: the maker fixed the randomness.
    """

    name = "archive"

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        report_path = self.folder / REPORT_NAME
        if not report_path.is_file():
            raise ConfigError(
                f"{self.folder}: no {REPORT_NAME}; validate the archive first "
                "(services.anonymizers.archive.validate_archive) and pass its out_dir"
            )
        try:
            data = json.loads(report_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{report_path}: unreadable ({exception_line(exc)})") from exc
        self.validation = ArchiveValidation.from_json(data)
        if not self.validation.ok:
            raise ArchiveError(
                f"{self.folder}: the archive failed validation: "
                + "; ".join(self.validation.problems[:5])
            )

    def anonymize(self, items: Sequence[AnonymizationItem], seed: int) -> list[np.ndarray]:
        outputs = []
        for item in items:
            rel = self.validation.files.get(item.utt_id)
            if rel is None:
                raise ArchiveError(
                    f"{self.validation.archive}: no audio for utterance {item.utt_id!r}"
                )
            wav, _ = sf.read(str(self.folder / rel), dtype="float32", always_2d=False)
            outputs.append(fit_length(wav, len(item.waveform)))
        return outputs

    def config(self) -> dict[str, object]:
        return {
            **super().config(),
            "archive_sha256": self.validation.archive_sha256,
            "content_hash": self.validation.content_hash(),
        }
