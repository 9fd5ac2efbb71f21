"""Training checkpoints shared through the blob store, so another host resumes a killed run.

A train stage computes in a folder private to one host. Its checkpoints (``last.pt`` with the
optimizer, scheduler and RNG states; ``best.pt``; ``history.json``) are what make a restart
continue after the last completed epoch, bit-identically on CPU. :class:`CheckpointSync` copies
them after every epoch to the stage key's prefix, so a host that takes the stage over (an empty
work folder) starts from the last uploaded epoch instead of epoch 1:

    checkpoints/<stage>/<key>/epoch-<NNNNN>/<file>   the files of one epoch
    checkpoints/<stage>/<key>/LATEST.json            the pointer: epoch and (key, size, sha256)
                                                     of each file, written after them

Atomic for a reader: the pointer is one object, written after every file it names, so a reader
sees the previous complete epoch or the new one, never half an upload; it checks each download
against the pointer's sha256 and size, and a copy that fails the check is not resumed from
(training starts over). Objects of older epochs are deleted after the pointer moved on, and the
whole prefix when the stage is published (:meth:`CheckpointSync.clear`).

Uploads run on a background thread from hard-linked snapshots of the files (the trainer replaces
them by rename every epoch, so a snapshot never changes under the upload): training does not wait
for the store. When an upload is slower than an epoch the newest snapshot wins (an epoch may go
unuploaded; the next one supersedes it). Upload errors are logged, not raised: a checkpoint copy
only saves time, and the stage's own result does not depend on it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.storage.blob_interface import BlobStore, sha256_file, validate_key
from services.storage.errors import BlobStoreError

CHECKPOINTS_PREFIX = "checkpoints"
POINTER_FILE = "LATEST.json"
POINTER_FORMAT = "unmask-checkpoints-v1"
# What a resume needs, in the order a restore moves them into place (last.pt last: its presence
# is what makes the trainer resume).
SYNCED_FILES = ("history.json", "best.pt", "last.pt")
SNAPSHOT_DIR = ".checkpoint-sync"
"""Where the snapshots wait for their upload, inside the model folder; removed by ``close``."""
RESTORE_DIR = ".checkpoint-restore"
"""Where a restore downloads before moving the files into place (inside the model folder)."""

log = logging.getLogger(__name__)


def checkpoint_prefix(stage: str, key: str) -> str:
    """The blob prefix of one stage key's checkpoints: ``checkpoints/<stage>/<key>``."""
    return validate_key(f"{CHECKPOINTS_PREFIX}/{stage}/{key}")


def _local_epoch(model_dir: Path) -> int:
    """Completed epochs of the checkpoint in ``model_dir`` (0: none); ``history.json`` is written
    after ``last.pt``, so this never overstates what ``last.pt`` holds."""
    if not (model_dir / "last.pt").is_file():
        return 0
    try:
        history = json.loads((model_dir / "history.json").read_text())
    except (OSError, ValueError):
        return 0
    return len(history) if isinstance(history, list) else 0


@dataclass
class UploadStats:
    """What the uploads of one run did: epochs uploaded, their seconds and bytes."""

    epochs: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    bytes: int = 0
    errors: list[str] = field(default_factory=list)


class CheckpointSync:
    """Uploads one train stage's checkpoints per epoch and restores the newest on another host."""

    def __init__(self, store: BlobStore, stage: str, key: str) -> None:
        self.store = store
        self.prefix = checkpoint_prefix(stage, key)
        self.pointer_key = f"{self.prefix}/{POINTER_FILE}"
        self.stats = UploadStats()
        self._entries: dict[str, dict[str, Any]] = {}  # file name -> entry of the last pointer
        self._cond = threading.Condition()
        self._pending: tuple[int, Path] | None = None
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- reading
    def read_pointer(self) -> dict[str, Any] | None:
        """The stored pointer, or None when there is none (or it is not one of ours)."""
        if not self.store.exists(self.pointer_key):
            return None
        pointer = json.loads(self.store.get_bytes(self.pointer_key))
        if not isinstance(pointer, dict) or pointer.get("format") != POINTER_FORMAT:
            log.warning("%s: not a checkpoint pointer; ignored", self.pointer_key)
            return None
        return pointer

    def restore(self, model_dir: Path) -> int:
        """Put the last uploaded epoch's files into ``model_dir`` when they are newer than what
        the folder holds; returns the epoch restored (0: nothing restored).

        Every file is downloaded beside its target, checked against the pointer's sha256 and
        size, and only then renamed into place (``last.pt`` last); a failed check leaves the
        folder as it was. Store errors are logged and give 0 (training starts from the folder).
        """
        model_dir = Path(model_dir)
        staging = model_dir / RESTORE_DIR
        shutil.rmtree(staging, ignore_errors=True)  # left by a restore killed mid-way
        try:
            pointer = self.read_pointer()
        except (BlobStoreError, ValueError) as exc:
            log.warning("%s: unreadable (%s); not resuming from it", self.pointer_key, exc)
            return 0
        if pointer is None:
            return 0
        epoch = int(pointer["epoch"])
        if epoch <= _local_epoch(model_dir):
            return 0
        entries = {str(e["name"]): e for e in pointer["files"]}
        try:
            for name in SYNCED_FILES:
                entry = entries.get(name)
                if entry is None:
                    continue
                info = self.store.get_to_path(str(entry["key"]), staging / name)
                if info.sha256 != entry["sha256"] or info.size_bytes != int(entry["size_bytes"]):
                    raise BlobStoreError(f"{entry['key']}: sha256/size differ from the pointer")
            if not (staging / "last.pt").is_file():
                raise BlobStoreError(f"{self.pointer_key}: names no last.pt")
            model_dir.mkdir(parents=True, exist_ok=True)
            for name in SYNCED_FILES:
                if (staging / name).is_file():
                    os.replace(staging / name, model_dir / name)
                else:  # e.g. no best.pt yet: a stale local one must not pair with this epoch
                    (model_dir / name).unlink(missing_ok=True)
        except BlobStoreError as exc:
            log.warning("checkpoint of epoch %d not restored: %s", epoch, exc)
            return 0
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self._entries = dict(entries)
        log.info("restored the checkpoint of epoch %d from %s", epoch, self.prefix)
        return epoch

    # ----------------------------------------------------------------- writing
    def epoch_saved(self, epoch: int, model_dir: Path) -> None:
        """Queue the upload of epoch ``epoch``'s files (call right after the trainer saved them).

        Snapshots the files by hard link (a copy where links fail) and returns; a snapshot still
        waiting from an earlier epoch is dropped for this one.
        """
        model_dir = Path(model_dir)
        snapshot = model_dir / SNAPSHOT_DIR / f"epoch-{epoch:05d}"
        shutil.rmtree(snapshot, ignore_errors=True)
        snapshot.mkdir(parents=True)
        for name in SYNCED_FILES:
            source = model_dir / name
            if source.is_file():
                try:
                    os.link(source, snapshot / name)
                except OSError:
                    shutil.copy2(source, snapshot / name)
        with self._cond:
            if self._closed:
                raise RuntimeError("CheckpointSync is closed")
            dropped, self._pending = self._pending, (epoch, snapshot)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._upload_loop, name="checkpoint-sync", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()
        if dropped is not None:
            shutil.rmtree(dropped[1], ignore_errors=True)

    def _upload_loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._pending is None:
                    return
                epoch, snapshot = self._pending
                self._pending = None
                self._busy = True
            try:
                self._upload(epoch, snapshot)
            except Exception as exc:  # a lost copy costs time on another host, never a result
                log.warning("checkpoint of epoch %d not uploaded: %s", epoch, exc)
                self.stats.errors.append(f"epoch {epoch}: {exc}")
            finally:
                shutil.rmtree(snapshot, ignore_errors=True)
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _upload(self, epoch: int, snapshot: Path) -> None:
        started = time.perf_counter()
        entries: dict[str, dict[str, Any]] = {}
        sent = 0
        for name in SYNCED_FILES:
            path = snapshot / name
            if not path.is_file():
                continue
            sha256, size = sha256_file(path)
            previous = self._entries.get(name)
            if previous is not None and previous["sha256"] == sha256:
                entries[name] = previous  # unchanged (best.pt of an earlier epoch): not re-sent
                continue
            key = f"{self.prefix}/epoch-{epoch:05d}/{name}"
            self.store.put_file(key, path, expected_sha256=sha256, expected_size=size)
            entries[name] = {"name": name, "key": key, "size_bytes": size, "sha256": sha256}
            sent += size
        pointer = {
            "format": POINTER_FORMAT,
            "epoch": epoch,
            "files": [entries[n] for n in SYNCED_FILES if n in entries],
        }
        self.store.put_bytes(
            self.pointer_key, json.dumps(pointer, indent=1, sort_keys=True).encode()
        )
        kept = {e["key"] for e in entries.values()}
        for old in self._entries.values():  # the pointer moved on: the old epoch's files go
            if old["key"] not in kept:
                self.store.delete(str(old["key"]))
        self._entries = entries
        self.stats.epochs.append(epoch)
        self.stats.seconds.append(time.perf_counter() - started)
        self.stats.bytes += sent

    def flush(self) -> None:
        """Wait until every queued upload has finished (or failed)."""
        with self._cond:
            while self._pending is not None or self._busy:
                self._cond.wait()

    def close(self, model_dir: Path | None = None) -> None:
        """Finish the queued uploads, stop the thread and remove the snapshot folder of
        ``model_dir`` (it must not become part of the stage's files)."""
        self.flush()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
        if model_dir is not None:
            shutil.rmtree(Path(model_dir) / SNAPSHOT_DIR, ignore_errors=True)
            shutil.rmtree(Path(model_dir) / RESTORE_DIR, ignore_errors=True)

    def clear(self, epochs: int = 0) -> None:
        """Delete the stored checkpoints of this stage key (it is published: nobody resumes).

        ``epochs``: the run's epoch count; the files of epochs 1..epochs are deleted too, which
        catches an upload whose pointer was never written (the store has no listing).
        """
        keys = {str(e["key"]) for e in self._entries.values()}
        keys |= {
            f"{self.prefix}/epoch-{epoch:05d}/{name}"
            for epoch in range(1, epochs + 1)
            for name in SYNCED_FILES
        }
        try:
            pointer = self.read_pointer()
        except (BlobStoreError, ValueError):
            pointer = None
        if pointer is not None:
            keys |= {str(e["key"]) for e in pointer["files"]}
        self.store.delete(self.pointer_key)  # first: no reader pairs it with deleted files
        for key in sorted(keys):
            self.store.delete(key)
        self._entries = {}
