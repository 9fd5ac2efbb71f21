"""Similarity rank disclosure on several representations (Chandra et al.; PROTOCOLS.md section 5).

Inputs and references. The evaluation speakers' enrollment and trial utterances are pooled;
``split_inputs_references`` then puts, for every speaker with at least 2 pooled utterances,
``clip(round(reference_fraction * n), 1, n - 1)`` of its utterances (a seeded random choice,
default fraction 1/2) into its **reference** and the others into the **inputs**. Inputs and
references are therefore utterance-disjoint and there is exactly one reference per speaker
(N = number of kept speakers). Speakers with a single utterance are dropped (and listed).

Representations (each gives its own SRD row):

- **speaker embeddings** (any recognizer, e.g. the ignorant and the semi-informed attacker's):
  a reference is the mean of its utterances' embeddings; similarity = cosine;
- **F0** (`services.attacks.f0`): pYIN 65-450 Hz, voiced frames only; an input's histogram is
  its own, a reference's is pooled over all its utterances' voiced frames; similarity = minus
  the Euclidean distance between the normalized histograms. Inputs without any voiced frame
  cannot be ranked and are left out (counted in the result);
- **phone units** (`services.attacks.phone_units`): k-means codebook learned on attacker-train
  speech, 20-segment codebook histograms; similarity = minus the Euclidean distance.

For each representation: matching ranks (ties by ``tie_rule``: the expected rank under random
tie breaking by default, the attacker's best case on request), empirical and beta-binomial SRD
(`services.metrics.compute_srd`), speaker-level bootstrap intervals of MeanD and IdR
(`services.metrics.bootstrap_srd`), and a rank histogram plot.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, Field

from services.attacks.f0 import F0ExtractionStats, F0Params, f0_histograms, f0_tracks
from services.attacks.phone_units import (
    PhoneUnitParams,
    learn_codebook,
    phone_unit_embeddings,
)
from services.metrics import SRDResult, bootstrap_srd, compute_srd, matching_ranks
from services.metrics.srd import TieRule
from services.scoring.cosine import cosine_score_matrix
from services.scoring.pairs import group_means

Representation = Literal["embeddings", "f0", "phone_units"]

SPLIT_RULE = (
    "per speaker: a seeded random clip(round(reference_fraction * n), 1, n - 1) of its n pooled "
    "enrollment + trial utterances form its reference, the rest are inputs; speakers with n < 2 "
    "are dropped"
)


class SRDRepresentationsConfig(BaseModel):
    """Settings of the SRD-on-representations analysis (defaults: PROTOCOLS.md section 5)."""

    model_config = ConfigDict(extra="forbid")

    representations: list[Representation] = Field(
        default_factory=lambda: list[Representation](["embeddings", "f0", "phone_units"]),
        description="Which representations to rank: embeddings (those passed in), f0, phone_units.",
    )
    reference_fraction: float = Field(
        0.5,
        gt=0.0,
        lt=1.0,
        description="Share of each speaker's pooled utterances in its reference.",
    )
    f0_fmin_hz: float = Field(65.0, gt=0.0, description="pYIN lowest F0 (Hz).")
    f0_fmax_hz: float = Field(450.0, gt=0.0, description="pYIN highest F0 (Hz).")
    f0_resolution_semitones: float = Field(
        1.0 / 3.0, gt=0.0, le=1.0, description="pYIN grid step and histogram bin (semitones)."
    )
    phone_units: int = Field(64, ge=2, description="k-means codebook size.")
    phone_segments: int = Field(20, ge=1, description="Uniform segments per utterance.")
    tie_rule: TieRule = Field(
        "expected",
        description="How a matching reference tied with others is ranked: 'expected' (random "
        "tie breaking in expectation: it counts 1/(e+1) at each of its e+1 tied ranks) or "
        "'attacker' (the best tied rank; overstates disclosure when many similarities tie).",
    )
    bootstrap_resamples: int = Field(
        200, ge=0, description="Speaker-level bootstrap resamples (0 = no intervals)."
    )
    workers: int | None = Field(
        None, ge=1, description="Processes for F0 extraction (null = one per CPU core)."
    )

    def f0_params(self) -> F0Params:
        return F0Params(
            fmin_hz=self.f0_fmin_hz,
            fmax_hz=self.f0_fmax_hz,
            resolution_semitones=self.f0_resolution_semitones,
        )

    def phone_params(self) -> PhoneUnitParams:
        return PhoneUnitParams(n_units=self.phone_units, n_segments=self.phone_segments)


@dataclass(frozen=True)
class InputReferenceSplit:
    """Utterance-disjoint inputs and references over a pooled utterance list.

    Rows index the pooled list. ``input_reference[i]`` is the reference column (0..N-1) of input
    ``input_rows[i]``; ``reference_owner[j]`` the column that reference utterance
    ``reference_rows[j]`` belongs to; ``speaker_ids[c]`` the speaker of column c (sorted).
    """

    speaker_ids: NDArray[np.str_]
    input_rows: NDArray[np.int64]
    input_reference: NDArray[np.int64]
    reference_rows: NDArray[np.int64]
    reference_owner: NDArray[np.int64]
    dropped_speakers: tuple[str, ...]
    reference_fraction: float
    seed: int

    @property
    def n_references(self) -> int:
        return int(self.speaker_ids.size)

    def describe(self) -> dict[str, Any]:
        """JSON-able description of the split."""
        return {
            "rule": SPLIT_RULE,
            "reference_fraction": self.reference_fraction,
            "seed": self.seed,
            "n_references": self.n_references,
            "n_inputs": int(self.input_rows.size),
            "n_reference_utterances": int(self.reference_rows.size),
            "dropped_speakers": list(self.dropped_speakers),
        }


def split_inputs_references(
    speaker_ids: ArrayLike, *, reference_fraction: float = 0.5, seed: int = 0
) -> InputReferenceSplit:
    """Seeded utterance-disjoint input / reference split of pooled utterances (see module doc)."""
    spk = np.asarray(speaker_ids).astype(str)
    if spk.ndim != 1 or spk.size == 0:
        raise ValueError("speaker_ids must be a non-empty 1-D sequence")
    if not 0.0 < reference_fraction < 1.0:
        raise ValueError(f"reference_fraction must lie in (0, 1), got {reference_fraction}")
    uniq, inv = np.unique(spk, return_inverse=True)
    counts = np.bincount(inv, minlength=uniq.size)
    keep = counts >= 2
    if int(keep.sum()) < 2:
        raise ValueError(
            f"SRD needs at least 2 speakers with 2 or more utterances, got {int(keep.sum())}"
        )
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(spk.size), inv))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.empty(spk.size, dtype=np.int64)
    position[order] = np.arange(spk.size) - starts[inv[order]]
    n_ref = np.clip(np.round(reference_fraction * counts), 1, np.maximum(counts - 1, 1))
    column = np.cumsum(keep) - 1  # speaker index -> reference column among kept speakers
    used = keep[inv]
    is_ref = used & (position < n_ref[inv])
    is_input = used & ~is_ref
    input_rows = np.flatnonzero(is_input).astype(np.int64)
    reference_rows = np.flatnonzero(is_ref).astype(np.int64)
    return InputReferenceSplit(
        speaker_ids=uniq[keep],
        input_rows=input_rows,
        input_reference=column[inv[input_rows]].astype(np.int64),
        reference_rows=reference_rows,
        reference_owner=column[inv[reference_rows]].astype(np.int64),
        dropped_speakers=tuple(uniq[~keep].tolist()),
        reference_fraction=float(reference_fraction),
        seed=int(seed),
    )


def negative_euclidean_similarity(
    inputs: NDArray[np.floating], references: NDArray[np.floating]
) -> NDArray[np.float64]:
    """Minus the Euclidean distance between every input row and every reference row."""
    a = np.asarray(inputs, dtype=np.float64)
    b = np.asarray(references, dtype=np.float64)
    sq = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2.0 * (a @ b.T)
    return np.asarray(-np.sqrt(np.maximum(sq, 0.0)))


def embedding_similarity(
    embeddings: NDArray[np.floating], split: InputReferenceSplit
) -> NDArray[np.float64]:
    """Cosine between each input's embedding and each reference's mean embedding (n_in, N)."""
    emb = np.asarray(embeddings, dtype=np.float64)
    refs = group_means(emb[split.reference_rows], split.reference_owner, split.n_references)
    return cosine_score_matrix(emb[split.input_rows], refs)


def _summary(summary: Any) -> dict[str, Any]:
    return {
        "max_disclosure_bits": summary.max_disclosure_bits,
        "mean_disclosure_bits": summary.mean_disclosure_bits,
        "identification_rate_percent": summary.identification_rate_percent,
        "rank_spread_percent": summary.rank_spread_percent,
        "pmf": summary.pmf.tolist(),
    }


def _fit(fit: Any) -> dict[str, Any] | None:
    if fit is None:
        return None
    return {"alpha": fit.alpha, "beta": fit.beta, **_summary(fit.summary)}


def srd_report(
    similarity: NDArray[np.floating],
    reference_index: NDArray[np.int64],
    input_speaker_ids: ArrayLike,
    *,
    tie_rule: TieRule = "expected",
    n_resamples: int = 200,
    seed: int = 0,
) -> tuple[dict[str, Any], SRDResult]:
    """JSON-able SRD of a similarity matrix: empirical, both beta-binomial fits, bootstrap CIs.

    ``rank_counts`` may be fractional under the ``expected`` tie rule; ``n_tied_inputs`` counts
    the inputs whose matching reference tied with at least one other reference.
    """
    ranks = matching_ranks(similarity, reference_index)
    result = compute_srd(ranks, ranks.n_references, tie_rule=tie_rule)
    out: dict[str, Any] = {
        "n_references": result.n_references,
        "n_observations": result.n_observations,
        "tie_rule": result.tie_rule,
        "n_tied_inputs": int(np.count_nonzero(ranks.n_tied)),
        "rank_counts": result.rank_counts.tolist(),
        "empirical": _summary(result.empirical),
        "constrained_fit": _fit(result.constrained_fit),
        "unconstrained_fit": _fit(result.unconstrained_fit),
    }
    if n_resamples > 0:
        boot = bootstrap_srd(
            ranks,
            input_speaker_ids,
            result.n_references,
            tie_rule=tie_rule,
            n_resamples=n_resamples,
            seed=seed,
        )
        out["mean_disclosure_ci95_bits"] = [
            boot.mean_disclosure_bits.low,
            boot.mean_disclosure_bits.high,
        ]
        out["identification_rate_ci95_percent"] = [
            boot.identification_rate_percent.low,
            boot.identification_rate_percent.high,
        ]
    return out, result


def _plot(result: SRDResult, out_dir: Path, name: str) -> list[str]:
    from services.plotting import plot_rank_histogram

    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    fitted = result.constrained_fit.summary.pmf if result.constrained_fit is not None else None
    return plot_rank_histogram(
        result.empirical.pmf,
        out_dir / f"srd_rank_{safe}",
        f"SRD rank histogram: {name} (N = {result.n_references})",
        fitted=fitted,
    )


EmbeddingInput = NDArray[np.floating] | tuple[NDArray[np.floating], NDArray[np.floating]]
"""Per pooled utterance (n, d), or (input embeddings (n_inputs, d), reference embeddings (N, d))
aligned with ``split_inputs_references`` of the same speaker ids, fraction and seed."""


def _embedding_similarity(
    name: str, value: EmbeddingInput, split: InputReferenceSplit, n_pooled: int
) -> NDArray[np.float64]:
    if isinstance(value, tuple):
        inputs, refs = (np.asarray(v, dtype=np.float64) for v in value)
        if inputs.shape[0] != split.input_rows.size or refs.shape[0] != split.n_references:
            raise ValueError(
                f"embeddings {name!r}: got {inputs.shape[0]} inputs and {refs.shape[0]} "
                f"references, the split has {split.input_rows.size} and {split.n_references}"
            )
        return cosine_score_matrix(inputs, refs)
    emb = np.asarray(value)
    if emb.ndim != 2 or emb.shape[0] != n_pooled:
        raise ValueError(
            f"embeddings {name!r}: expected one row per pooled utterance ({n_pooled}), "
            f"got shape {emb.shape}"
        )
    return embedding_similarity(emb, split)


def _f0_similarity(
    waveforms: Sequence[NDArray[np.floating]],
    split: InputReferenceSplit,
    cfg: SRDRepresentationsConfig,
    cache_dir: str | Path | None,
) -> tuple[NDArray[np.float64], NDArray[np.int64], dict[str, Any]]:
    """F0-histogram similarity of the voiced inputs to each reference speaker: (similarity,
    the ranked inputs, row details: references without voiced frames, histogram bins, the F0
    extraction's counts and seconds)."""
    params = cfg.f0_params()
    used = np.concatenate([split.input_rows, split.reference_rows])
    stats = F0ExtractionStats()
    tracks = f0_tracks(
        [waveforms[i] for i in used],
        params=params,
        cache_dir=cache_dir,
        workers=cfg.workers,
        stats=stats,
    )
    track_of = dict(zip(used.tolist(), tracks, strict=True))
    inp_hist, inp_voiced = f0_histograms([[track_of[i]] for i in split.input_rows], params)
    ref_groups: list[list[NDArray[np.float32]]] = [[] for _ in range(split.n_references)]
    for row_index, col in zip(split.reference_rows, split.reference_owner, strict=True):
        ref_groups[col].append(track_of[int(row_index)])
    ref_hist, ref_voiced = f0_histograms(ref_groups, params)
    ranked = np.flatnonzero(inp_voiced > 0)
    if ranked.size == 0:
        raise ValueError("F0 SRD: no input utterance has a voiced frame")
    details = {
        "references_without_voiced_frames": split.speaker_ids[ref_voiced == 0].tolist(),
        "histogram_bins": int(inp_hist.shape[1]),
        "extraction": {
            "n_utterances": stats.n_utterances,
            "cache_hits": stats.cache_hits,
            "extracted": stats.extracted,
            "workers": stats.workers,
            "seconds": stats.seconds,
        },
    }
    return negative_euclidean_similarity(inp_hist[ranked], ref_hist), ranked, details


def run_srd_representations(
    waveforms: Sequence[NDArray[np.floating]],
    speaker_ids: Sequence[str] | NDArray[np.str_],
    *,
    attacker_train_waveforms: Sequence[NDArray[np.floating]] | None = None,
    embeddings: Mapping[str, EmbeddingInput] | None = None,
    cache_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    config: SRDRepresentationsConfig | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """SRD of every requested representation of the pooled evaluation utterances (JSON-able).

    Args:
        waveforms: pooled enrollment + trial waveforms (16 kHz mono) of the evaluation speakers,
            in the condition to measure (original or anonymized).
        speaker_ids: speaker of each pooled waveform.
        attacker_train_waveforms: speech to learn the phone-unit codebook on (needed for
            ``phone_units``).
        embeddings: name -> embeddings (see ``EmbeddingInput``), e.g. ``{"ignorant": ...,
            "semi-informed": ...}``; each gives a row named after its key.
        cache_dir: F0 cache folder (None: no cache).
        out_dir: where rank-histogram plots go (None: no plots).
        config: analysis settings (default ``SRDRepresentationsConfig()``).
        seed: seeds the split, the codebook and the bootstrap.

    Returns:
        ``{"split": ..., "representations": {name: srd row}, "seconds": {...}}``; an SRD row has
        ``representation``, ``similarity``, ``n_references``, ``n_observations``,
        ``tie_rule``, ``n_tied_inputs``, ``rank_counts`` (fractional for ties), ``empirical``
        / ``constrained_fit`` / ``unconstrained_fit`` summaries (MaxD, MeanD in bits, IdR, RS
        in %, pmf), bootstrap intervals and ``plots``.
    """
    cfg = config or SRDRepresentationsConfig()
    spk = np.asarray(speaker_ids).astype(str)
    if spk.shape != (len(waveforms),):
        raise ValueError(f"{len(waveforms)} waveforms but {spk.size} speaker ids")
    split = split_inputs_references(spk, reference_fraction=cfg.reference_fraction, seed=seed)
    plots_dir = Path(out_dir) if out_dir is not None else None
    rows: dict[str, dict[str, Any]] = {}
    seconds: dict[str, float] = {}

    def add(
        name: str, kind: str, similarity: NDArray[np.float64], inputs: NDArray[np.int64]
    ) -> dict[str, Any]:
        if name in rows:
            raise ValueError(f"two representations named {name!r}")
        row, result = srd_report(
            similarity,
            split.input_reference[inputs],
            spk[split.input_rows[inputs]],
            tie_rule=cfg.tie_rule,
            n_resamples=cfg.bootstrap_resamples,
            seed=seed,
        )
        row = {"representation": kind, **row}
        row["plots"] = _plot(result, plots_dir, name) if plots_dir is not None else []
        rows[name] = row
        return row

    all_inputs = np.arange(split.input_rows.size)
    if "embeddings" in cfg.representations:
        for name, value in (embeddings or {}).items():
            start = time.perf_counter()
            sim = _embedding_similarity(name, value, split, len(waveforms))
            add(name, "embeddings", sim, all_inputs)["similarity"] = "cosine"
            seconds[name] = time.perf_counter() - start

    if "f0" in cfg.representations:
        start = time.perf_counter()
        sim, ranked, details = _f0_similarity(waveforms, split, cfg, cache_dir)
        row = add("f0", "f0", sim, ranked)
        row["similarity"] = "negative_euclidean"
        row["n_inputs_without_voiced_frames"] = int(all_inputs.size - ranked.size)
        row.update(details)
        seconds["f0"] = time.perf_counter() - start

    if "phone_units" in cfg.representations:
        if not attacker_train_waveforms:
            raise ValueError("phone_units needs attacker_train_waveforms to learn the codebook on")
        start = time.perf_counter()
        params_pu = cfg.phone_params()
        codebook = learn_codebook(attacker_train_waveforms, params_pu, seed=seed)
        used = np.concatenate([split.input_rows, split.reference_rows])
        emb = phone_unit_embeddings([waveforms[i] for i in used], codebook, params_pu)
        n_in = split.input_rows.size
        refs = group_means(emb[n_in:], split.reference_owner, split.n_references)
        sim = negative_euclidean_similarity(emb[:n_in], refs)
        row = add("phone_units", "phone_units", sim, all_inputs)
        row["similarity"] = "negative_euclidean"
        row["n_units"] = params_pu.n_units
        row["n_segments"] = params_pu.n_segments
        seconds["phone_units"] = time.perf_counter() - start

    return {"split": split.describe(), "representations": rows, "seconds": seconds}
