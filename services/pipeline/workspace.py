"""Stage folders shared between worker hosts through the blob store.

Workers on different hosts share nothing but the database and the blob store. A stage's output
folder is named by the content hash of its inputs (``stage_runner``), so the same folder can live
under the same blob prefix on every host:

    stages/<stage>/<key>/attempts/<attempt>/<relative path>   one blob per file, per upload
    stages/<stage>/<key>/INDEX.json                           the published file list

Publishing is race-safe across hosts without any lock:

1. An upload puts every file under a prefix of its own (``attempts/<uuid>``), which no other
   host writes or deletes, and checks each blob's size and sha256 against the folder's manifest.
2. It publishes by writing ``INDEX.json`` (path, blob key, size and sha256 of every file)
   *conditionally*: only if no index exists (S3 ``If-None-Match: *``; a hard link on the local
   store). Exactly one upload of a key wins; the index is never overwritten.
3. A loser deletes only its own attempt's blobs. If its folder differs from the published one
   (a stage whose bytes are not deterministic) it replaces its local copy with the published
   one, so every host goes on with the same bytes.
4. A reader downloads into a temporary folder and checks every blob against the index and the
   index against the manifest in the folder's ``DONE.json`` before the folder is renamed into
   place: the whole folder is verified before use.

A published index whose folder fails these checks (tampering, a lost blob, an index of the
earlier unconditional layout) is replaced only by a worker that holds the key's claim and has
recomputed the stage, and only if the index is still the one it found wrong.

:class:`SyncedStageRunner` is a :class:`StageRunner` that, for each stage it is asked to run,
reuses a verified local copy, else downloads a published one, else takes the key's claim
(``stage_claims``: one worker computes, the others wait for the published copy or take over an
expired lease), computes the stage and publishes it. It holds the same per-key lock as every
:class:`StageRunner` (``stage_runner.stage_lock``) for all of it, so the processes of one host
that need one stage (workers, ``unmask evaluate``) compute it once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.pipeline.stage_claims import (
    FIRST_POLL_S,
    ClaimStatus,
    HostClaims,
    StageClaims,
    held_claim,
)
from services.pipeline.stage_runner import (
    DONE_FILE,
    StageOutcome,
    StageRunner,
    compute_record_path,
    read_compute_seconds,
    read_done_record,
    stage_folder_problem,
    stage_key,
    stage_lock,
)
from services.storage.blob_interface import BlobStore, sha256_file, validate_key
from services.storage.errors import BlobIntegrityError, BlobNotFoundError, BlobStoreError

STAGES_PREFIX = "stages"
INDEX_FILE = "INDEX.json"
# Each upload's own blobs: stages/<stage>/<key>/attempts/<uuid hex>/...
ATTEMPTS_DIR = "attempts"
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


def stage_compute_key(stage: str, key: str) -> str:
    """Blob key of a published stage's compute record (seconds, host): outside the index, so
    the published folder's bytes do not depend on who computed it or how fast."""
    return f"{stage_prefix(stage, key)}/COMPUTE.json"


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
    # "upload" (published), "download", "none", "lost" (another upload was published first)
    direction: str
    files: int = 0
    bytes: int = 0


class StagePublishRaceError(ConnectionError):
    """Another host published or replaced a stage folder while this one used it: retry.

    A ``ConnectionError`` so the job code treats it as transient (a retry finds the published
    copy), never as a failed job.
    """


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
        """Whether the blob store holds a published copy of the stage folder (its index)."""
        return self.store.exists(stage_index_key(stage, key))

    def index_sha256(self, stage: str, key: str) -> str | None:
        """The sha256 of the published index's bytes, or None when there is none."""
        try:
            return hashlib.sha256(self.store.get_bytes(stage_index_key(stage, key))).hexdigest()
        except BlobNotFoundError:
            return None

    def upload(
        self, stage: str, key: str, *, replace_index_sha256: str | None = None
    ) -> StageTransfer:
        """Publish a finished local stage folder unless the store already has it.

        Returns direction ``upload`` (this call published it), ``none`` (already published) or
        ``lost`` (another upload published it first; see the module docstring).
        ``replace_index_sha256``: the published index with these bytes failed verification and
        may be replaced (the caller holds the key's claim). A folder that differs from the
        manifest in its ``DONE.json`` is refused (``BlobIntegrityError``).
        """
        folder = self.local_folder(stage, key)
        if not (folder / DONE_FILE).is_file():
            raise BlobStoreError(f"stage folder {folder} is not finished (no {DONE_FILE})")
        index_key = stage_index_key(stage, key)
        if replace_index_sha256 is None and self.store.exists(index_key):
            return StageTransfer(stage, key, "none")
        manifest = _manifest_of(folder)
        if manifest is not None:
            problem = stage_folder_problem(folder)  # the file list; the hashes are checked below
            if problem is not None:
                raise BlobIntegrityError(f"{folder} differs from its manifest: {problem}")
        prefix = f"{stage_prefix(stage, key)}/{ATTEMPTS_DIR}/{uuid.uuid4().hex}"
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

        entries: list[dict[str, Any]] = []
        try:
            with ThreadPoolExecutor(max_workers=TRANSFER_THREADS) as pool:
                entries = list(pool.map(put, files))
            index = {"stage": stage, "key": key, "files": entries}
            data = json.dumps(index, indent=1, sort_keys=True).encode()
            if replace_index_sha256 is not None:
                self._remove_index_if(stage, key, replace_index_sha256)
            won = self.store.put_bytes_if_absent(index_key, data, media_type=INDEX_MEDIA_TYPE)
        except BaseException:
            self._delete_attempt(prefix, files, folder, entries)
            raise
        if won:
            self._put_compute_record(stage, key, folder)
            return StageTransfer(
                stage, key, "upload", len(entries), sum(e["size_bytes"] for e in entries)
            )
        # Lost the race: our blobs are nobody's (only our index could have named them).
        self._delete_attempt(prefix, files, folder, entries)
        return StageTransfer(stage, key, "lost")

    def _put_compute_record(self, stage: str, key: str, folder: Path) -> None:
        """Publish the folder's compute record beside the index; best effort (it only informs
        the provenance's compute seconds, never which bytes a host uses)."""
        record = compute_record_path(folder)
        if not record.is_file():
            return
        try:
            self.store.put_bytes(
                stage_compute_key(stage, key), record.read_bytes(), media_type="application/json"
            )
        except (BlobStoreError, OSError) as exc:
            log.warning("compute record of stage %s/%s not published: %s", stage, key, exc)

    def _get_compute_record(self, stage: str, key: str, folder: Path) -> None:
        """Fetch the published compute record of a downloaded folder; best effort."""
        try:
            data = self.store.get_bytes(stage_compute_key(stage, key))
            json.loads(data)["seconds"]  # only a readable record replaces none
        except (BlobStoreError, ValueError, KeyError, TypeError):
            return
        compute_record_path(folder).write_bytes(data)

    def _remove_index_if(self, stage: str, key: str, sha256: str) -> None:
        """Delete the published index if its bytes still hash to ``sha256`` (found wrong)."""
        current = self.index_sha256(stage, key)
        if current == sha256:
            log.warning("replacing the unverifiable published index of %s/%s", stage, key)
            self.store.delete(stage_index_key(stage, key))
        elif current is not None:
            # Someone replaced it meanwhile; their copy is verified by the next reader.
            log.info("published index of %s/%s changed meanwhile; keeping it", stage, key)

    def _delete_attempt(
        self, prefix: str, files: list[Path], folder: Path, entries: list[dict[str, Any]]
    ) -> None:
        """Delete what this upload put under its own ``prefix`` (best effort)."""
        keys = {e["key"] for e in entries}
        for path in files:
            relative = path.relative_to(folder).as_posix()
            try:
                keys.add(validate_key(f"{prefix}/{relative}"))
            except BlobStoreError:
                continue  # stored by content under _by-sha256: named in ``entries`` if stored
        for blob_key in sorted(keys):
            if blob_key.startswith(prefix + "/"):
                try:
                    self.store.delete(blob_key)
                except Exception as exc:  # garbage left behind is harmless (never indexed)
                    log.warning("could not delete %s: %r", blob_key, exc)

    def published_entries(self, stage: str, key: str) -> dict[str, tuple[int, str]] | None:
        """path -> (size, sha256) of the published index, or None when there is none."""
        try:
            index = json.loads(self.store.get_bytes(stage_index_key(stage, key)))
            files = index["files"]
            return {str(e["path"]): (int(e["size_bytes"]), str(e["sha256"])) for e in files}
        except BlobNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            return {}  # not a stage index: matches no folder, so the reader's checks decide

    def download(self, stage: str, key: str, *, lock_held: bool = False) -> StageTransfer:
        """Fetch a published stage folder that is missing locally (no-op otherwise).

        Files go to a temporary sibling folder that is renamed into place once every file has
        been downloaded and checked against the index's sha256 and the index against the
        folder's manifest, so a crash never leaves a half-downloaded folder that looks finished.
        A blob the index names but the store lacks is an integrity error too.
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
        try:
            raw = self.store.get_bytes(index_key)
        except BlobNotFoundError:
            return StageTransfer(stage, key, "none")
        try:
            index = json.loads(raw)
            entries: list[dict[str, Any]] = list(index["files"])
        except (ValueError, KeyError, TypeError) as exc:
            raise BlobIntegrityError(f"{index_key}: not a stage index") from exc
        if not any(e.get("path") == DONE_FILE for e in entries):
            raise BlobIntegrityError(f"{index_key}: the index lists no {DONE_FILE}")
        tmp = final.with_name(final.name + ".download")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)

        def get(entry: Mapping[str, Any]) -> int:
            target = (tmp / entry["path"]).resolve()
            if not target.is_relative_to(tmp.resolve()):
                raise BlobIntegrityError(f"{index_key}: path {entry['path']!r} leaves the folder")
            try:
                info = self.store.get_to_path(entry["key"], target)
            except BlobNotFoundError as exc:
                raise BlobIntegrityError(f"{index_key}: blob {entry['key']} is missing") from exc
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
        self._get_compute_record(stage, key, final)
        return StageTransfer(stage, key, "download", len(entries), sum(sizes))

    def upload_finished(self) -> list[StageTransfer]:
        """Publish every finished local stage folder the store lacks (returns the uploads)."""
        out = []
        for done in sorted(self.stages_dir.glob(f"*/*/{DONE_FILE}")):
            folder = done.parent
            if "." in folder.name or folder.parent.name.startswith("."):
                continue  # a runner's <key>.tmp or a download in progress, not a key folder
            transfer = self.upload(folder.parent.name, folder.name)
            if transfer.direction == "upload":
                out.append(transfer)
        return out


def local_entries(folder: Path) -> dict[str, tuple[int, str]]:
    """path -> (size, sha256) of a local stage folder: its manifest plus ``DONE.json``."""
    manifest = dict(_manifest_of(folder) or {})
    sha256, size = sha256_file(folder / DONE_FILE)
    manifest[DONE_FILE] = (size, sha256)
    return manifest


class SyncedStageRunner(StageRunner):
    """A :class:`StageRunner` whose finished stages are shared through a blob store.

    ``before_stage(stage)`` runs before each stage and while waiting for another worker's
    (the job's cancellation check); ``workspace`` None gives a plain runner with the same
    locking (single host, no blob store). ``claims`` decides who computes a stage key across
    hosts (default :class:`HostClaims`: the host's lock only).
    """

    def __init__(
        self,
        work_dir: Path,
        workspace: StageWorkspace | None,
        *,
        before_stage: Callable[[str], None] | None = None,
        claims: StageClaims | None = None,
    ) -> None:
        super().__init__(work_dir)
        self.workspace = workspace
        self.before_stage = before_stage
        self.claims = claims or HostClaims()
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
            if self.workspace is None:
                return self._run_locked(stage, key, inputs, fn, resumable=resumable)
            return self._run_synced(self.workspace, stage, key, inputs, fn, resumable=resumable)

    def _fetch(
        self, workspace: StageWorkspace, stage: str, key: str
    ) -> tuple[dict[str, Any] | None, str | None]:
        """(the verified local record, after downloading a published copy if need be; the
        sha256 of a published index that failed verification, else None)."""
        record = self._trusted_record(stage, key)
        if record is not None:
            return record, None
        try:
            transfer = workspace.download(stage, key, lock_held=True)
        except BlobStoreError as exc:  # integrity or a blob gone: not usable, recompute it
            log.warning("stored copy of stage %s/%s not trusted: %s", stage, key, exc)
            return None, workspace.index_sha256(stage, key)
        self._record(transfer)
        if transfer.direction == "none":
            # Nothing published when we looked. (An index that appears right after is another
            # worker's fresh publication, not a bad copy: never take it for one.)
            return None, None
        record = self._trusted_record(stage, key)  # sets aside a copy that does not verify
        if record is None:
            return None, workspace.index_sha256(stage, key)
        return record, None

    def _run_synced(
        self,
        workspace: StageWorkspace,
        stage: str,
        key: str,
        inputs: Mapping[str, Any],
        fn: Callable[[Path], dict[str, Any]],
        *,
        resumable: bool,
    ) -> StageOutcome:
        record, bad_index = self._fetch(workspace, stage, key)
        if record is not None:  # publish it if the store lacks it (computed before syncing)
            outcome = self._reuse_or_compute(stage, key, inputs, fn, record, resumable=resumable)
            return self._publish(workspace, outcome, None)
        wait_s = FIRST_POLL_S
        while True:
            status = self.claims.try_acquire(stage, key, retake_published=bad_index is not None)
            if status == ClaimStatus.ACQUIRED:
                break
            if status == ClaimStatus.PUBLISHED:
                record, bad_index = self._fetch(workspace, stage, key)
                if record is not None:
                    return self._reuse_or_compute(
                        stage, key, inputs, fn, record, resumable=resumable
                    )
                if bad_index is None:  # recorded as published, but no index: compute again
                    bad_index = ""
                continue
            # HELD: another worker computes it; look again later (cancellation is checked).
            if self.before_stage is not None:
                self.before_stage(stage)
            time.sleep(wait_s)
            wait_s = min(2 * wait_s, self.claims.poll_max_s)
        with held_claim(self.claims, stage, key):
            if bad_index is None:  # published between our look and our claim?
                record, bad_index = self._fetch(workspace, stage, key)
            outcome = self._reuse_or_compute(stage, key, inputs, fn, record, resumable=resumable)
            outcome = self._publish(workspace, outcome, bad_index or None)
            self.claims.mark_published(stage, key)
        return outcome

    def _publish(
        self, workspace: StageWorkspace, outcome: StageOutcome, bad_index: str | None
    ) -> StageOutcome:
        """Upload a finished folder unless published; when another copy is published, go on
        with it (its outcome is returned and replaces ours in :attr:`log`)."""
        stage, key = outcome.stage, outcome.key
        try:
            transfer = workspace.upload(stage, key, replace_index_sha256=bad_index)
        except BlobIntegrityError as exc:  # changed since verified: a retry recomputes
            self._set_aside(stage, key, outcome.folder, str(exc))
            raise
        self._record(transfer)
        if transfer.direction == "upload":
            return outcome
        published = workspace.published_entries(stage, key)
        if published is None:  # replaced meanwhile (a claim holder found it wrong)
            raise StagePublishRaceError(f"stage {stage}/{key}: the published copy went away")
        if published == local_entries(outcome.folder):
            return outcome  # the same bytes: nothing to change here
        # Different bytes (not a deterministic stage): every host must use the published ones.
        self._set_aside(stage, key, outcome.folder, "another host published different bytes")
        try:
            self._record(workspace.download(stage, key, lock_held=True))
        except BlobStoreError as exc:
            raise StagePublishRaceError(f"stage {stage}/{key}: {exc}") from exc
        record = self._trusted_record(stage, key)
        if record is None:
            raise StagePublishRaceError(f"stage {stage}/{key}: the published copy does not verify")
        # Later stages of this run read the folder's files; its outputs are the published ones.
        adopted = StageOutcome(
            stage,
            key,
            outcome.folder,
            record["outputs"],
            False,
            0.0,
            read_compute_seconds(outcome.folder),
        )
        self.log[-1] = adopted
        return adopted

    def _record(self, transfer: StageTransfer) -> None:
        if transfer.direction not in ("none", "lost"):
            self.transfers.append(transfer)
