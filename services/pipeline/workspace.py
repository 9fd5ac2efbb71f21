"""Stage folders shared between worker hosts through the blob store.

Workers on different hosts share nothing but the database and the blob store. A stage's output
folder is named by the content hash of its inputs (``stage_runner``), so the same folder can live
under the same blob prefix on every host:

    stages/<stage>/<key>/<relative path>      one blob per file
    stages/<stage>/<key>/INDEX.json           the file list (path, blob key, size, sha256)

``INDEX.json`` is written last: a prefix without it is an unfinished upload and is ignored (and
completed by the next upload). Because keys are content hashes, a folder whose index exists is
never uploaded again.

:class:`SyncedStageRunner` is a :class:`StageRunner` that, for each stage it is asked to run,
first downloads a finished remote copy when the local one is missing, then runs (or reuses) the
stage, then uploads the folder when the store lacks it. Downloading on demand fetches exactly the
stages a phase touches; uploading after each stage (not only at the end of a phase) means a
worker killed mid-phase loses at most the stage it was in. It holds the same per-key lock as
every :class:`StageRunner` (``stage_runner.stage_lock``) for all three steps, so the processes
of one host that need one stage (workers, ``unmask evaluate``) compute it once.

Integrity: a download is checked against the index (sha256 and size of every blob) and the
index against the manifest in the folder's ``DONE.json``; an upload hashes every file and
refuses one that differs from the manifest. A remote copy that fails these checks is recomputed
by :class:`SyncedStageRunner` and replaced in the store.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.pipeline.stage_runner import (
    DONE_FILE,
    StageOutcome,
    StageRunner,
    read_done_record,
    stage_folder_problem,
    stage_key,
    stage_lock,
)
from services.storage.blobstore import BlobStore, sha256_file, validate_key
from services.storage.errors import BlobIntegrityError, BlobStoreError

STAGES_PREFIX = "stages"
INDEX_FILE = "INDEX.json"
INDEX_MEDIA_TYPE = "application/json"
# Parallel transfers per stage folder (many small audio files; boto3 clients are thread-safe).
TRANSFER_THREADS = 8

log = logging.getLogger(__name__)

_MEDIA_TYPES = {
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".wav": "audio/wav",
    ".flac": "audio/flac",
    ".npy": "application/octet-stream",
    ".npz": "application/octet-stream",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".pdf": "application/pdf",
    ".csv": "text/csv",
    ".txt": "text/plain",
}


def media_type_of(path: str | Path) -> str:
    """A media type guessed from the file suffix (``application/octet-stream`` otherwise)."""
    return _MEDIA_TYPES.get(Path(path).suffix.lower(), "application/octet-stream")


def stage_prefix(stage: str, key: str) -> str:
    """The blob prefix of one stage folder: ``stages/<stage>/<key>``."""
    return validate_key(f"{STAGES_PREFIX}/{stage}/{key}")


def stage_index_key(stage: str, key: str) -> str:
    """The blob key of a stage folder's index (present = the upload is complete)."""
    return f"{stage_prefix(stage, key)}/{INDEX_FILE}"


def _manifest_of(folder: Path) -> dict[str, tuple[int, str]] | None:
    """path -> (size, sha256) from a folder's ``DONE.json``; None if it records no manifest.

    Folders written by :class:`StageRunner` always have one; others (the validated archives)
    are checked against the index only.
    """
    record = read_done_record(folder)
    files = record.get("files") if record is not None else None
    if not isinstance(files, list):
        return None
    try:
        return {str(e["path"]): (int(e["size_bytes"]), str(e["sha256"])) for e in files}
    except (KeyError, TypeError, ValueError) as exc:
        raise BlobIntegrityError(f"{folder / DONE_FILE}: malformed file manifest") from exc


def _blob_key_for(prefix: str, relative: str, sha256: str) -> str:
    candidate = f"{prefix}/{relative}"
    try:
        return validate_key(candidate)
    except BlobStoreError:
        # A file name the key grammar refuses (spaces, a leading dot): store it by content.
        return validate_key(f"{prefix}/_by-sha256/{sha256}")


@dataclass(frozen=True)
class StageTransfer:
    """What a sync did for one stage folder: ``files`` moved and their total ``bytes``."""

    stage: str
    key: str
    direction: str  # "upload" | "download" | "none"
    files: int = 0
    bytes: int = 0


class StageWorkspace:
    """Moves finished stage folders between ``stages_dir`` and a blob store."""

    def __init__(self, store: BlobStore, stages_dir: Path) -> None:
        self.store = store
        self.stages_dir = Path(stages_dir)

    def local_folder(self, stage: str, key: str) -> Path:
        """The local folder of a stage run (``<stages_dir>/<stage>/<key>``)."""
        return self.stages_dir / stage / key

    def is_local(self, stage: str, key: str) -> bool:
        """Whether a finished copy of the stage is on this host (has ``DONE.json``).

        Runners verify a folder against its manifest before reusing it; this does not.
        """
        return (self.local_folder(stage, key) / DONE_FILE).is_file()

    def is_uploaded(self, stage: str, key: str) -> bool:
        """Whether the blob store holds a complete copy of the stage folder."""
        return self.store.exists(stage_index_key(stage, key))

    def upload(self, stage: str, key: str, *, replace: bool = False) -> StageTransfer:
        """Upload a finished local stage folder unless the store already has it.

        ``replace`` uploads it even then (the stored copy failed verification). A folder that
        differs from the manifest in its ``DONE.json`` is refused (``BlobIntegrityError``).
        """
        folder = self.local_folder(stage, key)
        if not (folder / DONE_FILE).is_file():
            raise BlobStoreError(f"stage folder {folder} is not finished (no {DONE_FILE})")
        if not replace and self.is_uploaded(stage, key):
            return StageTransfer(stage, key, "none")
        manifest = _manifest_of(folder)
        if manifest is not None:
            problem = stage_folder_problem(folder)  # the file list; the hashes are checked below
            if problem is not None:
                raise BlobIntegrityError(f"{folder} differs from its manifest: {problem}")
        prefix = stage_prefix(stage, key)
        index_key = stage_index_key(stage, key)
        if replace:  # readers must not pair the old index with the new blobs
            self.store.delete(index_key)
        files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())

        def put(path: Path) -> dict[str, Any]:
            relative = path.relative_to(folder).as_posix()
            sha256, size = sha256_file(path)
            recorded = manifest.get(relative) if manifest is not None else None
            if manifest is not None and relative != DONE_FILE and recorded != (size, sha256):
                raise BlobIntegrityError(
                    f"{folder / relative}: size or sha256 differs from the manifest in {DONE_FILE}"
                )
            blob_key = _blob_key_for(prefix, relative, sha256)
            self.store.put_file(
                blob_key,
                path,
                media_type=media_type_of(path),
                expected_sha256=sha256,
                expected_size=size,
            )
            return {"path": relative, "key": blob_key, "size_bytes": size, "sha256": sha256}

        with ThreadPoolExecutor(max_workers=TRANSFER_THREADS) as pool:
            entries = list(pool.map(put, files))
        index = {"stage": stage, "key": key, "files": entries}
        self.store.put_bytes(
            index_key,
            json.dumps(index, indent=1, sort_keys=True).encode(),
            media_type=INDEX_MEDIA_TYPE,
        )
        return StageTransfer(
            stage, key, "upload", len(entries), sum(e["size_bytes"] for e in entries)
        )

    def download(self, stage: str, key: str, *, lock_held: bool = False) -> StageTransfer:
        """Fetch a finished remote stage folder that is missing locally (no-op otherwise).

        Files go to a temporary sibling folder that is renamed into place once every file has
        been downloaded and checked against the index's sha256 and the index against the
        folder's manifest, so a crash never leaves a half-downloaded folder that looks finished.
        Takes the stage key's lock unless the caller says it holds it (``lock_held``).
        """
        if lock_held:
            return self._download_locked(stage, key)
        with stage_lock(self.stages_dir, stage, key):
            return self._download_locked(stage, key)

    def _download_locked(self, stage: str, key: str) -> StageTransfer:
        final = self.local_folder(stage, key)
        if (final / DONE_FILE).is_file():
            return StageTransfer(stage, key, "none")
        index_key = stage_index_key(stage, key)
        if not self.store.exists(index_key):
            return StageTransfer(stage, key, "none")
        index = json.loads(self.store.get_bytes(index_key))
        entries: list[dict[str, Any]] = index["files"]
        if not any(e["path"] == DONE_FILE for e in entries):
            raise BlobIntegrityError(f"{index_key}: the index lists no {DONE_FILE}")
        tmp = final.with_name(final.name + ".download")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)

        def get(entry: Mapping[str, Any]) -> int:
            target = (tmp / entry["path"]).resolve()
            if not target.is_relative_to(tmp.resolve()):
                raise BlobIntegrityError(f"{index_key}: path {entry['path']!r} leaves the folder")
            info = self.store.get_to_path(entry["key"], target)
            if info.sha256 != entry["sha256"] or info.size_bytes != entry["size_bytes"]:
                raise BlobIntegrityError(
                    f"{entry['key']}: sha256/size differ from {index_key} (stale or tampered blob)"
                )
            return info.size_bytes

        try:
            with ThreadPoolExecutor(max_workers=TRANSFER_THREADS) as pool:
                sizes = list(pool.map(get, entries))
            manifest = _manifest_of(tmp)
            indexed = {e["path"]: (e["size_bytes"], e["sha256"]) for e in entries}
            indexed.pop(DONE_FILE)
            if manifest is not None and manifest != indexed:
                raise BlobIntegrityError(
                    f"{index_key}: the files differ from the manifest in {DONE_FILE}"
                )
            if final.exists():  # an unfinished local run (no DONE): the remote copy replaces it
                shutil.rmtree(final)
            tmp.rename(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return StageTransfer(stage, key, "download", len(entries), sum(sizes))

    def upload_finished(self) -> list[StageTransfer]:
        """Upload every finished local stage folder the store lacks (returns the uploads)."""
        out = []
        for done in sorted(self.stages_dir.glob(f"*/*/{DONE_FILE}")):
            folder = done.parent
            if "." in folder.name or folder.parent.name.startswith("."):
                continue  # a runner's <key>.tmp or a download in progress, not a key folder
            transfer = self.upload(folder.parent.name, folder.name)
            if transfer.direction == "upload":
                out.append(transfer)
        return out


class SyncedStageRunner(StageRunner):
    """A :class:`StageRunner` whose finished stages are shared through a blob store.

    ``before_stage(stage)`` runs before each stage (the job's cancellation check); ``workspace``
    None gives a plain runner with the same locking (single host, no blob store).
    """

    def __init__(
        self,
        work_dir: Path,
        workspace: StageWorkspace | None,
        *,
        before_stage: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(work_dir)
        self.workspace = workspace
        self.before_stage = before_stage
        self.transfers: list[StageTransfer] = []

    def run(
        self,
        stage: str,
        inputs: Mapping[str, Any],
        fn: Callable[[Path], dict[str, Any]],
        *,
        resumable: bool = False,
    ) -> StageOutcome:
        if self.before_stage is not None:
            self.before_stage(stage)
        key = stage_key(stage, inputs)
        with self.lock(stage, key):
            record = self._trusted_record(stage, key)
            replace_remote = False
            if record is None and self.workspace is not None:
                try:
                    self._record(self.workspace.download(stage, key, lock_held=True))
                except BlobIntegrityError as exc:
                    log.warning("stored copy of stage %s/%s not trusted: %s", stage, key, exc)
                    replace_remote = True
                else:
                    record = self._trusted_record(stage, key)  # sets aside a bad copy
                    replace_remote = record is None and self.workspace.is_uploaded(stage, key)
            outcome = self._reuse_or_compute(stage, key, inputs, fn, record, resumable=resumable)
            if self.workspace is not None:
                try:
                    self._record(self.workspace.upload(stage, key, replace=replace_remote))
                except BlobIntegrityError as exc:  # changed since verified: a retry recomputes
                    self._set_aside(stage, key, outcome.folder, str(exc))
                    raise
        return outcome

    def _record(self, transfer: StageTransfer) -> None:
        if transfer.direction != "none":
            self.transfers.append(transfer)
