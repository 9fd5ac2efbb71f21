"""Stage folders through a (local) blob store: the manifest is checked on upload and download."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.pipeline.stage_runner import DONE_FILE, REJECTED_DIR, stage_folder_problem, stage_key
from services.pipeline.workspace import StageWorkspace, SyncedStageRunner, stage_index_key
from services.storage.blob_local import LocalBlobStore
from services.storage.errors import BlobIntegrityError


def _store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs", signing_key="test")


def _host(tmp_path: Path, store: LocalBlobStore, name: str) -> SyncedStageRunner:
    stages = tmp_path / name / "stages"
    return SyncedStageRunner(stages, StageWorkspace(store, stages))


def _stage(calls: list[str], name: str) -> Callable[[Path], dict[str, Any]]:
    def fn(folder: Path) -> dict[str, Any]:
        calls.append(name)
        (folder / "audio").mkdir()
        (folder / "audio" / "a.wav").write_bytes(b"A" * 300)
        (folder / "row.json").write_text('{"eer": 1.5}')
        return {"row": "row.json"}

    return fn


def test_a_stage_computed_on_one_host_is_downloaded_and_reused_on_another(tmp_path: Path) -> None:
    store = _store(tmp_path)
    calls: list[str] = []
    a = _host(tmp_path, store, "a").run("s", {"v": 1}, _stage(calls, "a"))
    host_b = _host(tmp_path, store, "b")
    b = host_b.run("s", {"v": 1}, _stage(calls, "b"))
    assert calls == ["a"] and not a.reused and b.reused
    assert [t.direction for t in host_b.transfers] == ["download"]
    assert stage_folder_problem(b.folder, check_sha256=True) is None


def test_a_stored_copy_that_differs_from_its_manifest_is_recomputed_and_replaced(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    calls: list[str] = []
    first = _host(tmp_path, store, "a").run("s", {"v": 1}, _stage(calls, "a"))
    # Corrupt the stored copy consistently (blob and index agree; the manifest does not).
    index_key = stage_index_key("s", first.key)
    index = json.loads(store.get_bytes(index_key))
    entry = next(e for e in index["files"] if e["path"] == "audio/a.wav")
    store.put_bytes(entry["key"], b"A" * 10)
    info = store.stat(entry["key"])
    entry.update(size_bytes=info.size_bytes, sha256=info.sha256)
    store.put_bytes(index_key, json.dumps(index).encode())

    b_stages = tmp_path / "b" / "stages"
    with pytest.raises(BlobIntegrityError, match="manifest"):
        StageWorkspace(store, b_stages).download("s", first.key)
    assert not (b_stages / "s" / first.key).exists()

    host_b = _host(tmp_path, store, "b")
    again = host_b.run("s", {"v": 1}, _stage(calls, "b"))
    assert calls == ["a", "b"] and not again.reused
    assert [t.direction for t in host_b.transfers] == ["upload"]  # the stored copy replaced
    host_c = _host(tmp_path, store, "c")
    third = host_c.run("s", {"v": 1}, _stage(calls, "c"))
    assert calls == ["a", "b"] and third.reused
    assert (third.folder / "audio" / "a.wav").read_bytes() == b"A" * 300


def test_a_stored_copy_without_a_manifest_is_recomputed_and_replaced(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = stage_key("s", {"v": 1})
    legacy = tmp_path / "old" / "stages" / "s" / key
    legacy.mkdir(parents=True)
    (legacy / "row.json").write_text("{}")
    (legacy / DONE_FILE).write_text(json.dumps({"outputs": {"row": "row.json"}}))
    StageWorkspace(store, tmp_path / "old" / "stages").upload("s", key)

    calls: list[str] = []
    host_b = _host(tmp_path, store, "b")
    out = host_b.run("s", {"v": 1}, _stage(calls, "b"))
    assert calls == ["b"] and not out.reused
    assert [t.direction for t in host_b.transfers] == ["download", "upload"]
    assert list((tmp_path / "b" / "stages" / REJECTED_DIR / "s").iterdir())
    reused = _host(tmp_path, store, "c").run("s", {"v": 1}, _stage(calls, "c"))
    assert calls == ["b"] and reused.reused


def test_an_upload_refuses_a_folder_changed_after_it_was_published(tmp_path: Path) -> None:
    store = _store(tmp_path)
    stages = tmp_path / "a" / "stages"
    calls: list[str] = []
    plain = SyncedStageRunner(stages, None)  # computes without uploading
    out = plain.run("s", {"v": 1}, _stage(calls, "a"))
    (out.folder / "audio" / "a.wav").write_bytes(b"Z" * 300)  # same size: reuse cannot tell
    host = SyncedStageRunner(stages, StageWorkspace(store, stages))
    with pytest.raises(BlobIntegrityError, match="sha256"):
        host.run("s", {"v": 1}, _stage(calls, "a"))
    assert not store.exists(stage_index_key("s", out.key))
    # The folder was set aside, so the retry computes it again and uploads a good copy.
    again = host.run("s", {"v": 1}, _stage(calls, "a"))
    assert calls == ["a", "a"] and not again.reused
    assert store.exists(stage_index_key("s", out.key))


def test_validated_archive_folders_without_a_manifest_still_round_trip(tmp_path: Path) -> None:
    # The archive task writes its own DONE.json (no manifest); the index alone vouches for it.
    store = _store(tmp_path)
    folder = tmp_path / "a" / "archive" / "0123456789abcdef"
    folder.mkdir(parents=True)
    (folder / "x.wav").write_bytes(b"RIFF")
    (folder / DONE_FILE).write_text('{"archive": "archives/1", "sha256": "00"}')
    assert StageWorkspace(store, tmp_path / "a").upload("archive", folder.name).files == 2
    b = StageWorkspace(store, tmp_path / "b")
    assert b.download("archive", folder.name).direction == "download"
    assert b.is_local("archive", folder.name)


def _made_by(name: str) -> Callable[[Path], dict[str, Any]]:
    def fn(folder: Path) -> dict[str, Any]:
        (folder / "made_by.txt").write_text(name)  # bytes differ between hosts
        return {"made_by": name}

    return fn


def test_a_host_whose_copy_differs_from_the_published_one_adopts_the_published_one(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    published = _host(tmp_path, store, "a").run("s", {"v": 1}, _made_by("a"))
    # Host b computed the same key on its own (no store), then syncs: it loses the race.
    b_stages = tmp_path / "b" / "stages"
    SyncedStageRunner(b_stages, None).run("s", {"v": 1}, _made_by("b"))
    host_b = SyncedStageRunner(b_stages, StageWorkspace(store, b_stages))
    outcome = host_b.run("s", {"v": 1}, _made_by("b"))
    assert outcome.outputs == {"made_by": "a"} and host_b.log[-1] == outcome
    assert (outcome.folder / "made_by.txt").read_text() == "a"
    assert [t.direction for t in host_b.transfers] == ["download"]
    assert list((b_stages / REJECTED_DIR / "s").iterdir())  # its own copy kept for inspection
    assert stage_folder_problem(outcome.folder, check_sha256=True) is None
    # The published index still names host a's blobs only.
    index = json.loads(store.get_bytes(stage_index_key("s", published.key)))
    assert len({e["key"].split("/")[4] for e in index["files"]}) == 1


def test_the_loser_of_a_publishing_race_deletes_only_its_own_blobs(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = stage_key("s", {"v": 1})
    folders = []
    for name in ("a", "b"):
        stages = tmp_path / name / "stages"
        SyncedStageRunner(stages, None).run("s", {"v": 1}, _made_by(name))
        folders.append(StageWorkspace(store, stages))
    assert folders[0].upload("s", key).direction == "upload"
    assert folders[1].upload("s", key, replace_index_sha256="0" * 64).direction == "lost"
    blobs = (store.root / "stages" / "s" / key / "attempts").rglob("*")
    attempts = {p.relative_to(store.root).parts[4] for p in blobs if p.is_file()}
    index = json.loads(store.get_bytes(stage_index_key("s", key)))
    assert attempts == {e["key"].split("/")[4] for e in index["files"]}  # the winner's only
    assert StageWorkspace(store, tmp_path / "c").download("s", key).direction == "download"


def test_the_compute_time_travels_with_a_published_stage(tmp_path: Path) -> None:
    """A host that downloads a stage learns how long it took on the host that computed it."""
    store = _store(tmp_path)
    a = _host(tmp_path, store, "a").run("s", {"v": 1}, _stage([], "a"))
    b = _host(tmp_path, store, "b").run("s", {"v": 1}, _stage([], "b"))
    assert b.reused and b.seconds == 0.0
    assert a.compute_seconds is not None and b.compute_seconds == pytest.approx(
        a.compute_seconds, abs=1e-3
    )
