"""Embedding extraction: strategies agree, order kept, cache, model hash, features, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import services.attacker.embeddings as emb_mod
from services.attacker.checkpoint import CHECKPOINT_FORMAT, save_checkpoint
from services.attacker.embeddings import extract_embeddings, model_hash
from services.attacker.features import FilterbankFeatures, mean_normalize
from services.attacker.models import SpeakerEncoder
from services.errors import ConfigError, InvalidInputError

SR = 16_000


def _waves(n: int = 9, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        length = int(rng.uniform(0.5, 3.0) * SR)
        t = np.arange(length) / SR
        f0 = rng.uniform(90, 250)
        w = sum(np.sin(2 * np.pi * h * f0 * t) / h for h in range(1, 12))
        out.append((0.2 * w + 0.02 * rng.standard_normal(length)).astype(np.float32))
    return out


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    torch.manual_seed(3)
    return SpeakerEncoder("tiny").eval()


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out: np.ndarray = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return out


def test_bucketed_agrees_with_one_at_a_time_and_keeps_input_order(encoder: SpeakerEncoder) -> None:
    waves = _waves()
    single = extract_embeddings(encoder, waves, strategy="one_at_a_time", device="cpu")
    # A small budget forces several padded batches of different lengths.
    bucketed = extract_embeddings(
        encoder, waves, strategy="bucketed", budget_samples=3 * 2 * SR, device="cpu"
    )
    assert single.shape == bucketed.shape == (len(waves), 64)
    assert single.dtype == np.float32
    assert _cos(single, bucketed).min() > 0.999
    # Input order: row i is utterance i, whatever the sorting inside.
    alone = np.stack([extract_embeddings(encoder, [w], device="cpu")[0] for w in waves[:3]])
    assert np.array_equal(alone, single[:3])
    # Different utterances give different embeddings (the check above could not pass trivially).
    assert _cos(single[:1], single[1:2])[0] < 0.9999


def test_auto_strategy_is_one_at_a_time_on_cpu(encoder: SpeakerEncoder) -> None:
    waves = _waves(3)
    auto = extract_embeddings(encoder, waves, device="cpu")
    single = extract_embeddings(encoder, waves, strategy="one_at_a_time", device="cpu")
    assert np.array_equal(auto, single)


def test_cache_hit_returns_same_array_without_recomputing(
    encoder: SpeakerEncoder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waves = _waves(4)
    first = extract_embeddings(encoder, waves, cache=tmp_path, device="cpu")
    calls: list[int] = []
    real = emb_mod.embed_waveforms

    def counting(enc: SpeakerEncoder, items: list[np.ndarray], **kw: object) -> np.ndarray:
        calls.append(len(items))
        return real(enc, items, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(emb_mod, "embed_waveforms", counting)
    again = extract_embeddings(encoder, waves, cache=tmp_path, device="cpu")
    assert calls == []
    assert np.array_equal(first, again)
    # One new utterance among cached ones: only it is computed.
    extra = _waves(1, seed=5)
    mixed = extract_embeddings(encoder, [waves[2], extra[0]], cache=tmp_path, device="cpu")
    assert calls == [1]
    assert np.array_equal(mixed[0], first[2])


def test_equal_waveforms_are_embedded_once_and_progress_counts_distinct_utterances(
    encoder: SpeakerEncoder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waves = _waves(3)
    listed = [waves[0], waves[1], waves[0].copy(), waves[2], waves[1]]
    calls: list[int] = []
    real = emb_mod.embed_waveforms

    def counting(enc: SpeakerEncoder, items: list[np.ndarray], **kw: object) -> np.ndarray:
        calls.append(len(items))
        return real(enc, items, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(emb_mod, "embed_waveforms", counting)
    seen: list[tuple[int, int]] = []
    out = extract_embeddings(
        encoder, listed, device="cpu", progress=lambda d, n: seen.append((d, n))
    )
    assert calls == [3]  # three distinct waveforms, one forward pass each
    assert np.array_equal(out[0], out[2]) and np.array_equal(out[1], out[4])
    assert not np.array_equal(out[0], out[1])
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    # With a cache: two cached, one new -> the counts start at the cache hits.
    extract_embeddings(encoder, waves[:2], cache=tmp_path, device="cpu")
    seen.clear()
    extract_embeddings(
        encoder, listed, cache=tmp_path, device="cpu", progress=lambda d, n: seen.append((d, n))
    )
    assert seen == [(2, 3), (3, 3)]


def test_model_hash_same_for_module_and_checkpoint_and_changes_with_weights(
    encoder: SpeakerEncoder, tmp_path: Path
) -> None:
    path = tmp_path / "m.pt"
    save_checkpoint(
        {
            "format": CHECKPOINT_FORMAT,
            "preset": encoder.preset.model_dump(mode="json"),
            "encoder": encoder.state_dict(),
        },
        path,
    )
    assert model_hash(path) == model_hash(encoder)
    torch.manual_seed(4)
    assert model_hash(SpeakerEncoder("tiny")) != model_hash(encoder)
    waves = _waves(2)
    assert np.array_equal(
        extract_embeddings(path, waves, device="cpu"), extract_embeddings(encoder, waves)
    )


def test_mean_normalization_ignores_padding() -> None:
    torch.manual_seed(0)
    feats = torch.randn(1, 50, 80) + 3.0
    padded = torch.cat([feats, torch.full((1, 30, 80), -50.0)], dim=1)
    alone = mean_normalize(feats)
    masked = mean_normalize(padded, torch.tensor([50 / 80]))
    assert torch.allclose(masked[:, :50], alone, atol=1e-5)
    assert torch.equal(masked[:, 50:], torch.zeros(1, 30, 80))
    assert alone.mean(dim=1).abs().max() < 1e-5
    fb = FilterbankFeatures()(torch.randn(2, SR))
    assert fb.shape == (2, 101, 80)


def test_bad_input_names_the_problem(encoder: SpeakerEncoder) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        extract_embeddings(encoder, [])
    with pytest.raises(InvalidInputError, match=r"waveforms\[1\].*float64"):
        extract_embeddings(encoder, [_waves(1)[0], np.zeros(SR)])
    with pytest.raises(InvalidInputError, match=r"waveforms\[0\].*2-D"):
        extract_embeddings(encoder, [np.zeros((2, SR), dtype=np.float32)])
    with pytest.raises(InvalidInputError, match=r"waveforms\[0\].*samples"):
        extract_embeddings(encoder, [np.zeros(100, dtype=np.float32)])
    with pytest.raises(InvalidInputError, match="NaN"):
        extract_embeddings(encoder, [np.full(SR, np.nan, dtype=np.float32)])
    with pytest.raises(ConfigError, match="strategy"):
        extract_embeddings(encoder, _waves(1), strategy="fastest")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="checkpoint not found"):
        extract_embeddings("/nonexistent/best.pt", _waves(1))
