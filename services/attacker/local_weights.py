"""Checks of the attacker's local pretrained weights before any work starts (torch-free).

Two kinds of folders can be named in ``TrainingConfig`` (nothing is ever downloaded,
the operator copies the folders onto the machine):

- ``pretrained_ecapa_path``: a SpeechBrain ECAPA-TDNN checkpoint folder, the layout of
  ``speechbrain/spkrec-ecapa-voxceleb``: ``hyperparams.yaml`` (whose ``embedding_model`` entry
  is a ``speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN``) and ``embedding_model.ckpt`` (its
  state dict). Other files (``classifier.ckpt``, ``label_encoder.txt``, ...) are ignored.
- ``ssl_model_path``: a Hugging Face WavLM / wav2vec 2.0 / HuBERT folder as written by
  ``save_pretrained`` or ``huggingface-cli download``: ``config.json`` and ``model.safetensors``
  or ``pytorch_model.bin`` (or their sharded ``*.index.json``).

``local_weights_problems`` reads only ``hyperparams.yaml`` and ``config.json`` (no torch, so the
API process and ``unmask evaluate``'s config check can call it) and compares the ECAPA's
architecture with the preset: a wrong preset is reported in a second, not after the SSL model is
loaded. The tensor-by-tensor comparison happens when the weights are loaded
(``services.attacker.pretrained``), still before the first training step.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from services.attacker.presets import get_preset
from services.attacker.training_config import TrainingConfig
from services.errors import ConfigError

ECAPA_HYPERPARAMS = "hyperparams.yaml"
ECAPA_WEIGHTS = "embedding_model.ckpt"
SSL_CONFIG = "config.json"
SSL_WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
SSL_MODEL_TYPES = ("wavlm", "wav2vec2", "hubert")
"""``config.json`` ``model_type`` values the SSL front end supports (all return every hidden
layer with ``output_hidden_states=True`` and have a CNN ``feature_extractor``)."""
HF_PREPROCESSOR_CONFIG = "preprocessor_config.json"
"""A Hugging Face folder's feature-extractor settings (``do_normalize``), beside ``config.json``
(what transformers 4 writes)."""
HF_PROCESSOR_CONFIG = "processor_config.json"
"""A processor's settings, as transformers 5 writes them: the feature extractor's nested under
``feature_extractor`` (or ``audio_processor``), read before ``preprocessor_config.json``."""
HF_FEATURE_EXTRACTOR_FILES = (HF_PREPROCESSOR_CONFIG, HF_PROCESSOR_CONFIG)
"""The files that may hold a Hugging Face folder's feature-extractor settings."""

# SpeechBrain's ECAPA_TDNN defaults for the arguments a hyperparams.yaml may leave out; the
# repository's presets build the ECAPA with these kernel sizes and dilations.
_ECAPA_DEFAULTS: dict[str, Any] = {
    "kernel_sizes": [5, 3, 3, 3, 1],
    "dilations": [1, 2, 3, 4, 1],
    "groups": [1, 1, 1, 1, 1],
    "global_context": True,
}


class _Tagged(dict[str, Any]):
    """A HyperPyYAML ``!new:`` / ``!name:`` / ``!apply:`` mapping, with its tag kept."""

    tag: str = ""


class _Ref(str):
    """A HyperPyYAML ``!ref`` string, resolved against the top-level keys afterwards."""


class _HyperparamsLoader(yaml.SafeLoader):
    """SafeLoader that reads HyperPyYAML's tags as plain data and runs nothing."""


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        out = _Tagged({str(k): v for k, v in loader.construct_mapping(node, deep=True).items()})
        out.tag = suffix
        return out
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    value = loader.construct_scalar(node)  # type: ignore[arg-type]
    return _Ref(value) if suffix == "ref" else value


_HyperparamsLoader.add_multi_constructor("!", _tagged)

_SINGLE_REF = re.compile(r"^\s*<([A-Za-z0-9_]+)>\s*$")


def _resolve(value: Any, top: dict[str, Any], depth: int = 0) -> Any:
    """Replace ``!ref <key>`` by the top-level value (other references stay strings)."""
    if depth > 20:
        return value
    if isinstance(value, _Ref):
        match = _SINGLE_REF.match(value)
        if match and match.group(1) in top:
            return _resolve(top[match.group(1)], top, depth + 1)
        return str(value)
    if isinstance(value, list):
        return [_resolve(v, top, depth + 1) for v in value]
    if isinstance(value, dict):
        out = _Tagged({k: _resolve(v, top, depth + 1) for k, v in value.items()})
        out.tag = getattr(value, "tag", "")
        return out
    return value


def read_ecapa_hyperparams(folder: Path) -> dict[str, Any]:
    """The ``embedding_model`` arguments of a SpeechBrain checkpoint folder's hyperparams.yaml.

    Returns the ECAPA_TDNN keyword arguments (``input_size``, ``channels``, ``lin_neurons``, ...)
    with simple ``!ref <key>`` references resolved. Raises ``ConfigError`` naming the file when
    it is missing, unreadable, or its ``embedding_model`` is not a SpeechBrain ECAPA_TDNN.
    """
    path = folder / ECAPA_HYPERPARAMS
    if not path.is_file():
        raise ConfigError(f"pretrained_ecapa_path: {path} not found; {_ECAPA_LAYOUT}")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_HyperparamsLoader)
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"pretrained_ecapa_path: {path} is not readable YAML ({first})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"pretrained_ecapa_path: {path} is not a YAML mapping; {_ECAPA_LAYOUT}")
    model = data.get("embedding_model")
    if not isinstance(model, dict):
        raise ConfigError(
            f"pretrained_ecapa_path: {path} has no embedding_model entry; {_ECAPA_LAYOUT} (the "
            "Unmask recognizer can start only from SpeechBrain's ECAPA_TDNN)"
        )
    tag = getattr(model, "tag", "")
    if "ECAPA_TDNN" not in tag:
        raise ConfigError(
            f"pretrained_ecapa_path: {path}: embedding_model is {tag or 'untagged'!r}, expected "
            "!new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN"
        )
    resolved = _resolve(model, data)
    return dict(resolved)


_ECAPA_LAYOUT = (
    "pretrained_ecapa_path must be a SpeechBrain ECAPA checkpoint folder with hyperparams.yaml and "
    "embedding_model.ckpt (the layout of speechbrain/spkrec-ecapa-voxceleb)"
)


def check_ecapa_folder(folder: Path) -> Path:
    """``folder`` if it is a folder holding ``embedding_model.ckpt``; else ``ConfigError``."""
    if not folder.is_dir():
        raise ConfigError(f"pretrained_ecapa_path: {folder} is not a folder; {_ECAPA_LAYOUT}")
    if not (folder / ECAPA_WEIGHTS).is_file():
        raise ConfigError(
            f"pretrained_ecapa_path: {folder / ECAPA_WEIGHTS} not found; {_ECAPA_LAYOUT}"
        )
    return folder


def read_ssl_config(folder: Path) -> dict[str, Any]:
    """The ``config.json`` of a Hugging Face SSL model folder, checked for the front end.

    Raises ``ConfigError`` naming the folder for a missing folder, config or weights file, an
    unreadable config, or an unsupported ``model_type``.
    """
    if not folder.is_dir():
        raise ConfigError(
            f"ssl_model_path: {folder} is not a folder; point it at a local Hugging Face model "
            "folder (config.json + model.safetensors), e.g. microsoft/wavlm-large downloaded with "
            "`huggingface-cli download microsoft/wavlm-large --local-dir <folder>`"
        )
    path = folder / SSL_CONFIG
    if not path.is_file():
        raise ConfigError(f"ssl_model_path: {path} not found (a Hugging Face model folder has one)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"ssl_model_path: {path} is not readable JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise ConfigError(f"ssl_model_path: {path} is not a JSON object")
    model_type = config.get("model_type")
    if model_type not in SSL_MODEL_TYPES:
        raise ConfigError(
            f"ssl_model_path: {path}: model_type {model_type!r} is not supported; use one of "
            f"{list(SSL_MODEL_TYPES)} (WavLM, wav2vec 2.0, HuBERT)"
        )
    for key in ("hidden_size", "num_hidden_layers"):
        if not isinstance(config.get(key), int) or config[key] < 1:
            raise ConfigError(f"ssl_model_path: {path}: {key} missing or not a positive integer")
    if not any((folder / name).is_file() for name in SSL_WEIGHT_FILES):
        raise ConfigError(
            f"ssl_model_path: {folder} has no weights; expected one of {list(SSL_WEIGHT_FILES)}"
        )
    return config


def normalizes_waveform(folder: Path, setting: str) -> bool:
    """Whether a Hugging Face folder's feature extractor normalizes each waveform to zero mean and
    unit variance: its ``do_normalize``; yes without it (the feature extractors' default), so the
    SSL front end and the hf-xvector verifier feed a model what it was trained on.

    The settings are read where transformers reads them: nested in ``processor_config.json``
    (transformers 5) when that file nests them, else ``preprocessor_config.json``.

    ``setting``: what named the folder (``ssl_model_path``, ``pretrained hf-xvector``), the
    start of the ``ConfigError`` raised for a file that is not readable JSON.
    """
    processor = _json_object(folder / HF_PROCESSOR_CONFIG, setting)
    nested = processor.get("feature_extractor", processor.get("audio_processor"))
    extractor = (
        nested
        if isinstance(nested, dict)
        else _json_object(folder / HF_PREPROCESSOR_CONFIG, setting)
    )
    return bool(extractor.get("do_normalize", True))


def _json_object(path: Path, setting: str) -> dict[str, Any]:
    """The JSON object in ``path``; empty when the file is absent or holds no object."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{setting}: {path} is not readable JSON ({exc})") from exc
    return data if isinstance(data, dict) else {}


def _ecapa_input_size(cfg: TrainingConfig, ssl_config: dict[str, Any] | None) -> int | None:
    if cfg.front_end == "ssl":
        return int(ssl_config["hidden_size"]) if ssl_config is not None else None
    return get_preset(cfg.preset).n_mels


def ecapa_architecture_problems(
    hyperparams: dict[str, Any], cfg: TrainingConfig, input_size: int | None
) -> list[str]:
    """Differences between a checkpoint's ECAPA arguments and the model ``cfg`` builds."""
    preset = get_preset(cfg.preset)
    if preset.architecture != "ecapa":
        return [
            f"pretrained_ecapa_path: preset {preset.name!r} is an x-vector; a SpeechBrain ECAPA "
            "checkpoint initializes only an ECAPA preset (standard, vpc or tiny)"
        ]
    expected: dict[str, Any] = {
        "channels": list(preset.channels),
        "lin_neurons": preset.embedding_dim,
        "attention_channels": preset.attention_channels,
        "se_channels": preset.se_channels,
        "res2net_scale": preset.res2net_scale,
        **_ECAPA_DEFAULTS,
    }
    if input_size is not None:
        expected["input_size"] = input_size
    problems = []
    for key, want in expected.items():
        if key not in hyperparams:
            continue  # SpeechBrain's default, which the presets use too
        have = hyperparams[key]
        if isinstance(have, tuple):
            have = list(have)
        if have != want:
            where = (
                "the SSL model's hidden_size" if key == "input_size" else f"preset {preset.name!r}"
            )
            problems.append(
                f"pretrained_ecapa_path: hyperparams.yaml's embedding_model has {key} {have}, but "
                f"{where} needs {want}; choose the preset (and front end) the checkpoint was "
                "trained with (speechbrain/spkrec-ecapa-voxceleb: preset standard, front_end fbank)"
            )
    return problems


def local_weights_problems(cfg: TrainingConfig) -> list[str]:
    """Every problem of ``cfg``'s local weight folders, as ``field: message`` (empty = none)."""
    problems: list[str] = []
    ssl_config: dict[str, Any] | None = None
    if cfg.front_end == "ssl":
        if cfg.ssl_model_path is None:
            problems.append("ssl_model_path: front_end ssl needs a local model folder")
        else:
            try:
                ssl_config = read_ssl_config(Path(cfg.ssl_model_path))
            except ConfigError as exc:
                problems.append(str(exc))
    if cfg.pretrained_ecapa_path is not None:
        folder = Path(cfg.pretrained_ecapa_path)
        try:
            check_ecapa_folder(folder)
        except ConfigError as exc:
            problems.append(str(exc))
            if not folder.is_dir():
                return problems
        try:
            hyperparams = read_ecapa_hyperparams(folder)
        except ConfigError as exc:
            problems.append(str(exc))
        else:
            problems += ecapa_architecture_problems(
                hyperparams, cfg, _ecapa_input_size(cfg, ssl_config)
            )
    return problems


def check_local_weights(cfg: TrainingConfig) -> None:
    """Raise ``ConfigError`` listing every problem of the weight folders ``cfg`` names.

    Checks that the folders and files exist, that ``hyperparams.yaml`` / ``config.json`` are
    readable and supported, and that the ECAPA checkpoint's architecture matches the preset
    (and the SSL model's hidden size); does nothing when ``cfg`` names no folder. Reads no
    weights and imports no torch; nothing is downloaded.
    """
    problems = local_weights_problems(cfg)
    if problems:
        raise ConfigError("; ".join(problems))
