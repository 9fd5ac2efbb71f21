"""Anonymizer containers for real, through Podman's Docker-API service.

Needs root and Podman with runc: `scripts/ensure_podman.sh` (run here when the socket does not
answer) installs it, starts `podman system service` and builds the debootstrap base image once
per machine. Test images are tiny layers on that base: the example anonymizer and one image per
misbehaviour (tests/integration/container_images/misbehave.py).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from services.anonymizers.base import AnonymizationItem, TargetVoice
from services.anonymizers.container import ContainerAnonymizer
from services.anonymizers.container_sandbox import (
    ContainerEngineError,
    ContainerExitError,
    ContainerMemoryError,
    ContainerStartError,
    ContainerTimeoutError,
    ExtraOutputError,
    ImageNotFoundError,
    ImageRegistryError,
    MissingOutputError,
    OutputFormatError,
    SandboxLimits,
    engine_client,
    resolve_image_digest,
)
from services.anonymizers.service import SIDECAR_NAME, anonymize_manifest
from services.audio import SAMPLE_RATE_HZ, read_audio, write_audio
from services.corpus.manifest import Manifest, Utterance

pytestmark = [pytest.mark.containers, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SOCKET = os.environ.get("UNMASK_PODMAN_SOCKET", "/run/unmask-podman.sock")
ENGINE_URL = f"unix://{SOCKET}"
BASE_IMAGE = os.environ.get("UNMASK_TEST_BASE_IMAGE", "localhost/unmask-test-base:bookworm")
EXAMPLE = "localhost/unmask-test-example:latest"
MODES = ("probe", "network", "memory", "sleep", "escape", "omit", "exit", "wrongrate", "flood")
LIMITS = SandboxLimits(
    memory_mb=256, cpus=1.0, pids_limit=64, time_limit_s=60, shard_size=8, tmpfs_mb=32, shm_mb=16
)


def _podman(*args: str, input_text: str | None = None) -> str:
    done = subprocess.run(
        ["podman", *args], input=input_text, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Engine up, base image present, test images built (a few seconds once the base exists)."""
    if os.geteuid() != 0:
        pytest.skip("container tests need root (rootful Podman with runc)")
    setup = subprocess.run(
        ["bash", str(REPO / "scripts" / "ensure_podman.sh")], capture_output=True, text=True
    )
    if setup.returncode != 0:
        pytest.fail(f"scripts/ensure_podman.sh failed: {setup.stderr.strip()[-2000:]}")
    _podman(
        "build", "-q", "--build-arg", f"BASE={BASE_IMAGE}", "-t", EXAMPLE,
        str(REPO / "examples" / "anonymizer-container"),
    )  # fmt: skip
    ctx = tmp_path_factory.mktemp("misbehave")
    (ctx / "misbehave.py").write_bytes(
        (REPO / "tests" / "integration" / "container_images" / "misbehave.py").read_bytes()
    )
    names = {"example": EXAMPLE}
    for mode in MODES:
        (ctx / "Containerfile").write_text(
            f"FROM {BASE_IMAGE}\nCOPY misbehave.py /opt/misbehave.py\n"
            f'ENTRYPOINT ["python3", "/opt/misbehave.py", "{mode}"]\n'
        )
        names[mode] = f"localhost/unmask-test-{mode}:latest"
        _podman("build", "-q", "-t", names[mode], str(ctx))
    (ctx / "Containerfile").write_text(f'FROM {BASE_IMAGE}\nENTRYPOINT ["/opt/no-such-program"]\n')
    names["noentry"] = "localhost/unmask-test-noentry:latest"
    _podman("build", "-q", "-t", names["noentry"], str(ctx))
    yield names


def make_items(n: int = 3, seconds: float = 1.0) -> list[AnonymizationItem]:
    t = np.arange(int(seconds * SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ
    return [
        AnonymizationItem(
            utt_id=f"utt-{i}",
            waveform=(0.3 * np.sin(2 * np.pi * (120 + 10 * i) * t)).astype(np.float32),
            sample_rate=SAMPLE_RATE_HZ,
            source_speaker_id="spk1",
            source_gender="m",
            target=TargetVoice(target_id=f"tgt{i % 2}", gender="f"),
        )
        for i in range(n)
    ]


def runner(image: str, **kw: object) -> ContainerAnonymizer:
    opts: dict[str, object] = {"engine_url": ENGINE_URL, "limits": LIMITS, **kw}
    return ContainerAnonymizer(image, **opts)  # type: ignore[arg-type]


def peak_hz(x: np.ndarray) -> float:
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.argmax(spec) * SAMPLE_RATE_HZ / len(x))


# -- the example image, end to end ---------------------------------------------------------------


def test_example_image_anonymizes_a_tiny_protocol_end_to_end(
    images: dict[str, str], tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    rows = []
    t = np.arange(int(1.5 * SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ
    for i in range(5):
        path = corpus / f"u{i}.wav"
        write_audio(path, 0.3 * np.sin(2 * np.pi * (110 + 15 * i) * t))
        rows.append(
            Utterance(
                utt_id=f"u{i}", speaker_id=f"s{i % 2}", gender="m", path=path.name,
                duration_s=1.5,
            )
        )  # fmt: skip
    manifest = Manifest(utterances=tuple(rows), root=str(corpus))
    targets = {f"u{i}": TargetVoice(target_id=f"t{i % 3}", gender="f") for i in range(5)}
    progress: list[tuple[int, int]] = []
    anon = ContainerAnonymizer(
        images["example"],
        engine_url=ENGINE_URL,
        limits=SandboxLimits(memory_mb=512, cpus=1.0, time_limit_s=120, shard_size=3),
        on_shard=lambda done, total, run: progress.append((done, total)),
    )
    assert isinstance(anon, ContainerAnonymizer)
    assert "@sha256:" in anon.image and anon.config()["image"] == anon.image

    out = anonymize_manifest(manifest, anon, targets, tmp_path / "anon", seed=7, batch_size=5)
    assert [r.exit_code for r in anon.runs] == [0, 0]  # 5 utterances, shards of 3: two runs
    assert progress == [(3, 5), (5, 5)]
    assert "example-pitch: done" in anon.runs[0].log_tail
    meta = anon.metadata()
    assert set(meta) == {f"u{i}" for i in range(5)}
    for u_in, u_out in zip(manifest.utterances, out.utterances, strict=True):
        assert u_out.utt_id == u_in.utt_id and u_out.target_id == targets[u_in.utt_id].target_id
        y, sr = read_audio(out.resolve(u_out))
        x, _ = read_audio(manifest.resolve(u_in))
        assert sr == SAMPLE_RATE_HZ and len(y) == len(x)
        # Male source, female target: shifted up by the recorded number of semitones.
        semitones = meta[u_in.utt_id]["semitones"]
        assert 2.75 <= semitones <= 11
        expected = peak_hz(x) * 2 ** (semitones / 12)
        assert abs(peak_hz(y) - expected) < 0.03 * expected
    # Same target -> same shift (one voice per target).
    assert meta["u0"]["semitones"] == meta["u3"]["semitones"]
    assert (tmp_path / "anon" / SIDECAR_NAME).is_file()
    # Re-running is a no-op: up-to-date outputs are reused, no container runs.
    again = anonymize_manifest(manifest, anon, targets, tmp_path / "anon", seed=7, batch_size=5)
    assert again.utterances == out.utterances and len(anon.runs) == 2


def test_sandbox_properties_seen_from_inside(images: dict[str, str]) -> None:
    anon = runner(images["probe"])
    items = make_items(2)
    out = anon.anonymize(items, seed=0)
    assert all(len(y) == len(i.waveform) for y, i in zip(out, items, strict=True))
    meta = anon.runs[0].metadata
    assert meta is not None
    assert (meta["uid"], meta["gid"]) == (65534, 65534)
    assert int(meta["cap_eff"], 16) == 0  # every capability dropped
    assert meta["no_new_privs"] == "1"
    assert meta["interfaces"] == ["lo"]  # network_mode none
    assert meta["sockets"] == []  # no engine socket inside
    assert not [k for k in meta["env"] if "DOCKER" in k or "AWS" in k or "SECRET" in k]
    assert {"UNMASK_JOB_FILE", "UNMASK_DEVICE", "UNMASK_OUTPUT_DIR"} <= set(meta["env"])
    assert "errno 30" in meta["write_root"]  # read-only root file system (EROFS)
    assert "errno 30" in meta["write_input"]  # read-only input
    assert meta["write_tmp"] == "ok"  # tmpfs /tmp
    assert meta["memory_max"] == str(LIMITS.memory_mb * 1024 * 1024)
    assert meta["seccomp"] == "2"  # a seccomp filter is active (the engine's default profile)
    assert meta["pids_max"] == str(LIMITS.pids_limit)
    quota, period = meta["cpu_max"].split()
    assert int(quota) / int(period) == pytest.approx(LIMITS.cpus)
    tmp, shm = set(meta["tmp_mount"]), set(meta["shm_mount"])
    assert {"noexec", "nosuid", "nodev", f"size={LIMITS.tmpfs_mb * 1024}k"} <= tmp
    assert {"noexec", "nosuid", "nodev", f"size={LIMITS.shm_mb * 1024}k"} <= shm
    assert meta["exec_tmp"] == "PermissionError: errno 13"  # /tmp is noexec


def test_network_is_unreachable(images: dict[str, str]) -> None:
    anon = runner(images["network"])
    anon.anonymize(make_items(1), seed=0)
    results = anon.runs[0].metadata["network"]  # type: ignore[index]
    assert "connected" not in results.values() and results["dns"].startswith("failed")


# -- each failure mode ---------------------------------------------------------------------------


def test_memory_limit_kills_and_reports(images: dict[str, str]) -> None:
    anon = runner(images["memory"])
    with pytest.raises(ContainerMemoryError, match="memory limit of 256 MiB") as err:
        anon.anonymize(make_items(1), seed=0)
    assert err.value.exit_code == 137
    assert "allocated 64 MiB" in err.value.log_tail
    assert anon.runs[0].error is not None


def test_time_limit_kills_and_reports(images: dict[str, str]) -> None:
    limits = SandboxLimits(memory_mb=256, cpus=1.0, time_limit_s=3, shard_size=8)
    anon = runner(images["sleep"], limits=limits)
    start = time.monotonic()
    with pytest.raises(ContainerTimeoutError, match="time limit of 3 s") as err:
        anon.anonymize(make_items(1), seed=0)
    assert time.monotonic() - start < 20
    assert "sleeping" in err.value.log_tail
    # The container is gone (killed and removed).
    client = engine_client(ENGINE_URL)
    assert not client.containers.list(all=True, filters={"ancestor": images["sleep"]})


def test_writing_outside_the_output_folder_is_rejected(images: dict[str, str]) -> None:
    anon = runner(images["escape"])
    with pytest.raises(ExtraOutputError, match="symlink") as err:
        anon.anonymize(make_items(2), seed=0)
    log = err.value.log_tail
    # The root file system (/, /unmask) and the input folder are read-only (EROFS).
    for path in ("/evil", "/unmask/input/evil", "/unmask/evil"):
        assert f"{path} OSError: errno 30" in log


def test_a_fast_writer_is_stopped_by_the_kernel_at_the_output_budget(
    images: dict[str, str],
) -> None:
    """RLIMIT_FSIZE stops a single file at the shard's output budget; polling alone (every
    0.2 s) let a fast writer put far more on the worker's disk before the kill."""
    anon = runner(images["flood"])
    items = make_items(2)
    budget = sum(anon.output_limits.max_audio_bytes(1.0) for _ in items)
    budget += anon.output_limits.max_metadata_bytes
    with pytest.raises(ExtraOutputError) as err:
        anon.anonymize(items, seed=0)
    assert f"flood stopped at {budget} bytes: errno 27" in err.value.log_tail  # EFBIG


def test_missing_output_is_rejected(images: dict[str, str]) -> None:
    with pytest.raises(MissingOutputError, match=r"1 of 3 utterance\(s\).*utt-2\.wav"):
        runner(images["omit"]).anonymize(make_items(3), seed=0)


def test_non_zero_exit_reports_the_log_tail(images: dict[str, str]) -> None:
    with pytest.raises(ContainerExitError, match="exited with code 3") as err:
        runner(images["exit"]).anonymize(make_items(1), seed=0)
    assert "model weights not found" in str(err.value)


def test_wrong_output_format_is_rejected(images: dict[str, str]) -> None:
    with pytest.raises(OutputFormatError, match="sample rate 8000 Hz"):
        runner(images["wrongrate"]).anonymize(make_items(1), seed=0)


def test_missing_image(images: dict[str, str]) -> None:
    client = engine_client(ENGINE_URL)
    with pytest.raises(ImageNotFoundError, match="not found"):
        resolve_image_digest("localhost/unmask-no-such-image:1", client=client, pull=False)
    with pytest.raises(ImageNotFoundError, match="not pullable"):
        resolve_image_digest("localhost/unmask-no-such-image:1", client=client, pull=True)


def test_an_image_that_cannot_start_is_the_makers_fault_not_the_engines(
    images: dict[str, str],
) -> None:
    with pytest.raises(ContainerStartError, match="could not be started"):
        runner(images["noentry"]).anonymize(make_items(1), seed=0)


def test_engine_faults_and_registries(images: dict[str, str], tmp_path: Path) -> None:
    """A dead engine is ContainerEngineError (the job runner retries it); a pull from a registry
    outside the allowlist is refused before the engine is asked."""
    client = engine_client(ENGINE_URL)
    pinned = resolve_image_digest(images["probe"], client=client, pull=False)
    anon = runner(pinned)
    anon._client = None
    anon._engine_url = f"unix://{tmp_path / 'gone.sock'}"
    with pytest.raises(ContainerEngineError):
        anon.anonymize(make_items(1), seed=0)
    with pytest.raises(ImageRegistryError, match="not allowed"):
        resolve_image_digest(
            "10.0.0.5:5000/x@sha256:" + "a" * 64, client=client, pull=True, registries=["ghcr.io"]
        )


def test_pinned_digest_survives_a_moving_tag(images: dict[str, str]) -> None:
    moving = "localhost/unmask-test-moving:latest"
    _podman("tag", images["probe"], moving)
    client = engine_client(ENGINE_URL)
    pinned = resolve_image_digest(moving, client=client, pull=False)
    assert pinned.startswith("localhost/unmask-test-moving@sha256:")
    _podman("tag", images["omit"], moving)  # the tag now names an image that omits outputs
    assert resolve_image_digest(moving, client=client, pull=False) != pinned
    anon = runner(pinned)
    assert anon.image == pinned
    anon.anonymize(make_items(2), seed=0)  # still the probe image: every output present
    assert anon.runs[0].metadata is not None and anon.runs[0].metadata["uid"] == 65534


def test_cli_container_check(images: dict[str, str]) -> None:
    from cli.main import main

    env_backup = os.environ.get("UNMASK_CONTAINER_ENGINE_URL")
    os.environ["UNMASK_CONTAINER_ENGINE_URL"] = ENGINE_URL
    try:
        from services.settings import get_settings

        get_settings.cache_clear()
        assert main(["container", "check", images["example"]]) == 0
        assert main(["container", "check", images["omit"]]) == 1
    finally:
        if env_backup is None:
            os.environ.pop("UNMASK_CONTAINER_ENGINE_URL", None)
        else:
            os.environ["UNMASK_CONTAINER_ENGINE_URL"] = env_backup
        get_settings.cache_clear()
