"""An operator's Hugging Face speaker-verification model as a pretrained verifier, scored as it is.

The zoo's ``pretrained: hf-xvector`` attacker (``pretrained_path``: a local folder) is the kind of
model a real attacker downloads from the Hugging Face hub, e.g. ``microsoft/wavlm-base-plus-sv``
(WavLM Base+ with an x-vector head, fine-tuned on VoxCeleb1): any folder that ``transformers``
loads with ``AutoModelForAudioXVector`` (``WavLMForXVector``, ``Wav2Vec2ForXVector``,
``UniSpeechSatForXVector``, ...). Nothing is downloaded: the operator copies the folder onto the
machine (``huggingface-cli download microsoft/wavlm-base-plus-sv --local-dir <folder>``) and the
model is loaded with ``local_files_only=True`` and ``HF_HUB_OFFLINE=1``.

Each utterance is embedded alone (no padding, so no attention mask is needed): normalized to zero
mean and unit variance over its own samples unless the folder's ``preprocessor_config.json`` says
``do_normalize: false`` (``wavlm-base-plus-sv`` does), then the model's ``embeddings`` output,
L2-normalized; scored with cosine, as the model card scores it. Deterministic on CPU: the same
audio gives the same embedding. Like GE2E and a SpeechBrain ECAPA folder, it is the ignorant and
lazy-informed attacker that starts from what it learned elsewhere; fine-tuning a WavLM on
anonymized speech is the SSL front end's job (``training.front_end: ssl``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from services.attacker.local_weights import SSL_CONFIG, SSL_WEIGHT_FILES, normalizes_waveform
from services.errors import ConfigError

HF_XVECTOR = "hf-xvector"
"""The ``pretrained`` value of this verifier in an attacker spec."""

XVECTOR_SUFFIX = "ForXVector"
"""What ``config.json``'s ``architectures`` entry of a speaker-verification model ends with."""

_LAYOUT = (
    "a local Hugging Face speaker-verification folder (config.json with an architecture "
    "ending in ForXVector, model.safetensors or pytorch_model.bin), e.g. "
    "`huggingface-cli download microsoft/wavlm-base-plus-sv --local-dir <folder>`"
)


def _weights_file(folder: Path) -> Path | None:
    return next((folder / n for n in SSL_WEIGHT_FILES if (folder / n).is_file()), None)


def check_hf_xvector_folder(folder: str | Path) -> dict[str, Any]:
    """The ``config.json`` of a speaker-verification folder, checked without loading torch.

    Raises ``ConfigError`` naming the folder when it, its config or its weights are missing, the
    config is not a JSON object, or no ``architectures`` entry ends in ``ForXVector``.
    """
    path = Path(folder)
    if not path.is_dir():
        raise ConfigError(f"pretrained hf-xvector: {path} is not a folder; use {_LAYOUT}")
    config_path = path / SSL_CONFIG
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"pretrained hf-xvector: {config_path} not found; use {_LAYOUT}"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(
            f"pretrained hf-xvector: {config_path} is not readable JSON ({exc})"
        ) from exc
    if not isinstance(config, dict):
        raise ConfigError(f"pretrained hf-xvector: {config_path} is not a JSON object")
    architectures = config.get("architectures") or []
    if not isinstance(architectures, list):
        architectures = [architectures]
    if not any(isinstance(a, str) and a.endswith(XVECTOR_SUFFIX) for a in architectures):
        raise ConfigError(
            f"pretrained hf-xvector: {config_path} names architectures {architectures}, none a "
            f"speaker-verification head (*{XVECTOR_SUFFIX}); a WavLM / wav2vec 2.0 model without "
            "one serves as the SSL front end (training.front_end: ssl) instead"
        )
    if _weights_file(path) is None:
        raise ConfigError(
            f"pretrained hf-xvector: {path} has no weights; expected one of "
            f"{list(SSL_WEIGHT_FILES)}"
        )
    return config


def hf_xvector_model_key(folder: str | Path) -> str:
    """What the embeddings depend on: the SHA-256 of the config and the weights, and whether the
    waveforms are normalized (``preprocessor_config.json``) (a stage key)."""
    path = Path(folder)
    check_hf_xvector_folder(path)
    weights = _weights_file(path)
    assert weights is not None  # checked above
    digest = hashlib.sha256((path / SSL_CONFIG).read_bytes())
    if not normalizes_waveform(path, "pretrained hf-xvector"):
        digest.update(b"do_normalize: false")
    with weights.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"pretrained:{HF_XVECTOR}:{digest.hexdigest()[:16]}"


def _stamp(folder: Path) -> tuple[int, ...]:
    """When and how large the config and the weights are: a cached model is reloaded when they
    change."""
    files = [folder / SSL_CONFIG, _weights_file(folder)]
    stats = [f.stat() for f in files if f is not None and f.is_file()]
    return tuple(v for st in stats for v in (st.st_mtime_ns, st.st_size, st.st_ino))


@lru_cache(maxsize=2)
def _model(folder: str, stamp: tuple[int, ...] = ()) -> Any:
    check_hf_xvector_folder(folder)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    try:
        model = transformers.AutoModelForAudioXVector.from_pretrained(folder, local_files_only=True)
    except Exception as exc:  # transformers raises OSError, ValueError, RuntimeError, ...
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"pretrained hf-xvector: {folder} could not be loaded as a speaker-verification "
            f"model ({first[:200]})"
        ) from exc
    return model.eval()


def _min_samples(config: Any) -> int:
    """The fewest samples the x-vector head pools at least two frames of (its TDNN's context on
    the convolutional front end's frames); a shorter utterance is padded with silence."""
    frames = 2 + sum(
        (int(k) - 1) * int(d)
        for k, d in zip(config.tdnn_kernel, config.tdnn_dilation, strict=False)
    )
    samples = frames
    for kernel, stride in reversed(list(zip(config.conv_kernel, config.conv_stride, strict=False))):
        samples = (samples - 1) * int(stride) + int(kernel)
    return samples


def hf_xvector_embeddings(folder: str | Path, waveforms: Sequence[np.ndarray]) -> np.ndarray:
    """Embeddings (n, dim) float32, L2-normalized, of 16 kHz mono waveforms (input order) by the
    model in ``folder``, as it is.

    Raises ``ConfigError`` for a folder that is not a loadable speaker-verification model,
    ``ValueError`` for an empty or non-finite waveform.
    """
    import torch

    path = Path(folder).resolve()
    waves = [np.asarray(w, dtype=np.float32) for w in waveforms]
    for i, wave in enumerate(waves):
        if wave.ndim != 1 or wave.size == 0 or not np.isfinite(wave).all():
            raise ValueError(f"waveform {i}: expected a non-empty finite 1-D array")
    model = _model(str(path), _stamp(path))
    normalize = normalizes_waveform(path, "pretrained hf-xvector")
    shortest = _min_samples(model.config)
    rows = []
    with torch.inference_mode():
        for wave in waves:
            x = torch.from_numpy(wave)
            if normalize:
                x = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + 1e-7)
            if x.numel() < shortest:
                x = torch.nn.functional.pad(x, (0, shortest - x.numel()))
            rows.append(model(x[None, :]).embeddings[0].float())
    if not rows:
        return np.zeros((0, int(model.config.xvector_output_dim)), dtype=np.float32)
    emb = torch.nn.functional.normalize(torch.stack(rows), dim=1)
    return emb.numpy().astype(np.float32)
