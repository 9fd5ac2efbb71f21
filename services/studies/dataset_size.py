"""Dataset-size studies (Georgiou et al.; PROTOCOLS.md section 6).

Three sweeps on a fixed trained attacker, from embeddings extracted once per target seed:

- ``speakers``: number of evaluation speakers (``trials_per_speaker`` trials each, default 1;
  enrollment = all their other enrollment-capable utterances, Georgiou et al. section 4.1);
- ``enrollment``: enrollment utterances per speaker, 1 trial each (Georgiou et al. section 4.2.1);
- ``trials``: trial utterances per speaker, 20 enrollment each (Georgiou et al. section 4.2.2).

Every point repeats ``samples`` random draws for each target seed's embeddings (default 5 x 5 =
25 repetitions). A draw: the speakers eligible at the point (enough utterances for its counts)
are listed; ``n_speakers`` of them are drawn without replacement (all for the other sweeps); for
each drawn speaker, its utterances are shuffled and the first ``n_trials`` trial-capable ones
become trials, then the first ``n_enrollment`` enrollment-capable ones among the rest become
enrollment (utterance-disjoint; utterances usable on one side only are used first on that
side). Draws are seeded by (seed, sweep, size, target seed, sample), so a point's draws do not
depend on which other points are run.

Scoring reuses ``services.scoring``: by default per-utterance enrollment and
``aggregation="speaker_pair_mean"``, i.e. the score of a (trial speaker, enrollment speaker)
pair is the mean over all their utterance pairs, as Georgiou et al.'s framework (spkanon_eval's
``ASV.eval_dir``: all trial x enrollment LLRs, then "average the LLRs across speakers") does. This
is what makes more trial utterances per speaker lower the EER (Georgiou et al. Table 6); scoring
each trial utterance separately would leave the expected EER unchanged and only shrink its spread.
The average is computed exactly from per-speaker moments (``speaker_pair_mean_scores``), so the
cost of a point does not grow with the number of utterance pairs.

Embeddings pass through the back-end's row-wise ``prepare`` (PLDA: LDA + length norm) once per
target seed; repetitions only index rows, nothing is re-extracted or re-projected.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field
from scipy import stats

from services.metrics import catalogue, compute_eer
from services.scoring import (
    Aggregation,
    EnrollmentMode,
    GenderMode,
    PairScoreTerms,
    TrialSet,
    eer_report,
    score_trials,
    speaker_pair_mean_scores,
)
from services.scoring.scorer import ScoringBackend

Sweep = Literal["speakers", "enrollment", "trials"]
SWEEPS: tuple[Sweep, ...] = ("speakers", "enrollment", "trials")
Role = Literal["enrollment", "trial", "both"]
ROLES: tuple[str, ...] = ("enrollment", "trial", "both")
_SWEEP_CODE = {"speakers": 1, "enrollment": 2, "trials": 3}


@dataclass(frozen=True)
class EmbeddingTable:
    """Embeddings of one target seed's anonymization of the evaluation utterances.

    ``roles[i]`` says on which side row i may be used: ``trial`` (e.g. a trial-anonymized
    version), ``enrollment`` or ``both``. Rows with the same ``utterance_ids`` entry are versions
    of one utterance (e.g. anonymized once with trial and once with enrollment targets): a draw
    never uses one utterance on both sides. ``utterance_ids`` None = every row its own utterance.
    """

    embeddings: NDArray[np.floating]
    speaker_ids: NDArray[np.str_]
    genders: NDArray[np.str_]
    roles: NDArray[np.str_] | None = None
    utterance_ids: NDArray[np.str_] | None = None

    def __post_init__(self) -> None:
        emb = np.asarray(self.embeddings)
        if emb.ndim != 2 or emb.shape[0] == 0:
            raise ValueError(f"embeddings must be a non-empty (n, d) array, got shape {emb.shape}")
        n = emb.shape[0]
        spk = np.asarray(self.speaker_ids).astype(str)
        gen = np.asarray(self.genders).astype(str)
        roles = np.full(n, "both") if self.roles is None else np.asarray(self.roles).astype(str)
        utts = (
            np.array([f"row{i}" for i in range(n)])
            if self.utterance_ids is None
            else np.asarray(self.utterance_ids).astype(str)
        )
        for arr, name in (
            (spk, "speaker_ids"),
            (gen, "genders"),
            (roles, "roles"),
            (utts, "utterance_ids"),
        ):
            if arr.shape != (n,):
                raise ValueError(f"{name} has shape {arr.shape}, expected ({n},)")
        bad = sorted(set(np.unique(roles).tolist()) - set(ROLES))
        if bad:
            raise ValueError(f"roles must be one of {ROLES}, got {bad[:5]}")
        if not np.isfinite(emb).all():
            rows = np.flatnonzero(~np.isfinite(emb).all(axis=1))
            raise ValueError(f"embeddings contain NaN or inf at rows {rows[:5].tolist()}")
        # Versions of one utterance must share speaker; one side per version.
        u_uniq, u_inv = np.unique(utts, return_inverse=True)
        first_spk = spk[np.unique(u_inv, return_index=True)[1]]
        if (first_spk[u_inv] != spk).any():
            raise ValueError("rows sharing an utterance id have different speaker ids")
        for side in ("trial", "enrollment"):
            capable = (roles == side) | (roles == "both")
            per_utt = np.bincount(u_inv[capable], minlength=u_uniq.size)
            if (per_utt > 1).any():
                dup = u_uniq[per_utt > 1][:3].tolist()
                raise ValueError(f"utterance(s) {dup} have more than one {side}-capable row")
        object.__setattr__(self, "embeddings", emb)
        object.__setattr__(self, "speaker_ids", spk)
        object.__setattr__(self, "genders", gen)
        object.__setattr__(self, "roles", roles)
        object.__setattr__(self, "utterance_ids", utts)

    def __len__(self) -> int:
        return int(self.embeddings.shape[0])


@dataclass(frozen=True)
class _UtteranceIndex:
    """Utterance-level view of a table: speaker, and the row usable on each side (-1: none)."""

    speaker: NDArray[np.int64]  # utterance -> speaker index
    trial_row: NDArray[np.int64]
    enroll_row: NDArray[np.int64]
    n_speakers: int
    speaker_ids: NDArray[np.str_]


def _utterance_index(table: EmbeddingTable) -> _UtteranceIndex:
    assert table.utterance_ids is not None and table.roles is not None
    u_uniq, first, u_inv = np.unique(table.utterance_ids, return_index=True, return_inverse=True)
    s_uniq, s_inv = np.unique(table.speaker_ids, return_inverse=True)
    trial_row = np.full(u_uniq.size, -1, dtype=np.int64)
    enroll_row = np.full(u_uniq.size, -1, dtype=np.int64)
    rows = np.arange(len(table))
    t = (table.roles == "trial") | (table.roles == "both")
    e = (table.roles == "enrollment") | (table.roles == "both")
    trial_row[u_inv[t]] = rows[t]
    enroll_row[u_inv[e]] = rows[e]
    return _UtteranceIndex(
        s_inv[first].astype(np.int64), trial_row, enroll_row, s_uniq.size, s_uniq
    )


def _rank_within(
    groups: NDArray[np.int64], mask: NDArray[np.bool_], order: NDArray[np.int64]
) -> NDArray[np.int64]:
    """1-based rank of each masked element within its group, following ``order`` (0 if unmasked)."""
    g = groups[order]
    m = mask[order].astype(np.int64)
    csum = np.cumsum(m)
    # Subtract the running count at the start of each group.
    starts = np.concatenate([[True], g[1:] != g[:-1]])
    base = np.maximum.accumulate(np.where(starts, csum - m, 0))
    rank_sorted = np.where(m > 0, csum - base, 0)
    out = np.zeros(groups.size, dtype=np.int64)
    out[order] = rank_sorted
    return out


def draw_trial_enrollment(
    index: _UtteranceIndex,
    rng: np.random.Generator,
    n_speakers: int | None,
    n_trials: int,
    n_enrollment: int | None,
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """One random draw: (trial rows, enrollment rows, number of eligible speakers).

    ``n_speakers`` None = all eligible; ``n_enrollment`` None = all remaining enrollment-capable
    utterances of each drawn speaker (at least 1).
    """
    t_cap = index.trial_row >= 0
    e_cap = index.enroll_row >= 0
    only_t = t_cap & ~e_cap
    only_e = e_cap & ~t_cap
    both = t_cap & e_cap
    n_spk = index.n_speakers
    count = lambda m: np.bincount(index.speaker[m], minlength=n_spk)  # noqa: E731
    n_t_only, n_e_only, n_both = count(only_t), count(only_e), count(both)
    need_e = 1 if n_enrollment is None else n_enrollment
    # Trials use trial-only utterances first, then shared ones; enrollment gets what is left.
    shared_for_trials = np.maximum(n_trials - n_t_only, 0)
    eligible_mask = (n_t_only + n_both >= n_trials) & (
        n_e_only + n_both - shared_for_trials >= need_e
    )
    eligible = np.flatnonzero(eligible_mask)
    if n_speakers is None:
        chosen = eligible
    else:
        if eligible.size < n_speakers:
            raise ValueError(
                f"{n_speakers} speakers requested but only {eligible.size} have {n_trials} trial "
                f"and {need_e} enrollment utterances"
            )
        chosen = np.sort(rng.choice(eligible, n_speakers, replace=False))
    if chosen.size < 2:
        raise ValueError(
            f"only {chosen.size} speaker(s) have {n_trials} trial and {need_e} enrollment "
            "utterances; an EER needs at least 2"
        )
    picked = np.zeros(n_spk, dtype=bool)
    picked[chosen] = True
    in_play = picked[index.speaker]
    # Shuffle utterances within speakers; side-exclusive utterances first on their own side.
    key = rng.random(index.speaker.size)
    trial_order = np.lexsort((key, ~only_t, index.speaker))
    t_rank = _rank_within(index.speaker, in_play & t_cap, trial_order)
    is_trial = (t_rank > 0) & (t_rank <= n_trials)
    left = in_play & e_cap & ~is_trial
    enroll_order = np.lexsort((key, ~only_e, index.speaker))
    e_rank = _rank_within(index.speaker, left, enroll_order)
    is_enroll = (e_rank > 0) if n_enrollment is None else (e_rank > 0) & (e_rank <= n_enrollment)
    return index.trial_row[is_trial], index.enroll_row[is_enroll], int(eligible.size)


class _Prepared:
    """A back-end whose ``prepare`` was applied once, up front (rows are already prepared)."""

    def __init__(self, backend: ScoringBackend) -> None:
        self.backend = backend
        self.name = backend.name

    def prepare(self, embeddings: np.ndarray) -> np.ndarray:
        return np.asarray(embeddings, dtype=np.float64)

    def speaker_model(self, mean_vectors: np.ndarray) -> np.ndarray:
        return self.backend.speaker_model(mean_vectors)

    def score_terms(self, trial_vectors: np.ndarray, model_vectors: np.ndarray) -> PairScoreTerms:
        return self.backend.score_terms(trial_vectors, model_vectors)


class SizeStudyConfig(BaseModel):
    """Sizes, repetitions and scoring of a dataset-size study (defaults: Georgiou et al.)."""

    model_config = ConfigDict(extra="forbid")

    sweeps: list[Sweep] = Field(default_factory=lambda: list[Sweep](list(SWEEPS)))
    speaker_counts: list[int | None] = Field(
        default_factory=lambda: [10, 30, 50, 100, 200, 500, None],
        description="Speakers per draw (null = all eligible); counts above the eligible number "
        "are skipped.",
    )
    speakers_sweep_trials: int = Field(1, ge=1, description="Trials per speaker (speakers sweep).")
    speakers_sweep_enrollment: int | None = Field(
        None, ge=1, description="Enrollment per speaker (speakers sweep); null = all the rest."
    )
    enrollment_counts: list[int] = Field(default_factory=lambda: [1, 2, 5, 10, 20, 30])
    enrollment_sweep_trials: int = Field(1, ge=1)
    trial_counts: list[int] = Field(default_factory=lambda: [1, 2, 5, 10, 20, 30, 50])
    trial_sweep_enrollment: int = Field(20, ge=1)
    samples: int = Field(5, ge=1, description="Random draws per point and target seed.")
    enrollment: EnrollmentMode = "per_utterance"
    aggregation: Aggregation = "speaker_pair_mean"
    gender_mode: GenderMode = "pooled"
    seed: int = Field(0, ge=0)


@dataclass(frozen=True)
class SizePoint:
    """One point of a sweep: ``size`` is the swept value (None = all speakers)."""

    sweep: Sweep
    size: int | None
    n_speakers: int | None
    n_trials: int
    n_enrollment: int | None


def sweep_points(cfg: SizeStudyConfig, sweep: Sweep) -> list[SizePoint]:
    """The points of one sweep, in order of size."""
    if sweep == "speakers":
        return [
            SizePoint(sweep, n, n, cfg.speakers_sweep_trials, cfg.speakers_sweep_enrollment)
            for n in cfg.speaker_counts
        ]
    if sweep == "enrollment":
        return [
            SizePoint(sweep, n, None, cfg.enrollment_sweep_trials, n) for n in cfg.enrollment_counts
        ]
    return [SizePoint(sweep, n, None, n, cfg.trial_sweep_enrollment) for n in cfg.trial_counts]


def _summary(eers: NDArray[np.float64]) -> dict[str, Any]:
    n = eers.size
    mean = float(eers.mean())
    std = float(eers.std(ddof=1)) if n > 1 else 0.0
    half = float(stats.t.ppf(0.975, n - 1) * std / np.sqrt(n)) if n > 1 else 0.0
    low, high = np.percentile(eers, [2.5, 97.5])
    return {
        "eer_mean_percent": mean,
        "eer_std_percent": std,
        "eer_interval95_percent": [float(low), float(high)],
        "eer_mean_ci95_percent": [mean - half, mean + half],
    }


@dataclass(frozen=True)
class PreparedTable:
    """A table in the back-end's space, its utterance index, and (for the moment shortcut) the
    pair-score operands of every row against every row (row-wise, so any subset is a slice)."""

    table: EmbeddingTable
    index: _UtteranceIndex
    row_speaker: NDArray[np.int64]
    terms: PairScoreTerms | None


def _uses_shortcut(cfg: SizeStudyConfig) -> bool:
    # Per-utterance models and speaker-pair means: a speaker pair's score is a function of the
    # per-speaker means of row-wise operands, which can be computed once per table.
    return (
        cfg.enrollment == "per_utterance"
        and cfg.aggregation == "speaker_pair_mean"
        and cfg.gender_mode == "pooled"
    )


def _eer_shortcut(
    prepared: PreparedTable, t_rows: NDArray[np.int64], e_rows: NDArray[np.int64]
) -> float:
    """Pooled EER (%) of speaker-pair mean scores from the precomputed operands."""
    assert prepared.terms is not None
    t_spk, t_inv = np.unique(prepared.row_speaker[t_rows], return_inverse=True)
    e_spk, e_inv = np.unique(prepared.row_speaker[e_rows], return_inverse=True)
    scores = speaker_pair_mean_scores(
        prepared.terms.select(rows=t_rows, cols=e_rows), t_inv, t_spk.size, e_inv, e_spk.size
    )
    target = t_spk[:, None] == e_spk[None, :]
    return compute_eer(scores[target], scores[~target]).eer_percent


def _eer_general(
    prepared: PreparedTable,
    t_rows: NDArray[np.int64],
    e_rows: NDArray[np.int64],
    backend: ScoringBackend,
    cfg: SizeStudyConfig,
) -> float:
    table = prepared.table
    trial_set = TrialSet.from_arrays(
        table.embeddings[t_rows],
        table.speaker_ids[t_rows],
        table.genders[t_rows],
        table.embeddings[e_rows],
        table.speaker_ids[e_rows],
        table.genders[e_rows],
    )
    scored = score_trials(
        backend,
        trial_set,
        enrollment=cfg.enrollment,
        gender_mode=cfg.gender_mode,
        aggregation=cfg.aggregation,
    )
    return eer_report(scored).eer_percent


def run_point(
    point: SizePoint,
    prepared: Mapping[int, PreparedTable],
    backend: ScoringBackend,
    cfg: SizeStudyConfig,
    *,
    use_shortcut: bool | None = None,
) -> dict[str, Any]:
    """All repetitions of one point; JSON-able summary (see docs/analyses.md).

    ``use_shortcut`` None: the precomputed-operand path whenever the config allows it (same
    EERs as ``score_trials`` + ``eer_report``; tested), else ``score_trials`` per repetition.
    """
    start = time.perf_counter()
    shortcut = _uses_shortcut(cfg) if use_shortcut is None else use_shortcut
    eers, n_trial_rows, n_enroll_rows, n_spk, eligible = [], [], [], [], []
    size_code = 0 if point.size is None else point.size + 1
    for target_seed, ready in sorted(prepared.items()):
        for sample in range(cfg.samples):
            rng = np.random.default_rng(
                [cfg.seed, _SWEEP_CODE[point.sweep], size_code, target_seed, sample]
            )
            t_rows, e_rows, n_eligible = draw_trial_enrollment(
                ready.index, rng, point.n_speakers, point.n_trials, point.n_enrollment
            )
            if shortcut and ready.terms is not None:
                eers.append(_eer_shortcut(ready, t_rows, e_rows))
            else:
                eers.append(_eer_general(ready, t_rows, e_rows, backend, cfg))
            n_trial_rows.append(t_rows.size)
            n_enroll_rows.append(e_rows.size)
            n_spk.append(int(np.unique(ready.row_speaker[t_rows]).size))
            eligible.append(n_eligible)
    seconds = time.perf_counter() - start
    values = np.asarray(eers, dtype=np.float64)
    return {
        "sweep": point.sweep,
        "size": point.size,
        "n_speakers": int(np.mean(n_spk)),
        "n_speakers_eligible": int(min(eligible)),
        "trials_per_speaker": point.n_trials,
        "enrollment_per_speaker": point.n_enrollment,
        "mean_trial_utterances": float(np.mean(n_trial_rows)),
        "mean_enrollment_utterances": float(np.mean(n_enroll_rows)),
        "repetitions": int(values.size),
        **_summary(values),
        catalogue.EER.key: values.tolist(),
        "seconds": seconds,
        "seconds_per_repetition": seconds / values.size,
    }


def prepare_tables(
    tables: Mapping[int, EmbeddingTable], backend: ScoringBackend, *, with_terms: bool = True
) -> tuple[dict[int, PreparedTable], ScoringBackend, float]:
    """Apply the back-end's row-wise ``prepare`` (and, with ``with_terms``, its pair-score
    operands) once per table; returns (tables, back-end for prepared rows, seconds)."""
    start = time.perf_counter()
    out = {}
    for seed, table in tables.items():
        vectors = backend.prepare(table.embeddings)
        ready = EmbeddingTable(
            vectors, table.speaker_ids, table.genders, table.roles, table.utterance_ids
        )
        _, row_speaker = np.unique(ready.speaker_ids, return_inverse=True)
        terms = backend.score_terms(vectors, vectors) if with_terms else None
        out[int(seed)] = PreparedTable(
            ready, _utterance_index(ready), row_speaker.astype(np.int64), terms
        )
    return out, _Prepared(backend), time.perf_counter() - start


def run_size_study(
    tables: Mapping[int, EmbeddingTable],
    backend: ScoringBackend,
    config: SizeStudyConfig | None = None,
    out_dir: str | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Run the configured sweeps on ``{target_seed: EmbeddingTable}``; JSON-able result.

    ``out_dir``: where the plots go (one PNG + SVG per sweep; None = no plots).
    ``progress``: optional callable ``(sweep, point_index, n_points)``.
    Points whose speaker count exceeds the eligible speakers are skipped (listed in ``skipped``).
    """
    cfg = config or SizeStudyConfig()
    if not tables:
        raise ValueError("no embedding table given (need at least one target seed)")
    prepared, ready_backend, prep_seconds = prepare_tables(
        tables, backend, with_terms=_uses_shortcut(cfg)
    )
    result: dict[str, Any] = {
        "config": cfg.model_dump(mode="json"),
        "backend": backend.name,
        "target_seeds": sorted(prepared),
        "prepare_seconds": prep_seconds,
        "sweeps": {},
        "skipped": [],
        "plots": {},
    }
    for sweep in cfg.sweeps:
        points = sweep_points(cfg, sweep)
        rows = []
        for i, point in enumerate(points):
            if progress is not None:
                progress(sweep, i, len(points))
            try:
                rows.append(run_point(point, prepared, ready_backend, cfg))
            except ValueError as exc:
                result["skipped"].append({"sweep": sweep, "size": point.size, "reason": str(exc)})
        result["sweeps"][sweep] = rows
        if out_dir is not None and rows:
            from pathlib import Path

            from services.studies.plots import plot_size_sweep

            result["plots"][sweep] = plot_size_sweep(rows, Path(out_dir) / f"size_study_{sweep}")
    return result


def tables_from_arrays(
    embeddings: NDArray[np.floating],
    speaker_ids: Sequence[str] | NDArray[np.str_],
    genders: Sequence[str] | NDArray[np.str_],
    target_seeds: Sequence[int] | NDArray[np.integer],
    roles: Sequence[str] | NDArray[np.str_] | None = None,
    utterance_ids: Sequence[str] | NDArray[np.str_] | None = None,
) -> dict[int, EmbeddingTable]:
    """Split flat arrays (one row per embedding, with its target seed) into one table per seed."""
    seeds = np.asarray(target_seeds).astype(np.int64).reshape(-1)
    emb = np.asarray(embeddings)
    if seeds.shape != (emb.shape[0],):
        raise ValueError(f"target_seeds has shape {seeds.shape}, expected ({emb.shape[0]},)")
    spk, gen = np.asarray(speaker_ids), np.asarray(genders)
    rol = None if roles is None else np.asarray(roles)
    utt = None if utterance_ids is None else np.asarray(utterance_ids)
    out = {}
    for s in np.unique(seeds):
        m = seeds == s
        out[int(s)] = EmbeddingTable(
            emb[m], spk[m], gen[m], None if rol is None else rol[m], None if utt is None else utt[m]
        )
    return out
