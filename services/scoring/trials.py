"""Trial data model for the scoring back-ends (PROTOCOLS.md section 4).

A :class:`TrialSet` holds trial embeddings and enrollment embeddings with their speaker ids and
genders. Every trial utterance is scored against every enrollment model (a speaker, or an
utterance); a pair is a *target* trial when both sides belong to the same speaker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

EnrollmentMode = Literal["speaker_mean", "per_utterance"]
"""``speaker_mean``: one model per enrollment speaker (default); ``per_utterance``: one each."""

GenderMode = Literal["pooled", "per_gender", "mixed"]
"""``pooled``: every trial against every model (default), cross-gender pairs included;
``per_gender``: same-gender pairs only, one trial list (and EER) per gender, headline = their mean
(VPC 2024); ``mixed``: the same same-gender pairs as ``per_gender`` in ONE trial list of both
genders, scored with one EER (one threshold for both genders)."""

Aggregation = Literal["none", "speaker_pair_mean"]
"""``none``: one score per trial utterance and model; ``speaker_pair_mean``: the mean score
over all pairs of a trial speaker and an enrollment model's speaker (Georgiou et al.'s
framework)."""

GENDERS: tuple[str, ...] = ("f", "m")


def check_choice(value: str, options: object, name: str) -> None:
    """Raise ``ValueError`` naming ``name`` when ``value`` is not one of the Literal ``options``."""
    allowed = get_args(options)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


@dataclass(frozen=True)
class EmbeddingSet:
    """Embeddings (n, d) with one speaker id and one gender ('f' | 'm') per row.

    Construction validates the arrays (shape, finiteness, genders, one gender per speaker) and
    raises ``ValueError`` naming the problem; ``name`` is used in those messages.
    """

    embeddings: np.ndarray
    speaker_ids: np.ndarray
    genders: np.ndarray
    name: str = "embeddings"

    def __post_init__(self) -> None:
        emb = np.asarray(self.embeddings)
        spk = np.asarray(self.speaker_ids).astype(str)
        gen = np.asarray(self.genders).astype(str)
        if emb.ndim != 2:
            raise ValueError(f"{self.name}: embeddings must be 2-D (n, d), got shape {emb.shape}")
        if emb.shape[0] == 0:
            raise ValueError(f"{self.name}: empty set (0 embeddings)")
        if emb.shape[1] == 0:
            raise ValueError(f"{self.name}: embeddings have dimension 0")
        if not np.issubdtype(emb.dtype, np.floating):
            emb = emb.astype(np.float64)
        bad = ~np.isfinite(emb).all(axis=1)
        if bad.any():
            rows = np.flatnonzero(bad)
            raise ValueError(
                f"{self.name}: {rows.size} embedding(s) contain NaN or inf (first rows: "
                f"{rows[:5].tolist()}, speaker {spk[rows[0]] if spk.size > rows[0] else '?'})"
            )
        for arr, field in ((spk, "speaker_ids"), (gen, "genders")):
            if arr.shape != (emb.shape[0],):
                raise ValueError(
                    f"{self.name}: {field} has shape {arr.shape}, expected ({emb.shape[0]},)"
                )
        unknown = sorted(set(np.unique(gen).tolist()) - set(GENDERS))
        if unknown:
            raise ValueError(f"{self.name}: genders must be 'f' or 'm', got {unknown[:5]}")
        # One gender per speaker: a speaker with two genders is a manifest error.
        uniq, inv = np.unique(spk, return_inverse=True)
        is_f = np.zeros(uniq.size, dtype=np.int64)
        np.add.at(is_f, inv, gen == "f")
        counts = np.bincount(inv, minlength=uniq.size)
        mixed = (is_f > 0) & (is_f < counts)
        if mixed.any():
            raise ValueError(
                f"{self.name}: speaker(s) with both genders: {uniq[mixed][:5].tolist()}"
            )
        object.__setattr__(self, "embeddings", emb)
        object.__setattr__(self, "speaker_ids", spk)
        object.__setattr__(self, "genders", gen)

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        return int(self.embeddings.shape[1])

    def __len__(self) -> int:
        return int(self.embeddings.shape[0])

    def speakers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sorted unique speaker ids, their genders, row -> speaker index)."""
        uniq, first, inv = np.unique(self.speaker_ids, return_index=True, return_inverse=True)
        return uniq, self.genders[first], inv

    def select(self, rows: np.ndarray) -> EmbeddingSet:
        """The subset at ``rows`` (boolean mask or indices)."""
        return EmbeddingSet(
            self.embeddings[rows], self.speaker_ids[rows], self.genders[rows], self.name
        )


@dataclass(frozen=True)
class TrialSet:
    """Trial and enrollment embeddings of one evaluation.

    Validation (``ValueError``): same embedding dimension on both sides, no empty side, every
    trial speaker has enrollment data (else it could have no target trial), and a speaker has the
    same gender on both sides.
    """

    trials: EmbeddingSet
    enrollment: EmbeddingSet

    def __post_init__(self) -> None:
        if self.trials.dim != self.enrollment.dim:
            raise ValueError(
                f"dimension mismatch: trial embeddings have d={self.trials.dim}, "
                f"enrollment embeddings d={self.enrollment.dim}"
            )
        t_spk, t_gen, _ = self.trials.speakers()
        e_spk, e_gen, _ = self.enrollment.speakers()
        missing = np.setdiff1d(t_spk, e_spk)
        if missing.size:
            raise ValueError(
                f"unknown enrollment speaker for {missing.size} trial speaker(s): "
                f"{missing[:5].tolist()} have trials but no enrollment utterance"
            )
        pos = np.searchsorted(e_spk, t_spk)
        clash = e_gen[pos] != t_gen
        if clash.any():
            raise ValueError(
                f"speaker(s) with different genders in trials and enrollment: "
                f"{t_spk[clash][:5].tolist()}"
            )

    @classmethod
    def from_arrays(
        cls,
        trial_embeddings: np.ndarray,
        trial_speaker_ids: np.ndarray,
        trial_genders: np.ndarray,
        enrollment_embeddings: np.ndarray,
        enrollment_speaker_ids: np.ndarray,
        enrollment_genders: np.ndarray,
    ) -> TrialSet:
        """Build and validate a trial set from plain arrays."""
        return cls(
            EmbeddingSet(trial_embeddings, trial_speaker_ids, trial_genders, "trial"),
            EmbeddingSet(
                enrollment_embeddings, enrollment_speaker_ids, enrollment_genders, "enrollment"
            ),
        )

    def by_gender(self, gender: str) -> TrialSet:
        """The same-gender sub-trial-set (no cross-gender pairs can be formed from it)."""
        t = self.trials.genders == gender
        e = self.enrollment.genders == gender
        if not t.any() or not e.any():
            raise ValueError(f"gender {gender!r}: no trial or no enrollment embeddings")
        return TrialSet(self.trials.select(t), self.enrollment.select(e))

    def genders_present(self) -> list[str]:
        """Genders present among the trial utterances, in GENDERS order."""
        present = set(np.unique(self.trials.genders).tolist())
        return [g for g in GENDERS if g in present]
