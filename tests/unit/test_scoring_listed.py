"""Fixed trial lists: exactly the listed pairs are scored and counted (VoicePrivacy trials)."""

from __future__ import annotations

import numpy as np
import pytest

from services.metrics import compute_eer
from services.scoring import CosineBackend, ScoreMatrix, TrialSet, eer_report, score_trials
from services.scoring.listed import score_listed_trials
from services.scoring.scorer import per_speaker_eer_report
from services.scoring.synthetic import make_synthetic_speakers


def _sets(seed: int = 0) -> tuple[TrialSet, np.ndarray]:
    rng = np.random.default_rng(seed)
    spk = make_synthetic_speakers(8, 16, rng, between_scale=1.0, within_scale=0.7)
    e, e_spk, e_gen = spk.sample(3, rng)
    t, t_spk, t_gen = spk.sample(4, rng)
    ids = np.array([f"u{i:03d}" for i in range(len(t))])
    return TrialSet.from_arrays(t, t_spk, t_gen, e, e_spk, e_gen), ids


def _naive_cos(x: np.ndarray, y: np.ndarray) -> float:
    return float(x @ y / np.sqrt((x @ x) * (y @ y)))


def _pairs(ts: TrialSet, ids: np.ndarray, rng: np.random.Generator) -> list[tuple[str, str]]:
    """A random half of the same-gender pairs plus two cross-gender pairs (a mixed list)."""
    spk = np.unique(ts.enrollment.speaker_ids)
    gender = dict(zip(ts.enrollment.speaker_ids, ts.enrollment.genders, strict=True))
    same = [
        (str(s), str(u))
        for s in spk
        for u, g in zip(ids, ts.trials.genders, strict=True)
        if gender[s] == g
    ]
    keep = [same[i] for i in sorted(rng.choice(len(same), len(same) // 2, replace=False))]
    cross = [
        (str(s), str(u))
        for s in spk
        for u, g in zip(ids, ts.trials.genders, strict=True)
        if gender[s] != g
    ][:2]
    return keep + cross


@pytest.mark.parametrize("gender_mode", ["pooled", "per_gender", "mixed"])
def test_only_listed_pairs_are_scored_and_counted(gender_mode: str) -> None:
    ts, ids = _sets()
    pairs = _pairs(ts, ids, np.random.default_rng(1))
    listed = score_listed_trials(
        CosineBackend(),
        ts.trials,
        ids,
        ts.enrollment,
        pairs,
        gender_mode=gender_mode,  # type: ignore[arg-type]
    )
    # Each pair's score is the cosine of its trial and its speaker's mean enrollment embedding.
    row = {u: i for i, u in enumerate(ids)}
    for k, (s, u) in enumerate(pairs):
        model = ts.enrollment.embeddings[ts.enrollment.speaker_ids == s].mean(axis=0)
        assert listed.pair_scores[k] == pytest.approx(
            _naive_cos(ts.trials.embeddings[row[u]], model), abs=1e-5
        )
        assert listed.pair_is_target[k] == (ts.trials.speaker_ids[row[u]] == s)
    n_tar = int(listed.pair_is_target.sum())
    report = eer_report(listed.scored)
    parts = listed.scored.partitions.values()
    assert sum(m.target_nontarget().target.size for m in parts) == n_tar
    assert sum(m.target_nontarget().nontarget.size for m in parts) == len(pairs) - n_tar
    # The EER is the one of exactly the listed scores.
    tar = listed.pair_scores[listed.pair_is_target]
    non = listed.pair_scores[~listed.pair_is_target]
    if gender_mode == "per_gender":
        genders = ts.trials.genders[[row[u] for _, u in pairs]]
        for g, result in report.per_gender.items():
            sel = genders == g
            expected = compute_eer(
                listed.pair_scores[sel & listed.pair_is_target],
                listed.pair_scores[sel & ~listed.pair_is_target],
            )
            assert result.eer_percent == pytest.approx(expected.eer_percent)
    else:
        assert report.eer_percent == pytest.approx(compute_eer(tar, non).eer_percent, abs=1e-4)
    per_speaker = per_speaker_eer_report(listed.scored)
    assert per_speaker.eer_percent.size == np.unique(ts.trials.speaker_ids).size


def test_every_pair_listed_equals_score_trials() -> None:
    ts, ids = _sets(3)
    pairs = [(str(s), str(u)) for s in np.unique(ts.enrollment.speaker_ids) for u in ids]
    listed = score_listed_trials(CosineBackend(), ts.trials, ids, ts.enrollment, pairs)
    full = score_trials(CosineBackend(), ts)
    assert eer_report(listed.scored).eer_percent == pytest.approx(eer_report(full).eer_percent)


def test_unknown_and_repeated_pairs_are_refused() -> None:
    ts, ids = _sets()
    spk = str(ts.enrollment.speaker_ids[0])
    with pytest.raises(ValueError, match="trial utterance 'nope'"):
        score_listed_trials(CosineBackend(), ts.trials, ids, ts.enrollment, [(spk, "nope")])
    with pytest.raises(ValueError, match="enrollment speaker 'who'"):
        score_listed_trials(CosineBackend(), ts.trials, ids, ts.enrollment, [("who", ids[0])])
    with pytest.raises(ValueError, match="listed twice"):
        score_listed_trials(
            CosineBackend(), ts.trials, ids, ts.enrollment, [(spk, ids[0]), (spk, ids[0])]
        )


def test_unlisted_matrix_is_unchanged() -> None:
    m = ScoreMatrix(
        np.array([[0.9, 0.1], [0.2, 0.8]]),
        np.array(["a", "b"]),
        np.array(["f", "m"]),
        np.array(["a", "b"]),
        np.array(["f", "m"]),
    )
    assert m.trial_mask().all()
    assert m.target_nontarget().target.tolist() == [0.9, 0.8]
    listed = ScoreMatrix(
        m.scores,
        m.row_speaker_ids,
        m.row_genders,
        m.col_speaker_ids,
        m.col_genders,
        np.array([[True, False], [True, True]]),
    )
    split = listed.target_nontarget()
    assert split.target.tolist() == [0.9, 0.8] and split.nontarget.tolist() == [0.2]
