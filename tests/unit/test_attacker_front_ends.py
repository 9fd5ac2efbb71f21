"""Pretrained (SpeechBrain ECAPA) and SSL (WavLM / wav2vec 2.0) front ends from local folders.

Every model here is TINY, randomly initialized and saved by the test itself (transformers'
``save_pretrained``, a SpeechBrain-layout ECAPA folder written through HyperPyYAML): nothing is
downloaded, and the real loading, training, checkpoint and embedding code runs on it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hyperpyyaml import load_hyperpyyaml
from transformers import Wav2Vec2Config, Wav2Vec2Model, WavLMConfig, WavLMModel

from services.attacker.checkpoint import encoder_from_checkpoint, load_checkpoint
from services.attacker.embeddings import extract_embeddings, model_hash
from services.attacker.local_weights import check_local_weights, read_ecapa_hyperparams
from services.attacker.models import EmbeddingModel
from services.attacker.presets import get_preset
from services.attacker.pretrained import load_pretrained_ecapa
from services.attacker.ssl import SSLFrontEnd, load_ssl_front_end
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import TrainingItem
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.errors import ConfigError

HIDDEN = 32

_TINY_SSL: dict[str, Any] = {
    "hidden_size": HIDDEN,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "conv_dim": (16,) * 7,
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 2,
}


def save_tiny_ssl(folder: Path, kind: str = "wavlm", feat_extract_norm: str = "group") -> Path:
    """A randomly initialized 2-layer WavLM / wav2vec 2.0 (hidden 32) saved to ``folder``."""
    torch.manual_seed(1)
    if kind == "wavlm":
        config = WavLMConfig(
            **_TINY_SSL,
            num_buckets=32,
            max_bucket_distance=100,
            feat_extract_norm=feat_extract_norm,
        )
        model: Any = WavLMModel(config)
    else:
        model = Wav2Vec2Model(Wav2Vec2Config(**_TINY_SSL, feat_extract_norm=feat_extract_norm))
    model.save_pretrained(folder)
    return folder


ECAPA_YAML = """\
# SpeechBrain's layout (speechbrain/spkrec-ecapa-voxceleb), tiny sizes
n_mels: {input_size}
pretrained_path: speechbrain/spkrec-ecapa-voxceleb

compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>

mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False

embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN
    input_size: !ref <n_mels>
    channels: {channels}
    kernel_sizes: [5, 3, 3, 3, 1]
    dilations: [1, 2, 3, 4, 1]
    attention_channels: 32
    se_channels: 32
    res2net_scale: 4
    lin_neurons: 64

classifier: !new:speechbrain.lobes.models.ECAPA_TDNN.Classifier
    input_size: 64
    out_neurons: 7205

modules:
    compute_features: !ref <compute_features>
    embedding_model: !ref <embedding_model>
    classifier: !ref <classifier>

label_encoder: !new:speechbrain.dataio.encoder.CategoricalEncoder

pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>
        classifier: !ref <classifier>
        label_encoder: !ref <label_encoder>
    paths:
        embedding_model: !ref <pretrained_path>/embedding_model.ckpt
        classifier: !ref <pretrained_path>/classifier.ckpt
        label_encoder: !ref <pretrained_path>/label_encoder.txt
"""


def save_tiny_ecapa(
    folder: Path, input_size: int = 80, channels: tuple[int, ...] = (64, 64, 64, 64, 192)
) -> dict[str, torch.Tensor]:
    """A SpeechBrain ECAPA folder (hyperparams.yaml + embedding_model.ckpt) of ``tiny`` size.

    The model is built by HyperPyYAML from the very file written (as SpeechBrain would), then
    given random non-default weights; returns its state dict.
    """
    folder.mkdir(parents=True, exist_ok=True)
    text = ECAPA_YAML.format(input_size=input_size, channels=list(channels))
    (folder / "hyperparams.yaml").write_text(text)
    hparams = load_hyperpyyaml(text)
    model = hparams["embedding_model"]
    torch.manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.05)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    torch.save(state, folder / "embedding_model.ckpt")
    return state


def utterances(n_speakers: int = 3, per_speaker: int = 4, seed: int = 0) -> list[TrainingItem]:
    rng = np.random.default_rng(seed)
    return [
        TrainingItem(synthesize_utterance(s, rng, duration_s=1.2), s.speaker_id, None)
        for s in sample_speakers(n_speakers, seed=0)
        for _ in range(per_speaker)
    ]


# ----------------------------------------------------------------------------- config


def test_new_fields_are_left_out_of_dumps_at_their_defaults() -> None:
    dumped = TrainingConfig().model_dump(mode="json")
    for key in (
        "pretrained_ecapa_path",
        "front_end",
        "ssl_model_path",
        "ssl_freeze_feature_encoder",
        "ssl_frozen_epochs",
        "ssl_lr_scale",
    ):
        assert key not in dumped
    cfg = TrainingConfig(front_end="ssl", ssl_model_path=Path("/w"), ssl_lr_scale=0.5)
    dumped = cfg.model_dump(mode="json")
    assert dumped["front_end"] == "ssl" and dumped["ssl_model_path"] == "/w"
    assert TrainingConfig.model_validate(dumped) == cfg


def test_ssl_front_end_needs_a_model_path_and_an_ecapa() -> None:
    with pytest.raises(ValueError, match="needs ssl_model_path"):
        TrainingConfig(front_end="ssl")
    with pytest.raises(ValueError, match="set front_end: ssl"):
        TrainingConfig(ssl_model_path=Path("/w"))
    with pytest.raises(ValueError, match="not one"):
        TrainingConfig(front_end="ssl", ssl_model_path=Path("/w"), preset="xvector")


# ----------------------------------------------------------------------------- SSL loading


@pytest.mark.parametrize("kind", ["wavlm", "wav2vec2"])
def test_ssl_front_end_weights_all_layers_with_a_softmax(tmp_path: Path, kind: str) -> None:
    front = load_ssl_front_end(save_tiny_ssl(tmp_path / kind, kind))
    assert isinstance(front, SSLFrontEnd) and front.output_dim == HIDDEN
    assert front.n_layers == 3  # the CNN/projection output and the 2 transformer layers
    with torch.no_grad():
        front.layer_logits.copy_(torch.tensor([0.5, -1.0, 2.0]))
    weights = front.layer_weights().detach()
    assert float(weights.sum()) == pytest.approx(1.0, abs=1e-6)
    assert torch.all(weights > 0)

    front.set_trainable(False, freeze_feature_encoder=True)
    wavs = torch.randn(2, 8000)
    feats = front(wavs)
    assert feats.shape == (2, 24, HIDDEN)  # 20 ms frames
    # The output is the weighted sum of the model's own hidden states.
    with torch.no_grad():
        x = (wavs - wavs.mean(1, keepdim=True)) / torch.sqrt(wavs.var(1, False, True) + 1e-7)
        hidden = front.ssl(x, output_hidden_states=True).hidden_states
    expected = sum(w * h for w, h in zip(weights, hidden, strict=True))
    torch.testing.assert_close(feats.detach(), expected, rtol=1e-4, atol=1e-5)

    # The layer weights receive a gradient even while the SSL model is frozen.
    (feats * torch.randn_like(feats)).sum().backward()
    assert front.layer_logits.grad is not None
    assert float(front.layer_logits.grad.abs().sum()) > 0
    assert all(p.grad is None for p in front.ssl.parameters())


def test_padded_batches_give_the_unpadded_features(tmp_path: Path) -> None:
    # Layer-normalized CNNs (WavLM-Large's kind) get an attention mask for padding.
    front = load_ssl_front_end(save_tiny_ssl(tmp_path / "w", feat_extract_norm="layer")).eval()
    short = torch.randn(1, 6400)
    padded = torch.cat([short, torch.zeros(1, 3200)], dim=1)
    with torch.no_grad():
        alone = front(short)
        batch = front(padded, torch.tensor([6400 / 9600]))
        rel = front.frame_lengths(torch.tensor([6400 / 9600]), 9600)
    n = alone.shape[1]
    assert round(float(rel) * batch.shape[1]) == n
    torch.testing.assert_close(batch[:, :n], alone, rtol=1e-3, atol=1e-3)


# ----------------------------------------------------------------------------- training


def test_ssl_training_freezes_then_fine_tunes_and_reloads_without_the_folder(
    tmp_path: Path,
) -> None:
    ssl_dir = save_tiny_ssl(tmp_path / "wavlm")
    original = {k: v.clone() for k, v in load_ssl_front_end(ssl_dir).ssl.state_dict().items()}
    cfg = TrainingConfig(
        preset="tiny",
        epochs=2,
        batch_size=6,
        crop_seconds=1.0,
        device="cpu",
        front_end="ssl",
        ssl_model_path=ssl_dir,
        ssl_frozen_epochs=1,
        ssl_lr_scale=0.25,
    )
    out = tmp_path / "attacker"
    after_epoch_1 = tmp_path / "epoch1.pt"

    def keep_epoch_1(epoch: int, folder: Path) -> None:
        if epoch == 1:
            shutil.copy(folder / "last.pt", after_epoch_1)

    val = utterances(per_speaker=1, seed=1)
    result = train_attacker(utterances(), val, cfg, out, resume=False, on_checkpoint=keep_epoch_1)
    assert [r.epoch for r in result.history] == [1, 2]
    assert all(np.isfinite(r.loss_source) for r in result.history)
    assert result.preset.n_mels == HIDDEN  # the ECAPA reads the SSL hidden size

    def ssl_state(path: Path) -> dict[str, torch.Tensor]:
        enc = load_checkpoint(path)["encoder"]
        prefix = "features.ssl."
        return {k[len(prefix) :]: v for k, v in enc.items() if k.startswith(prefix)}

    epoch1, epoch2 = ssl_state(after_epoch_1), ssl_state(result.last_checkpoint)
    assert set(epoch1) == set(original)
    # Epoch 1: the whole SSL model frozen. Epoch 2: the transformer learns, the CNN never does.
    assert all(torch.equal(epoch1[k], original[k]) for k in original)
    cnn = [k for k in original if k.startswith("feature_extractor.")]
    assert cnn and all(torch.equal(epoch2[k], original[k]) for k in cnn)
    moved = [k for k in original if not k.startswith("feature_extractor.")]
    assert any(not torch.equal(epoch2[k], original[k]) for k in moved)
    # The layer weights learn from the first epoch on and stay a softmax.
    logits1 = load_checkpoint(after_epoch_1)["encoder"]["features.layer_logits"]
    assert float(logits1.abs().sum()) > 0
    encoder = result.load_encoder("last")
    assert isinstance(encoder.features, SSLFrontEnd)
    assert float(encoder.features.layer_weights().detach().sum()) == pytest.approx(1.0, abs=1e-6)
    # The SSL model's learning rate is the schedule's times ssl_lr_scale.
    groups = load_checkpoint(result.last_checkpoint)["optimizer"]["param_groups"]
    assert [g["lr_scale"] for g in groups] == [1.0, 0.25]
    assert groups[1]["lr"] == pytest.approx(0.25 * groups[0]["lr"])

    waves = [it.waveform for it in val]
    before = extract_embeddings(result.best_checkpoint, waves, device="cpu")
    hash_before = model_hash(result.best_checkpoint)
    shutil.rmtree(ssl_dir)  # the checkpoint alone rebuilds the recognizer
    after = extract_embeddings(result.best_checkpoint, waves, device="cpu")
    assert before.shape == (len(waves), 64)
    assert np.array_equal(before, after)
    assert model_hash(result.best_checkpoint) == hash_before
    rebuilt = encoder_from_checkpoint(load_checkpoint(result.best_checkpoint))
    assert model_hash(rebuilt) == hash_before


def test_pretrained_ecapa_path_loads_the_speechbrain_checkpoint_into_the_preset(
    tmp_path: Path,
) -> None:
    state = save_tiny_ecapa(tmp_path / "ecapa")
    hp = read_ecapa_hyperparams(tmp_path / "ecapa")
    assert hp["input_size"] == 80 and hp["channels"] == [64, 64, 64, 64, 192]

    model = EmbeddingModel(get_preset("tiny"))
    load_pretrained_ecapa(model, tmp_path / "ecapa")
    loaded = model.net.state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in state.items())

    # Through the real training loop: with a vanishing learning rate the recognizer keeps the
    # pretrained convolution weights (a random init would not match them at all).
    cfg = TrainingConfig(
        preset="tiny",
        epochs=1,
        batch_size=6,
        crop_seconds=1.0,
        device="cpu",
        lr=1e-12,
        base_lr=1e-12,
        pretrained_ecapa_path=tmp_path / "ecapa",
    )
    result = train_attacker(utterances(), [], cfg, tmp_path / "out", resume=False)
    trained = load_checkpoint(result.best_checkpoint)["encoder"]
    conv = "blocks.0.conv.conv.weight"
    torch.testing.assert_close(trained[f"embedding.net.{conv}"], state[conv], atol=1e-6, rtol=0)


def test_pretrained_ecapa_path_with_the_ssl_front_end(tmp_path: Path) -> None:
    ssl_dir = save_tiny_ssl(tmp_path / "wavlm")
    save_tiny_ecapa(tmp_path / "ecapa", input_size=HIDDEN)
    base = {"preset": "tiny", "front_end": "ssl", "ssl_model_path": ssl_dir}
    check_local_weights(TrainingConfig(**base, pretrained_ecapa_path=tmp_path / "ecapa"))
    save_tiny_ecapa(tmp_path / "fbank-ecapa", input_size=80)
    with pytest.raises(ConfigError, match=r"input_size 80.*SSL model's hidden_size needs 32"):
        check_local_weights(TrainingConfig(**base, pretrained_ecapa_path=tmp_path / "fbank-ecapa"))


# ----------------------------------------------------------------------------- errors


def test_bad_ssl_folders_are_named_before_any_work(tmp_path: Path) -> None:
    items = utterances(per_speaker=2)

    def cfg(path: Path) -> TrainingConfig:
        return TrainingConfig(preset="tiny", device="cpu", front_end="ssl", ssl_model_path=path)

    with pytest.raises(ConfigError, match=r"ssl_model_path: .*nowhere is not a folder"):
        train_attacker(items, [], cfg(tmp_path / "nowhere"), tmp_path / "out")
    assert not (tmp_path / "out" / "last.pt").exists()

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"config\.json not found"):
        check_local_weights(cfg(empty))
    (empty / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not readable JSON"):
        check_local_weights(cfg(empty))
    (empty / "config.json").write_text('{"model_type": "bert", "hidden_size": 8}')
    with pytest.raises(ConfigError, match="model_type 'bert' is not supported"):
        check_local_weights(cfg(empty))
    ssl_dir = save_tiny_ssl(tmp_path / "wavlm")
    (ssl_dir / "model.safetensors").unlink()
    with pytest.raises(ConfigError, match="has no weights"):
        check_local_weights(cfg(ssl_dir))
    # Weights that exist but do not load: a clear ConfigError, not transformers' traceback.
    (ssl_dir / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ConfigError, match="could not be loaded as a Hugging Face model"):
        load_ssl_front_end(ssl_dir)


def test_ssl_front_end_reads_do_normalize_and_names_its_setting(tmp_path: Path) -> None:
    folder = save_tiny_ssl(tmp_path / "wavlm")
    assert load_ssl_front_end(folder).normalize_waveform is True  # no preprocessor_config.json
    (folder / "preprocessor_config.json").write_text('{"do_normalize": false}')
    assert load_ssl_front_end(folder).normalize_waveform is False
    (folder / "preprocessor_config.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"^ssl_model_path: .* is not readable JSON"):
        load_ssl_front_end(folder)


def test_bad_ecapa_folders_and_mismatched_weights(tmp_path: Path) -> None:
    def cfg(path: Path, preset: str = "tiny") -> TrainingConfig:
        return TrainingConfig(preset=preset, device="cpu", pretrained_ecapa_path=path)  # type: ignore[arg-type]

    with pytest.raises(ConfigError, match=r"pretrained_ecapa_path: .*nowhere is not a folder"):
        check_local_weights(cfg(tmp_path / "nowhere"))
    folder = tmp_path / "ecapa"
    save_tiny_ecapa(folder)
    check_local_weights(cfg(folder))  # fits the tiny preset

    # A preset of another size: named in the config check, from hyperparams.yaml alone.
    with pytest.raises(ConfigError, match=r"channels \[64, 64, 64, 64, 192\].*preset 'vpc'"):
        check_local_weights(cfg(folder, "vpc"))
    with pytest.raises(ConfigError, match="x-vector"):
        check_local_weights(cfg(folder, "xvector"))

    # Tensors that do not fit (hyperparams.yaml silent about the sizes): named with both shapes.
    other = tmp_path / "other"
    save_tiny_ecapa(other, channels=(32, 32, 32, 32, 96))
    hp = (other / "hyperparams.yaml").read_text()
    (other / "hyperparams.yaml").write_text(hp.replace("    channels: [32, 32, 32, 32, 96]\n", ""))
    check_local_weights(cfg(other))
    model = EmbeddingModel(get_preset("tiny"))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(
        ConfigError,
        match=r"blocks\.0\.conv\.conv\.weight: checkpoint \[32, 80, 5\] vs model \[64, 80, 5\]",
    ):
        load_pretrained_ecapa(model, other)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())
    with pytest.raises(ConfigError, match=r"blocks\.0\.conv\.conv\.weight"):
        train_attacker(utterances(per_speaker=2), [], cfg(other), tmp_path / "out")

    # Missing or unreadable files.
    (other / "embedding_model.ckpt").write_bytes(b"garbage")
    with pytest.raises(ConfigError, match="not a readable SpeechBrain checkpoint"):
        load_pretrained_ecapa(model, other)
    (other / "embedding_model.ckpt").unlink()
    with pytest.raises(ConfigError, match=r"embedding_model\.ckpt not found"):
        check_local_weights(cfg(other))
    (folder / "hyperparams.yaml").write_text("embedding_model: [unclosed")
    with pytest.raises(ConfigError, match="not readable YAML"):
        check_local_weights(cfg(folder))
    (folder / "hyperparams.yaml").write_text("lr: 0.1\n")
    with pytest.raises(ConfigError, match="no embedding_model entry"):
        check_local_weights(cfg(folder))


def test_evaluation_config_check_names_the_weight_folder(tmp_path: Path) -> None:
    from services.pipeline.config_checks import load_checked_config

    (tmp_path / "weights").mkdir()
    path = tmp_path / "c.yaml"
    path.write_text(
        "anonymizer: {name: pitch}\n"
        "training: {preset: tiny, front_end: ssl, ssl_model_path: weights/wavlm,"
        " init_from: weights/ecapa}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_checked_config(path)
    msg = str(info.value)
    # Relative folders are relative to the config file, like the protocol.
    assert f"training.ssl_model_path: {tmp_path / 'weights' / 'wavlm'} is not a folder" in msg
    # ``init_from``, the field's former name, still reads; the message names the current one.
    name = "training.pretrained_ecapa_path"
    assert f"{name}: {tmp_path / 'weights' / 'ecapa'} is not a folder" in msg


@pytest.mark.slow
def test_ssl_training_resumes_bit_identically_across_the_unfreezing(tmp_path: Path) -> None:
    ssl_dir = save_tiny_ssl(tmp_path / "wavlm")
    cfg = TrainingConfig(
        preset="tiny",
        epochs=2,
        batch_size=6,
        crop_seconds=1.0,
        device="cpu",
        front_end="ssl",
        ssl_model_path=ssl_dir,
        ssl_frozen_epochs=1,
    )
    items = utterances()
    whole = train_attacker(items, [], cfg, tmp_path / "whole", resume=False)

    class Crash(RuntimeError):
        pass

    def crash_after_epoch_1(epoch: int, folder: Path) -> None:
        if epoch == 1:
            raise Crash

    with pytest.raises(Crash):
        train_attacker(items, [], cfg, tmp_path / "cut", on_checkpoint=crash_after_epoch_1)
    resumed = train_attacker(items, [], cfg, tmp_path / "cut")
    assert resumed.resumed_after_epoch == 1
    a = load_checkpoint(whole.last_checkpoint)["encoder"]
    b = load_checkpoint(resumed.last_checkpoint)["encoder"]
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
