"""The score stage: scores and every metric of one (scenario, back-end, seed) row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from services.attacks.srd_representations import srd_report
from services.corpus.manifest import Manifest
from services.corpus.protocol import FixedTrials
from services.metrics import (
    bootstrap_eer,
    catalogue,
    compute_cllr,
    compute_eer,
    compute_linkability,
    compute_min_cllr,
    compute_zebra,
    det_curve,
    detection_rate_at_far,
)
from services.pipeline.config import MetricsSpec
from services.pipeline.sets import fixed_trials_of
from services.pipeline.stages.context import StageContext
from services.pipeline.stages.legal import legal_block
from services.scoring import (
    ASNorm,
    CosineBackend,
    EmbeddingSet,
    PLDABackend,
    ScoredTrials,
    TrialSet,
    eer_report,
    effective_top_k,
    per_speaker_eer_report,
    score_trials,
    train_plda,
)
from services.scoring.listed import ListedScores, score_listed_trials
from services.scoring.trial_scores import (
    TRIALS_NAME,
    save_scored_trials,
    speaker_trials,
    trial_grid_fingerprint,
)

EmbeddedSet = tuple[Manifest, np.ndarray, str]
"""A set, its embeddings (n, dim) in manifest order and the key naming (recognizer, set)."""

GENDER_MODES = {"pooled": "pooled", "per-gender": "per_gender", "mixed": "mixed"}
"""Config spelling of ``gender_handling`` -> the scoring layer's ``GenderMode``."""

DETECTION_FARS = {"far_1_percent": 0.01, "far_0_1_percent": 0.001}
"""Row fields of the detection rates and their false-alarm rates (fractions)."""

SCORE_SAMPLE_NAME = "score_sample.npz"
"""The score stage's bounded sample of target / non-target scores (for the histogram plot)."""


def score_row(
    ctx: StageContext,
    scenario: str,
    backend_name: str,
    seed: int,
    enrollment: EmbeddedSet,
    trial: EmbeddedSet,
    plda_train: EmbeddedSet | None,
) -> dict[str, Any]:
    """Scores and every metric of one (scenario, back-end, seed) row.

    ``plda_train``: the attacker-train embeddings of the scenario's recognizer; the PLDA back-end
    trains on them and AS-norm (``scoring.normalization``) takes its cohort from them.
    """
    cfg = ctx.config
    gender_mode = GENDER_MODES[cfg.gender_handling]
    as_norm = cfg.scoring.normalization == "as-norm"
    if as_norm and plda_train is None:
        raise ValueError("AS-norm needs the attacker-train embeddings for its cohort")
    inputs = {
        "scenario": scenario,
        "backend": backend_name,
        "seed": seed,
        "enrollment": enrollment[2],
        "trial": trial[2],
        "plda_train": plda_train[2] if plda_train else None,
        "gender_mode": gender_mode,
        # The legal metrics are a stage of their own (``stages.legal``): not a score input.
        "metrics": cfg.metrics.model_dump(mode="json", exclude={"legal"}),
        "scoring": cfg.scoring.model_dump(mode="json"),
    }
    fixed = fixed_trials_of(ctx)
    if fixed is not None:  # only then, so the keys of other rows stay as they were
        inputs["fixed_trials"] = fixed.model_dump(mode="json")

    def make(folder: Path) -> dict[str, Any]:
        t_man = trial[0]
        trial_embeddings = _embedding_set(trial, "trial")
        enrollment_embeddings = _embedding_set(enrollment, "enrollment")
        backend = _build_backend(backend_name, plda_train)
        normalization = None
        if as_norm:
            assert plda_train is not None
            normalization = ASNorm(
                _embedding_set(plda_train, "AS-norm cohort"), top_k=cfg.scoring.cohort_top_k
            )
        listed: ListedScores | None = None
        if fixed is None:
            scored = score_trials(
                backend,
                TrialSet(trial_embeddings, enrollment_embeddings),
                gender_mode=gender_mode,  # type: ignore[arg-type]
                normalization=normalization,
            )
        else:
            listed = score_listed_trials(
                backend,
                trial_embeddings,
                [u.utt_id for u in t_man.utterances],
                enrollment_embeddings,
                [p for t in fixed.lists for p in t.pairs()],
                gender_mode=gender_mode,  # type: ignore[arg-type]
                normalization=normalization,
            )
            scored = listed.scored
        # Whether the scores are log-likelihood ratios (AS-norm rescales PLDA's): the catalogue
        # decides which metrics apply to them.
        llr = catalogue.scores_are_llrs(backend_name, cfg.scoring.normalization)
        row = metrics_row(scored, cfg.metrics, seed, llr_scores=llr)
        if fixed is not None and listed is not None:
            row.update(trial_list_metrics(fixed, listed))
        row["score_normalization"] = _normalization_record(normalization, scored)
        # SRD on the embeddings: inputs = trial utterances, references = enrollment speakers.
        if cfg.metrics.srd:
            row["srd"] = _srd_of(scored, cfg.metrics.bootstrap_resamples, seed)
        grid = trial_grid_fingerprint(
            [u.utt_id for u in t_man.utterances],
            [u.utt_id for u in enrollment[0].utterances],
            gender_mode,
            None if fixed is None else fixed.model_dump(mode="json"),
        )
        return _write_row(folder, row, scored, seed, grid)

    outcome = ctx.runner.run("score", inputs, make)
    row: dict[str, Any] = json.loads((outcome.folder / "row.json").read_text())
    row.update(
        {"scenario": scenario, "backend": backend_name, "seed": seed, "stage_key": outcome.key}
    )
    if cfg.metrics.legal is not None:
        row["legal"] = legal_block(ctx, cfg.metrics.legal, seed, enrollment, trial)
    return row


def _embedding_set(embedded: EmbeddedSet, name: str) -> EmbeddingSet:
    """A set's embeddings with the speaker and gender of each utterance."""
    manifest, embeddings, _ = embedded
    return EmbeddingSet(
        embeddings,
        np.array([u.speaker_id for u in manifest.utterances]),
        np.array([u.gender for u in manifest.utterances]),
        name,
    )


def _build_backend(backend_name: str, plda_train: EmbeddedSet | None) -> Any:
    """The cosine back-end, or a PLDA trained on the attacker-train embeddings."""
    if backend_name == "cosine":
        return CosineBackend()
    assert plda_train is not None
    p_man, p_emb, _ = plda_train
    return PLDABackend(train_plda(p_emb, np.array([u.speaker_id for u in p_man.utterances])))


def _write_row(
    folder: Path, row: dict[str, Any], scored: ScoredTrials, seed: int, grid: str
) -> dict[str, str]:
    """Write the trials (scores with their speakers, ``services.scoring.trial_scores``), the
    plot's score sample and the row into ``folder``; returns the stage's outputs."""
    save_scored_trials(folder / TRIALS_NAME, scored, grid=grid)
    np.savez_compressed(
        folder / SCORE_SAMPLE_NAME, allow_pickle=False, **_score_sample(scored, seed)
    )
    (folder / "row.json").write_text(json.dumps(row, indent=2))
    return {"row": "row.json", "trials": TRIALS_NAME, "score_sample": SCORE_SAMPLE_NAME}


def _normalization_record(normalization: ASNorm | None, scored: ScoredTrials) -> dict[str, Any]:
    """Provenance of the score normalization: method, K asked for and K used per partition."""
    if normalization is None:
        return {"method": "none"}
    sizes = {
        key: normalization.n_speakers(None if key == "all" else key) for key in scored.partitions
    }
    return {
        "method": "as-norm",
        "cohort": "attacker-train speakers, per-speaker mean embeddings",
        "cohort_top_k": normalization.top_k,
        "cohort_speakers": sizes,
        "cohort_top_k_used": {k: effective_top_k(normalization.top_k, n) for k, n in sizes.items()},
    }


def _target_nontarget(scored: ScoredTrials) -> tuple[np.ndarray, np.ndarray]:
    parts = [m.target_nontarget() for m in scored.partitions.values()]
    tar = np.concatenate([p.target for p in parts]).astype(np.float64)
    non = np.concatenate([p.nontarget for p in parts]).astype(np.float64)
    return tar, non


def _score_sample(scored: ScoredTrials, seed: int) -> dict[str, np.ndarray]:
    """A bounded random sample of target / non-target scores for the histogram plot."""
    tar, non = _target_nontarget(scored)
    rng = np.random.default_rng(seed)
    return {"target": rng.permutation(tar)[:5000], "nontarget": rng.permutation(non)[:20000]}


def metrics_row(
    scored: ScoredTrials, spec: MetricsSpec, seed: int, *, llr_scores: bool
) -> dict[str, Any]:
    """EER (+ per gender, + bootstrap interval), per-speaker EER, detection rates at FAR 1 % and
    0.1 %, Cllr, min Cllr, linkability, ZEBRA, DET points.

    Cllr (bits) is reported only where the catalogue says it applies (``Metric.applies``: the
    scores are log-likelihood ratios, ``llr_scores``): on cosine scores it measures the score
    scale, not the evidence, so the row leaves it out (not null). min Cllr, ZEBRA and the rest
    calibrate by PAV first, so they apply to any score.
    """
    report = eer_report(scored)
    tar, non = _target_nontarget(scored)
    row: dict[str, Any] = {
        catalogue.EER.key: report.eer_percent,
        "eer_threshold": report.pooled.threshold if report.pooled is not None else None,
        "eer_per_gender_percent": {g: r.eer_percent for g, r in report.per_gender.items()},
        "n_target": int(tar.size),
        "n_nontarget": int(non.size),
    }
    if spec.bootstrap_resamples > 0:
        pooled = speaker_trials(scored)
        ci = bootstrap_eer(
            pooled.scores,
            pooled.is_target,
            pooled.speaker_ids,
            n_resamples=spec.bootstrap_resamples,
            seed=seed,
        )
        row["eer_ci95_percent"] = [ci.low, ci.high]
    if spec.per_speaker_eer:
        per_speaker = per_speaker_eer_report(scored)
        row["per_speaker_eer"] = {
            "mean_percent": per_speaker.mean_percent,
            "worst_decile_percent": per_speaker.worst_decile_percent,
            "n_speakers": int(per_speaker.eer_percent.size),
            "n_worst_decile": per_speaker.n_worst_decile,
        }
    if spec.detection_rate:
        rates = {name: detection_rate_at_far(tar, non, far) for name, far in DETECTION_FARS.items()}
        row["detection_rate"] = {name: r.detection_percent for name, r in rates.items()}
        reasons = {name: r.reason for name, r in rates.items() if r.reason is not None}
        if reasons:  # a rate left out for too few non-targets says why
            row["detection_rate"]["reasons"] = reasons
    if spec.cllr:
        if not catalogue.CLLR.needs_llr_scores or llr_scores:  # the catalogue's rule
            row[catalogue.CLLR.key] = compute_cllr(tar, non)
        row[catalogue.MIN_CLLR.key] = compute_min_cllr(tar, non)
    if spec.linkability:
        try:
            row[catalogue.LINKABILITY.key] = compute_linkability(tar, non).d_sys
        except ValueError:
            row[catalogue.LINKABILITY.key] = None  # too few mated scores for the VPC binning rule
    if spec.zebra:
        z = compute_zebra(tar, non)
        row["zebra"] = {
            "expected_disclosure_bits": z.expected_disclosure_bits,
            "worst_case_log10_lr": z.worst_case_log10_lr,
            "category": z.category,
        }
    det = det_curve(tar, non, n_points=200)
    row["det"] = {"pfa": det.pfa.tolist(), "pmiss": det.pmiss.tolist()}
    return row


def _srd_of(scored: ScoredTrials, resamples: int, seed: int) -> dict[str, Any]:
    """SRD of the score matrix: for each trial, the rank of its own speaker among the models."""
    parts = list(scored.partitions.values())
    # Per-gender mode: the partitions have different N; the larger one is reported.
    m = max(parts, key=lambda p: p.scores.shape[1])
    col_index = {s: i for i, s in enumerate(m.col_speaker_ids.tolist())}
    # With fixed trial lists a trial speaker need not be enrolled: it has no rank to disclose.
    rows = np.array([s in col_index for s in m.row_speaker_ids.tolist()], dtype=bool)
    ref = np.array([col_index[s] for s in m.row_speaker_ids[rows].tolist()], dtype=np.int64)
    report, _ = srd_report(
        m.scores[rows], ref, m.row_speaker_ids[rows], n_resamples=resamples, seed=seed
    )
    return report


def trial_list_metrics(fixed: FixedTrials, listed: ListedScores) -> dict[str, Any]:
    """Per fixed trial list (VoicePrivacy): dataset, gender, EER (%) and threshold, trial
    counts; and the trial counts per trial-utterance gender (``n_trials_per_gender``)."""
    out: dict[str, Any] = {}
    start = 0
    for t in fixed.lists:
        scores = listed.pair_scores[start : start + len(t)]
        target = listed.pair_is_target[start : start + len(t)]
        start += len(t)
        tar, non = scores[target], scores[~target]
        result = compute_eer(tar, non) if tar.size and non.size else None
        out[t.name] = {
            "dataset": t.dataset,
            "gender": t.gender,
            catalogue.EER.key: result.eer_percent if result is not None else None,
            "eer_threshold": result.threshold if result is not None else None,
            "n_target": int(tar.size),
            "n_nontarget": int(non.size),
        }
    per_gender: dict[str, dict[str, int]] = {}
    for m in listed.scored.partitions.values():
        for g in np.unique(m.row_genders).tolist():
            sub = m.rows_of_gender(g)
            counts = per_gender.setdefault(str(g), {"n_target": 0, "n_nontarget": 0})
            counts["n_target"] += int(sub.target_mask().sum())
            counts["n_nontarget"] += int(sub.nontarget_mask().sum())
    return {"trial_lists": out, "n_trials_per_gender": dict(sorted(per_gender.items()))}
