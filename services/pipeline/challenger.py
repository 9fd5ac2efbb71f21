"""A challenger in every run: a cheap attacker of another family, scored on the headline's trials.

The verdict's attacker is trained by Unmask on a few dozen speakers; a realistic attacker starts
from a verifier pretrained on thousands. So every evaluation also scores the **challenger**, the
pretrained GE2E verifier of Resemblyzer (``services.attacker.ge2e``), never trained on the
evaluation's data, with cosine scoring, on the same enrollment and trial utterances as the
headline scenario (the strongest attack scenario the run scored; for an untrained verifier the
semi-informed and lazy-informed attacks are the same embeddings). It costs two embedding passes
and one scoring, no training.

The decision (:func:`challenge_decision`): the speaker-level paired bootstrap of the EER
difference (``paired_bootstrap_eer_difference``, the one ``compare`` uses; every resample draws
the evaluation speakers once for both attackers) gives EER(challenger) - EER(headline) in
percentage points with its 95 % interval. When the whole interval is below 0, the challenger
beats the headline attacker beyond the speakers' spread: the verdict overestimates privacy, the
trust check says NOT TRUSTWORTHY naming the challenger and its EER (``challenger_stronger``), and
the worst case reports it. A challenger that is better but within the interval is reported, not
acted on.

The block in ``results.json`` (``challenger``; with a zoo also under ``worst_case.<scenario>``)::

    {"attacker": "ge2e", "family": str, "scenario": str, "backend": "cosine",
     EER: float, "headline": {"attacker": str, "backend": str, EER: float,
     "n_seeds": int}, "difference_points": float, "interval_points": [low, high] | null,
     "confidence": 0.95, "n_speakers": int, "stronger": bool, "cpu_seconds": float,
     "compute_seconds": float,
     "scenarios": {scenario: {EER, "headline", "difference_points",
                              "interval_points", "stronger",
                              "row": {"attacker", "backend", EER, "pretrained"}}}}

(EER: the catalogue's EER key, ``catalogue.EER.key``, in %.)

``scenarios``: the same challenge for every attack scenario the run scored (ignorant and
lazy-informed too: is the trained attacker's row weaker than the pretrained verifier's beyond the
interval?); only the headline scenario's decides the trust check, the others are reported (the
worst case of each scenario names its challenger). Each carries ``row`` (:func:`verdict_row`):
the attacker, back-end and EER the verdict reports for that scenario. The ignorant and
lazy-informed rows are never weaker than the pretrained verifier (the lower EER of the trained
attacker and the challenger, naming which); the semi-informed row is the trained attacker's.

``cpu_seconds``: process CPU seconds this run spent on it, all scenarios (near 0 when its
stages were reused);
``compute_seconds``: the wall seconds its embed and score stages took when they were computed.
No block when the verdict's attacker is itself a pretrained zoo member scored as it is
(``ge2e``); a fine-tuned one (``finetune: true``) is a trained attacker and is challenged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from services.metrics import SpeakerTrials, catalogue, paired_bootstrap_eer_difference

CHALLENGER_FAMILY = "pretrained GE2E verifier (Resemblyzer), not trained on this corpus"
CONFIDENCE = 0.95
RESAMPLES = 1000


def challenge_decision(
    headline: Sequence[SpeakerTrials],
    challenger: SpeakerTrials,
    *,
    n_resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> dict[str, Any]:
    """Whether ``challenger`` beats the headline attacker beyond the paired interval.

    ``headline``: the headline attacker's trial sets, one per seed (its EER is their mean, as the
    worst case's); ``challenger``: the challenger's trials on the same utterances. Returns
    ``{"difference_points": EER(challenger) - EER(headline), "interval_points": [low, high] or
    None, "confidence", "n_speakers", "stronger": high < 0}`` (percentage points). Raises
    ``ValueError`` when the trials are not paired (different speakers) or a set lacks a target or
    a non-target trial.
    """
    ci = paired_bootstrap_eer_difference(
        [list(headline)],
        [[challenger]],
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )
    finite = math.isfinite(ci.low) and math.isfinite(ci.high)
    return {
        "difference_points": float(ci.estimate),
        "interval_points": [float(ci.low), float(ci.high)] if finite else None,
        "confidence": confidence,
        "n_speakers": int(ci.n_speakers),
        "stronger": bool(finite and ci.high < 0.0),
    }


def challenger_block(
    scenario: str,
    headline_entry: Mapping[str, Any],
    headline_trials: Sequence[SpeakerTrials],
    challenger_row: Mapping[str, Any],
    challenger_trials: SpeakerTrials,
    cpu_seconds: float,
) -> dict[str, Any]:
    """The ``challenger`` block (module docstring) from the headline's worst-case entry
    (``attacker``, ``backend``, EER) and trials and the challenger's score row and trials."""
    from services.attacker.ge2e import GE2E

    eer = catalogue.EER.key
    decision = challenge_decision(headline_trials, challenger_trials)
    return {
        "attacker": GE2E,
        "family": CHALLENGER_FAMILY,
        "scenario": scenario,
        "backend": "cosine",
        eer: challenger_row.get(eer),
        "headline": {
            "attacker": headline_entry.get("attacker"),
            "backend": headline_entry.get("backend"),
            eer: headline_entry.get(eer),
            "n_seeds": len(headline_trials),
        },
        **decision,
        "cpu_seconds": round(cpu_seconds, 2),
    }


PRETRAINED_FLOOR_SCENARIOS = ("ignorant", "lazy-informed")
"""The scenarios whose verdict row is never weaker than the pretrained verifier's: their
recognizer is trained on original speech, which a pretrained verifier has seen far more of, so
the row is the lower EER of the two (``verdict_row``). The semi-informed row stays the trained
attacker's: there the challenger acts through the trust check (``stronger``)."""


def verdict_row(scenario: str, challenge: Mapping[str, Any]) -> dict[str, Any]:
    """The row the verdict reports for ``scenario`` from its challenge entry (``headline``: the
    trained worst case, and the challenger's EER): ``{"attacker", "backend", EER, "pretrained":
    bool}``. In ``PRETRAINED_FLOOR_SCENARIOS`` the lower EER of the two (the trained attacker's on
    a tie); elsewhere the trained attacker's."""
    from services.attacker.ge2e import GE2E

    key = catalogue.EER.key
    head = challenge.get("headline") or {}
    trained = {
        "attacker": head.get("attacker"),
        "backend": head.get("backend"),
        key: head.get(key),
        "pretrained": False,
    }
    mine, theirs = challenge.get(key), head.get(key)
    if (
        scenario in PRETRAINED_FLOOR_SCENARIOS
        and isinstance(mine, int | float)
        and (not isinstance(theirs, int | float) or mine < theirs)
    ):
        return {"attacker": GE2E, "backend": "cosine", key: float(mine), "pretrained": True}
    return trained


def challenger_message(block: Mapping[str, Any]) -> str | None:
    """The trust check's one line when the challenger is stronger beyond the interval; None
    otherwise (or for a malformed block)."""
    if block.get("stronger") is not True:
        return None
    eer, head = block.get(catalogue.EER.key), block.get("headline") or {}
    interval = block.get("interval_points") or [math.nan, math.nan]
    head_eer = head.get(catalogue.EER.key) if isinstance(head, Mapping) else None
    if not isinstance(eer, int | float) or not isinstance(head_eer, int | float):
        return None
    return (
        f"a stronger attacker exists: the challenger {block.get('attacker')} "
        f"({block.get('family')}) reaches EER {eer:.1f} % on the same {block.get('scenario')} "
        f"trials, below the verdict's {head_eer:.1f} % ({head.get('attacker')}, "
        f"{head.get('backend')}) by {-float(block.get('difference_points') or 0):.1f} points "
        f"(paired speaker bootstrap {100 * float(block.get('confidence') or 0):.0f} % interval "
        f"of the difference {interval[0]:.1f} to {interval[1]:.1f}); to fix: a stronger attacker "
        "(attackers: strongest, training.pretrained_ecapa_path a pretrained checkpoint, more "
        "epochs)"
    )


def cpu_clock() -> float:
    """Process CPU seconds (the challenger's cost is measured in CPU time, all threads)."""
    return time.process_time()
