"""The legal-metrics stage: top-1 linkability and singling out curves of one (recognizer, seed)'s
enrollment and trial embeddings (``services.metrics.legal``).

Cosine on the embeddings, as the paper defines them: the curves do not depend on the scoring
back-end, so the rows of every back-end of a (scenario, seed) share one stage and carry the same
``legal`` block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from services.corpus.manifest import Manifest
from services.errors import ConfigError
from services.metrics.legal import legal_report, population_of
from services.pipeline.config import LegalMetricsSpec, legal_runs_on, legal_spec_problems
from services.pipeline.stages.context import StageContext, json_default

LEGAL_NAME = "legal.json"

EmbeddedSet = tuple[Manifest, np.ndarray, str]
"""As ``stages.score.EmbeddedSet``: a set, its embeddings (n, dim) and its (recognizer, set) key."""


def legal_block(
    ctx: StageContext,
    spec: LegalMetricsSpec,
    seed: int,
    enrollment: EmbeddedSet,
    trial: EmbeddedSet,
) -> dict[str, Any]:
    """The row's ``legal`` block: curves and headline, or ``{"skipped": why}`` when the default
    grids find too small an evaluation set. An explicit request the set cannot serve raises
    ``ConfigError`` (checked before the run for the synthetic corpus and protocol files)."""
    e_man, e_emb, e_key = enrollment
    t_man, t_emb, t_key = trial
    enroll_speakers = [u.speaker_id for u in e_man.utterances]
    trial_speakers = [u.speaker_id for u in t_man.utterances]
    population = population_of(trial_speakers, enroll_speakers)
    problems = legal_spec_problems(spec, population)
    if problems:
        raise ConfigError("; ".join(problems))
    if not legal_runs_on(spec, population):
        return {
            "skipped": f"{population.n_speakers} speakers with enrollment and trial utterances "
            f"(fewest trial utterances {population.min_trials}); the default curves need 4 "
            "speakers with 2 each"
        }
    inputs = {
        "enrollment": e_key,
        "trial": t_key,
        "seed": seed,
        "spec": spec.model_dump(mode="json"),
    }

    def make(folder: Path) -> dict[str, Any]:
        report = legal_report(
            e_emb,
            enroll_speakers,
            t_emb,
            [u.utt_id for u in t_man.utterances],
            trial_speakers,
            speaker_counts=spec.speaker_counts,
            conversation_lengths=spec.conversation_lengths,
            grid_points=spec.grid_points,
            headline_speakers=spec.headline_speakers,
            headline_length=spec.headline_length,
            draws=spec.draws,
            folds=spec.folds,
            calibration_conversations=spec.calibration_conversations,
            seed=seed,
        )
        (folder / LEGAL_NAME).write_text(json.dumps(report, default=json_default))
        return {"result": LEGAL_NAME}

    outcome = ctx.runner.run("legal", inputs, make)
    block: dict[str, Any] = json.loads((outcome.folder / LEGAL_NAME).read_text())
    return block
