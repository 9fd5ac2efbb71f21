"""An operator's Hugging Face speaker-verification folder scored as it is
(services/attacker/hf_xvector.py): offline loading, deterministic normalized embeddings, a key
that names the weights, and clear errors for folders that are not such a model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from test_attacker_front_ends import _TINY_SSL, save_tiny_ssl
from transformers import WavLMConfig, WavLMForXVector

from services.attacker.hf_xvector import (
    check_hf_xvector_folder,
    hf_xvector_embeddings,
    hf_xvector_model_key,
)
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.errors import ConfigError
from services.pipeline.config import parse_config
from services.pipeline.config_checks import config_problems, pretrained_folder_problem


def save_tiny_wavlm_sv(folder: Path, seed: int = 1, do_normalize: bool | None = None) -> Path:
    """A randomly initialized 2-layer WavLM with an x-vector head (24-dim embeddings), saved as
    ``microsoft/wavlm-base-plus-sv`` is laid out (config.json + model.safetensors), with a
    ``preprocessor_config.json`` when ``do_normalize`` is given."""
    torch.manual_seed(seed)
    config = WavLMConfig(
        **_TINY_SSL,
        num_buckets=32,
        max_bucket_distance=100,
        tdnn_dim=(16, 16, 32),
        tdnn_kernel=(5, 3, 1),
        tdnn_dilation=(1, 2, 1),
        xvector_output_dim=24,
        num_labels=4,
    )
    WavLMForXVector(config).save_pretrained(folder)
    if do_normalize is not None:
        (folder / "preprocessor_config.json").write_text(
            json.dumps({"do_normalize": do_normalize, "sampling_rate": 16000})
        )
    return folder


def _waves(n: int, seconds: float = 1.2) -> list[np.ndarray]:
    speaker = sample_speakers(1, seed=3)[0]
    return [
        synthesize_utterance(speaker, np.random.default_rng(i), duration_s=seconds)
        for i in range(n)
    ]


def test_a_speaker_verification_folder_is_scored_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Offline: a hub lookup would fail loudly instead of reaching the network.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = save_tiny_wavlm_sv(tmp_path / "sv")
    waves = _waves(3)
    emb = hf_xvector_embeddings(folder, waves)
    assert emb.shape == (3, 24) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    # Each utterance alone: the same audio gives the same embedding in any company.
    np.testing.assert_allclose(hf_xvector_embeddings(folder, waves[1:2]), emb[1:2], atol=1e-5)
    # The waveform's scale does not matter when the extractor normalizes (its default) ...
    np.testing.assert_allclose(
        hf_xvector_embeddings(folder, [0.1 * w for w in waves[:1]]), emb[:1], atol=1e-4
    )
    # ... and does when the folder says do_normalize: false (wavlm-base-plus-sv's setting).
    raw = save_tiny_wavlm_sv(tmp_path / "raw", do_normalize=False)
    # Same config and weights, other embeddings: the key (an embed stage's) tells them apart.
    assert hf_xvector_model_key(raw) != hf_xvector_model_key(folder)
    loud, quiet = hf_xvector_embeddings(raw, [waves[0], 0.1 * waves[0]])
    assert float(loud @ quiet) < 0.9999
    other = save_tiny_wavlm_sv(tmp_path / "other", seed=2)
    assert hf_xvector_model_key(other) != hf_xvector_model_key(folder)


def test_folders_that_are_not_speaker_verification_models_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a folder"):
        check_hf_xvector_folder(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"config\.json not found"):
        check_hf_xvector_folder(tmp_path / "empty")
    # A WavLM without a verification head is an SSL front end, not a verifier.
    ssl = save_tiny_ssl(tmp_path / "ssl")
    with pytest.raises(ConfigError, match=r"ForXVector.*front_end: ssl"):
        check_hf_xvector_folder(ssl)
    sv = save_tiny_wavlm_sv(tmp_path / "sv")
    (sv / "model.safetensors").unlink()
    with pytest.raises(ConfigError, match="has no weights"):
        check_hf_xvector_folder(sv)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    problem = pretrained_folder_problem("hf-xvector", tmp_path / "bad")
    assert problem is not None and "not readable JSON" in problem
    # The ECAPA check names the attacker's field.
    problem = pretrained_folder_problem("ecapa", tmp_path / "missing")
    assert problem is not None and problem.startswith("pretrained_path: ")


def test_a_zoo_names_the_folder_and_the_preflight_checks_it(tmp_path: Path) -> None:
    member = {"name": "wavlm-sv", "pretrained": "hf-xvector", "pretrained_path": str(tmp_path)}
    cfg = parse_config({"attackers": [{"name": "baseline"}, member]})
    assert isinstance(cfg.attackers, list) and cfg.attackers[1].pretrained_path == tmp_path
    with pytest.raises(ConfigError, match="pretrained_path"):
        parse_config(
            {"attackers": [{"name": "baseline"}, {"name": "w", "pretrained": "hf-xvector"}]}
        )
    with pytest.raises(ConfigError, match="finetune fine-tunes pretrained: ge2e"):
        parse_config({"attackers": [{"name": "baseline"}, member | {"finetune": True}]})
    # The pre-flight check reads the folders of the zoo's verifiers before anything runs.
    (tmp_path / "ecapa").mkdir()
    cfg = parse_config(
        {
            "attackers": [
                {"name": "baseline"},
                member,
                {"name": "vox", "pretrained": "ecapa", "pretrained_path": str(tmp_path / "ecapa")},
            ]
        }
    )
    problems = [p for p in config_problems(cfg) if p.startswith("attackers (")]
    assert len(problems) == 2, problems
    assert problems[0].startswith(
        f"attackers (wavlm-sv): pretrained hf-xvector: {tmp_path / 'config.json'} not found"
    )
    assert (
        problems[1].startswith("attackers (vox): pretrained_path: ")
        and "embedding_model.ckpt" in problems[1]
    )
    save_tiny_wavlm_sv(tmp_path)
    assert not [p for p in config_problems(cfg) if p.startswith("attackers (wavlm-sv)")]


def test_the_strongest_zoo_adds_the_operators_verifiers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.attacker.recipes import zoo_specs
    from services.settings import get_settings

    monkeypatch.delenv("UNMASK_STRONGEST_ECAPA", raising=False)
    monkeypatch.delenv("UNMASK_STRONGEST_HF_XVECTOR", raising=False)
    get_settings.cache_clear()
    plain = [s.name for s in zoo_specs("strongest")]
    assert "ecapa" not in plain and "hf-xvector" not in plain
    monkeypatch.setenv("UNMASK_STRONGEST_HF_XVECTOR", str(tmp_path / "sv"))
    get_settings.cache_clear()
    try:
        specs = zoo_specs("strongest")
        assert [s.name for s in specs] == [*plain, "hf-xvector"]
        added = specs[-1]
        assert added.pretrained == "hf-xvector" and added.scored_as_is
        assert added.pretrained_path == tmp_path / "sv"
        # A folder that is not there is named before any work.
        problems = config_problems(parse_config({"attackers": "strongest"}))
        assert any(
            p.startswith("attackers (hf-xvector): pretrained hf-xvector: ") for p in problems
        )
    finally:
        get_settings.cache_clear()


SCENARIOS = ["original", "ignorant", "lazy-informed", "semi-informed"]


def test_the_estimate_counts_the_verifiers_embeddings(tmp_path: Path) -> None:
    from services.pipeline.estimates import (
        PHASE_SPEEDS,
        phase_seconds,
        recognizer_plan,
        synthetic_audio_sizes,
        synthetic_training_audio,
    )

    def embed_seconds(attackers: list[dict[str, object]]) -> float:
        cfg = parse_config(
            {"training": {"preset": "tiny"}, "scenarios": SCENARIOS, "attackers": attackers}
        )
        phases = phase_seconds(
            cfg,
            recognizer_plan(cfg),
            synthetic_training_audio(cfg),
            synthetic_audio_sizes(cfg),
            challenger=True,
        )
        assert phases is not None
        return phases["embed"]

    base = embed_seconds([{"name": "baseline"}])
    folder = str(tmp_path)
    with_sv = embed_seconds(
        [
            {"name": "baseline"},
            {"name": "sv", "pretrained": "hf-xvector", "pretrained_path": folder},
        ]
    )
    sizes = synthetic_audio_sizes(parse_config({"scenarios": SCENARIOS}))
    # Every scenario's enrollment and trials, original and anonymized, at its measured speed.
    expected = 2 * (sizes.enrollment_s + sizes.trial_s) / PHASE_SPEEDS.pretrained_hf_xvector
    assert with_sv - base == pytest.approx(expected)
    # Two members naming the same folder share their embeddings: counted once.
    twice = embed_seconds(
        [
            {"name": "baseline"},
            {"name": "sv", "pretrained": "hf-xvector", "pretrained_path": folder},
            {"name": "sv2", "pretrained": "hf-xvector", "pretrained_path": folder},
        ]
    )
    assert twice == pytest.approx(with_sv)
    # GE2E's anonymized sets are the challenger's: only the original ones are added.
    with_ge2e = embed_seconds([{"name": "baseline"}, {"name": "g", "pretrained": "ge2e"}])
    assert with_ge2e - base == pytest.approx(sizes.trial_s / PHASE_SPEEDS.challenger)


def test_an_utterance_shorter_than_the_models_context_is_embedded(tmp_path: Path) -> None:
    # Under the x-vector head's context (a few frames of 20 ms) the TDNN crashed or its
    # standard-deviation pooling over one frame gave nan; the utterance is padded with silence.
    folder = save_tiny_wavlm_sv(tmp_path / "sv")
    rng = np.random.default_rng(0)
    waves = [rng.standard_normal(n).astype(np.float32) for n in (400, 1600, 3200)]
    emb = hf_xvector_embeddings(folder, waves)
    assert np.isfinite(emb).all()
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_a_config_whose_architectures_is_not_a_list_is_named(tmp_path: Path) -> None:
    sv = save_tiny_wavlm_sv(tmp_path / "sv")
    config = json.loads((sv / "config.json").read_text())
    (sv / "config.json").write_text(json.dumps(config | {"architectures": 3}))
    with pytest.raises(ConfigError, match="none a speaker-verification head"):
        check_hf_xvector_folder(sv)


def test_a_folder_whose_weights_change_is_loaded_again(tmp_path: Path) -> None:
    # A worker embeds many jobs: new weights in the same folder get a new key, and must give
    # that key's embeddings, not those of the model loaded before.
    folder = save_tiny_wavlm_sv(tmp_path / "sv", seed=1)
    waves = _waves(2)
    before = hf_xvector_embeddings(folder, waves)
    save_tiny_wavlm_sv(tmp_path / "fresh", seed=2)
    expected = hf_xvector_embeddings(tmp_path / "fresh", waves)
    save_tiny_wavlm_sv(folder, seed=2)
    after = hf_xvector_embeddings(folder, waves)
    assert not np.allclose(after, before, atol=1e-4)
    np.testing.assert_allclose(after, expected, atol=1e-5)
