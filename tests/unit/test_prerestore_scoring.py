"""Pre-restoration scoring, labels, grids, embedding of transformed versions, result and plot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from services.anonymizers.warps import TRANSFORM_FAMILIES
from services.attacker.models import SpeakerEncoder
from services.attacks.prerestore import (
    TransformEmbedder,
    UtteranceSet,
    enrollment_models,
    plot_per_parameter_eer,
    resolve_grids,
    run_prerestoration,
    score_prerestoration,
    transform_plan,
)
from services.attacks.prerestore_config import (
    PrerestorationConfig,
    anonymizer_family_of,
    attack_label,
    family_matches,
)
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.errors import InvalidInputError
from services.metrics import compute_eer


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("enrollment_model", ["speaker_mean", "per_utterance"])
@pytest.mark.parametrize("mode", ["enrollment", "trial"])
def test_scores_are_the_best_cosine_over_transforms(mode: str, enrollment_model: str) -> None:
    rng = np.random.default_rng(0)
    n_e, n_t, n_r, d = 6, 5, 4, 8
    enr_spk = np.array(["a", "a", "b", "b", "c", "c"])
    tri_spk = np.array(["a", "b", "c", "a", "b"])
    transformed = rng.standard_normal((n_e if mode == "enrollment" else n_t, n_r, d))
    fixed = rng.standard_normal((n_t if mode == "enrollment" else n_e, d))
    avg, models = enrollment_models(enr_spk, enrollment_model)  # type: ignore[arg-type]
    target = tri_spk[:, None] == models[None, :]
    got = score_prerestoration(transformed, fixed, avg, target, mode)  # type: ignore[arg-type]

    expected = np.empty((n_r, n_t, len(models)))
    for r in range(n_r):
        for t in range(n_t):
            for m in range(len(models)):
                if mode == "enrollment":
                    model = (avg[m][:, None] * transformed[:, r]).sum(0)
                    expected[r, t, m] = _cos(fixed[t], model)
                else:
                    model = (avg[m][:, None] * fixed).sum(0)
                    expected[r, t, m] = _cos(transformed[t, r], model)
    np.testing.assert_allclose(got.scores, expected.max(axis=0), atol=1e-12)
    np.testing.assert_array_equal(got.best_index, expected.argmax(axis=0))
    for r in range(n_r):
        eer = compute_eer(expected[r][target], expected[r][~target]).eer_percent
        assert got.per_parameter_eer_percent[r] == pytest.approx(eer)


def test_speaker_mean_models_average_each_speakers_utterances() -> None:
    avg, models = enrollment_models(["b", "a", "b", "b"], "speaker_mean")
    assert models.tolist() == ["a", "b"]
    np.testing.assert_allclose(avg, [[0, 1, 0, 0], [1 / 3, 0, 1 / 3, 1 / 3]])
    with pytest.raises(InvalidInputError, match="enrollment_model"):
        enrollment_models(["a"], "median")  # type: ignore[arg-type]


def test_zero_transforms_is_a_clear_error() -> None:
    avg, models = enrollment_models(["a", "b"], "speaker_mean")
    target = np.array([["a", "b"]]).T == models[None, :]
    for mode, transformed, fixed in (
        ("trial", np.zeros((2, 0, 4)), np.ones((2, 4))),
        ("enrollment", np.zeros((2, 0, 4)), np.ones((2, 4))),
    ):
        with pytest.raises(InvalidInputError, match="at least one transform"):
            score_prerestoration(transformed, fixed, avg, target, mode)  # type: ignore[arg-type]


def test_anonymizer_families_and_family_match() -> None:
    assert anonymizer_family_of("pitch", {"semitones": 3}) == "pitch"
    assert anonymizer_family_of("vtln", {"warp": "power"}) == "power"
    assert anonymizer_family_of("vtln", {}) == "bilinear"
    assert anonymizer_family_of("mcadams") == "mcadams"
    assert family_matches("pitch", "pitch") is True
    assert family_matches("power", "vtln") is True  # warp unknown: every warp matches
    assert family_matches("pitch", "vtln") is False
    assert family_matches("pitch", "mcadams") is False
    assert family_matches("pitch", None) is None


@pytest.mark.parametrize(
    ("attack_family", "anonymizer_family", "training", "enrollment", "label"),
    [
        # Liu et al.'s condition: recognizer trained on original speech, original enrollment. The
        # anonymizer's own family (Liu et al.'s bold cells) is not semi-informed: no retraining.
        ("pitch", "pitch", "original", "original", "lazy-informed"),
        ("power", "vtln", "original", "original", "lazy-informed"),
        ("power", "pitch", "original", "original", "ignorant"),
        ("pitch", "vtln", "original", "original", "ignorant"),
        ("pitch", "mcadams", "original", "original", "ignorant"),
        ("pitch", None, "original", "original", None),
        # Anonymized enrollment: the attacker ran the anonymizer (PROTOCOLS.md section 3).
        ("power", "pitch", "original", "anonymized", "lazy-informed"),
        ("pitch", None, "original", "anonymized", "lazy-informed"),
        # A recognizer trained on anonymized speech knows the anonymizer, whatever the family.
        ("pitch", "pitch", "anonymized", "original", "semi-informed"),
        ("power", "pitch", "anonymized", "anonymized", "semi-informed"),
        ("pitch", None, "anonymized", "original", "semi-informed"),
    ],
)
def test_label_depends_on_family_and_attacker_training(
    attack_family: str,
    anonymizer_family: str | None,
    training: str,
    enrollment: str,
    label: str | None,
) -> None:
    got = attack_label(attack_family, anonymizer_family, training, enrollment)  # type: ignore[arg-type]
    assert got == label


def test_label_rejects_unknown_conditions() -> None:
    with pytest.raises(InvalidInputError, match="attacker training"):
        attack_label("pitch", "pitch", "clean", "original")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="enrollment condition"):
        attack_label("pitch", "pitch", "original", "both")  # type: ignore[arg-type]


def test_enrollment_condition_defaults_to_seed_001s() -> None:
    assert PrerestorationConfig().enrollment == "original"
    assert PrerestorationConfig(enrollment="anonymized").enrollment == "anonymized"
    with pytest.raises(ValueError, match="enrollment"):
        PrerestorationConfig(enrollment="both")  # type: ignore[arg-type]


def test_grids_follow_table_1_and_custom_grids_need_the_identity() -> None:
    grids = resolve_grids(TRANSFORM_FAMILIES)
    assert {f: len(g) for f, g in grids.items()} == {
        "pitch": 23,
        "bilinear": 31,
        "quadratic": 21,
        "power": 21,
        "piecewise_linear": 21,
    }
    assert len(transform_plan(grids)) == 117
    assert resolve_grids(["pitch"], {"pitch": [-4, 0, 4]})["pitch"].tolist() == [-4, 0, 4]
    with pytest.raises(InvalidInputError, match="identity"):
        resolve_grids(["piecewise_linear"], {"piecewise_linear": [0.9, 1.1]})
    with pytest.raises(InvalidInputError, match="unknown pre-restoration family"):
        resolve_grids(["mcadams"])


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    torch.manual_seed(0)
    return SpeakerEncoder("tiny").eval()


@pytest.fixture(scope="module")
def voices() -> UtteranceSet:
    speakers = sample_speakers(3, seed=2)
    waves = [
        synthesize_utterance(s, np.random.default_rng(10 * i + j), duration_s=1.0)
        for i, s in enumerate(speakers)
        for j in range(3)
    ]
    return UtteranceSet(waves, [s.speaker_id for s in speakers for _ in range(3)])


@pytest.mark.parametrize("implementation", ["feature", "waveform"])
def test_identity_versions_are_the_attackers_embedding(
    encoder: SpeakerEncoder, voices: UtteranceSet, implementation: str
) -> None:
    plan = [("pitch", -2.0), ("pitch", 0.0), ("power", 0.0), ("power", 0.1)]
    wav = voices.waveforms[0]
    batched = TransformEmbedder(encoder, plan, implementation).embed(wav)  # type: ignore[arg-type]
    single = TransformEmbedder(encoder, plan, implementation, max_batch=1).embed(wav)  # type: ignore[arg-type]
    with torch.inference_mode():
        reference = encoder(torch.from_numpy(wav).unsqueeze(0))[0].numpy()
    np.testing.assert_allclose(batched[1], reference, rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(batched[1], batched[2])
    np.testing.assert_allclose(batched, single, rtol=1e-3, atol=1e-4)  # batching changes nothing
    assert not np.allclose(batched[0], batched[1], atol=1e-3)


@pytest.mark.slow
def test_run_prerestoration_result_is_json_and_plots(
    encoder: SpeakerEncoder, voices: UtteranceSet, tmp_path: Path
) -> None:
    result = run_prerestoration(
        encoder,
        voices,
        voices,
        families=["pitch", "bilinear"],
        anonymizer_family="pitch",
        attacker_training="original",
        enrollment_condition="original",
        grids={"pitch": [-2, 0, 2], "bilinear": [-0.1, 0.0, 0.1]},
    )
    data = json.loads(json.dumps(result.to_dict()))
    assert data["enrollment_condition"] == "original"
    assert data["attacker_training"] == "original"
    assert [
        (e["family"], e["mode"], e["label"], e["family_matches_anonymizer"])
        for e in data["entries"]
    ] == [
        ("pitch", "enrollment", "lazy-informed", True),
        ("pitch", "trial", "lazy-informed", True),
        ("bilinear", "enrollment", "ignorant", False),
        ("bilinear", "trial", "ignorant", False),
    ]
    assert result.n_models == 3 and result.n_target == 9 and result.n_nontarget == 18
    for e in result.entries:
        assert len(e.per_parameter_eer_percent) == 3
        assert sum(e.target_best_parameter_counts) == result.n_target
        # The identity column is the untransformed baseline.
        assert e.per_parameter_eer_percent[1] == pytest.approx(result.baseline_eer_percent)
    row = result.table()[0]
    assert row["trial_eer_percent"] == result.entry("pitch", "trial").eer_percent
    assert row["enrollment_condition"] == "original" and row["attacker_training"] == "original"
    names = plot_per_parameter_eer(result, tmp_path / "prerestore")
    assert names == ["prerestore.png", "prerestore.svg"]
    assert (tmp_path / "prerestore.png").stat().st_size > 1000


def test_run_prerestoration_rejects_sets_without_targets(
    encoder: SpeakerEncoder, voices: UtteranceSet
) -> None:
    other = UtteranceSet(voices.waveforms[:2], ["x", "y"])
    condition = {"attacker_training": "original", "enrollment_condition": "original"}
    with pytest.raises(InvalidInputError, match="target and non-target"):
        run_prerestoration(
            encoder, voices, other, families=["pitch"], grids={"pitch": [0]}, **condition
        )
    with pytest.raises(InvalidInputError, match="mode"):
        run_prerestoration(encoder, voices, voices, modes=["both"], **condition)  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="enrollment condition"):
        run_prerestoration(
            encoder,
            voices,
            voices,
            attacker_training="original",
            enrollment_condition="mixed",  # type: ignore[arg-type]
        )
