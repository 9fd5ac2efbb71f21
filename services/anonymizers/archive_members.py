"""Reading an untrusted archive safely: its members listed (names, types, declared sizes) before
any byte is written, size and ratio guards, bounded copies, and the fingerprint and packing of
local folders. ``services.anonymizers.archive`` validates what this lists.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from services.anonymizers.contract import (
    AUDIO_EXTENSIONS,
    METADATA_NAME,
    ArchiveLimits,
)
from services.errors import InvalidInputError

_CHUNK = 1 << 20


class ArchiveError(InvalidInputError):
    """The archive (or a container's output folder) breaks the contract; names the member."""


class _Fatal(Exception):
    """Stops validation at once (unsafe or over-limit archive): nothing more is read."""


# --------------------------------------------------------------------------------------------
# Listing: names, types and declared sizes, before any byte is written.
# --------------------------------------------------------------------------------------------

EntryKind = Literal["file", "dir"]


@dataclass(frozen=True)
class _Entry:
    name: str  # normalized POSIX path, no leading "./", no trailing "/"
    raw: str  # as stored (for messages)
    kind: EntryKind
    size: int  # declared uncompressed size, bytes
    handle: Any  # ZipInfo or TarInfo


def _name_problem(raw: str) -> str | None:
    """Why a member name is unsafe, or None."""
    if not raw or raw in ("/", "./"):
        return "empty name"
    if "\x00" in raw:
        return "NUL byte in the name"
    if "\\" in raw:
        return "backslash in the name (use / as the separator)"
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        return "absolute path"
    if any(part == ".." for part in raw.split("/")):
        return "path traversal (..)"
    if len(raw) > 1024:
        return "name longer than 1024 characters"
    return None


def _normalize(raw: str) -> str:
    return "/".join(p for p in raw.split("/") if p not in ("", "."))


EXTRA_MEMBERS_LISTED = 1000
"""Members beyond what a valid archive holds that are still listed (and reported as extras)."""

ZIP_DIRECTORY_BYTES_PER_MEMBER = 4096
"""Largest central-directory record (bytes) of one member: 46-byte header, name, extra, comment."""


def _check_zip_directory(path: Path, max_members: int) -> None:
    """Refuse a zip whose end record declares more than ``max_members`` entries, or a central
    directory larger than they need, before ``zipfile`` reads (and keeps) the directory."""
    with open(path, "rb") as fh:
        end = zipfile._EndRecData(fh)  # type: ignore[attr-defined]  # stable since Python 2
    if not end:
        raise _Fatal("corrupt zip archive: no end of central directory record")
    entries, directory_bytes = int(end[zipfile._ECD_ENTRIES_TOTAL]), int(end[zipfile._ECD_SIZE])  # type: ignore[attr-defined]
    if entries > max_members:
        raise _Fatal(f"{entries} members, more than the limit of {max_members}")
    if directory_bytes > max_members * ZIP_DIRECTORY_BYTES_PER_MEMBER:
        raise _Fatal(
            f"zip central directory of {directory_bytes} bytes is larger than {max_members} "
            "members need"
        )


def _zip_entries(zf: zipfile.ZipFile, limits: ArchiveLimits, guard: _SizeGuard) -> Iterator[_Entry]:
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise _Fatal(f"{len(infos)} members, more than the limit of {limits.max_members}")
    for info in infos:
        raw = info.filename
        why = _name_problem(raw)
        if why:
            raise _Fatal(f"member {raw!r}: {why}")
        if info.flag_bits & 0x1:
            raise _Fatal(f"member {raw!r}: encrypted members are not accepted")
        mode = (info.external_attr >> 16) & 0xFFFF
        ftype = stat.S_IFMT(mode)
        if info.create_system == 3 and ftype not in (0, stat.S_IFREG, stat.S_IFDIR):
            what = "a symlink" if ftype == stat.S_IFLNK else "a device, fifo or socket"
            raise _Fatal(f"member {raw!r}: {what}; only regular files and folders are accepted")
        is_dir = info.is_dir() or ftype == stat.S_IFDIR
        if is_dir and info.file_size:
            raise _Fatal(f"member {raw!r}: a folder entry with data")
        guard.add(info.file_size, raw)
        if (
            not is_dir
            and info.file_size >= limits.ratio_min_bytes
            and info.file_size > limits.max_compression_ratio * max(info.compress_size, 1)
        ):
            ratio = info.file_size / max(info.compress_size, 1)
            raise _Fatal(
                f"member {raw!r}: compression ratio {ratio:.0f}:1 above the limit of "
                f"{limits.max_compression_ratio:g}:1 (zip bomb?)"
            )
        yield _Entry(_normalize(raw), raw, "dir" if is_dir else "file", info.file_size, info)


def _tar_entries(tf: tarfile.TarFile, limits: ArchiveLimits, guard: _SizeGuard) -> Iterator[_Entry]:
    count = 0
    while True:
        try:
            info = tf.next()
        except tarfile.TarError as exc:
            raise _Fatal(f"corrupt tar archive after {count} members ({exc})") from None
        if info is None:
            _check_tar_end(tf, count)
            return
        count += 1
        if count > limits.max_members:
            raise _Fatal(f"more members than the limit of {limits.max_members}")
        raw = info.name
        why = _name_problem(raw)
        if why:
            raise _Fatal(f"member {raw!r}: {why}")
        if info.issym() or info.islnk():
            kind = "a symlink" if info.issym() else "a hard link"
            raise _Fatal(
                f"member {raw!r}: {kind} (to {info.linkname!r}); only regular files and "
                "folders are accepted"
            )
        if info.issparse():
            raise _Fatal(f"member {raw!r}: sparse files are not accepted")
        if info.isdir():
            yield _Entry(_normalize(raw), raw, "dir", 0, info)
        elif info.isreg():
            guard.add(int(info.size), raw)
            yield _Entry(_normalize(raw), raw, "file", int(info.size), info)
        else:
            raise _Fatal(
                f"member {raw!r}: a device, fifo or other special file; only regular files and "
                "folders are accepted"
            )


def _folder_entries(root: Path, limits: ArchiveLimits, guard: _SizeGuard) -> Iterator[_Entry]:
    """The entries of a local folder submitted as an archive (the same rules: regular files and
    folders only, no links, the member count and size limits)."""
    count = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            items = sorted(it, key=lambda e: e.name)
        for item in items:
            count += 1
            if count > limits.max_members:
                raise _Fatal(f"more members than the limit of {limits.max_members}")
            rel = Path(item.path).relative_to(root).as_posix()
            if item.is_symlink():
                raise _Fatal(f"member {rel!r}: a symlink; only regular files and folders")
            if item.is_dir(follow_symlinks=False):
                stack.append(Path(item.path))
                yield _Entry(rel, rel, "dir", 0, Path(item.path))
            elif item.is_file(follow_symlinks=False):
                size = item.stat(follow_symlinks=False).st_size
                guard.add(size, rel)
                yield _Entry(rel, rel, "file", size, Path(item.path))
            else:
                raise _Fatal(f"member {rel!r}: a device, fifo or other special file")


def source_fingerprint(source: Path) -> str:
    """SHA-256 naming a submitted archive's content: of the file, or of a folder's listing."""
    return _sha256_file(source) if source.is_file() else _folder_fingerprint(source)


def pack_folder(folder: Path, dest: Path) -> Path:
    """A tar of a local submission folder's audio files (``.wav``/``.flac``, any depth: the
    Unmask layout or the VoicePrivacy one) and its top-level ``metadata.json``; Kaldi files and
    other text stay behind. Symlinked files are stored as the files they point to."""
    if not folder.is_dir():
        raise ArchiveError(f"{folder}: not a folder")
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and (p.suffix.lower() in AUDIO_EXTENSIONS or p.relative_to(folder) == Path(METADATA_NAME))
    )
    if not files:
        raise ArchiveError(f"{folder}: no .wav or .flac file to submit")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w", dereference=True) as tf:
        for p in files:
            tf.add(p, arcname=p.relative_to(folder).as_posix(), recursive=False)
    return dest


def _folder_fingerprint(root: Path) -> str:
    """SHA-256 of a folder's listing (relative path, size, modification time of every file)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            st = os.lstat(os.path.join(dirpath, name))
            rel = Path(dirpath, name).relative_to(root).as_posix()
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


TAR_MAX_TRAILING_BYTES = 1 << 20
"""Zero padding accepted after a tar's last member (tar pads to a 10 KiB record), bytes."""


def _check_tar_end(tf: tarfile.TarFile, count: int) -> None:
    """`_Fatal` unless only zero padding follows where the listing stopped.

    ``tarfile`` ends the listing silently at the first header it cannot parse past the first
    member, so a corrupted compressed stream (whose checksum is only checked at its end) would
    look like an archive with fewer members; reading the rest to its end also runs the
    decompressor's own checks (CRC, end of stream).
    """
    fileobj = tf.fileobj
    if fileobj is None:
        return
    fileobj.seek(tf.offset)
    read = 0
    while True:
        block = fileobj.read(_CHUNK)
        if not block:
            return
        read += len(block)
        if block.count(0) != len(block) or read > TAR_MAX_TRAILING_BYTES:
            raise _Fatal(
                f"corrupt archive: unreadable tar header after {count} members "
                f"(at byte {tf.offset} of the unpacked tar)"
            )


class _SizeGuard:
    """Declared sizes checked while listing, so a bomb stops before its data is even read.

    The total is bounded by the unpacked-size budget and by ``max_compression_ratio`` times the
    archive's own size (which also bounds what listing a compressed tar has to decompress).
    """

    def __init__(self, archive_bytes: int, budget: int, lim: ArchiveLimits) -> None:
        self.archive_bytes = max(archive_bytes, 1)
        self.budget = budget
        self.lim = lim
        self.total = 0
        self.metadata_seen = False

    def add(self, size: int, raw: str) -> None:
        lim = self.lim
        name = _normalize(raw)
        if not self.metadata_seen and name.split("/")[-1] == METADATA_NAME and name.count("/") < 2:
            # The one metadata file has its own bound and does not use the audio budget.
            self.metadata_seen = True
            if size > lim.max_metadata_bytes:
                raise _Fatal(
                    f"member {raw!r}: declared size {size} bytes above the metadata limit of "
                    f"{lim.max_metadata_bytes} bytes"
                )
            return
        if size > lim.max_member_bytes:
            raise _Fatal(
                f"member {raw!r}: declared size {size} bytes above the per-file limit of "
                f"{lim.max_member_bytes} bytes"
            )
        self.total += size
        if self.total > self.budget:
            raise _Fatal(
                f"declared unpacked size exceeds the limit of {self.budget} bytes at member "
                f"{raw!r} (zip bomb?)"
            )
        ratio = self.total / self.archive_bytes
        if self.total >= lim.ratio_min_bytes and ratio > lim.max_compression_ratio:
            raise _Fatal(
                f"declared unpacked size reaches {ratio:.0f} times the archive's "
                f"{self.archive_bytes} bytes at member {raw!r}, above the limit of "
                f"{lim.max_compression_ratio:g}:1 (zip bomb?)"
            )


# --------------------------------------------------------------------------------------------
# validate_archive
# --------------------------------------------------------------------------------------------


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _normalize_expected(
    expected: Mapping[str, Iterable[str]] | Iterable[str],
) -> dict[str, str]:
    """utt id -> set name ("" when the caller gave one flat list)."""
    groups: Mapping[str, Iterable[str]] = (
        expected if isinstance(expected, Mapping) else {"": list(expected)}
    )
    out: dict[str, str] = {}
    for set_name, ids in groups.items():
        for utt in ids:
            if utt in out:
                raise ValueError(f"utterance {utt!r} is expected in two sets")
            out[utt] = set_name
    return out


def _copy_bounded(src: IO[bytes], dest: Path, limit: int, label: str) -> tuple[int, str]:
    """Copy at most ``limit`` bytes; `_Fatal` when the stream has more. Returns (bytes, sha256)."""
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    h = hashlib.sha256()
    written = 0
    with os.fdopen(fd, "wb") as out:
        while True:
            block = src.read(min(_CHUNK, limit - written + 1))
            if not block:
                break
            written += len(block)
            if written > limit:
                raise _Fatal(
                    f"member {label!r}: more data than its declared size or the size limit "
                    f"({limit} bytes) (zip bomb?)"
                )
            h.update(block)
            out.write(block)
    return written, h.hexdigest()


DECODER_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    tarfile.TarError,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    RuntimeError,
    struct.error,
    UnicodeDecodeError,
)
"""What reading a damaged zip or (compressed) tar raises; each makes a "corrupt archive"."""

CompressedTarMode = Literal["r:gz", "r:bz2", "r:xz"]
_COMPRESSED_TAR_MAGIC: dict[bytes, CompressedTarMode] = {
    b"\x1f\x8b": "r:gz",
    b"BZh": "r:bz2",
    b"\xfd7zXZ\x00": "r:xz",
}


def _compressed_tar_mode(path: Path) -> CompressedTarMode | None:
    """The ``tarfile`` mode of a gzip, bzip2 or xz file (by its magic bytes), else None."""
    with path.open("rb") as f:
        head = f.read(6)
    for magic, mode in _COMPRESSED_TAR_MAGIC.items():
        if head.startswith(magic):
            return mode
    return None
