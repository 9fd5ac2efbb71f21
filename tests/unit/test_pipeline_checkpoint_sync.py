"""Training checkpoints through a blob store (services/pipeline/checkpoint_sync.py): a run killed
on one "host" continues on another (an empty folder) from the last uploaded epoch, with the same
model as a run that was never interrupted; a half or corrupt upload is never resumed from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from services.attacker.checkpoint import load_checkpoint
from services.attacker.embeddings import extract_embeddings
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import TrainingItem
from services.pipeline.checkpoint_sync import (
    POINTER_FILE,
    RESTORE_DIR,
    SNAPSHOT_DIR,
    CheckpointSync,
    checkpoint_prefix,
)
from services.storage.blob_local import LocalBlobStore

SR = 16_000
KEYS = ("loss_source", "loss_target", "ver_source", "ver_target", "learning_rate", "w_target")


def _voices(n_speakers: int, n_utts: int, seed: int) -> list[TrainingItem]:
    """Harmonic tones, one F0 per speaker (easy to tell apart)."""
    rng = np.random.default_rng(seed)
    items = []
    for k in range(n_speakers):
        for u in range(n_utts):
            t = np.arange(int(rng.uniform(1.0, 1.5) * SR)) / SR
            w = sum(np.sin(2 * np.pi * h * 110.0 * 1.3**k * t) / h for h in range(1, 8))
            w = 0.3 * w / np.abs(w).max() + 0.01 * rng.standard_normal(len(t))
            items.append(TrainingItem(w.astype(np.float32), f"s{k}", f"t{(u + k) % 2}"))
    return items


TRAIN = _voices(3, 6, 0)
VAL = _voices(3, 2, 1)
PROBES = [it.waveform for it in _voices(3, 1, 2)]
CONFIG = TrainingConfig.model_validate(
    {
        "preset": "tiny",
        "epochs": 4,
        "batch_size": 6,
        "crop_seconds": 1.0,
        "device": "cpu",
        "seed": 3,
        "target_classifier": "observe",
    }
)


@pytest.fixture()
def store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs", signing_key="test")


def _stored_files(store: LocalBlobStore, stage: str, key: str) -> list[str]:
    base = store.root / checkpoint_prefix(stage, key)
    if not base.exists():
        return []
    return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())


class Killed(RuntimeError):
    """Stands in for SIGKILL: the run stops right after an epoch's checkpoint was queued."""


@pytest.mark.slow
def test_a_run_killed_on_host_a_resumes_on_host_b_from_the_uploaded_epoch(
    tmp_path: Path, store: LocalBlobStore
) -> None:
    straight = train_attacker(TRAIN, VAL, CONFIG, tmp_path / "straight")
    assert straight.resumed_after_epoch == 0

    host_a = tmp_path / "host-a" / "model"
    sync_a = CheckpointSync(store, "train", "k1")

    def killed_after_epoch_2(epoch: int, model_dir: Path) -> None:
        sync_a.epoch_saved(epoch, model_dir)
        if epoch == 2:
            raise Killed

    with pytest.raises(Killed):
        train_attacker(TRAIN, VAL, CONFIG, host_a, on_checkpoint=killed_after_epoch_2)
    sync_a.close(host_a)
    assert not (host_a / SNAPSHOT_DIR).exists()
    assert sync_a.stats.epochs[-1] == 2 and not sync_a.stats.errors
    pointer = sync_a.read_pointer()
    assert pointer is not None and pointer["epoch"] == 2
    # Older epochs' objects went once the pointer moved on; what is stored is what it names.
    named = sorted(e["key"].rsplit("/k1/", 1)[1] for e in pointer["files"])
    assert _stored_files(store, "train", "k1") == sorted([*named, POINTER_FILE])

    host_b = tmp_path / "host-b" / "model"  # another host: nothing local
    sync_b = CheckpointSync(store, "train", "k1")
    assert sync_b.restore(host_b) == 2
    assert load_checkpoint(host_b / "last.pt")["epoch"] == 2
    assert not (host_b / RESTORE_DIR).exists()  # nothing extra joins the stage's files
    resumed = train_attacker(TRAIN, VAL, CONFIG, host_b, on_checkpoint=sync_b.epoch_saved)
    sync_b.close(host_b)
    assert resumed.resumed_after_epoch == 2
    assert [[getattr(r, k) for k in KEYS] for r in resumed.history] == [
        [getattr(r, k) for k in KEYS] for r in straight.history
    ]
    for name in ("last.pt", "best.pt"):
        a = extract_embeddings(tmp_path / "straight" / name, PROBES, device="cpu")
        b = extract_embeddings(host_b / name, PROBES, device="cpu")
        assert np.array_equal(a, b), name
    assert sync_b.read_pointer()["epoch"] == CONFIG.epochs  # type: ignore[index]

    # A host whose folder already holds the newest epoch keeps its own files.
    assert CheckpointSync(store, "train", "k1").restore(host_b) == 0

    sync_b.clear(CONFIG.epochs)
    assert _stored_files(store, "train", "k1") == []


def _upload_epochs(store: LocalBlobStore, folder: Path, epochs: int) -> CheckpointSync:
    config = CONFIG.model_copy(update={"epochs": epochs})
    sync = CheckpointSync(store, "train", "k2")
    train_attacker(TRAIN, VAL, config, folder, on_checkpoint=sync.epoch_saved)
    sync.close(folder)
    return sync


def test_a_corrupt_or_half_upload_is_never_resumed_from(
    tmp_path: Path, store: LocalBlobStore
) -> None:
    sync = _upload_epochs(store, tmp_path / "a", epochs=1)
    pointer = sync.read_pointer()
    assert pointer is not None and pointer["epoch"] == 1
    last = next(e for e in pointer["files"] if e["name"] == "last.pt")

    # A blob that differs from the pointer's sha256 (written under it later, or tampered).
    original = store.get_bytes(last["key"])
    store.put_bytes(last["key"], original[:-10] + b"0123456789")
    target = tmp_path / "b" / "model"
    assert CheckpointSync(store, "train", "k2").restore(target) == 0
    assert not (target / "last.pt").exists()

    # Files uploaded but no pointer yet (the uploader died before writing it): nothing to resume.
    store.put_bytes(last["key"], original)
    store.delete(f"{checkpoint_prefix('train', 'k2')}/{POINTER_FILE}")
    assert CheckpointSync(store, "train", "k2").restore(target) == 0
    assert not (target / "last.pt").exists()

    # A pointer that is not ours is ignored, not trusted.
    store.put_bytes(f"{checkpoint_prefix('train', 'k2')}/{POINTER_FILE}", json.dumps([1]).encode())
    assert CheckpointSync(store, "train", "k2").restore(target) == 0

    # clear(epochs) removes the orphaned epoch files too (the store cannot list them).
    CheckpointSync(store, "train", "k2").clear(1)
    assert _stored_files(store, "train", "k2") == []


def test_uploads_keep_the_newest_snapshot_and_never_block_the_caller(
    tmp_path: Path, store: LocalBlobStore
) -> None:
    sync = _upload_epochs(store, tmp_path / "a", epochs=2)
    assert sync.stats.epochs[-1] == 2 and not sync.stats.errors
    assert all(s >= 0 for s in sync.stats.seconds) and sync.stats.bytes > 0
    with pytest.raises(RuntimeError, match="closed"):
        sync.epoch_saved(3, tmp_path / "a")
