"""Conformance checks of an anonymizer image against docs/container-contract.md (contract v1).

`check_image` pins the image, runs a tiny job (three utterances of 1-2 s, male and female
sources, targets of both genders) in the sandbox with the configured limits, and reports each
check; `unmask container check IMAGE` prints them. A second run with the same seed checks that
outputs are deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from services.anonymizers.base import AnonymizationItem, TargetVoice
from services.anonymizers.container import ContainerAnonymizer
from services.anonymizers.container_sandbox import (
    ContainerError,
    ContainerExitError,
    ContainerMemoryError,
    ContainerSandbox,
    ContainerTimeoutError,
    ExtraOutputError,
    ImageNotFoundError,
    MissingOutputError,
    OutputFormatError,
    engine_client,
    resolve_image_digest,
)
from services.audio import SAMPLE_RATE_HZ


@dataclass(frozen=True)
class CheckResult:
    """One conformance check: ``status`` is ``pass``, ``fail`` or ``warn``; ``detail`` says why."""

    name: str
    status: str
    detail: str = ""


def sample_items(seed: int = 0) -> list[AnonymizationItem]:
    """Three synthetic voiced utterances (1.0, 1.5, 2.0 s; harmonics of 120/210/140 Hz)."""
    rng = np.random.default_rng(seed)
    specs = [("check-0", 1.0, 120.0, "m", "f"), ("check-1", 1.5, 210.0, "f", "m"),
             ("check-2", 2.0, 140.0, "m", "m")]  # fmt: skip
    items = []
    for utt_id, seconds, f0, source, target in specs:
        t = np.arange(int(seconds * SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ
        harmonics = np.arange(1, 16)[:, None]
        x = (np.sin(2 * np.pi * f0 * harmonics * t) / harmonics).sum(axis=0)
        x = 0.1 * x + 0.003 * rng.standard_normal(t.size)
        items.append(
            AnonymizationItem(
                utt_id=utt_id,
                waveform=x.astype(np.float32),
                sample_rate=SAMPLE_RATE_HZ,
                source_speaker_id=f"spk-{utt_id}",
                source_gender=source,  # type: ignore[arg-type]
                target=TargetVoice(target_id=f"target-{target}", gender=target),  # type: ignore[arg-type]
            )
        )
    return items


def check_image(
    image: str,
    *,
    sandbox: ContainerSandbox,
    gpu: bool = False,
) -> list[CheckResult]:
    """Run the contract's checks on ``image`` in ``sandbox`` (engine, pulling, limits).

    Every check is reported, failures included.
    """
    results: list[CheckResult] = []
    limits = sandbox.limits
    client = engine_client(sandbox.engine_url)
    try:
        pinned = resolve_image_digest(image, client=client, pull=sandbox.pull)
    except ContainerError as exc:
        return [CheckResult("image found and pinned by digest", "fail", exc.summary)]
    results.append(CheckResult("image found and pinned by digest", "pass", pinned))
    attrs: dict[str, Any] = client.images.get(pinned).attrs
    config = attrs.get("Config") or {}
    user = str(config.get("User") or "")
    results.append(
        CheckResult(
            "image declares a non-root USER",
            "pass" if user not in ("", "0", "root", "0:0") else "warn",
            f"USER {user or '(none)'}; Unmask runs it as {limits.user} anyway",
        )
    )
    items = sample_items()
    anon = ContainerAnonymizer(pinned, client=client, limits=limits, gpu=gpu)
    try:
        first = anon.run_shard(items, seed=1)
    except ContainerError as exc:
        results.append(CheckResult(_failed_check(exc), "fail", exc.summary))
        if exc.log_tail.strip():
            results.append(CheckResult("container log (tail)", "warn", exc.log_tail[-1500:]))
        return results
    run = anon.runs[-1]
    results.append(
        CheckResult(
            "runs in the sandbox and exits 0",
            "pass",
            f"{run.wall_s:.1f} s, no network, read-only root, user {anon.limits.user}",
        )
    )
    results.append(CheckResult("one output per utterance, nothing else", "pass"))
    results.append(CheckResult("outputs are 16 kHz mono, decodable, duration kept", "pass"))
    results.append(
        CheckResult(
            "metadata.json (optional) is a valid JSON object",
            "pass" if run.metadata is not None else "warn",
            "present" if run.metadata is not None else "absent (optional)",
        )
    )
    changed = [
        float(
            np.sqrt(np.mean((y - it.waveform) ** 2)) / max(np.sqrt(np.mean(it.waveform**2)), 1e-9)
        )
        for y, it in zip(first, items, strict=True)
    ]
    results.append(
        CheckResult(
            "outputs differ from the inputs",
            "pass" if min(changed) > 0.05 else "warn",
            "relative RMS difference " + ", ".join(f"{c:.2f}" for c in changed),
        )
    )
    try:
        second = anon.run_shard(items, seed=1)
    except ContainerError as exc:
        results.append(CheckResult("deterministic for a seed (second run)", "fail", exc.summary))
        return results
    same = all(np.allclose(a, b, atol=1e-4) for a, b in zip(first, second, strict=True))
    results.append(
        CheckResult(
            "deterministic for a seed (second run)",
            "pass" if same else "warn",
            "identical outputs" if same else "outputs differ between two runs with the same seed",
        )
    )
    return results


def _failed_check(exc: ContainerError) -> str:
    names: list[tuple[type[ContainerError], str]] = [
        (ContainerTimeoutError, "finishes within the time limit"),
        (ContainerMemoryError, "stays within the memory limit"),
        (ContainerExitError, "runs in the sandbox and exits 0"),
        (MissingOutputError, "one output per utterance, nothing else"),
        (ExtraOutputError, "one output per utterance, nothing else"),
        (OutputFormatError, "outputs are 16 kHz mono, decodable, duration kept"),
        (ImageNotFoundError, "image found and pinned by digest"),
    ]
    for kind, name in names:
        if isinstance(exc, kind):
            return name
    return "runs in the sandbox"
