"""Word and character error rates (%) of an ASR, and the WER increase anonymization causes.

The alignment is jiwer's (Levenshtein over words, or over characters for the CER, spaces
included); nothing here computes an edit distance itself. WER = (S + D + I) / N over all
utterances pooled (N reference words), in %; it can exceed 100 % with many insertions.

``compare_wer`` reports original vs anonymized WER on the same references and their difference,
with a speaker-level bootstrap interval: utterances of one speaker are not independent, so each
resample draws as many speakers as there are, with replacement, and pools every utterance of each
drawn speaker once per draw (as ``services.metrics.bootstrap`` does for the EER). The per-utterance
error and word counts are computed once; the resampling is a matrix product of speaker
multiplicities with per-speaker counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import jiwer
import numpy as np
import numpy.typing as npt

from services.errors import InvalidInputError
from services.metrics import catalogue
from services.metrics.bootstrap import _speaker_multiplicities

IntArray = npt.NDArray[np.int64]

_PUNCTUATION = re.compile(r"[^\w\s']|_")


def normalize_text(s: str) -> str:
    """Upper-case, punctuation removed (apostrophes kept: DON'T), whitespace collapsed.

    Applied to references and hypotheses alike before scoring, so casing and punctuation of a
    corpus's transcripts or an operator's recognizer never count as errors.
    """
    return " ".join(_PUNCTUATION.sub(" ", s.upper()).split())


def _check_pairs(refs: Sequence[str], hyps: Sequence[str], what: str) -> None:
    if len(refs) != len(hyps):
        raise InvalidInputError(
            f"{what}: {len(refs)} references but {len(hyps)} hypotheses; give one per utterance"
        )
    if not refs:
        raise InvalidInputError(f"{what}: no utterances to score")


def _normalized(refs: Sequence[str], hyps: Sequence[str]) -> tuple[list[str], list[str]]:
    r = [normalize_text(t) for t in refs]
    empty = [k for k, t in enumerate(r) if not t]
    if empty:
        raise InvalidInputError(
            f"{len(empty)} reference transcript(s) are empty after normalization (first at "
            f"position {empty[0]}); drop those utterances or fix the manifest's `text`"
        )
    return r, [normalize_text(t) for t in hyps]


def _errors_per_utterance(alignments: list[list[Any]]) -> IntArray:
    """S + D + I of each utterance from jiwer's alignment chunks (counted, not recomputed)."""
    out = np.zeros(len(alignments), dtype=np.int64)
    for k, chunks in enumerate(alignments):  # a few chunks per utterance, not per frame
        out[k] = sum(
            (c.hyp_end_idx - c.hyp_start_idx)
            if c.type == "insert"
            else (c.ref_end_idx - c.ref_start_idx)
            for c in chunks
            if c.type != "equal"
        )
    return out


def utterance_counts(refs: Sequence[str], hyps: Sequence[str]) -> dict[str, IntArray]:
    """Per-utterance counts after ``normalize_text``: ``word_errors``, ``words`` (reference),
    ``char_errors``, ``chars`` (reference characters, spaces included)."""
    _check_pairs(refs, hyps, "error rates")
    r, h = _normalized(refs, hyps)
    words = jiwer.process_words(r, h)
    chars = jiwer.process_characters(r, h)
    return {
        "word_errors": _errors_per_utterance(words.alignments),
        "words": np.array([len(x) for x in words.references], dtype=np.int64),
        "char_errors": _errors_per_utterance(chars.alignments),
        "chars": np.array([len(x) for x in chars.references], dtype=np.int64),
    }


def error_rates(refs: list[str], hyps: list[str]) -> dict[str, Any]:
    """Pooled WER and CER (%) of ``hyps`` against ``refs`` (one per utterance, normalized first).

    Returns ``wer_percent``, ``cer_percent``, ``substitutions``, ``deletions``, ``insertions``
    (word level), ``n_words``, ``n_chars`` and ``n_utterances``. An empty hypothesis is all
    deletions (WER 100 % for that utterance); empty references are refused.
    """
    _check_pairs(refs, hyps, "error rates")
    r, h = _normalized(refs, hyps)
    words = jiwer.process_words(r, h)
    chars = jiwer.process_characters(r, h)
    n_words = words.hits + words.substitutions + words.deletions
    n_chars = chars.hits + chars.substitutions + chars.deletions
    return {
        "wer_percent": 100.0 * words.wer,
        "cer_percent": 100.0 * chars.cer,
        "substitutions": words.substitutions,
        "deletions": words.deletions,
        "insertions": words.insertions,
        "n_words": n_words,
        "n_chars": n_chars,
        "n_utterances": len(r),
    }


def _percentile_interval(samples: npt.NDArray[np.float64]) -> list[float]:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return [float(lo), float(hi)]


def compare_wer(
    refs: list[str],
    hyps_original: list[str],
    hyps_anonymized: list[str],
    speakers: list[str],
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """WER / CER (%) of the ASR on original and on anonymized speech of the same utterances.

    ``speakers[k]`` is the speaker of utterance ``k``. ``wer_increase_percent`` is anonymized
    minus original WER in percentage points. The 95 % intervals are speaker-level bootstrap
    percentile intervals over ``resamples`` resamples (seeded by ``seed``; original and anonymized
    WER are resampled together, so the increase's interval is paired); ``None`` when
    ``resamples`` is 0.
    """
    if not len(refs) == len(hyps_original) == len(hyps_anonymized) == len(speakers):
        raise InvalidInputError(
            f"compare_wer: {len(refs)} references, {len(hyps_original)} original and "
            f"{len(hyps_anonymized)} anonymized hypotheses, {len(speakers)} speaker labels; "
            "give one of each per utterance"
        )
    if resamples < 0:
        raise InvalidInputError(f"resamples must be >= 0, got {resamples}")
    orig = utterance_counts(refs, hyps_original)
    anon = utterance_counts(refs, hyps_anonymized)
    spk_ids, spk_index = np.unique(np.asarray(speakers, dtype=str), return_inverse=True)
    n_spk = len(spk_ids)

    def per_speaker(x: IntArray) -> IntArray:
        return np.bincount(spk_index, weights=x, minlength=n_spk).astype(np.int64)

    words = per_speaker(orig["words"])
    err_o, err_a = per_speaker(orig["word_errors"]), per_speaker(anon["word_errors"])
    n_words = int(words.sum())
    wer_o = 100.0 * err_o.sum() / n_words
    wer_a = 100.0 * err_a.sum() / n_words
    n_chars = int(orig["chars"].sum())
    out: dict[str, Any] = {
        catalogue.WER_ORIGINAL.key: float(wer_o),
        catalogue.WER_ANONYMIZED.key: float(wer_a),
        catalogue.WER_INCREASE.key: float(wer_a - wer_o),
        "cer_original_percent": float(100.0 * orig["char_errors"].sum() / n_chars),
        "cer_anonymized_percent": float(100.0 * anon["char_errors"].sum() / n_chars),
        "wer_anonymized_ci95_percent": None,
        "wer_increase_ci95_percent": None,
        "bootstrap_resamples": resamples,
        "n_utterances": len(refs),
        "n_speakers": n_spk,
        "n_words": n_words,
    }
    if resamples > 0:
        mult = _speaker_multiplicities(n_spk, resamples, np.random.default_rng(seed))
        # Every speaker has >= 1 reference word (empty references are refused), so no resample
        # has a zero denominator.
        total = (mult @ words).astype(np.float64)
        boot_o = 100.0 * (mult @ err_o) / total
        boot_a = 100.0 * (mult @ err_a) / total
        out["wer_anonymized_ci95_percent"] = _percentile_interval(boot_a)
        out["wer_increase_ci95_percent"] = _percentile_interval(boot_a - boot_o)
    return out


__all__ = ["compare_wer", "error_rates", "normalize_text", "utterance_counts"]
