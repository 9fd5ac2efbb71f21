"""Pre-anonymized archive validation (services.anonymizers.archive): layout, safety, audio."""

from __future__ import annotations

import io
import json
import stat
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from services.anonymizers.archive import (
    REPORT_NAME,
    ArchiveAnonymizer,
    ArchiveValidation,
    validate_archive,
)
from services.anonymizers.archive_members import ArchiveError
from services.anonymizers.base import AnonymizationItem
from services.anonymizers.contract import ArchiveLimits, output_stem

SR = 16_000
EXPECTED = {"train": ["a1", "a2"], "trial": ["t1"]}
DURATIONS = {"a1": 1.0, "a2": 0.5, "t1": 0.75}


def wav_bytes(
    seconds: float, sr: int = SR, channels: int = 1, fmt: str = "WAV", freq: float = 220.0
) -> bytes:
    n = round(seconds * sr)
    t = np.arange(n) / sr
    x = 0.3 * np.sin(2 * np.pi * freq * t) + 0.01 * np.random.default_rng(0).standard_normal(n)
    if channels > 1:
        x = np.stack([x] * channels, axis=1)
    buf = io.BytesIO()
    sf.write(buf, x, sr, format=fmt, subtype="PCM_16")
    return buf.getvalue()


def good_members(layout: str = "flat") -> dict[str, bytes]:
    out = {}
    for set_name, ids in EXPECTED.items():
        for i, u in enumerate(ids):
            name = f"{u}.wav" if layout == "flat" else f"{set_name}/{u}.wav"
            out[name] = wav_bytes(DURATIONS[u], freq=200.0 + 50 * i)
    return out


def make_zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def make_tar(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def check(archive: Path, out: Path, **kw) -> ArchiveValidation:  # type: ignore[no-untyped-def]
    return validate_archive(archive, EXPECTED, out, original_durations_s=DURATIONS, **kw)


def joined(report: ArchiveValidation) -> str:
    return " | ".join(report.problems)


# -- happy paths --------------------------------------------------------------------------------


def test_flat_zip_is_extracted_and_served_by_the_anonymizer(tmp_path: Path) -> None:
    report = check(make_zip(tmp_path / "a.zip", good_members()), tmp_path / "out")
    assert report.ok, report.problems
    assert set(report.files) == {"a1", "a2", "t1"}
    assert report.durations_s["a2"] == pytest.approx(0.5)
    assert report.unpacked_bytes == sum(len(b) for b in good_members().values())
    assert json.loads((tmp_path / "out" / REPORT_NAME).read_text())["files"] == report.files

    anon = ArchiveAnonymizer(tmp_path / "out")
    original = sf.read(io.BytesIO(good_members()["a1.wav"]), dtype="float32")[0]
    # Inputs slightly longer / shorter than the archive's audio: outputs take the input length.
    items = [
        AnonymizationItem("a1", np.zeros(len(original) + 40, np.float32), SR, "s1", "f"),
        AnonymizationItem("t1", np.zeros(12000 - 30, np.float32), SR, "s2", "m"),
    ]
    out = anon.anonymize(items, seed=123)
    assert [len(y) for y in out] == [len(original) + 40, 12000 - 30]
    np.testing.assert_allclose(out[0][: len(original)], original, atol=1e-6)
    assert np.all(out[0][len(original) :] == 0)
    cfg = anon.config()
    assert cfg["archive_sha256"] == report.archive_sha256
    assert cfg["content_hash"] == report.content_hash()


def test_tar_gz_with_wrapper_and_set_folders_flac_and_metadata(tmp_path: Path) -> None:
    members = {f"submission/{k}": v for k, v in good_members("sets").items()}
    members["submission/trial/t1.wav"] = b""  # replaced below by a FLAC file
    del members["submission/trial/t1.wav"]
    members["submission/trial/t1.flac"] = wav_bytes(0.75, fmt="FLAC")
    members["submission/metadata.json"] = json.dumps({"utterances": {"a1": {"x": 1}}}).encode()
    report = check(make_tar(tmp_path / "a.tar.gz", members), tmp_path / "out")
    assert report.ok, report.problems
    assert report.files["t1"] == "audio/t1.flac"
    assert report.metadata == {"utterances": {"a1": {"x": 1}}}
    anon = ArchiveAnonymizer(tmp_path / "out")
    assert anon.config()["archive_sha256"] == report.archive_sha256


def test_unsafe_utterance_ids_use_hashed_stems(tmp_path: Path) -> None:
    expected = ["spk 1/utt:1"]
    stem = output_stem(expected[0])
    assert stem.startswith("u-") and "/" not in stem
    report = validate_archive(
        make_zip(tmp_path / "a.zip", {f"{stem}.wav": wav_bytes(0.5)}), expected, tmp_path / "o"
    )
    assert report.ok, report.problems


# -- layout problems ----------------------------------------------------------------------------


def test_missing_duplicate_and_extra_members_are_all_reported(tmp_path: Path) -> None:
    members = good_members()
    del members["a2.wav"]
    members["train/a1.wav"] = members["a1.wav"]  # a1 twice (flat and in its set folder)
    members["readme.txt"] = b"hello"
    members["zz9.wav"] = wav_bytes(0.5)  # no such utterance
    report = check(make_zip(tmp_path / "a.zip", members), tmp_path / "out")
    text = joined(report)
    assert not report.ok
    assert "missing utterance(s): 'a2'" in text
    assert "duplicate utterance(s)" in text and "train/a1.wav" in text
    assert "readme.txt" in text and "zz9.wav" in text
    # Nothing is extracted when the listing is off.
    assert not (tmp_path / "out" / "audio").exists()
    with pytest.raises(ArchiveError, match="missing utterance"):
        report.raise_for_problems()
    with pytest.raises(ArchiveError, match="failed validation"):
        ArchiveAnonymizer(tmp_path / "out")


def test_same_utterance_as_wav_and_flac_is_a_duplicate(tmp_path: Path) -> None:
    members = good_members()
    members["t1.flac"] = wav_bytes(0.75, fmt="FLAC")
    report = check(make_zip(tmp_path / "a.zip", members), tmp_path / "out")
    assert "duplicate utterance(s)" in joined(report)


def test_wrong_set_folder(tmp_path: Path) -> None:
    members = good_members("sets")
    members["train/t1.wav"] = members.pop("trial/t1.wav")
    report = check(make_zip(tmp_path / "a.zip", members), tmp_path / "out")
    assert "wrong set folder" in joined(report) and "belongs to trial" in joined(report)


# -- unsafe archives ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../evil.wav", "train/../../evil.wav", "/etc/evil.wav"])
@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_path_traversal_and_absolute_paths(tmp_path: Path, name: str, kind: str) -> None:
    members = {**good_members(), name: wav_bytes(0.5)}
    if kind == "zip":
        archive = make_zip(tmp_path / "a.zip", members)
    else:
        archive = make_tar(tmp_path / "a.tar", members, mode="w")
    report = check(archive, tmp_path / "out" / "inner")
    assert not report.ok
    assert name in joined(report)
    assert "traversal" in joined(report) or "absolute" in joined(report)
    assert not (tmp_path / "evil.wav").exists() and not (tmp_path / "out" / "evil.wav").exists()
    assert not (tmp_path / "out" / "inner" / "audio").exists()


def test_tar_symlink_hardlink_and_device_are_rejected(tmp_path: Path) -> None:
    for kind, expect in [
        (tarfile.SYMTYPE, "symlink"),
        (tarfile.LNKTYPE, "hard link"),
        (tarfile.CHRTYPE, "device"),
        (tarfile.FIFOTYPE, "fifo"),
    ]:
        path = tmp_path / f"{kind!r}.tar"
        make_tar(path, good_members(), mode="w")
        with tarfile.open(path, "a") as tf:
            info = tarfile.TarInfo("a3.wav")
            info.type = kind
            info.linkname = "/etc/passwd"
            tf.addfile(info)
        report = check(path, tmp_path / "out")
        assert not report.ok and expect in joined(report) and "a3.wav" in joined(report)


def test_zip_symlink_is_rejected(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "a.zip", good_members())
    with zipfile.ZipFile(path, "a") as zf:
        info = zipfile.ZipInfo("link.wav")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    report = check(path, tmp_path / "out")
    assert not report.ok and "symlink" in joined(report) and "link.wav" in joined(report)


def test_zip_bomb_high_compression_ratio_is_rejected_before_extraction(tmp_path: Path) -> None:
    members = {**good_members(), "a1.wav": b"\0" * (8 * 1024 * 1024)}
    path = make_zip(tmp_path / "bomb.zip", members)
    assert path.stat().st_size < 100_000
    report = check(path, tmp_path / "out", limits=ArchiveLimits(max_unpacked_bytes=1 << 40))
    assert not report.ok
    assert "zip bomb" in joined(report) and "a1.wav" in joined(report)
    assert not (tmp_path / "out" / "audio").exists()


def test_one_highly_compressed_member_among_incompressible_ones(tmp_path: Path) -> None:
    # The archive as a whole compresses about 20:1 (under the limit); one member 1000:1.
    rng = np.random.default_rng(0)
    members = {
        **good_members(),
        "a2.wav": rng.bytes(400_000),
        "a1.wav": b"\0" * (8 * 1024 * 1024),
    }
    path = make_zip(tmp_path / "bomb.zip", members)
    report = validate_archive(
        path, EXPECTED, tmp_path / "out", limits=ArchiveLimits(max_unpacked_bytes=1 << 40)
    )
    assert not report.ok
    assert "member 'a1.wav': compression ratio" in joined(report)


def _patch_zip_sizes(path: Path, member: str, declared: int) -> None:
    """Overwrite the uncompressed size of ``member`` in both zip headers (a lying archive)."""
    blob = bytearray(path.read_bytes())
    name = member.encode()
    for sig, size_at, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        start = 0
        while (pos := blob.find(sig, start)) >= 0:
            if blob[pos + name_at : pos + name_at + len(name)] == name:
                struct.pack_into("<I", blob, pos + size_at, declared)
            start = pos + 4
    path.write_bytes(bytes(blob))


def test_zip_with_huge_declared_size_is_rejected(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "a.zip", good_members(), method=zipfile.ZIP_STORED)
    _patch_zip_sizes(path, "a1.wav", 0xFFFFFF00)
    report = check(path, tmp_path / "out")
    assert not report.ok and "a1.wav" in joined(report) and "declared" in joined(report)


def test_zip_member_larger_than_declared_is_stopped_while_extracting(tmp_path: Path) -> None:
    members = good_members()
    path = make_zip(tmp_path / "a.zip", members)
    _patch_zip_sizes(path, "a1.wav", 1000)
    report = check(path, tmp_path / "out")
    assert not report.ok and "a1.wav" in joined(report)
    assert not (tmp_path / "out" / "audio").exists()


def test_tar_with_huge_declared_member_size(tmp_path: Path) -> None:
    info = tarfile.TarInfo("a1.wav")
    info.size = 50 * 1024**3
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    path = tmp_path / "a.tar"
    path.write_bytes(header + b"\0" * 4096)  # the data is never there: listing must stop first
    report = check(path, tmp_path / "out")
    assert not report.ok and "a1.wav" in joined(report) and "declared size" in joined(report)


def test_unpacked_budget_follows_the_expected_durations(tmp_path: Path) -> None:
    members = good_members()
    # 20 s of audio for a 1 s utterance: over the duration-derived budget (8 bytes per sample).
    members["a1.wav"] = np.random.default_rng(1).bytes(20 * SR * 8)
    report = check(make_zip(tmp_path / "a.zip", members), tmp_path / "out")
    assert not report.ok and "unpacked size" in joined(report)


def test_member_count_limit(tmp_path: Path) -> None:
    members = {**good_members(), **{f"train/x{i}.wav": b"" for i in range(10)}}
    report = check(
        make_zip(tmp_path / "a.zip", members), tmp_path / "o", limits=ArchiveLimits(max_members=5)
    )
    assert not report.ok and "limit of 5" in joined(report)


def test_not_an_archive(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    path.write_bytes(b"this is not an archive" * 10)
    report = check(path, tmp_path / "out")
    assert not report.ok and "not a zip or tar" in joined(report)


# -- audio problems -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"RIFF\x10\x00\x00\x00WAVEjunkjunkjunk", "not decodable"),
        (wav_bytes(1.0, sr=8000), "sample rate 8000 Hz"),
        (wav_bytes(1.0, channels=2), "2 channels"),
        (wav_bytes(1.5), "duration 1.500 s"),
    ],
    ids=["undecodable", "wrong-rate", "stereo", "wrong-duration"],
)
def test_bad_audio_names_the_member(tmp_path: Path, data: bytes, message: str) -> None:
    members = {**good_members(), "a1.wav": data}
    report = check(make_zip(tmp_path / "a.zip", members), tmp_path / "out")
    assert not report.ok
    assert message in joined(report) and "a1.wav" in joined(report)
    assert not (tmp_path / "out" / "audio").exists()  # partial extraction is removed


def test_small_duration_difference_is_tolerated(tmp_path: Path) -> None:
    members = {**good_members(), "a1.wav": wav_bytes(1.05)}  # 50 ms longer: within 0.1 s
    report = check(make_zip(tmp_path / "a.zip", members), tmp_path / "out")
    assert report.ok, report.problems


def test_metadata_must_be_a_json_object(tmp_path: Path) -> None:
    members = {**good_members(), "metadata.json": b"[1, 2]"}
    report = check(make_zip(tmp_path / "a.zip", members), tmp_path / "out")
    assert not report.ok and "metadata.json" in joined(report) and "JSON object" in joined(report)


def test_kind_errors(tmp_path: Path) -> None:
    from services.anonymizers.kinds.registry import kind_of
    from services.errors import ConfigError
    from services.pipeline.config import parse_config

    with pytest.raises(ConfigError, match="validate the archive first"):
        ArchiveAnonymizer(tmp_path)
    with pytest.raises(ConfigError, match="unknown anonymizer kind 'nope'"):
        kind_of("nope")
    with pytest.raises(ConfigError, match=r"anonymizer\.image: Field required"):
        parse_config({"anonymizer": {"kind": "container"}})
    with pytest.raises(ConfigError, match=r"anonymizer\.archive: Field required"):
        parse_config({"anonymizer": {"kind": "archive"}})


# -- corrupt compressed data -------------------------------------------------------------------


def _overwrite(path: Path, offset: int, length: int) -> Path:
    """Overwrite ``length`` bytes at ``offset`` with a fixed non-zero pattern."""
    data = bytearray(path.read_bytes())
    data[offset : offset + length] = bytes((i * 37 + 11) % 251 + 1 for i in range(length))
    path.write_bytes(bytes(data))
    return path


def _flip(path: Path, start: int, stop: int, step: int) -> Path:
    """Flip every bit of each ``step``-th byte in ``[start, stop)``."""
    data = bytearray(path.read_bytes())
    for i in range(start, min(stop, len(data)), step):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def test_zip_with_overwritten_deflate_data_is_a_corrupt_archive(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "a.zip", good_members())
    with zipfile.ZipFile(archive) as zf:
        first = zf.infolist()[0]
    # Inside the first member's deflate stream (past its 30-byte local header and name).
    start = first.header_offset + 30 + len(first.filename) + 50
    report = check(_overwrite(archive, start, 400), tmp_path / "out")
    assert not report.ok and "corrupt archive" in joined(report), report.problems
    assert not (tmp_path / "out" / "audio").exists()


@pytest.mark.parametrize("mode", ["w:xz", "w:bz2", "w:gz"])
def test_compressed_tar_with_flipped_bytes_is_a_corrupt_archive(tmp_path: Path, mode: str) -> None:
    suffix = mode.split(":")[1]
    archive = make_tar(tmp_path / f"a.tar.{suffix}", good_members(), mode=mode)
    size = archive.stat().st_size
    report = check(_flip(archive, size // 3, 2 * size // 3, 97), tmp_path / "out")
    assert not report.ok
    assert "corrupt archive" in joined(report), report.problems
    assert "missing" not in joined(report)


# -- member counts read before memory grows; sample values bounded --------------------------------


def test_tar_member_count_is_bounded_by_the_protocol_while_listing(tmp_path: Path) -> None:
    path = tmp_path / "dirs.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for i in range(20_000):
            info = tarfile.TarInfo(f"d{i}")
            info.type = tarfile.DIRTYPE
            tf.addfile(info)
    report = check(path, tmp_path / "o")
    # 3 expected files + 2 folders for each of 2 sets (`<set>/` and, in the VoicePrivacy
    # layout, `<set><suffix>/wav/`) + 1000 listed extras: the 1008th header stops the listing.
    assert "more members than the limit of 1007" in joined(report)


def test_zip_member_count_is_checked_before_the_directory_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(5_000):
            zf.writestr(f"f{i}", b"")
    import services.anonymizers.archive as archive_module

    def never(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("zipfile read the central directory")

    monkeypatch.setattr(archive_module.zipfile, "ZipFile", never)
    report = check(path, tmp_path / "o")
    assert "5000 members, more than the limit of 1007" in joined(report)


def test_float_samples_far_above_full_scale_are_refused(tmp_path: Path) -> None:
    members = good_members()
    buf = io.BytesIO()
    x = np.full(round(DURATIONS["a1"] * SR), 1e30, dtype=np.float32)
    sf.write(buf, x, SR, format="WAV", subtype="FLOAT")
    members["a1.wav"] = buf.getvalue()
    report = check(make_zip(tmp_path / "a.zip", members), tmp_path / "o")
    assert "a1" in joined(report) and "peak amplitude 1e+30 is above the limit of 2" in joined(
        report
    )
    louder = io.BytesIO()
    sf.write(louder, np.full(x.size, 1.5, dtype=np.float32), SR, format="WAV", subtype="FLOAT")
    members["a1.wav"] = louder.getvalue()
    assert check(make_zip(tmp_path / "b.zip", members), tmp_path / "p").ok
