"""Scoring back-ends: cosine and LDA + PLDA, AS-norm, trial sets, gender handling, streaming EER.

See docs/scoring.md for the formulas, enrollment modes, the speaker-level averaging shortcut and
the memory bounds.
"""

from services.scoring.cosine import CosineBackend, cosine_score_matrix, l2_normalize
from services.scoring.normalization import (
    ASNorm,
    CohortStats,
    as_norm_matrix,
    as_norm_terms,
    cohort_stats,
    effective_top_k,
)
from services.scoring.pairs import (
    DEFAULT_MEMORY_BUDGET_BYTES,
    PairScoreTerms,
    group_means,
    iter_score_blocks,
    rows_per_block,
    score_all_pairs,
    speaker_pair_mean_scores,
    speaker_pair_mean_scores_explicit,
)
from services.scoring.plda import (
    LDAProjection,
    PLDABackend,
    PLDAModel,
    fit_two_covariance,
    length_normalize,
    marginal_likelihood_llr,
    train_lda,
    train_plda,
    two_covariance_log_likelihood,
)
from services.scoring.scorer import (
    EERReport,
    ScoreBlock,
    ScoredTrials,
    ScoreMatrix,
    ScoringBackend,
    TargetNontargetScores,
    eer_report,
    iter_score_blocks_for_trials,
    per_speaker_eer_report,
    score_trials,
    streaming_eer_report,
)
from services.scoring.streaming import (
    StreamingEER,
    eer_from_counts,
    float32_order_keys,
    keys_to_float32,
)
from services.scoring.trials import (
    Aggregation,
    EmbeddingSet,
    EnrollmentMode,
    GenderMode,
    TrialSet,
)

__all__ = [
    "DEFAULT_MEMORY_BUDGET_BYTES",
    "ASNorm",
    "Aggregation",
    "CohortStats",
    "CosineBackend",
    "EERReport",
    "EmbeddingSet",
    "EnrollmentMode",
    "GenderMode",
    "LDAProjection",
    "PLDABackend",
    "PLDAModel",
    "PairScoreTerms",
    "ScoreBlock",
    "ScoreMatrix",
    "ScoredTrials",
    "ScoringBackend",
    "StreamingEER",
    "TargetNontargetScores",
    "TrialSet",
    "as_norm_matrix",
    "as_norm_terms",
    "cohort_stats",
    "cosine_score_matrix",
    "eer_from_counts",
    "eer_report",
    "effective_top_k",
    "fit_two_covariance",
    "float32_order_keys",
    "group_means",
    "iter_score_blocks",
    "iter_score_blocks_for_trials",
    "keys_to_float32",
    "l2_normalize",
    "length_normalize",
    "marginal_likelihood_llr",
    "per_speaker_eer_report",
    "rows_per_block",
    "score_all_pairs",
    "score_trials",
    "speaker_pair_mean_scores",
    "speaker_pair_mean_scores_explicit",
    "streaming_eer_report",
    "train_lda",
    "train_plda",
    "two_covariance_log_likelihood",
]
