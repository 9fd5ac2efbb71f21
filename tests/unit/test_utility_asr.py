"""The utility ASR: a tiny CTC model trained on synthetic units, save/load, and operator folders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from services.errors import ConfigError, InvalidInputError
from services.utility.asr import TrainedAsr, check_asr_folder, load_asr, tokenization, train_asr
from services.utility.asr_features import (
    N_MELS,
    STACK,
    band_centres_hz,
    draw_warps,
    warp_features,
    warp_positions,
)
from services.utility.config import AsrSpec

TINY = AsrSpec(epochs=6, batch_size=4, hidden_size=32, lr=5e-3, seed=3, device="cpu")


@pytest.fixture(scope="module")
def tiny_data() -> tuple[list[np.ndarray], list[str]]:
    from services.corpus.synthetic import sample_speakers, synthesize_utterance, utterance_units

    speakers = sample_speakers(4, seed=0)
    audio, texts = [], []
    for k in range(8):
        spk = speakers[k % 4]
        audio.append(synthesize_utterance(spk, np.random.default_rng([5, k]), duration_s=1.2))
        texts.append(" ".join(utterance_units(spk, np.random.default_rng([5, k]), duration_s=1.2)))
    return audio, texts


@pytest.fixture(scope="module")
def tiny_model(
    tiny_data: tuple[list[np.ndarray], list[str]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[TrainedAsr, Path]:
    torch.set_num_threads(1)
    audio, texts = tiny_data
    out = tmp_path_factory.mktemp("asr") / "model"
    seen: list[float] = []
    asr = train_asr(audio, texts, TINY, out, progress=lambda f, _m: seen.append(f))
    assert seen == pytest.approx([(k + 1) / TINY.epochs for k in range(TINY.epochs)])
    return asr, out


def test_tokenization_rule() -> None:
    assert tokenization(["u1 u12 u3", "U4"]) == "units"
    assert tokenization(["u1 u12 hello"]) == "characters"
    assert tokenization(["HELLO WORLD", "it's"]) == "characters"
    assert tokenization(["u1x"]) == "characters"


def test_training_lowers_the_loss_and_transcribes(
    tiny_model: tuple[TrainedAsr, Path], tiny_data: tuple[list[np.ndarray], list[str]]
) -> None:
    asr, out = tiny_model
    info = asr.describe()
    history = info["loss_per_token_history"]
    assert len(history) == TINY.epochs
    assert history[-1] < 0.8 * history[0]
    assert info["tokenization"] == "units" and info["kind"] == "unmask-ctc"
    vocab = json.loads((out / "vocabulary.json").read_text())
    assert vocab["tokens"][0] == "<blank>"
    assert all(t.startswith("U") for t in vocab["tokens"][1:])
    assert json.loads((out / "describe.json").read_text()) == info
    hyps = asr.transcribe(tiny_data[0][:3])
    assert len(hyps) == 3 and all(isinstance(h, str) for h in hyps)
    assert all(w in vocab["tokens"][1:] for h in hyps for w in h.split())
    # Batched and one-at-a-time decoding agree (padding is packed away).
    assert asr.transcribe(tiny_data[0][:3], batch_size=3) == hyps


def test_save_load_roundtrip_and_determinism(
    tiny_model: tuple[TrainedAsr, Path],
    tiny_data: tuple[list[np.ndarray], list[str]],
    tmp_path: Path,
) -> None:
    asr, out = tiny_model
    again = load_asr(out)
    assert isinstance(again, TrainedAsr)
    audio = tiny_data[0]
    assert again.transcribe(audio) == asr.transcribe(audio)
    # The same data, spec and seed give the same weights.
    twin = train_asr(audio, tiny_data[1], TINY.model_copy(update={"epochs": 2}), tmp_path / "a")
    twin2 = train_asr(audio, tiny_data[1], TINY.model_copy(update={"epochs": 2}), tmp_path / "b")
    for (name, p), (_, q) in zip(
        twin.encoder.state_dict().items(), twin2.encoder.state_dict().items(), strict=True
    ):
        assert torch.equal(p, q), name
    assert twin.describe()["warp_range"] == list(TINY.warp_range or ())
    # The warp is applied: without it the same seed gives other weights.
    plain = train_asr(
        audio,
        tiny_data[1],
        TINY.model_copy(update={"epochs": 2, "warp_range": None}),
        tmp_path / "c",
    )
    assert plain.describe()["warp_range"] is None
    assert not torch.equal(plain.encoder.out.w.weight, twin.encoder.out.w.weight)


def _one_band_peak(band: int, n_frames: int = 5) -> torch.Tensor:
    """Stacked features (1, frames, N_MELS * STACK): 1 at ``band`` in every sub-frame, else 0."""
    x = torch.zeros(1, n_frames, STACK, N_MELS, dtype=torch.float64)
    x[..., band] = 1.0
    return x.reshape(1, n_frames, STACK * N_MELS)


@pytest.mark.parametrize(("src", "dst"), [(10, 20), (20, 10), (5, 6), (30, 24), (12, 35)])
def test_warp_moves_a_peak_to_the_band_of_alpha_times_its_frequency(src: int, dst: int) -> None:
    centres = band_centres_hz()
    alpha = centres[dst] / centres[src]  # energy at f_src Hz must land at alpha * f_src = f_dst
    out = warp_features(_one_band_peak(src), np.array([alpha])).reshape(-1, STACK, N_MELS)
    assert torch.allclose(out[..., dst], torch.ones_like(out[..., dst]), atol=1e-9)
    others = torch.cat([out[..., :dst], out[..., dst + 1 :]], dim=-1)
    assert float(others.max()) < 0.99  # the peak moved: nothing else reaches it
    # Every frame and stacked sub-frame is warped alike.
    assert torch.equal(out, out[:1, :1].expand_as(out))


def test_warp_identity_edges_and_batch() -> None:
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(3, 7, STACK * N_MELS)))
    assert torch.allclose(warp_features(x, np.ones(3)), x, atol=1e-12)
    # One factor per utterance: the batch equals its utterances warped one by one.
    alphas = np.array([0.6, 1.0, 1.7])
    batch = warp_features(x, alphas)
    for k in range(3):
        assert torch.allclose(batch[k : k + 1], warp_features(x[k : k + 1], alphas[k : k + 1]))
    # Beyond the top band (alpha < 1 asks for f / alpha above Nyquist) the edge band repeats.
    pos = warp_positions(np.array([0.6]))[0]
    assert pos[-1] == N_MELS - 1 and np.all(np.diff(pos) >= 0)
    # The band centres are SpeechBrain's Fbank ones (Hz).
    from speechbrain.lobes.features import Fbank

    fb = Fbank(n_mels=N_MELS, sample_rate=16000).compute_fbanks
    assert np.allclose(band_centres_hz(), fb.f_central.numpy(), atol=0.01)


def test_draw_warps_seeded_log_uniform_and_off() -> None:
    spec = TINY.model_copy(update={"warp_range": (0.6, 1.7)})
    a = draw_warps(spec, 0, 4000)
    assert np.array_equal(a, draw_warps(spec, 0, 4000))
    assert not np.array_equal(a, draw_warps(spec, 1, 4000))
    assert not np.array_equal(a, draw_warps(spec.model_copy(update={"seed": 4}), 0, 4000))
    assert a.min() >= 0.6 and a.max() <= 1.7
    # Log-uniform: the median is the geometric mean of the range.
    assert abs(float(np.median(a)) - np.sqrt(0.6 * 1.7)) < 0.03
    for off in (None, (1.0, 1.0)):
        assert np.array_equal(
            draw_warps(TINY.model_copy(update={"warp_range": off}), 0, 3), np.ones(3)
        )


def test_warp_range_validation() -> None:
    assert AsrSpec().warp_enabled and AsrSpec().warp_range == (0.8, 1.25)
    assert not AsrSpec(warp_range=None).warp_enabled
    assert not AsrSpec(warp_range=(1, 1)).warp_enabled
    for bad in [(1.5, 1.2), (0.1, 1.5), (0.8, 5.0), (0.0, 1.0)]:
        with pytest.raises(ValueError, match="warp_range"):
            AsrSpec(warp_range=bad)


def test_characters_for_real_transcripts(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    audio = [rng.normal(0, 0.1, 8000).astype(np.float32) for _ in range(3)]
    asr = train_asr(
        audio,
        ["Hello there.", "it's me", "HELLO"],
        TINY.model_copy(update={"epochs": 1}),
        tmp_path / "chars",
    )
    assert asr.kind == "characters"
    assert "'" in asr.vocabulary and " " in asr.vocabulary and "H" in asr.vocabulary


def test_bad_training_input_is_named(tmp_path: Path) -> None:
    wav = np.zeros(8000, dtype=np.float32)
    with pytest.raises(InvalidInputError, match="2 utterances but 1 transcripts"):
        train_asr([wav, wav], ["u1"], TINY, tmp_path)
    with pytest.raises(InvalidInputError, match="empty after normalization"):
        train_asr([wav], ["?"], TINY, tmp_path)
    with pytest.raises(InvalidInputError, match="at least 400 samples"):
        train_asr([wav[:100]], ["u1"], TINY, tmp_path)


_HPARAMS = """\
pretrained_path: speechbrain/some-hub-model
n_mels: 20
compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>
lin: !new:speechbrain.nnet.linear.Linear
    input_size: !ref <n_mels>
    n_neurons: 3
log_softmax: !new:speechbrain.nnet.activations.Softmax
    apply_log: True
encoder: !new:speechbrain.nnet.containers.LengthsCapableSequential
    compute_features: !ref <compute_features>
    lin: !ref <lin>
    log_softmax: !ref <log_softmax>
tokenizer: !new:speechbrain.dataio.encoder.CTCTextEncoder
decoding_function: !name:speechbrain.decoders.ctc_greedy_decode
    blank_id: 0
modules:
    encoder: !ref <encoder>
pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        lin: !ref <lin>
        tokenizer: !ref <tokenizer>
    paths:
        lin: !ref <pretrained_path>/lin.ckpt
        tokenizer: !ref <pretrained_path>/tokenizer.ckpt
"""


def _speechbrain_folder(folder: Path) -> None:
    """A tiny EncoderASR folder whose saved weights always answer token "B"."""
    from speechbrain.dataio.encoder import CTCTextEncoder
    from speechbrain.nnet.linear import Linear

    folder.mkdir(parents=True)
    (folder / "hyperparams.yaml").write_text(_HPARAMS)
    lin = Linear(input_size=20, n_neurons=3)
    with torch.no_grad():
        lin.w.weight.zero_()
        lin.w.bias.copy_(torch.tensor([0.0, 0.0, 5.0]))  # blank, A, B
    torch.save(lin.state_dict(), folder / "lin.ckpt")
    tok = CTCTextEncoder()
    tok.insert_blank(index=0)
    tok.update_from_iterable(["A", "B"])
    tok.save(folder / "tokenizer.ckpt")


def test_pretrained_speechbrain_folder(tmp_path: Path) -> None:
    folder = tmp_path / "sb-asr"
    _speechbrain_folder(folder)
    before = sorted(p.name for p in folder.iterdir())
    check_asr_folder(folder)
    asr = load_asr(folder)
    wav = np.random.default_rng(1).normal(0, 0.1, 16000).astype(np.float32)
    assert asr.transcribe([wav, wav[:8000]]) == ["B", "B"]
    assert asr.describe()["kind"] == "speechbrain-pretrained"
    assert sorted(p.name for p in folder.iterdir()) == before  # read in place, nothing added


def test_check_asr_folder_errors(tmp_path: Path, tiny_model: tuple[TrainedAsr, Path]) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        check_asr_folder(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"no hyperparams\.yaml"):
        check_asr_folder(empty)
    folder = tmp_path / "sb"
    _speechbrain_folder(folder)
    (folder / "lin.ckpt").unlink()
    with pytest.raises(ConfigError, match=r"lin\.ckpt named in hyperparams\.yaml are missing"):
        check_asr_folder(folder)
    with pytest.raises(ConfigError, match="missing"):
        load_asr(folder)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "hyperparams.yaml").write_text("modules: {}\n")
    with pytest.raises(ConfigError, match=r"no checkpoint files"):
        check_asr_folder(bare)
    _, trained = tiny_model
    check_asr_folder(trained)
    half = tmp_path / "half"
    half.mkdir()
    (half / "vocabulary.json").write_text((trained / "vocabulary.json").read_text())
    with pytest.raises(ConfigError, match=r"model\.pt missing"):
        check_asr_folder(half)


@pytest.fixture(scope="module")
def plateau_data() -> tuple[list[np.ndarray], list[str]]:
    from services.corpus.synthetic import sample_speakers, synthesize_utterance, utterance_units

    speakers = sample_speakers(4, seed=1)
    audio, texts = [], []
    for k in range(24):  # enough for a held-out share (MIN_UTTERANCES_FOR_VALIDATION)
        spk = speakers[k % 4]
        rng = [6, k]
        audio.append(synthesize_utterance(spk, np.random.default_rng(rng), duration_s=0.8))
        texts.append(" ".join(utterance_units(spk, np.random.default_rng(rng), duration_s=0.8)))
    return audio, texts


def test_training_stops_on_the_held_out_plateau_and_keeps_the_best_epoch(
    plateau_data: tuple[list[np.ndarray], list[str]], tmp_path: Path
) -> None:
    from services.utility.asr import validation_indices

    torch.set_num_threads(1)
    audio, texts = plateau_data
    # Demanding a 90 % drop per epoch: epoch 2 cannot improve, so patience 1 stops there.
    spec = TINY.model_copy(update={"epochs": 6, "patience": 1, "min_improvement": 0.9})
    seen: list[tuple[float, str]] = []
    asr = train_asr(audio, texts, spec, tmp_path / "a", progress=lambda f, m: seen.append((f, m)))
    info = asr.describe()
    assert info["epochs_trained"] == 2 and len(info["loss_per_token_history"]) == 2
    assert info["best_epoch"] == 1 and len(info["held_out_loss_history"]) == 2
    assert info["held_out_utterances"] == len(validation_indices(24, spec)) == 2
    assert seen[-1][0] == 1.0 and "plateau" in seen[-1][1]
    # Without a plateau check (patience 0) every epoch is trained on every utterance.
    full = train_asr(audio, texts, spec.model_copy(update={"patience": 0}), tmp_path / "b")
    assert full.describe()["epochs_trained"] == 6
    assert full.describe()["held_out_utterances"] == 0
