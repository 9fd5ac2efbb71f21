"""Run an untrusted anonymizer image in a sandbox (docs/container-contract.md, contract v1).

`ContainerAnonymizer` is an `Anonymizer`: each call splits its items into shards and runs the
image once per shard through the Docker Engine API (the ``docker`` SDK; Docker and
``podman system service`` both serve it). Every run: no network, a non-root user, a read-only root
file system with a size-limited tmpfs ``/tmp``, all capabilities dropped, ``no-new-privileges``,
memory / CPU / pids limits, a wall-clock limit, the input folder mounted read-only and only the
output folder writable; no engine socket, credentials or host environment inside; a GPU only when
asked for. The output folder is then validated like a pre-anonymized archive (every utterance
exactly once, decodable 16 kHz mono, duration within tolerance, no other entry of any kind).

Images are pinned by digest (`resolve_image_digest`) so a tag that moves later does not change
what is evaluated. Each failure has its own `ContainerError` subclass carrying the log tail.

The contract itself (folders, job file, environment, exit codes, output rules) is
`services.anonymizers.contract`; the errors, the sandbox's limits and engine and the image rules
are `services.anonymizers.container_sandbox`. Nothing here reads settings: the engine, pulling and
the limits come in as arguments (`ContainerSandbox.from_settings` builds them from `Settings`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from services.anonymizers.base import AnonymizationItem, Anonymizer
from services.anonymizers.container_sandbox import (
    ContainerEngineError,
    ContainerError,
    ContainerExitError,
    ContainerMemoryError,
    ContainerOutputError,
    ContainerStartError,
    ContainerTimeoutError,
    ExtraOutputError,
    MissingOutputError,
    OutputFormatError,
    SandboxLimits,
    _get_or_pull,
    engine_client,
    is_pinned,
    resolve_image_digest,
)
from services.anonymizers.contract import (
    CONTAINER_INPUT_DIR,
    CONTAINER_OUTPUT_DIR,
    CONTAINER_TARGETS_DIR,
    CONTRACT_VERSION,
    EXIT_KILLED,
    EXIT_OK,
    JOB_FILE_NAME,
    METADATA_NAME,
    ArchiveLimits,
    build_job,
    check_audio_file,
    container_environment,
    fit_length,
    output_stem,
    parse_metadata,
)
from services.audio import SAMPLE_RATE_HZ, read_audio, write_audio
from services.errors import InvalidInputError

_POLL_S = 0.2


# --------------------------------------------------------------------------------------------
# One run
# --------------------------------------------------------------------------------------------


@dataclass
class ShardRun:
    """What one container run did: utterances, exit code, wall time (s), log tail, metadata."""

    index: int
    utt_ids: list[str]
    exit_code: int | None = None
    wall_s: float = 0.0
    log_tail: str = ""
    log_bytes_total: int = 0
    metadata: dict[str, Any] | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "n_utterances": len(self.utt_ids),
            "exit_code": self.exit_code,
            "wall_s": round(self.wall_s, 3),
            "log_tail": self.log_tail,
            "log_bytes_total": self.log_bytes_total,
            "metadata": self.metadata,
            "error": self.error,
        }


ShardCallback = Callable[[int, int, ShardRun], None]
"""Called as ``on_shard(utterances_done, utterances_total, run)`` after each shard."""


def validate_output_folder(
    folder: Path,
    expected_s: Mapping[str, float],
    limits: ArchiveLimits,
) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:
    """Check a container's output folder; returns (utt id -> waveform, metadata or None).

    ``expected_s``: utt id -> original duration (seconds). Allowed entries: ``<stem>.wav`` per
    utterance and an optional ``metadata.json``, regular files only (symlinks, folders, fifos,
    anything else is rejected without being followed). Raises `ExtraOutputError`,
    `MissingOutputError` or `OutputFormatError` naming the files.
    """
    by_name = {f"{output_stem(u)}.wav": u for u in expected_s}
    extra: list[str] = []
    found: dict[str, Path] = {}
    metadata_path: Path | None = None
    with os.scandir(folder) as it:
        for entry in it:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                kind = (
                    "symlink"
                    if stat.S_ISLNK(st.st_mode)
                    else "folder"
                    if stat.S_ISDIR(st.st_mode)
                    else "special file"
                )
                extra.append(f"{entry.name!r} ({kind})")
            elif entry.name == METADATA_NAME:
                metadata_path = Path(entry.path)
            elif entry.name in by_name:
                if st.st_size > limits.max_member_bytes:
                    extra.append(f"{entry.name!r} ({st.st_size} bytes, over the size limit)")
                found[by_name[entry.name]] = Path(entry.path)
            else:
                extra.append(repr(entry.name))
    if extra:
        raise ExtraOutputError(
            f"output folder holds {len(extra)} unexpected entr{'y' if len(extra) == 1 else 'ies'}"
            f" (only <utt>.wav and {METADATA_NAME} are allowed): {', '.join(sorted(extra)[:10])}"
        )
    missing = [u for u in expected_s if u not in found]
    if missing:
        raise MissingOutputError(
            f"{len(missing)} of {len(expected_s)} utterance(s) have no output file, e.g. "
            + ", ".join(f"{output_stem(u)}.wav" for u in missing[:10])
        )
    waves: dict[str, np.ndarray] = {}
    problems = []
    for utt, path in found.items():
        wav, problem = check_audio_file(path, f"output {path.name!r}", expected_s[utt], limits)
        if problem is not None or wav is None:
            problems.append(str(problem))
        else:
            waves[utt] = wav
    metadata = None
    if metadata_path is not None:
        size = metadata_path.stat().st_size
        if size > limits.max_metadata_bytes:
            problems.append(f"{METADATA_NAME}: larger than {limits.max_metadata_bytes} bytes")
        else:
            metadata, why = parse_metadata(metadata_path.read_bytes(), limits)
            if why:
                problems.append(f"{METADATA_NAME}: {why}")
            elif metadata is not None and "utterances" in metadata:
                per_utt = metadata["utterances"]
                if not isinstance(per_utt, dict):
                    problems.append(f"{METADATA_NAME}: 'utterances' must be an object")
                else:
                    unknown = sorted(set(per_utt) - set(expected_s))
                    if unknown:
                        problems.append(
                            f"{METADATA_NAME}: 'utterances' names utterance(s) not in the job: "
                            + ", ".join(map(repr, unknown[:5]))
                        )
    if problems:
        raise OutputFormatError("; ".join(problems[:10]))
    return waves, metadata


def _folder_bytes(folder: Path) -> int:
    total = 0
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                for e in it:
                    st = e.stat(follow_symlinks=False)
                    total += st.st_size
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(Path(e.path))
        except OSError:
            continue
    return total


def _is_image_fault(exc: Any) -> bool:
    """Whether an engine error starting a container is the image's fault (its entrypoint or
    working directory does not exist, ...): the runtime says so, the engine answers 500."""
    text = str(getattr(exc, "explanation", "") or exc).lower()
    return any(
        s in text for s in ("executable file", "no such file or directory", "permission denied")
    )


class _LogTail:
    """The last ``limit`` bytes of a stream, plus the total count."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: deque[bytes] = deque()
        self.size = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.parts.append(chunk)
        self.size += len(chunk)
        while self.size - len(self.parts[0]) >= self.limit:
            self.size -= len(self.parts.popleft())

    def text(self) -> str:
        blob = b"".join(self.parts)[-self.limit :]
        return blob.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------------------------
# The anonymizer
# --------------------------------------------------------------------------------------------


class ContainerAnonymizer(Anonymizer):
    """An OCI image that follows docs/container-contract.md, run in the sandbox per shard.

    ``image``: a reference; an unpinned one is pinned with `resolve_image_digest` right away.
    ``gpu``: request one GPU (the job's queue is ``gpu``) and set ``UNMASK_DEVICE=cuda``.
    ``target_audio``: target id -> reference audio files, copied (as 16 kHz WAV) into a read-only
    ``/unmask/targets/<target>/`` for the targets of each shard. ``on_shard`` reports progress.
    ``engine_url``, ``pull`` and ``limits``: see `ContainerSandbox` (the defaults are its own;
    the pipeline passes ``ContainerSandbox.from_settings(settings).anonymizer_options()``).
    ``pull``: pull the image when it is not present locally (pinning a tag, or a pinned image
    that has gone at run time); ``registries``: the only registries pulled from (None = any).
    ``runs`` keeps every `ShardRun` (exit code, wall time, bounded log tail, metadata).
    """

    name = "container"

    def __init__(
        self,
        image: str,
        *,
        engine_url: str | None = None,
        client: Any | None = None,
        limits: SandboxLimits | None = None,
        output_limits: ArchiveLimits | None = None,
        gpu: bool = False,
        target_audio: Mapping[str, Sequence[str | Path]] | None = None,
        on_shard: ShardCallback | None = None,
        work_dir: str | Path | None = None,
        pull: bool = True,
        registries: Sequence[str] | None = None,
    ) -> None:
        self._client = client
        self._engine_url = engine_url
        self.limits = limits or SandboxLimits()
        self.output_limits = output_limits or ArchiveLimits()
        self.gpu = gpu
        self.target_audio = {k: [Path(p) for p in v] for k, v in (target_audio or {}).items()}
        self.on_shard = on_shard
        self.work_dir = Path(work_dir) if work_dir is not None else None
        self.runs: list[ShardRun] = []
        self._registries = registries
        self.image = (
            image
            if is_pinned(image)
            else resolve_image_digest(image, client=self.client, pull=pull, registries=registries)
        )
        self._pull = pull

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = engine_client(self._engine_url)
        return self._client

    @property
    def shard_size(self) -> int:
        """Utterances per container run; pass it as `anonymize_manifest`'s ``batch_size``."""
        return max(1, self.limits.shard_size)

    def config(self) -> dict[str, object]:
        return {
            **super().config(),
            "image": self.image,
            "contract_version": CONTRACT_VERSION,
            "target_audio": sorted(self.target_audio),
        }

    def metadata(self) -> dict[str, Any]:
        """Per-utterance metadata from every run's ``metadata.json`` (``utterances`` objects)."""
        out: dict[str, Any] = {}
        for run in self.runs:
            if run.metadata and isinstance(run.metadata.get("utterances"), dict):
                out.update(run.metadata["utterances"])
        return out

    def anonymize(self, items: Sequence[AnonymizationItem], seed: int) -> list[np.ndarray]:
        outputs: list[np.ndarray] = []
        size = self.shard_size
        total = len(items)
        for start in range(0, total, size):
            shard = items[start : start + size]
            outputs.extend(self.run_shard(shard, seed))
            if self.on_shard is not None:
                self.on_shard(start + len(shard), total, self.runs[-1])
        return outputs

    # -- one container run ------------------------------------------------------------------
    def run_shard(self, items: Sequence[AnonymizationItem], seed: int) -> list[np.ndarray]:
        """Run the image once on ``items``; returns their waveforms (input lengths) in order."""
        ids = [it.utt_id for it in items]
        if len(set(ids)) != len(ids) or len({output_stem(u) for u in ids}) != len(ids):
            raise InvalidInputError("a shard has duplicate utterance ids or file names")
        run = ShardRun(index=len(self.runs), utt_ids=ids)
        self.runs.append(run)
        if self.work_dir is not None:
            self.work_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="unmask-shard-", dir=self.work_dir))
        try:
            waves = self._run_in(tmp, items, seed, run)
        except ContainerError as exc:
            run.error = exc.summary
            raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return [fit_length(waves[it.utt_id], len(it.waveform)) for it in items]

    def _prepare(
        self, tmp: Path, items: Sequence[AnonymizationItem], seed: int
    ) -> tuple[Path, Path, Path | None, str]:
        input_dir, output_dir = tmp / "input", tmp / "output"
        input_dir.mkdir()
        output_dir.mkdir()
        for item in items:
            write_audio(input_dir / f"{output_stem(item.utt_id)}.wav", item.waveform)
        targets_dir: Path | None = None
        target_dirs: dict[str, str] = {}
        used = sorted({it.target.target_id for it in items if it.target is not None})
        if any(t in self.target_audio for t in used):
            targets_dir = tmp / "targets"
            for t in used:
                files = self.target_audio.get(t)
                if not files:
                    continue
                sub = output_stem(t)
                for i, f in enumerate(files):
                    wav, _ = read_audio(f)
                    write_audio(targets_dir / sub / f"{i:04d}.wav", wav)
                target_dirs[t] = sub
        device = "cuda" if self.gpu else "cpu"
        job = build_job(items, seed, device=device, target_dirs=target_dirs or None)
        (input_dir / JOB_FILE_NAME).write_text(json.dumps(job, indent=1) + "\n", "utf-8")
        # World-readable input, output writable by the container's (unprivileged) user only.
        for p in [tmp, input_dir, *([targets_dir] if targets_dir else [])]:
            for root, _dirs, names in os.walk(p):
                os.chmod(root, 0o755)
                for name in names:
                    os.chmod(os.path.join(root, name), 0o644)
        uid, _, gid = self.limits.user.partition(":")
        try:
            os.chown(output_dir, int(uid), int(gid or uid))
            os.chmod(output_dir, 0o755)
        except (PermissionError, ValueError):
            os.chmod(output_dir, 0o777)  # not root: the container user cannot be given the dir
        return input_dir, output_dir, targets_dir, device

    def _create_kwargs(
        self,
        input_dir: Path,
        output_dir: Path,
        targets_dir: Path | None,
        device: str,
        seed: int,
        *,
        max_file_bytes: int,
    ) -> dict[str, Any]:
        """``docker create`` arguments of one run; ``max_file_bytes``: RLIMIT_FSIZE (bytes)."""
        from docker.types import DeviceRequest, LogConfig, Ulimit

        lim = self.limits
        env = container_environment(
            device=device,
            seed=seed,
            batch_size=self.shard_size,
            threads=max(1, int(lim.cpus)),
            with_targets=targets_dir is not None,
        )
        volumes = {
            str(input_dir): {"bind": CONTAINER_INPUT_DIR, "mode": "ro"},
            str(output_dir): {"bind": CONTAINER_OUTPUT_DIR, "mode": "rw"},
        }
        if targets_dir is not None:
            volumes[str(targets_dir)] = {"bind": CONTAINER_TARGETS_DIR, "mode": "ro"}
        kwargs: dict[str, Any] = {
            "environment": env,
            "volumes": volumes,
            "network_mode": "none",
            "user": lim.user,
            "read_only": True,
            # noexec: nothing written at run time is executed (the code is the image's).
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,noexec,size={lim.tmpfs_mb}m,mode=1777"},
            "shm_size": f"{lim.shm_mb}m",
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "mem_limit": f"{lim.memory_mb}m",
            "memswap_limit": f"{lim.memory_mb}m",  # the same value: no swap on top
            "nano_cpus": int(lim.cpus * 1e9),
            "pids_limit": lim.pids_limit,
            # This VM (and many hosts) cannot raise hard limits; passing --ulimit replaces the
            # engine defaults, so both are given.
            "ulimits": [
                Ulimit(name="nofile", soft=20000, hard=20000),
                Ulimit(name="nproc", soft=32768, hard=32768),
                # No file may grow past the shard's whole output budget: the kernel stops the
                # write (EFBIG), where polling the folder's size alone lets a fast writer
                # overshoot by whatever it writes in one poll interval.
                Ulimit(name="fsize", soft=max_file_bytes, hard=max_file_bytes),
            ],
            "working_dir": "/tmp",
            "labels": {"org.unmask.contract": str(CONTRACT_VERSION)},
            "log_config": LogConfig(
                type=self._log_driver(), config={"max-size": str(max(lim.log_bytes * 4, 1 << 20))}
            ),
            "detach": True,
        }
        if self.gpu:
            kwargs["device_requests"] = [DeviceRequest(count=1, capabilities=[["gpu"]])]
        return kwargs

    def _log_driver(self) -> str:
        try:
            components = self.client.version().get("Components") or []
        except Exception:
            components = []
        podman = any("podman" in str(c.get("Name", "")).lower() for c in components)
        return "k8s-file" if podman else "json-file"

    def _run_in(
        self, tmp: Path, items: Sequence[AnonymizationItem], seed: int, run: ShardRun
    ) -> dict[str, np.ndarray]:
        import docker
        import requests

        input_dir, output_dir, targets_dir, device = self._prepare(tmp, items, seed)
        expected_s = {it.utt_id: len(it.waveform) / SAMPLE_RATE_HZ for it in items}
        out_lim = self.output_limits
        output_budget = (
            sum(out_lim.max_audio_bytes(d) for d in expected_s.values())
            + out_lim.max_metadata_bytes
        )
        kwargs = self._create_kwargs(
            input_dir, output_dir, targets_dir, device, seed, max_file_bytes=output_budget
        )
        client = self.client
        # Lost connections (requests' errors are not OSError-based ConnectionErrors) and engine
        # failures are the engine's fault: ContainerEngineError, which the job runner retries.
        engine_faults = (docker.errors.APIError, requests.exceptions.RequestException)
        try:
            container = client.containers.create(self.image, **kwargs)
        except docker.errors.ImageNotFound:
            _get_or_pull(client, self.image, self._pull, self._registries)
            container = client.containers.create(self.image, **kwargs)
        except engine_faults as exc:
            raise ContainerEngineError(f"cannot create a container of {self.image}: {exc}") from exc
        logs = _LogTail(self.limits.log_bytes)
        reason: str | None = None
        started = time.monotonic()
        try:
            try:
                container.start()
            except docker.errors.APIError as exc:
                if (
                    exc.status_code is not None
                    and exc.status_code >= 500
                    and not _is_image_fault(exc)
                ):
                    raise
                raise ContainerStartError(
                    f"{self.image}: could not be started ({exc.explanation or exc})"
                ) from None
            deadline = started + self.limits.time_limit_s
            while True:
                container.reload()
                if container.status not in ("created", "running", "configured", "initialized"):
                    break
                if time.monotonic() > deadline:
                    reason = "time"
                    break
                if _folder_bytes(output_dir) > output_budget:
                    reason = "output"
                    break
                time.sleep(_POLL_S)
            if reason is not None:
                try:
                    container.kill()
                except docker.errors.APIError:
                    pass  # it exited between the check and the kill
            result = container.wait(timeout=60)
            run.wall_s = time.monotonic() - started
            exit_code = int(result.get("StatusCode", -1))
            run.exit_code = exit_code
            self._collect_logs(container, logs)
            run.log_tail, run.log_bytes_total = logs.text(), logs.total
            container.reload()
            oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
        except engine_faults as exc:
            raise ContainerEngineError(
                f"container engine failed running {self.image}: {exc}"
            ) from exc
        finally:
            try:
                container.remove(force=True)
            except Exception:
                pass  # already gone; nothing to clean
        tail = run.log_tail
        self._raise_for_failure(reason, exit_code, oom, tail, len(items), output_budget)
        try:
            waves, metadata = validate_output_folder(output_dir, expected_s, out_lim)
        except ContainerOutputError as exc:
            raise type(exc)(f"{self.image}: {exc.summary}", log_tail=tail, exit_code=0) from None
        run.metadata = metadata
        return waves

    def _raise_for_failure(
        self,
        reason: str | None,
        exit_code: int,
        oom: bool,
        tail: str,
        n_items: int,
        output_budget: int,
    ) -> None:
        """The error of a run that was killed (``reason``: ``time`` or ``output``), ran out of
        memory or exited non-zero; nothing for a clean exit."""
        lim = self.limits
        if reason == "time":
            raise ContainerTimeoutError(
                f"{self.image}: killed after its time limit of {lim.time_limit_s:g} s "
                f"({n_items} utterances in this shard)",
                log_tail=tail,
                exit_code=exit_code,
            )
        if reason == "output":
            raise ExtraOutputError(
                f"{self.image}: killed for writing more than {output_budget} bytes to its output "
                "folder",
                log_tail=tail,
                exit_code=exit_code,
            )
        if exit_code == EXIT_KILLED or oom:
            raise ContainerMemoryError(
                f"{self.image}: killed (exit code {exit_code}), most likely for exceeding its "
                f"memory limit of {lim.memory_mb} MiB",
                log_tail=tail,
                exit_code=exit_code,
            )
        if exit_code != EXIT_OK:
            raise ContainerExitError(
                f"{self.image}: exited with code {exit_code}", log_tail=tail, exit_code=exit_code
            )

    def _collect_logs(self, container: Any, logs: _LogTail) -> None:
        """Read the logs into ``logs`` (bounded), giving up after 10 s of a flood."""
        done = threading.Event()

        def read() -> None:
            try:
                for chunk in container.logs(stdout=True, stderr=True, stream=True, follow=False):
                    logs.add(chunk)
                    if done.is_set():
                        return
            except Exception:
                return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(10.0)
        done.set()

    def run_record(self) -> dict[str, Any]:
        """JSON of the runs so far (for the job record)."""
        return {"image": self.image, "runs": [r.to_json() for r in self.runs]}
