"""Anonymize a manifest's audio to a folder, resumably; estimate target voices.

Layout of ``out_dir``: ``wav/<source speaker>/<utt_id>.wav`` (16 kHz mono PCM16),
``manifest.jsonl`` (``speaker_id`` = source speaker, ``target_id`` = the target voice) and the
sidecar ``anonymization.json``: the anonymizer config, its hash, the seed, and per utterance the
target, the parameter used (built-ins), a hash of the source row and the output's size and SHA-256.
An utterance whose record matches (same config hash, seed, target and source row, file present
with the recorded size and SHA-256) is not recomputed, so re-running is a no-op and an interrupted
run resumes. A changed source *audio* file under an unchanged manifest row is not detected.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from services.anonymizers.base import AnonymizationItem, Anonymizer, TargetVoice
from services.anonymizers.builtin import BuiltinAnonymizer
from services.anonymizers.voice import estimate_voice_profile
from services.audio import SAMPLE_RATE_HZ, read_audio, write_audio
from services.corpus.loaders import read_manifest, write_manifest
from services.corpus.manifest import Manifest, Utterance
from services.errors import CorpusError

SIDECAR_NAME = "anonymization.json"
MANIFEST_NAME = "manifest.jsonl"
SIDECAR_VERSION = 1

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` (utterances) after each batch."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _safe_name(name: str) -> str:
    return _UNSAFE.sub("_", name) or "_"


def _canonical_hash(data: Any) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_sidecar(path: Path, config_hash: str, seed: int) -> dict[str, dict[str, Any]]:
    """Per-utterance records of an existing sidecar made with the same config and seed."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    if (
        not isinstance(data, dict)
        or data.get("version") != SIDECAR_VERSION
        or data.get("config_hash") != config_hash
        or data.get("seed") != seed
        or not isinstance(data.get("files"), dict)
    ):
        return {}
    return data["files"]


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _record_matches(record: dict[str, Any] | None, out_dir: Path, expected: dict[str, Any]) -> bool:
    if record is None or any(record.get(k) != v for k, v in expected.items()):
        return False
    path = out_dir / str(record.get("path", ""))
    if not path.is_file() or path.stat().st_size != record.get("size"):
        return False
    return _file_sha256(path) == record.get("sha256")


def anonymize_manifest(
    manifest: Manifest,
    anonymizer: Anonymizer,
    targets: Mapping[str, TargetVoice] | None,
    out_dir: str | Path,
    seed: int,
    progress: ProgressCallback | None = None,
    batch_size: int = 16,
) -> Manifest:
    """Anonymize every utterance of ``manifest`` into ``out_dir``; returns the new manifest.

    ``targets`` maps utt_id -> target voice (utterances without one are anonymized in the
    anonymizer's no-target mode). The returned manifest (also written as ``manifest.jsonl``) keeps
    utt ids, source ``speaker_id`` and gender, sets ``target_id`` and the new ``duration_s``
    (seconds), and has ``root = out_dir``. Up-to-date outputs are reused (module docstring).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    targets = targets or {}
    config = anonymizer.config()
    config_hash = _canonical_hash(config)
    sidecar_path = out / SIDECAR_NAME
    old = _read_sidecar(sidecar_path, config_hash, seed)
    records: dict[str, dict[str, Any]] = {}

    def expected_for(u: Utterance) -> dict[str, Any]:
        return _expected_record(u, targets.get(u.utt_id))

    todo: list[Utterance] = []
    for u in manifest.utterances:
        expected = expected_for(u)
        if _record_matches(old.get(u.utt_id), out, expected):
            records[u.utt_id] = old[u.utt_id]
        else:
            todo.append(u)

    def save_sidecar() -> None:
        _write_json_atomic(
            sidecar_path,
            {
                "version": SIDECAR_VERSION,
                "config": config,
                "config_hash": config_hash,
                "seed": seed,
                "files": dict(sorted(records.items())),
            },
        )

    total = len(manifest)
    done = total - len(todo)
    if progress is not None:
        progress(done, total)
    for start in range(0, len(todo), max(1, batch_size)):
        batch = todo[start : start + batch_size]
        written = _anonymize_batch(manifest, batch, anonymizer, targets, seed, out)
        for u, record in zip(batch, written, strict=True):
            records[u.utt_id] = {**expected_for(u), **record}
        save_sidecar()
        done += len(batch)
        if progress is not None:
            progress(done, total)
    if not todo and (not sidecar_path.is_file() or set(old) != set(records)):
        save_sidecar()
    return _write_anonymized_manifest(manifest, records, out, reused=not todo)


def _expected_record(u: Utterance, target: TargetVoice | None) -> dict[str, Any]:
    """What an up-to-date output of ``u`` records besides its file: its target and source row."""
    return {
        "target_id": target.target_id if target else None,
        "target_profile": (
            [target.profile.median_f0_hz, target.profile.formant_scale]
            if target is not None and target.profile is not None
            else None
        ),
        "source_row": _canonical_hash(u.model_dump(mode="json", exclude={"target_id"})),
    }


def _anonymize_batch(
    manifest: Manifest,
    batch: list[Utterance],
    anonymizer: Anonymizer,
    targets: Mapping[str, TargetVoice],
    seed: int,
    out: Path,
) -> list[dict[str, Any]]:
    """Anonymize ``batch`` into ``out/wav/<speaker>/<utt>.wav``; one file record per utterance
    (path, size in bytes, sha256, samples, and the built-in's drawn parameter)."""
    items = []
    for u in batch:
        wav, _ = read_audio(manifest.resolve(u))
        items.append(
            AnonymizationItem(
                utt_id=u.utt_id,
                waveform=wav,
                sample_rate=SAMPLE_RATE_HZ,
                source_speaker_id=u.speaker_id,
                source_gender=u.gender,
                target=targets.get(u.utt_id),
            )
        )
    parameters: list[float | None]
    if isinstance(anonymizer, BuiltinAnonymizer):
        outputs, values = anonymizer.anonymize_with_parameters(items, seed)
        parameters = list(values)
    else:
        outputs = anonymizer.anonymize(items, seed)
        parameters = [None] * len(items)
    if len(outputs) != len(items):
        raise RuntimeError(f"{anonymizer.name}: {len(outputs)} outputs for {len(items)} items")
    records = []
    for u, y, parameter in zip(batch, outputs, parameters, strict=True):
        rel = Path("wav") / _safe_name(u.speaker_id) / f"{_safe_name(u.utt_id)}.wav"
        write_audio(out / rel, y)
        record: dict[str, Any] = {
            "path": rel.as_posix(),
            "size": (out / rel).stat().st_size,
            "sha256": _file_sha256(out / rel),
            "n_samples": len(y),
        }
        if parameter is not None:
            record["parameter"] = float(parameter)
        records.append(record)
    return records


def _write_anonymized_manifest(
    manifest: Manifest, records: Mapping[str, Mapping[str, Any]], out: Path, *, reused: bool
) -> Manifest:
    """The anonymized manifest (paths, durations in s, targets from ``records``), written as
    ``manifest.jsonl`` unless ``reused`` and the file already holds the same rows."""
    rows = []
    for u in manifest.utterances:
        rec = records[u.utt_id]
        rows.append(
            u.model_copy(
                update={
                    "path": rec["path"],
                    "duration_s": rec["n_samples"] / SAMPLE_RATE_HZ,
                    "target_id": rec["target_id"],
                    "original_sample_rate": SAMPLE_RATE_HZ,
                }
            )
        )
    result = Manifest(utterances=tuple(rows), root=str(out.resolve()))
    manifest_path = out / MANIFEST_NAME
    if reused and manifest_path.is_file():
        try:
            existing = read_manifest(manifest_path, check_audio=False)
        except CorpusError:
            existing = None
        if existing is not None and existing.utterances == result.utterances:
            return result
    return write_manifest(result, manifest_path)


def build_target_voices(
    target_manifest: Manifest, utterances_per_target: int = 3
) -> dict[str, TargetVoice]:
    """Each target speaker's `TargetVoice` with a profile from its first utterances (by utt id).

    Reads ``utterances_per_target`` files per speaker; about 10 ms of CPU per second of audio.
    """
    voices: dict[str, TargetVoice] = {}
    genders = target_manifest.speaker_gender()
    for speaker, utts in target_manifest.by_speaker().items():
        chosen = sorted(utts, key=lambda u: u.utt_id)[: max(1, utterances_per_target)]
        waves = [read_audio(target_manifest.resolve(u))[0] for u in chosen]
        voices[speaker] = TargetVoice(
            target_id=speaker, gender=genders[speaker], profile=estimate_voice_profile(waves)
        )
    return voices
