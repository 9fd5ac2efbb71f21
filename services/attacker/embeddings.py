"""Speaker embeddings of whole utterances, batched the fastest way for the device, cached on disk.

Strategies (measured by ``benchmarks/embeddings.py``, table in ``docs/attacker.md``):

- ``one_at_a_time``: each utterance alone, no padding. The fastest on CPU: padding and masking
  in sorted batches cost more than batching saves there.
- ``bucketed``: utterances sorted by duration (longest first), cut into batches whose padded size
  (batch x longest) stays within ``budget_samples``, zero-padded, with relative lengths so the
  features' mean normalization, ECAPA's squeeze-excitation and attentive pooling ignore the
  padding. For GPUs, where a batch costs about as much as one utterance.
- ``auto``: ``one_at_a_time`` on CPU, ``bucketed`` on CUDA.

Both give the same embeddings up to convolution edge effects at the padded end of an utterance
(cosine > 0.999, tested). Results are float32, (n, dim), in input order.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from services.attacker.checkpoint import encoder_from_checkpoint, load_checkpoint
from services.attacker.models import SpeakerEncoder
from services.attacker.presets import ModelPreset
from services.errors import ConfigError, InvalidInputError

Strategy = Literal["auto", "one_at_a_time", "bucketed"]
EmbeddingDtype = Literal["fp32", "bf16"]
EmbedProgress = Callable[[int, int], None]
"""Called as ``(done, total)`` utterances while embeddings are computed (cache hits count as
done at once; each distinct waveform counts once)."""

MIN_SAMPLES = 1_600
"""Shortest utterance accepted (0.1 s at 16 kHz): ECAPA's dilated convolutions need some frames."""

DEFAULT_BUDGET_SAMPLES = 16 * 20 * 16_000
"""Default padded-batch budget: 16 utterances of 20 s (5.12 M samples)."""

DEFAULT_MAX_BATCH = 64
"""Most utterances in one bucketed batch, however short they are."""


def resolve_device(device: str | torch.device) -> torch.device:
    """``auto`` -> CUDA if available, else CPU. ``ConfigError`` for CUDA when there is none."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device: {device!r} requested but CUDA is not available")
    if device != "cpu" and not device.startswith("cuda"):
        raise ConfigError(f"device: unknown device {device!r}; use auto, cpu or cuda")
    return torch.device(device)


def auto_strategy(device: torch.device) -> Literal["one_at_a_time", "bucketed"]:
    """The fastest strategy on that device, as measured by ``benchmarks/embeddings.py``."""
    return "bucketed" if device.type == "cuda" else "one_at_a_time"


def check_waveforms(waveforms: Sequence[np.ndarray], name: str = "waveforms") -> None:
    """Raise ``InvalidInputError`` naming the first waveform that is not usable audio.

    Each must be a 1-D float32 ``np.ndarray`` of at least ``MIN_SAMPLES`` finite samples (16 kHz).
    """
    if isinstance(waveforms, np.ndarray) and waveforms.ndim != 1:
        raise InvalidInputError(f"{name}: pass a sequence of 1-D waveforms, not one array")
    if len(waveforms) == 0:
        raise InvalidInputError(f"{name}: empty; at least one waveform is needed")
    for i, w in enumerate(waveforms):
        if not isinstance(w, np.ndarray):
            raise InvalidInputError(f"{name}[{i}]: expected np.ndarray, got {type(w).__name__}")
        if w.dtype != np.float32:
            raise InvalidInputError(f"{name}[{i}]: dtype {w.dtype}, expected float32")
        if w.ndim != 1:
            raise InvalidInputError(f"{name}[{i}]: {w.ndim}-D array, expected 1-D (samples,)")
        if w.shape[0] < MIN_SAMPLES:
            raise InvalidInputError(
                f"{name}[{i}]: {w.shape[0]} samples, need at least {MIN_SAMPLES} (0.1 s at 16 kHz)"
            )
        if not np.isfinite(w).all():
            raise InvalidInputError(f"{name}[{i}]: contains NaN or infinite samples")


def _tensor_digest(h: Any, state: dict[str, torch.Tensor]) -> None:
    for key in sorted(state):
        t = state[key].detach().cpu().contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")


def model_hash(model_or_checkpoint: SpeakerEncoder | str | Path) -> str:
    """SHA-256 (hex) of a recognizer: its preset and embedding weights, not optimizer or history.

    The same weights give the same hash whether they come from ``best.pt``, ``last.pt`` or a
    ``SpeakerEncoder`` in memory. An SSL recognizer's hash covers its front end record and the
    SSL model's (fine-tuned) weights too.
    """
    h = hashlib.sha256()
    if isinstance(model_or_checkpoint, SpeakerEncoder):
        h.update(json.dumps(model_or_checkpoint.preset.model_dump(mode="json")).encode())
        record = model_or_checkpoint.front_end_record()
        state = model_or_checkpoint.state_dict()
    else:
        payload = load_checkpoint(model_or_checkpoint)
        preset = ModelPreset.model_validate(payload["preset"])
        h.update(json.dumps(preset.model_dump(mode="json")).encode())
        record = payload.get("front_end")
        state = payload["encoder"]
    if record is not None:  # fbank recognizers hash as they always did
        h.update(json.dumps(record, sort_keys=True).encode())
    _tensor_digest(h, state)
    return h.hexdigest()


def audio_hash(waveform: np.ndarray) -> str:
    """SHA-256 (hex) of a waveform's float32 samples."""
    return hashlib.sha256(np.ascontiguousarray(waveform, dtype=np.float32).tobytes()).hexdigest()


def _autocast(device: torch.device, dtype: EmbeddingDtype) -> torch.autocast:
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == "bf16")


def _bucket_batches(lengths: np.ndarray, budget_samples: int, max_batch: int) -> list[np.ndarray]:
    """Indices of padded batches: longest first, each with batch x longest <= budget."""
    order = np.argsort(-lengths, kind="stable")
    batches: list[np.ndarray] = []
    start = 0
    while start < len(order):
        longest = int(lengths[order[start]])
        size = max(1, min(max_batch, budget_samples // longest))
        batches.append(order[start : start + size])
        start += size
    return batches


def embed_waveforms(
    encoder: SpeakerEncoder,
    waveforms: Sequence[np.ndarray],
    *,
    strategy: Literal["one_at_a_time", "bucketed"],
    device: torch.device,
    dtype: EmbeddingDtype = "fp32",
    budget_samples: int = DEFAULT_BUDGET_SAMPLES,
    max_batch: int = DEFAULT_MAX_BATCH,
    progress: EmbedProgress | None = None,
) -> np.ndarray:
    """Embeddings (n, dim) float32 in input order; no cache, no input checks.

    ``encoder`` must already be on ``device``; it is put in eval mode. Torch's global RNG is left
    untouched (x-vector pooling draws a tiny noise: it is seeded inside, for repeatable output).
    ``progress``: called with (utterances done, n) after each utterance or batch.
    """
    report = progress or (lambda done, total: None)
    encoder.eval()
    out = np.empty((len(waveforms), encoder.embedding_dim), dtype=np.float32)
    fork_devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=fork_devices), torch.inference_mode():
        torch.manual_seed(0)
        if strategy == "one_at_a_time":
            for i, w in enumerate(waveforms):
                x = torch.from_numpy(np.ascontiguousarray(w)).to(device).unsqueeze(0)
                with _autocast(device, dtype):
                    emb = encoder(x)
                out[i] = emb.float().cpu().numpy()[0]
                report(i + 1, len(waveforms))
        elif strategy == "bucketed":
            lengths = np.array([len(w) for w in waveforms], dtype=np.int64)
            done = 0
            for idx in _bucket_batches(lengths, budget_samples, max_batch):
                longest = int(lengths[idx[0]])
                batch = np.zeros((len(idx), longest), dtype=np.float32)
                for row, j in enumerate(idx):
                    batch[row, : lengths[j]] = waveforms[j]
                x = torch.from_numpy(batch).to(device)
                rel = torch.from_numpy(lengths[idx] / longest).float().to(device)
                with _autocast(device, dtype):
                    emb = encoder(x, rel)
                out[idx] = emb.float().cpu().numpy()
                done += len(idx)
                report(done, len(waveforms))
        else:
            raise ConfigError(f"strategy: unknown embedding strategy {strategy!r}")
    return out


def _resolve_encoder(model_or_checkpoint: SpeakerEncoder | str | Path) -> SpeakerEncoder:
    if isinstance(model_or_checkpoint, SpeakerEncoder):
        return model_or_checkpoint
    if isinstance(model_or_checkpoint, (str, Path)):
        return encoder_from_checkpoint(load_checkpoint(model_or_checkpoint))
    raise InvalidInputError(
        "model_or_checkpoint: expected a SpeakerEncoder or a checkpoint path, "
        f"got {type(model_or_checkpoint).__name__}"
    )


def _cache_path(cache_dir: Path, model_key: str, dtype: str, sha: str) -> Path:
    return cache_dir / "attacker-embeddings" / f"{model_key[:32]}-{dtype}" / sha[:2] / f"{sha}.npy"


def _write_npy(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


def extract_embeddings(
    model_or_checkpoint: SpeakerEncoder | str | Path,
    waveforms: Sequence[np.ndarray],
    *,
    strategy: Strategy = "auto",
    budget_samples: int = DEFAULT_BUDGET_SAMPLES,
    max_batch: int = DEFAULT_MAX_BATCH,
    dtype: EmbeddingDtype = "fp32",
    cache: str | Path | None = None,
    device: str | torch.device = "auto",
    progress: EmbedProgress | None = None,
) -> np.ndarray:
    """Speaker embeddings (n, dim) float32 of whole utterances, in input order.

    ``waveforms``: 1-D float32 arrays at 16 kHz, each at least 0.1 s. ``strategy``: see the module
    docstring. ``budget_samples``: most padded samples (batch x longest) in one bucketed batch;
    ``max_batch``: most utterances in one. ``dtype``: ``fp32`` or ``bf16`` autocast (the features
    stay fp32). ``cache``: a folder (e.g. ``Settings.resolved_cache_dir()``); an embedding is
    stored per (model hash, dtype, audio SHA-256) and reused on later calls. ``device``: ``auto``
    (CUDA if available), ``cpu`` or ``cuda``. A ``SpeakerEncoder`` passed in is moved to
    ``device``. Equal waveforms (same samples) are embedded once. ``progress``: called with
    (distinct utterances done, distinct utterances) as they are embedded, cache hits first.
    """
    check_waveforms(waveforms)
    if strategy not in ("auto", "one_at_a_time", "bucketed"):
        raise ConfigError(f"strategy: unknown embedding strategy {strategy!r}")
    if dtype not in ("fp32", "bf16"):
        raise ConfigError(f"dtype: unknown embedding dtype {dtype!r}; use fp32 or bf16")
    if budget_samples < MIN_SAMPLES or max_batch < 1:
        raise ConfigError("budget_samples/max_batch: must be >= 1600 samples / >= 1 utterance")
    dev = resolve_device(device)
    encoder = _resolve_encoder(model_or_checkpoint).to(dev)
    chosen = auto_strategy(dev) if strategy == "auto" else strategy

    # Each distinct waveform once: equal audio in one call (a set listed twice, a copied file)
    # costs one forward pass, and the cache below serves it to the later embed stages.
    hashes = [audio_hash(w) for w in waveforms]
    first: dict[str, int] = {}
    for i, sha in enumerate(hashes):
        first.setdefault(sha, i)
    distinct = list(first.values())
    total = len(distinct)
    report = progress or (lambda done, n: None)

    def compute(items: Sequence[np.ndarray], already: int) -> np.ndarray:
        return embed_waveforms(
            encoder,
            items,
            strategy=chosen,
            device=dev,
            dtype=dtype,
            budget_samples=budget_samples,
            max_batch=max_batch,
            progress=lambda done, _n: report(already + done, total),
        )

    rows = np.empty((total, encoder.embedding_dim), dtype=np.float32)
    if cache is None:
        report(0, total)
        rows[:] = compute([waveforms[i] for i in distinct], 0)
    else:
        cache_dir = Path(cache)
        model_key = model_hash(encoder)
        paths = [_cache_path(cache_dir, model_key, dtype, hashes[i]) for i in distinct]
        missing: list[int] = []
        for row, p in enumerate(paths):
            if p.is_file():
                rows[row] = np.load(p)
            else:
                missing.append(row)
        report(total - len(missing), total)
        if missing:
            computed = compute([waveforms[distinct[row]] for row in missing], total - len(missing))
            rows[missing] = computed
            for k, row in enumerate(missing):
                _write_npy(paths[row], computed[k])
    index = {sha: row for row, sha in enumerate(first)}
    return rows[[index[sha] for sha in hashes]]
