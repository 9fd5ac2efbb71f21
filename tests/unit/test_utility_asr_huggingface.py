"""A Hugging Face wav2vec 2.0 CTC folder as the utility ASR (a tiny random model saved here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import (
    Wav2Vec2Config,
    Wav2Vec2CTCTokenizer,
    Wav2Vec2FeatureExtractor,
    Wav2Vec2ForCTC,
    Wav2Vec2Processor,
)

from services.attacker.local_weights import HF_PREPROCESSOR_CONFIG
from services.errors import ConfigError
from services.utility.asr import check_asr_folder, load_asr
from services.utility.config import AsrSpec
from services.utility.wer import normalize_text

VOCAB = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4, "A": 5, "B": 6, "C": 7}


def save_tiny_ctc(folder: Path, *, favour: str | None = None) -> Wav2Vec2ForCTC:
    """A 2-layer wav2vec 2.0 CTC model (random) and its processor, as save_pretrained writes them.

    ``favour``: a token whose output bias dominates, so greedy decoding reads it on every frame.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(VOCAB))
    tokenizer = Wav2Vec2CTCTokenizer(str(folder / "vocab.json"), word_delimiter_token="|")
    extractor = Wav2Vec2FeatureExtractor(sampling_rate=16000, do_normalize=True)
    Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer).save_pretrained(folder)
    torch.manual_seed(0)
    config = Wav2Vec2Config(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16,) * 7,
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        pad_token_id=0,
    )
    model = Wav2Vec2ForCTC(config)
    if favour is not None:
        with torch.no_grad():
            model.lm_head.weight.zero_()
            model.lm_head.bias.fill_(-5.0)
            model.lm_head.bias[VOCAB[favour]] = 5.0
    model.save_pretrained(folder)
    return model


def _wavs() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.normal(0, 0.1, n).astype(np.float32) for n in (16000, 12000)]


def test_a_folder_whose_head_favours_one_letter_reads_it(tmp_path: Path) -> None:
    folder = tmp_path / "w2v2"
    save_tiny_ctc(folder, favour="B")
    before = sorted(p.name for p in folder.iterdir())
    check_asr_folder(folder)
    asr = load_asr(folder)
    assert asr.transcribe(_wavs()) == ["B", "B"]  # repeats merged by CTC decoding
    info = asr.describe()
    assert info["kind"] == "huggingface-pretrained" and info["n_parameters"] > 0
    assert sorted(p.name for p in folder.iterdir()) == before  # read in place, nothing added


def test_transcripts_are_the_greedy_ctc_decoding(tmp_path: Path) -> None:
    folder = tmp_path / "w2v2"
    model = save_tiny_ctc(folder).eval()
    processor = Wav2Vec2Processor.from_pretrained(folder)
    expected = []
    with torch.no_grad():
        for wav in _wavs():
            values = processor(wav, sampling_rate=16000, return_tensors="pt").input_values
            ids = torch.argmax(model(values).logits, dim=-1)
            text = processor.batch_decode(ids, skip_special_tokens=True)[0]
            expected.append(normalize_text(text))
    assert any(expected)  # the random head reads something: the comparison says something
    assert load_asr(folder).transcribe(_wavs()) == expected


def test_bad_huggingface_folders_are_named(tmp_path: Path) -> None:
    folder = tmp_path / "w2v2"
    save_tiny_ctc(folder)
    (folder / "vocab.json").unlink()
    with pytest.raises(ConfigError, match=r"vocab\.json missing"):
        check_asr_folder(folder)
    other = tmp_path / "wavlm"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"architectures": ["WavLMModel"]}))
    with pytest.raises(ConfigError, match="must hold a Wav2Vec2ForCTC"):
        check_asr_folder(other)
    (other / "config.json").write_text(json.dumps({"architectures": ["Wav2Vec2ForCTC"]}))
    with pytest.raises(ConfigError, match="no weights"):
        check_asr_folder(other)
    spec = AsrSpec(source="pretrained", pretrained_path=folder)
    assert spec.pretrained_path == folder


def test_the_feature_extractor_file_is_the_one_the_attacker_reads(tmp_path: Path) -> None:
    """Without the feature extractor's settings the folder is refused; the file the attacker's
    front ends read (``do_normalize``) is one the check accepts."""
    folder = tmp_path / "w2v2"
    save_tiny_ctc(folder)
    settings = {"do_normalize": True, "feature_extractor_type": "Wav2Vec2FeatureExtractor"}
    for name in (HF_PREPROCESSOR_CONFIG, "processor_config.json"):
        (folder / name).unlink(missing_ok=True)
    with pytest.raises(ConfigError, match=rf"{HF_PREPROCESSOR_CONFIG} or processor_config"):
        check_asr_folder(folder)
    (folder / HF_PREPROCESSOR_CONFIG).write_text(json.dumps(settings))
    check_asr_folder(folder)
