"""The one reader of a Hugging Face folder's ``preprocessor_config.json`` (``do_normalize``),
shared by the SSL front end and the hf-xvector verifier, each naming its own setting in errors
(torch-free; the callers' own tests load models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.attacker.hf_xvector import hf_xvector_model_key
from services.attacker.local_weights import (
    HF_PREPROCESSOR_CONFIG,
    HF_PROCESSOR_CONFIG,
    normalizes_waveform,
)
from services.errors import ConfigError


def test_without_the_file_the_waveform_is_normalized(tmp_path: Path) -> None:
    assert normalizes_waveform(tmp_path, "ssl_model_path") is True


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"do_normalize": True}, True),
        ({"do_normalize": False, "sampling_rate": 16000}, False),
        ({"sampling_rate": 16000}, True),  # the feature extractors' default
        ([1, 2], True),  # not an object: nothing said, the default
    ],
)
def test_do_normalize_is_read(tmp_path: Path, settings: object, expected: bool) -> None:
    (tmp_path / HF_PREPROCESSOR_CONFIG).write_text(json.dumps(settings))
    assert normalizes_waveform(tmp_path, "ssl_model_path") is expected


@pytest.mark.parametrize("content", [b"{not json", b'{"do_normalize": \xff}'])
@pytest.mark.parametrize("setting", ["ssl_model_path", "pretrained hf-xvector"])
def test_an_unreadable_file_is_a_config_error_naming_the_setting(
    tmp_path: Path, content: bytes, setting: str
) -> None:
    path = tmp_path / HF_PREPROCESSOR_CONFIG
    path.write_bytes(content)
    with pytest.raises(ConfigError) as raised:
        normalizes_waveform(tmp_path, setting)
    assert str(raised.value).startswith(f"{setting}: {path} is not readable JSON (")


def test_the_hf_xvector_key_names_its_own_setting_and_the_normalization(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["WavLMForXVector"]}))
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    normalized = hf_xvector_model_key(tmp_path)
    (tmp_path / HF_PREPROCESSOR_CONFIG).write_text(json.dumps({"do_normalize": False}))
    assert hf_xvector_model_key(tmp_path) != normalized
    (tmp_path / HF_PREPROCESSOR_CONFIG).write_text("{not json")
    with pytest.raises(ConfigError, match=r"^pretrained hf-xvector: .* is not readable JSON"):
        hf_xvector_model_key(tmp_path)


# Folder layouts: transformers 4's preprocessor_config.json, transformers 5's processor_config.json
# with the feature extractor nested, and both disagreeing (the nested one wins, as in transformers).
LAYOUTS = {
    "legacy": {HF_PREPROCESSOR_CONFIG: {"do_normalize": False}},
    "nested": {HF_PROCESSOR_CONFIG: {"feature_extractor": {"do_normalize": False}}},
    "nested audio_processor": {HF_PROCESSOR_CONFIG: {"audio_processor": {"do_normalize": False}}},
    "both, nested wins": {
        HF_PROCESSOR_CONFIG: {"feature_extractor": {"do_normalize": False}},
        HF_PREPROCESSOR_CONFIG: {"do_normalize": True},
    },
    "flat processor file, legacy read": {
        HF_PROCESSOR_CONFIG: {"processor_class": "Wav2Vec2Processor"},
        HF_PREPROCESSOR_CONFIG: {"do_normalize": False},
    },
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_do_normalize_is_read_where_transformers_reads_it(tmp_path: Path, layout: str) -> None:
    from transformers import Wav2Vec2FeatureExtractor

    for name, settings in LAYOUTS[layout].items():
        extractor = settings.get("feature_extractor", settings.get("audio_processor", settings))
        if "do_normalize" in extractor:  # a complete extractor, as save_pretrained writes it
            extractor.update(feature_extractor_type="Wav2Vec2FeatureExtractor", feature_size=1)
        (tmp_path / name).write_text(json.dumps(settings))
    loaded = Wav2Vec2FeatureExtractor.from_pretrained(tmp_path, local_files_only=True)
    assert normalizes_waveform(tmp_path, "ssl_model_path") is bool(loaded.do_normalize) is False
