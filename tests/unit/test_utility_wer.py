"""WER / CER against hand-computed cases, and the speaker-level bootstrap of the WER increase."""

from __future__ import annotations

import numpy as np
import pytest

from services.errors import InvalidInputError
from services.utility.wer import compare_wer, error_rates, normalize_text, utterance_counts


def test_normalize_text() -> None:
    assert normalize_text("  Hello, world!  It's   fine.\n") == "HELLO WORLD IT'S FINE"
    assert normalize_text("u12 u3  u40") == "U12 U3 U40"
    assert normalize_text("semi-informed_x") == "SEMI INFORMED X"
    assert normalize_text("...") == ""


@pytest.mark.parametrize(
    ("ref", "hyp", "wer", "cer", "sdi"),
    [
        # one substitution of 4 words; "CAT" -> "BAT": 1 of 16 characters (spaces count)
        ("the cat sat down", "the bat sat down", 25.0, 100.0 / 16, (1, 0, 0)),
        # one insertion: 1 / 3 words; 4 inserted characters " BIG" of 11
        ("a cat sat", "a big cat sat", 100.0 / 3, 400.0 / 9, (0, 0, 1)),
        # one deletion: 1 / 4 words; "SAT " deleted: 4 of 16 characters
        ("the cat sat down", "the cat down", 25.0, 400.0 / 16, (0, 1, 0)),
        # empty hypothesis: every word and character deleted
        ("one two", "", 100.0, 100.0, (0, 2, 0)),
        # casing and punctuation are not errors
        ("It's here.", "IT'S HERE", 0.0, 0.0, (0, 0, 0)),
    ],
)
def test_error_rates_hand_computed(
    ref: str, hyp: str, wer: float, cer: float, sdi: tuple[int, int, int]
) -> None:
    out = error_rates([ref], [hyp])
    assert out["wer_percent"] == pytest.approx(wer)
    assert out["cer_percent"] == pytest.approx(cer)
    assert (out["substitutions"], out["deletions"], out["insertions"]) == sdi
    assert out["n_words"] == len(ref.split())


def test_error_rates_pool_over_utterances() -> None:
    # 1 error in 4 words + 2 errors in 2 words = 3 / 6 pooled (not the mean of 25 % and 100 %).
    out = error_rates(["a b c d", "e f"], ["a b x d", ""])
    assert out["wer_percent"] == pytest.approx(50.0)
    counts = utterance_counts(["a b c d", "e f"], ["a b x d", ""])
    assert counts["word_errors"].tolist() == [1, 2]
    assert counts["words"].tolist() == [4, 2]
    assert counts["chars"].tolist() == [7, 3]
    assert counts["char_errors"].tolist() == [1, 3]


def test_bad_input_is_named() -> None:
    with pytest.raises(InvalidInputError, match="2 references but 1 hypotheses"):
        error_rates(["a", "b"], ["a"])
    with pytest.raises(InvalidInputError, match="empty after normalization"):
        error_rates(["a", "?!"], ["a", "b"])
    with pytest.raises(InvalidInputError, match="speaker labels"):
        compare_wer(["a"], ["a"], ["a"], [], resamples=10, seed=0)


def _corpus(seed: int) -> tuple[list[str], list[str], list[str], list[str]]:
    """20 speakers x 5 utterances of 6 words; the anonymized hypotheses drop words more often."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{k}" for k in range(30)]
    refs, orig, anon, spk = [], [], [], []
    for s in range(20):
        hard = rng.uniform(0.0, 0.3)  # per-speaker difficulty: speakers differ, as in real data
        for _ in range(5):
            words = list(rng.choice(vocab, 6))
            refs.append(" ".join(words))
            orig.append(" ".join(w for w in words if rng.random() > hard / 3))
            anon.append(" ".join(w for w in words if rng.random() > hard))
            spk.append(f"s{s:02d}")
    return refs, orig, anon, spk


def test_compare_wer_point_estimates_and_intervals() -> None:
    refs, orig, anon, spk = _corpus(0)
    out = compare_wer(refs, orig, anon, spk, resamples=500, seed=1)
    assert out["wer_original_percent"] == pytest.approx(error_rates(refs, orig)["wer_percent"])
    assert out["wer_anonymized_percent"] == pytest.approx(error_rates(refs, anon)["wer_percent"])
    assert out["cer_anonymized_percent"] == pytest.approx(error_rates(refs, anon)["cer_percent"])
    assert out["wer_increase_percent"] == pytest.approx(
        out["wer_anonymized_percent"] - out["wer_original_percent"]
    )
    assert out["wer_increase_percent"] > 0
    assert (out["n_utterances"], out["n_speakers"], out["n_words"]) == (100, 20, 600)
    lo, hi = out["wer_anonymized_ci95_percent"]
    assert lo < out["wer_anonymized_percent"] < hi
    lo, hi = out["wer_increase_ci95_percent"]
    assert lo < out["wer_increase_percent"] < hi
    assert hi - lo > 0.5  # speakers differ: the interval has width
    # Seeded: the same seed gives the same intervals, another seed other ones.
    assert compare_wer(refs, orig, anon, spk, resamples=500, seed=1) == out
    other = compare_wer(refs, orig, anon, spk, resamples=500, seed=2)
    assert other["wer_increase_ci95_percent"] != out["wer_increase_ci95_percent"]


def test_identical_hypotheses_increase_nothing() -> None:
    refs, orig, _, spk = _corpus(3)
    out = compare_wer(refs, orig, list(orig), spk, resamples=200, seed=0)
    assert out["wer_increase_percent"] == 0.0
    assert out["wer_increase_ci95_percent"] == [0.0, 0.0]
    assert out["cer_original_percent"] == out["cer_anonymized_percent"]
    none = compare_wer(refs, orig, orig, spk, resamples=0, seed=0)
    assert none["wer_increase_ci95_percent"] is None and none["wer_anonymized_ci95_percent"] is None
