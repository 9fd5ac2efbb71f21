"""Invalid scoring input raises ValueError naming the problem."""

from __future__ import annotations

import numpy as np
import pytest

from services.scoring import CosineBackend, EmbeddingSet, TrialSet, score_trials, train_plda


def _arrays(n: int = 4, d: int = 3, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(n, d)),
        np.array(["a", "a", "b", "b"][:n]),
        np.array(["f", "f", "m", "m"][:n]),
    )


def test_dimension_mismatch() -> None:
    t, s, g = _arrays(d=3)
    e, _, _ = _arrays(d=5)
    with pytest.raises(ValueError, match=r"dimension mismatch.*d=3.*d=5"):
        TrialSet.from_arrays(t, s, g, e, s, g)


def test_empty_sets() -> None:
    t, s, g = _arrays()
    with pytest.raises(ValueError, match="trial: empty set"):
        TrialSet.from_arrays(np.empty((0, 3)), s[:0], g[:0], t, s, g)
    with pytest.raises(ValueError, match="enrollment: empty set"):
        TrialSet.from_arrays(t, s, g, np.empty((0, 3)), s[:0], g[:0])


def test_unknown_enrollment_speaker() -> None:
    t, s, g = _arrays()
    with pytest.raises(ValueError, match=r"unknown enrollment speaker.*\['b'\]"):
        TrialSet.from_arrays(t, s, g, t[:2], s[:2], g[:2])


@pytest.mark.parametrize("side", ["trial", "enrollment"])
def test_nan_embeddings(side: str) -> None:
    t, s, g = _arrays()
    bad = t.copy()
    bad[2, 1] = np.nan
    args = (bad, s, g, t, s, g) if side == "trial" else (t, s, g, bad, s, g)
    with pytest.raises(ValueError, match=rf"{side}: 1 embedding\(s\) contain NaN.*\[2\]"):
        TrialSet.from_arrays(*args)
    with pytest.raises(ValueError, match="NaN"):
        train_plda(bad, s, lda_dim=1, n_iter=1)


def test_bad_labels_and_modes() -> None:
    t, s, g = _arrays()
    with pytest.raises(ValueError, match="genders must be 'f' or 'm'"):
        EmbeddingSet(t, s, np.array(["f", "x", "m", "m"]), "trial")
    with pytest.raises(ValueError, match="speaker_ids has shape"):
        EmbeddingSet(t, s[:3], g, "trial")
    with pytest.raises(ValueError, match="both genders"):
        EmbeddingSet(t, s, np.array(["f", "m", "m", "m"]), "trial")
    ts = TrialSet.from_arrays(t, s, g, t, s, g)
    with pytest.raises(ValueError, match="enrollment must be one of"):
        score_trials(CosineBackend(), ts, enrollment="mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gender_mode must be one of"):
        score_trials(CosineBackend(), ts, gender_mode="split")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="memory_budget_bytes"):
        score_trials(CosineBackend(), ts, memory_budget_bytes=0)
