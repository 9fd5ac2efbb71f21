"""Pre-restoration against pitch anonymization, with a small attacker trained on original speech.

The ignorant attacker (tiny ECAPA, trained a few epochs on 16 original utterances of each of 10
synthetic speakers) scores enrollment (original) against trials pitch-shifted by +4 semitones. Pitch
pre-restoration of the trials (Liu et al. eq. 5) must undo much of the damage, with the winning
parameter near the inverse shift (-4), and the feature-domain and waveform-domain implementations
must agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from services.anonymizers.builtin import finish_waveform
from services.anonymizers.pitch import pitch_shift
from services.attacker.models import SpeakerEncoder
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import TrainingItem
from services.attacks.prerestore import (
    PrerestorationResult,
    UtteranceSet,
    run_prerestoration,
)
from services.corpus.synthetic import sample_speakers, synthesize_utterance

pytestmark = pytest.mark.slow

SHIFT = 4.0
N_SPEAKERS, N_TRAIN, N_ENROLL, N_TRIAL = 10, 16, 2, 4
SEED_001: dict[str, Any] = {"attacker_training": "original", "enrollment_condition": "original"}


@pytest.fixture(scope="module")
def single_thread() -> Iterator[None]:
    # Two threads on a shared 2-core machine spin against other jobs (measured 10-30x slower).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def setup(
    tmp_path_factory: pytest.TempPathFactory, single_thread: None
) -> tuple[SpeakerEncoder, UtteranceSet, UtteranceSet, UtteranceSet]:
    speakers = sample_speakers(N_SPEAKERS, seed=0)
    n = N_TRAIN + N_ENROLL + N_TRIAL
    waves = {
        s.speaker_id: [
            synthesize_utterance(s, np.random.default_rng(1000 * i + j), duration_s=3.0)
            for j in range(n)
        ]
        for i, s in enumerate(speakers)
    }
    train = [TrainingItem(w, spk) for spk, ws in waves.items() for w in ws[:N_TRAIN]]
    config = TrainingConfig(
        preset="tiny", epochs=12, batch_size=12, crop_seconds=2.0, lr=3e-3, device="cpu"
    )
    attacker = train_attacker(train, [], config, tmp_path_factory.mktemp("attacker"), resume=False)
    enrollment = UtteranceSet(
        [w for ws in waves.values() for w in ws[N_TRAIN : N_TRAIN + N_ENROLL]],
        [spk for spk in waves for _ in range(N_ENROLL)],
    )
    original = [w for ws in waves.values() for w in ws[N_TRAIN + N_ENROLL :]]
    trial_speakers = [spk for spk in waves for _ in range(N_TRIAL)]
    shifted = [finish_waveform(pitch_shift(w.astype(np.float64), SHIFT), w) for w in original]
    return (
        attacker.load_encoder(),
        enrollment,
        UtteranceSet(original, trial_speakers),
        UtteranceSet(shifted, trial_speakers),
    )


@pytest.fixture(scope="module")
def attack(
    setup: tuple[SpeakerEncoder, UtteranceSet, UtteranceSet, UtteranceSet],
) -> PrerestorationResult:
    encoder, enrollment, _, anonymized = setup
    return run_prerestoration(
        encoder, enrollment, anonymized, families=["pitch"], anonymizer_family="pitch", **SEED_001
    )


def test_trial_prerestoration_lowers_the_ignorant_attackers_eer(
    setup: tuple[SpeakerEncoder, UtteranceSet, UtteranceSet, UtteranceSet],
    attack: PrerestorationResult,
) -> None:
    encoder, enrollment, original, _ = setup
    clean = run_prerestoration(
        encoder, enrollment, original, ["pitch"], ["trial"], grids={"pitch": [0]}, **SEED_001
    )
    trial = attack.entry("pitch", "trial")
    # The anonymization works against the ignorant attacker...
    assert attack.baseline_eer_percent > clean.baseline_eer_percent + 15.0
    # ...and pre-restoring the trials takes a large part of it back. With 8 training utterances
    # per speaker the attacker was too weak for this to hold across machines and seeds (gains of
    # 1.1-12.8 points over training seeds 0-2, and a failed fresh-clone run at 1.5); with 16
    # (clean EER 0.3-1.5 %) seeds 0, 1, 2 gave baselines of 43.5, 42.1, 38.5 % and trial
    # pre-restoration 26.2, 27.4, 26.9 % (40 target trials, 2.5 points each). On 400 target
    # trials (benchmarks/prerestore.py --validate): 19.2 and 18.2 % against a 49.3 % baseline.
    assert trial.eer_percent < attack.baseline_eer_percent - 5.0
    # Trained on original speech: knowing the family without retraining is lazy-informed.
    assert trial.label == "lazy-informed" and trial.family_matches_anonymizer
    assert attack.enrollment_condition == "original"
    # Pre-restoring the enrollment instead recovers part of it too (32.9, 22.6, 29.2 % for seeds
    # 0-2). Liu et al. reports trial pre-restoration beating enrollment pre-restoration; with this
    # tiny attacker the order changes with the seed (seed 1 has enrollment winning), so the
    # order is a property of the attacker and data, not an invariant of the implementation.
    assert attack.entry("pitch", "enrollment").eer_percent < attack.baseline_eer_percent - 5.0


def test_the_best_parameter_is_near_the_inverse_shift(attack: PrerestorationResult) -> None:
    trial = attack.entry("pitch", "trial")
    assert abs(trial.best_parameter_by_eer + SHIFT) <= 1.0
    assert abs(trial.median_target_best_parameter + SHIFT) <= 1.0
    params = np.array(trial.parameters)
    counts = np.array(trial.target_best_parameter_counts)
    assert counts[np.abs(params + SHIFT) <= 1.0].sum() >= 0.6 * counts.sum()
    # Transforming the enrollment side wins by moving it the other way (+4).
    assert abs(attack.entry("pitch", "enrollment").median_target_best_parameter - SHIFT) <= 1.0


def test_feature_and_waveform_implementations_agree(
    setup: tuple[SpeakerEncoder, UtteranceSet, UtteranceSet, UtteranceSet], tmp_path: Path
) -> None:
    encoder, enrollment, _, anonymized = setup
    grids = {"pitch": [-6.0, -5.0, -4.0, -3.0, -2.0, 0.0]}
    feature, waveform = (
        run_prerestoration(
            encoder, enrollment, anonymized, ["pitch"], ["trial"], impl, grids=grids, **SEED_001
        )
        for impl in ("feature", "waveform")
    )
    f, w = feature.entry("pitch", "trial"), waveform.entry("pitch", "trial")
    assert feature.baseline_eer_percent == pytest.approx(waveform.baseline_eer_percent, abs=1e-6)
    # 40 target trials: one trial is 2.5 pp, so this small set is checked to 5 pp. A tighter
    # bound cannot be resolved here: even on 40 speakers x 10 trials (400 target trials,
    # `benchmarks/prerestore.py --validate`) the speaker-bootstrap SE of the difference is
    # 0.7-2.2 pp (docs/performance.md).
    assert abs(f.eer_percent - w.eer_percent) <= 5.0
    curve_f, curve_w = np.array(f.per_parameter_eer_percent), np.array(w.per_parameter_eer_percent)
    assert np.max(np.abs(curve_f - curve_w)) <= 7.5
    assert f.best_parameter_by_eer == w.best_parameter_by_eer
