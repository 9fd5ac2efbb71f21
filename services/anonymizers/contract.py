"""The anonymizer contract, version 1 (docs/container-contract.md), defined once.

What an anonymizer gets and must give back, shared by the container runner
(``services.anonymizers.container``) and the archive validator (``services.anonymizers.archive``):

* names and versions: `CONTRACT_NAME`, `CONTRACT_VERSION`;
* file layout: the set folders of an archive (`SET_NAMES`), the audio extensions, the optional
  ``metadata.json``, the file name stem of an utterance (`output_stem`);
* the container's side: its folders, the job file (`JOB_FILE_NAME`, `build_job`), its environment
  (`container_environment`) and exit codes;
* the rules on what comes back: 16 kHz mono decodable audio with the duration kept
  (`check_audio_file`, `ArchiveLimits.tolerance_s`), the metadata object (`parse_metadata`), the
  bytes an output may take (`ArchiveLimits.max_audio_bytes`), and `fit_length`.

Neither module reads settings: the limits come in as `ArchiveLimits` (see its ``from_settings``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from services.anonymizers.base import AnonymizationItem, TargetVoice
from services.audio import SAMPLE_RATE_HZ
from services.corpus.manifest import Gender
from services.settings import Settings

CONTRACT_NAME = "unmask-anonymizer"
CONTRACT_VERSION = 1
"""Version of docs/container-contract.md that this module implements."""

# -- file layout --------------------------------------------------------------------------------

SET_NAMES: tuple[str, ...] = ("train", "validation", "enrollment", "trial")
"""The protocol's sets, in the order the pipeline anonymizes them (also the archive folders)."""

AUDIO_EXTENSIONS: tuple[str, ...] = (".wav", ".flac")
"""Audio files an archive may hold (a container writes ``.wav``)."""
METADATA_NAME = "metadata.json"
"""The optional metadata object, at the top of an archive or of a container's output folder."""

_SAFE_STEM = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")


def output_stem(utt_id: str) -> str:
    """File name stem (no extension) an anonymizer writes for ``utt_id``.

    The utt id itself when it is a safe file name (letters, digits, ``._-``, at most 200
    characters, not starting with a dot), else ``u-`` + the first 16 hex digits of its SHA-256.
    """
    if _SAFE_STEM.match(utt_id) and utt_id not in (".", ".."):
        return utt_id
    return "u-" + hashlib.sha256(utt_id.encode("utf-8")).hexdigest()[:16]


# -- the container's side ------------------------------------------------------------------------

JOB_FILE_NAME = "job.json"
CONTAINER_INPUT_DIR = "/unmask/input"
CONTAINER_OUTPUT_DIR = "/unmask/output"
CONTAINER_TARGETS_DIR = "/unmask/targets"
EXIT_OK = 0
EXIT_BAD_JOB = 2
"""Exit code a container uses to say the job file is not one it understands (contract)."""
EXIT_KILLED = 137
"""128 + SIGKILL: the kernel's OOM killer (memory limit) or the runner's time limit."""
MAX_BATCH_SIZE_HINT = 16
"""Upper bound of ``UNMASK_BATCH_SIZE`` (utterances to process at once)."""


def target_description(
    target_id: str, gender: Gender, voice: TargetVoice | None = None
) -> dict[str, Any]:
    """The JSON description of one target voice (job file and protocol request)."""
    out: dict[str, Any] = {"speaker_id": target_id, "gender": gender}
    if voice is not None and voice.profile is not None:
        out["median_f0_hz"] = round(float(voice.profile.median_f0_hz), 3)
        out["formant_scale"] = round(float(voice.profile.formant_scale), 6)
    return out


def build_job(
    items: Sequence[AnonymizationItem],
    seed: int,
    *,
    device: str = "cpu",
    target_dirs: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The job file of contract v1 for ``items`` (file names relative to the input folder).

    ``target_dirs``: target id -> its reference audio folder under the targets folder.
    """
    targets: dict[str, dict[str, Any]] = {}
    utterances = []
    for item in items:
        stem = output_stem(item.utt_id)
        entry: dict[str, Any] = {
            "utt_id": item.utt_id,
            "file": f"{stem}.wav",
            "output": f"{stem}.wav",
            "duration_s": len(item.waveform) / SAMPLE_RATE_HZ,
            "num_samples": len(item.waveform),
            "source_gender": item.source_gender,
            "target": None,
        }
        if item.target is not None:
            t = item.target
            desc = target_description(t.target_id, t.gender, t)
            ref_dir = (target_dirs or {}).get(t.target_id)
            desc["reference_dir"] = ref_dir
            targets.setdefault(t.target_id, desc)
            entry["target"] = {"speaker_id": t.target_id, "gender": t.gender}
        utterances.append(entry)
    return {
        "contract": CONTRACT_NAME,
        "contract_version": CONTRACT_VERSION,
        "kind": "container-job",
        "seed": int(seed),
        "sample_rate_hz": SAMPLE_RATE_HZ,
        "device": device,
        "input_dir": CONTAINER_INPUT_DIR,
        "output_dir": CONTAINER_OUTPUT_DIR,
        "targets_dir": CONTAINER_TARGETS_DIR if target_dirs else None,
        "targets": dict(sorted(targets.items())),
        "utterances": utterances,
    }


def container_environment(
    *, device: str, seed: int, batch_size: int, threads: int, with_targets: bool
) -> dict[str, str]:
    """The environment variables a container run gets (the contract's table).

    ``batch_size``: utterances per run (the hint is at most `MAX_BATCH_SIZE_HINT`); ``threads``:
    CPU cores granted; ``with_targets``: target reference audio is mounted.
    """
    env = {
        "UNMASK_CONTRACT_VERSION": str(CONTRACT_VERSION),
        "UNMASK_JOB_FILE": f"{CONTAINER_INPUT_DIR}/{JOB_FILE_NAME}",
        "UNMASK_INPUT_DIR": CONTAINER_INPUT_DIR,
        "UNMASK_OUTPUT_DIR": CONTAINER_OUTPUT_DIR,
        "UNMASK_DEVICE": device,
        "UNMASK_SEED": str(int(seed)),
        "UNMASK_BATCH_SIZE": str(min(MAX_BATCH_SIZE_HINT, batch_size)),
        "UNMASK_NUM_THREADS": str(threads),
        "OMP_NUM_THREADS": str(threads),
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
    }
    if with_targets:
        env["UNMASK_TARGETS_DIR"] = CONTAINER_TARGETS_DIR
    return env


# -- what comes back: limits and checks ------------------------------------------------------


@dataclass(frozen=True)
class ArchiveLimits:
    """Bounds that keep an untrusted archive (or container output) from exhausting the host.

    ``max_unpacked_bytes``: total extracted bytes; with known original durations the bound is
    also at most what their audio can need (8 bytes per sample plus 64 KiB per file).
    ``max_member_bytes``: one file. ``max_members``: entries of the archive, folders included.
    ``max_compression_ratio``: declared / compressed size, per zip member of at least
    ``ratio_min_bytes`` and for the whole archive (speech compresses about 1.1-3x; a zip bomb
    1000x). ``duration_tolerance_s`` and ``duration_tolerance_fraction``: an output may differ
    from its original's duration by the larger of the two (seconds; fraction of the original).
    """

    max_unpacked_bytes: int = 20 * 1024**3
    max_member_bytes: int = 512 * 1024**2
    max_members: int = 500_000
    max_compression_ratio: float = 100.0
    ratio_min_bytes: int = 1024**2
    max_metadata_bytes: int = 16 * 1024**2
    duration_tolerance_s: float = 0.1
    duration_tolerance_fraction: float = 0.01

    def tolerance_s(self, original_s: float) -> float:
        """Largest allowed |output - original| duration for an original of ``original_s`` s."""
        return max(self.duration_tolerance_s, self.duration_tolerance_fraction * original_s)

    def max_audio_bytes(self, original_s: float) -> int:
        """Most bytes one output of an original of ``original_s`` seconds may take: 8 bytes
        per sample of the longest allowed duration, plus 64 KiB of headers."""
        return int((original_s + self.tolerance_s(original_s)) * SAMPLE_RATE_HZ * 8) + 65536

    @classmethod
    def from_settings(cls, settings: Settings) -> ArchiveLimits:
        """The limits configured in ``settings`` (``UNMASK_ARCHIVE_*``)."""
        return cls(
            max_unpacked_bytes=int(settings.archive_max_unpacked_mb) * 1024**2,
            max_member_bytes=int(settings.archive_max_member_mb) * 1024**2,
            max_members=int(settings.archive_max_members),
            max_compression_ratio=float(settings.archive_max_compression_ratio),
        )


MAX_ABS_SAMPLE = 2.0
"""Largest |sample| accepted (full scale = 1.0): integer PCM never exceeds 1.0; a float file may
overshoot a little (6 dB), not carry values such as 1e30 that swamp every feature downstream."""


def exception_line(exc: BaseException) -> str:
    """An exception's message on one line (its type name when it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def check_audio_file(
    path: Path, label: str, original_s: float | None, limits: ArchiveLimits
) -> tuple[np.ndarray | None, str | None]:
    """Decode ``path`` and check the contract: 16 kHz, mono, finite, duration near the original.

    Returns ``(waveform float32, None)`` or ``(None, problem naming label)``. ``original_s``:
    the original's duration in seconds (None = unknown, only a sanity bound applies).
    """
    try:
        info = sf.info(str(path))
    except Exception as exc:  # soundfile raises several types for corrupt data
        why = exception_line(exc).replace(str(path), path.name)
        return None, f"{label}: not decodable audio ({why})"
    if info.format not in ("WAV", "WAVEX", "FLAC"):
        return None, f"{label}: {info.format} audio; WAV or FLAC is required"
    if info.samplerate != SAMPLE_RATE_HZ:
        return None, f"{label}: sample rate {info.samplerate} Hz, {SAMPLE_RATE_HZ} Hz is required"
    if info.channels != 1:
        return None, f"{label}: {info.channels} channels, mono is required"
    if info.frames <= 0:
        return None, f"{label}: empty audio"
    try:
        wav, _ = sf.read(str(path), dtype="float32", always_2d=False)
    except Exception as exc:
        why = exception_line(exc).replace(str(path), path.name)
        return None, f"{label}: not decodable audio ({why})"
    if wav.ndim != 1 or wav.size == 0:
        return None, f"{label}: no mono samples decoded"
    if not np.isfinite(wav).all():
        return None, f"{label}: non-finite samples (NaN or infinity)"
    peak = float(np.max(np.abs(wav)))
    if peak > MAX_ABS_SAMPLE:
        return None, (
            f"{label}: peak amplitude {peak:.3g} is above the limit of {MAX_ABS_SAMPLE:g} "
            "(full scale is 1.0; float samples must lie within "
            f"[-{MAX_ABS_SAMPLE:g}, {MAX_ABS_SAMPLE:g}])"
        )
    duration = wav.size / SAMPLE_RATE_HZ
    if original_s is not None:
        tol = limits.tolerance_s(original_s)
        if abs(duration - original_s) > tol:
            return None, (
                f"{label}: duration {duration:.3f} s differs from the original's "
                f"{original_s:.3f} s by more than {tol:.3f} s"
            )
    return wav, None


def parse_metadata(blob: bytes, limits: ArchiveLimits) -> tuple[dict[str, Any] | None, str | None]:
    """The optional per-utterance metadata JSON: (object, None) or (None, problem)."""
    if len(blob) > limits.max_metadata_bytes:
        return None, f"larger than {limits.max_metadata_bytes} bytes"
    try:
        data = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"not valid UTF-8 JSON ({exception_line(exc)})"
    if not isinstance(data, dict):
        return None, "must be a JSON object"
    return data, None


def fit_length(wav: np.ndarray, n: int) -> np.ndarray:
    """Crop or zero-pad ``wav`` to ``n`` samples (float32); used within the duration tolerance."""
    wav = np.asarray(wav, dtype=np.float32)
    if wav.size >= n:
        return wav[:n]
    return np.concatenate([wav, np.zeros(n - wav.size, dtype=np.float32)])
