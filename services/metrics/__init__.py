"""Privacy metrics: ROCCH EER (pooled, per speaker), detection rate at low FAR, Cllr / min Cllr,
linkability, ZEBRA, SRD and bootstrap intervals.

Pure NumPy / SciPy; inputs are score arrays, ranks or similarity matrices. Definitions, units,
tie rules and edge cases: docs/metrics.md.
"""

from services.metrics.bootstrap import (
    BootstrapInterval,
    SpeakerTrials,
    SpeakerWeightedEER,
    SRDBootstrap,
    bootstrap_eer,
    bootstrap_srd,
    paired_bootstrap_eer_difference,
)
from services.metrics.calibration import (
    PavCalibration,
    compute_cllr,
    compute_min_cllr,
    pav,
    pav_calibration,
    pav_llrs,
)
from services.metrics.detection import DetectionRate, detection_rate_at_far
from services.metrics.eer import (
    DETCurve,
    EERResult,
    ROCConvexHull,
    compute_eer,
    compute_interpolated_eer,
    compute_rocch,
    det_curve,
)
from services.metrics.linkability import LinkabilityResult, compute_linkability
from services.metrics.per_speaker import PerSpeakerEER, per_speaker_eer, summarize_per_speaker
from services.metrics.srd import (
    BetaBinomialFit,
    MatchingRanks,
    SRDResult,
    SRDSummary,
    beta_binomial_rank_pmf,
    compute_srd,
    fit_beta_binomial,
    fit_beta_binomial_constrained,
    matching_ranks,
    rank_histogram,
    srd_from_similarity,
    srd_summary,
)
from services.metrics.zebra import ZebraResult, compute_zebra, zebra_category

__all__ = [
    "BetaBinomialFit",
    "BootstrapInterval",
    "DETCurve",
    "DetectionRate",
    "EERResult",
    "LinkabilityResult",
    "MatchingRanks",
    "PavCalibration",
    "PerSpeakerEER",
    "ROCConvexHull",
    "SRDBootstrap",
    "SRDResult",
    "SRDSummary",
    "SpeakerTrials",
    "SpeakerWeightedEER",
    "ZebraResult",
    "beta_binomial_rank_pmf",
    "bootstrap_eer",
    "bootstrap_srd",
    "compute_cllr",
    "compute_eer",
    "compute_interpolated_eer",
    "compute_linkability",
    "compute_min_cllr",
    "compute_rocch",
    "compute_srd",
    "compute_zebra",
    "det_curve",
    "detection_rate_at_far",
    "fit_beta_binomial",
    "fit_beta_binomial_constrained",
    "matching_ranks",
    "paired_bootstrap_eer_difference",
    "pav",
    "pav_calibration",
    "pav_llrs",
    "per_speaker_eer",
    "rank_histogram",
    "srd_from_similarity",
    "srd_summary",
    "summarize_per_speaker",
    "zebra_category",
]
