"""Content-addressed stages: a stage's output folder is named by the hash of its inputs.

A stage is a plain function of serializable inputs that writes its artifacts into a folder. The
runner computes ``key = sha256(stage name, inputs)``; a finished run lives in
``<work>/<stage>/<key>/`` with a ``DONE.json`` record. The same keys are what the Celery workers
use, and several processes may share one store (``unmask evaluate --stages``, workers of one
host), so every run of a stage key follows one protocol:

1. It takes the key's lock: an exclusive ``flock`` on ``<work>/<stage>/.<key>.lock``. The kernel
   releases it when the holder exits, even by SIGKILL, so a lock is never left stale. Locks are
   per host (cross-host claims are the job database's business).
2. Holding it, it checks for a finished folder. ``DONE.json`` carries the folder's manifest
   (every file's relative path, size and sha256); a folder is reused only if its files are
   exactly the manifest's paths with the manifest's sizes. Any other folder (no or unreadable
   ``DONE.json``, no manifest, a missing, extra or resized file) is moved aside to
   ``<work>/.rejected/`` and the stage is computed again: never silently reused.
3. Otherwise it computes into ``<work>/<stage>/<key>.tmp``, which only the lock holder touches.
   A ``.tmp`` found there was left by a killed run (the lock has no other holder): a
   non-resumable stage clears it, a resumable one (training) continues from the checkpoints in
   it, and one whose ``DONE.json`` had already been written is published as it is.
4. It writes the manifest into ``DONE.json`` (atomically, last) and publishes the folder by
   renaming ``.tmp`` to the key folder, so the folder appears complete or not at all.
   ``DONE.json`` holds the stage, key, inputs, outputs and manifest, nothing that depends on the
   run (no timings, host or date), so equal work gives an equal record on every host.

Why sizes and not hashes on reuse: reuse happens on every run and audio stages hold thousands of
files (gigabytes at full scale); checking a 1,080-file, 173 MB folder's names and sizes took
20-35 ms here, hashing it 0.2-1.1 s from the page cache (more from disk; docs/evaluation.md has
the numbers). The sha256 are recorded anyway and checked wherever the bytes are read in full:
uploads and downloads (``workspace``) and :func:`stage_folder_problem` with
``check_sha256=True``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.pipeline.stage_versions import stage_version

DONE_FILE = "DONE.json"
COMPUTE_SUFFIX = ".compute.json"
"""Beside a key's folder, ``.<key>.compute.json`` records how long the stage took to compute,
where and when. It lives outside the folder, so the published bytes stay host-independent."""
# The key folder's siblings: ``<key>.tmp`` (the lock holder's work) and ``.<key>.lock``.
TMP_SUFFIX = ".tmp"
# Folders that failed verification, kept for inspection: ``<work>/.rejected/<stage>/<key>-...``.
REJECTED_DIR = ".rejected"
_HASH_CHUNK_BYTES = 1 << 20

log = logging.getLogger(__name__)


def stage_key(stage: str, inputs: Mapping[str, Any]) -> str:
    """Hex sha256 of the stage name, its code version (``stage_versions``; version 1 is left
    out, so keys from before versions stay valid) and its canonical-JSON inputs (first 16 hex
    digits)."""
    keyed: dict[str, Any] = {"stage": stage, "inputs": inputs}
    version = stage_version(stage)
    if version != 1:
        keyed["version"] = version
    blob = json.dumps(keyed, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StageOutcome:
    """What a finished stage left behind: its folder, outputs and whether it was reused."""

    stage: str
    key: str
    folder: Path
    outputs: dict[str, Any]
    reused: bool
    seconds: float
    compute_seconds: float | None = None
    """Seconds the stage took when it was computed (this run or an earlier process or host);
    None when no compute record came with a reused folder."""


# --- locks --------------------------------------------------------------------------------------


def compute_record_path(folder: Path) -> Path:
    """The compute record of the stage key folder ``folder`` (``<stage>/.<key>.compute.json``)."""
    return folder.parent / f".{folder.name}{COMPUTE_SUFFIX}"


def write_compute_record(folder: Path, seconds: float) -> None:
    """Record that the stage in ``folder`` took ``seconds`` (s) to compute, on this host, now."""
    record = {"seconds": round(seconds, 3), "host": socket.gethostname(), "at": time.time()}
    _write_atomic(compute_record_path(folder), json.dumps(record, sort_keys=True))


def read_compute_seconds(folder: Path) -> float | None:
    """Seconds (s) of the compute record of ``folder``; None when absent or unreadable."""
    try:
        return float(json.loads(compute_record_path(folder).read_text())["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def stage_lock_path(work_dir: Path, stage: str, key: str) -> Path:
    """The lock file of one stage key: ``<work>/<stage>/.<key>.lock`` (never deleted)."""
    return Path(work_dir) / stage / f".{key}.lock"


@contextlib.contextmanager
def folder_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock (``flock``) on ``path`` for this host's processes.

    Blocks until the lock is free. The lock belongs to the open file, so two threads of one
    process exclude each other too, and the kernel drops it when its holder dies. The holder
    writes its pid and host into the file, which a waiting process logs.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 256, 0).decode(errors="replace").strip() or "unknown"
            log.info("waiting for %s (held by %s)", path, holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def stage_lock(work_dir: Path, stage: str, key: str) -> contextlib.AbstractContextManager[None]:
    """The lock every runner of ``stage``/``key`` under ``work_dir`` holds while it works."""
    return folder_lock(stage_lock_path(work_dir, stage, key))


# --- manifests ----------------------------------------------------------------------------------


def _file_sizes(folder: Path) -> dict[str, int]:
    """Relative POSIX path -> size in bytes of every regular file under ``folder``.

    Symbolic links are skipped (as the blob store's uploads skip them), and so is the top-level
    ``DONE.json``, which holds the manifest.
    """
    sizes: dict[str, int] = {}
    pending = [(Path(folder), "")]
    while pending:
        directory, prefix = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                relative = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append((Path(entry.path), relative + "/"))
                elif entry.is_file(follow_symlinks=False) and relative != DONE_FILE:
                    sizes[relative] = entry.stat(follow_symlinks=False).st_size
    return sizes


def _sha256_of(path: Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK_BYTES):
            hasher.update(chunk)
    return hasher.hexdigest()


def folder_manifest(folder: Path) -> list[dict[str, Any]]:
    """Every file of a stage folder: ``{"path", "size_bytes", "sha256"}``, sorted by path."""
    return [
        {"path": relative, "size_bytes": size, "sha256": _sha256_of(folder / relative)}
        for relative, size in sorted(_file_sizes(folder).items())
    ]


def read_done_record(folder: Path) -> dict[str, Any] | None:
    """The ``DONE.json`` record of a folder, or None when it is missing or not a JSON object."""
    try:
        record = json.loads((folder / DONE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def stage_folder_problem(folder: Path, *, check_sha256: bool = False) -> str | None:
    """Why a stage folder must not be trusted, or None when it matches its manifest.

    The check compares the folder's file list and sizes with the manifest in ``DONE.json``;
    ``check_sha256`` also hashes every file (reads the whole folder).
    """
    if not folder.is_dir():
        return "no folder"
    record = read_done_record(folder)
    if record is None:
        return f"no readable {DONE_FILE}"
    manifest = record.get("files")
    if not isinstance(manifest, list):
        return f"{DONE_FILE} has no file manifest"
    try:
        expected = {str(e["path"]): int(e["size_bytes"]) for e in manifest}
    except (KeyError, TypeError, ValueError):
        return f"{DONE_FILE} has a malformed file manifest"
    actual = _file_sizes(folder)
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    resized = sorted(p for p in set(expected) & set(actual) if expected[p] != actual[p])
    problems = []
    for what, paths in (("missing", missing), ("not in the manifest", extra), ("resized", resized)):
        if paths:
            shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            problems.append(f"{len(paths)} file(s) {what}: {shown}")
    if problems:
        return "; ".join(problems)
    if check_sha256:
        changed = sorted(
            str(e["path"]) for e in manifest if _sha256_of(folder / e["path"]) != e.get("sha256")
        )
        if changed:
            return f"{len(changed)} file(s) differ from their sha256: {', '.join(changed[:3])}"
    return None


def _write_atomic(path: Path, text: str) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    os.replace(part, path)


# --- the runner ---------------------------------------------------------------------------------


class StageRunner:
    """Runs stages under ``work_dir``, skipping those already done with the same inputs.

    Safe to share ``work_dir`` between processes of one host (see the module docstring).
    """

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log: list[StageOutcome] = []

    def folder(self, stage: str, key: str) -> Path:
        """The final folder of a stage run."""
        return self.work_dir / stage / key

    def tmp_folder(self, stage: str, key: str) -> Path:
        """Where the lock holder computes a stage (the same path across runs, for resuming)."""
        return self.work_dir / stage / f"{key}{TMP_SUFFIX}"

    def lock(self, stage: str, key: str) -> contextlib.AbstractContextManager[None]:
        """The lock of one stage key (held by :meth:`run` for the whole stage)."""
        return stage_lock(self.work_dir, stage, key)

    def run(
        self,
        stage: str,
        inputs: Mapping[str, Any],
        fn: Callable[[Path], dict[str, Any]],
        *,
        resumable: bool = False,
    ) -> StageOutcome:
        """Run ``fn(tmp_folder) -> outputs`` unless a finished run with equal inputs exists.

        ``outputs`` must be JSON-serializable; paths inside it should be relative to the folder.
        ``resumable`` stages (training) keep what a killed run left in the temporary folder, so
        ``fn`` can continue from its own checkpoints; other stages start over in an empty one.
        A process that needs a stage another process is computing waits for it, then reuses it.
        """
        key = stage_key(stage, inputs)
        with self.lock(stage, key):
            return self._run_locked(stage, key, inputs, fn, resumable=resumable)

    def _run_locked(
        self,
        stage: str,
        key: str,
        inputs: Mapping[str, Any],
        fn: Callable[[Path], dict[str, Any]],
        *,
        resumable: bool,
    ) -> StageOutcome:
        """:meth:`run` for a caller that holds the key's lock."""
        record = self._trusted_record(stage, key)
        return self._reuse_or_compute(stage, key, inputs, fn, record, resumable=resumable)

    def _reuse_or_compute(
        self,
        stage: str,
        key: str,
        inputs: Mapping[str, Any],
        fn: Callable[[Path], dict[str, Any]],
        record: Mapping[str, Any] | None,
        *,
        resumable: bool,
    ) -> StageOutcome:
        """Reuse the verified folder whose ``DONE.json`` is ``record``, or compute the stage."""
        if record is not None:
            final = self.folder(stage, key)
            outcome = StageOutcome(
                stage, key, final, record["outputs"], True, 0.0, read_compute_seconds(final)
            )
        else:
            outcome = self._compute(stage, key, inputs, fn, resumable=resumable)
        self.log.append(outcome)
        return outcome

    def _trusted_record(self, stage: str, key: str) -> dict[str, Any] | None:
        """The key folder's ``DONE.json`` if the folder verifies; one that does not is set aside."""
        final = self.folder(stage, key)
        if not final.exists():
            return None
        problem = stage_folder_problem(final)
        if problem is None:
            return read_done_record(final)
        self._set_aside(stage, key, final, problem)
        return None

    def _set_aside(self, stage: str, key: str, folder: Path, problem: str) -> None:
        target = self.work_dir / REJECTED_DIR / stage / f"{key}-{time.time_ns()}-{os.getpid()}"
        target.parent.mkdir(parents=True, exist_ok=True)
        folder.rename(target)
        log.warning("stage %s/%s not trusted (%s): moved to %s", stage, key, problem, target)

    def _compute(
        self,
        stage: str,
        key: str,
        inputs: Mapping[str, Any],
        fn: Callable[[Path], dict[str, Any]],
        *,
        resumable: bool,
    ) -> StageOutcome:
        final = self.folder(stage, key)
        tmp = self.tmp_folder(stage, key)
        if tmp.exists():
            # We hold the lock, so whoever left this is gone.
            if stage_folder_problem(tmp) is None:  # killed between DONE.json and the rename
                record = read_done_record(tmp)
                assert record is not None
                tmp.rename(final)
                return StageOutcome(stage, key, final, record["outputs"], False, 0.0)
            if resumable:  # continue from its checkpoints; the record is rewritten at the end
                for name in (DONE_FILE, DONE_FILE + ".part"):
                    (tmp / name).unlink(missing_ok=True)
            else:
                shutil.rmtree(tmp)
        tmp.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        outputs = fn(tmp)
        seconds = time.perf_counter() - t0
        record = {
            "stage": stage,
            "key": key,
            "inputs": inputs,
            "outputs": outputs,
            # No timings here: the record is part of the published folder, whose bytes must not
            # depend on which host computed it or how fast (the run's seconds go to the log).
            "files": folder_manifest(tmp),
        }
        _write_atomic(tmp / DONE_FILE, json.dumps(record, indent=1, sort_keys=True, default=str))
        if final.exists():  # not ours (we set aside what was there): a lock-less writer
            self._set_aside(stage, key, final, "appeared while the stage ran")
        tmp.rename(final)
        write_compute_record(final, seconds)
        return StageOutcome(stage, key, final, outputs, False, seconds, seconds)
