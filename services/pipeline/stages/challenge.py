"""Pretrained verifiers in the score phase: the zoo's pretrained attackers (their rows) and the
challenger (the pretrained GE2E verifier scored on the headline scenario's trials).

See ``services.pipeline.challenger`` for what it is and how it decides. Its embeddings are
``embed`` stages keyed by the GE2E model (package version and weights hash) and the set, and its
scores a ``score`` stage (cosine, no normalization, the config's trial lists and metrics without
the legal ones): a rerun reuses them, and its cost in CPU seconds is measured only when they are
computed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from services.attacker.hf_xvector import HF_XVECTOR
from services.corpus.manifest import Manifest
from services.metrics import SpeakerTrials, catalogue
from services.pipeline.challenger import challenger_block, cpu_clock, verdict_row
from services.pipeline.plan import SCENARIO_PLAN
from services.pipeline.sets import ConditionSets
from services.pipeline.stage_runner import read_compute_seconds
from services.pipeline.stages.context import StageContext
from services.pipeline.stages.score import EmbeddedSet, score_row
from services.pipeline.zoo import headline, row_attacker, worst_case
from services.scoring.trial_scores import TRIALS_NAME, load_scored_trials, speaker_trials
from services.vocab import HEADLINE_SCENARIOS


def verifier_embedder(
    verifier: str, folder: str | None
) -> tuple[str, Callable[[Sequence[np.ndarray]], np.ndarray]]:
    """(model key, embedding function) of a pretrained verifier: GE2E, or the operator's folder
    ``folder`` of a SpeechBrain ECAPA (``ecapa``) or a Hugging Face speaker-verification model
    (``hf-xvector``). The key names the weights (a stage key)."""
    if verifier == "ecapa":
        from services.attacker.pretrained import ecapa_embeddings, ecapa_model_key

        assert folder is not None, "pretrained ecapa needs its folder"
        return ecapa_model_key(folder), partial(ecapa_embeddings, folder)
    if verifier == HF_XVECTOR:
        from services.attacker.hf_xvector import hf_xvector_embeddings, hf_xvector_model_key

        assert folder is not None, "pretrained hf-xvector needs its folder"
        return hf_xvector_model_key(folder), partial(hf_xvector_embeddings, folder)
    from services.attacker import ge2e

    return ge2e.model_key(), ge2e.ge2e_embeddings


def pretrained_embedded(
    ctx: StageContext,
    data: ConditionSets,
    set_name: str,
    verifier: str = "ge2e",
    checkpoint: str | None = None,
) -> EmbeddedSet:
    """The embeddings of one set by a pretrained verifier, as it is (an ``embed`` stage keyed by
    the verifier's weights): GE2E, or the operator's folder ``checkpoint``."""
    manifest: Manifest = data.get(set_name)
    model, embed = verifier_embedder(verifier, checkpoint)
    inputs = {"model": model, "data": data.keys[set_name], "manifest": manifest.content_hash()}

    def make(folder: Path) -> dict[str, Any]:
        ctx.progress("score", 0.0, f"pretrained {verifier}: {len(manifest)} {set_name}")
        emb = embed(ctx.audio.load(manifest))
        np.save(folder / "embeddings.npy", emb)
        (folder / "utt_ids.json").write_text(json.dumps([u.utt_id for u in manifest.utterances]))
        return {"embeddings": "embeddings.npy", "utt_ids": "utt_ids.json"}

    outcome = ctx.runner.run("embed", inputs, make)
    embeddings = np.load(outcome.folder / "embeddings.npy")
    return manifest, embeddings, f"embed:{outcome.key}:{data.keys[set_name]}"


def _compute_seconds(ctx: StageContext, stage: str, key: str) -> float:
    """Seconds the stage took when it was computed (its compute record; 0 when absent)."""
    return read_compute_seconds(ctx.runner.folder(stage, key)) or 0.0


def _plain(ctx: StageContext) -> StageContext:
    """``ctx`` scoring with cosine as it is: no normalization, no legal metrics."""
    plain = ctx.config.model_copy(
        update={
            "metrics": ctx.config.metrics.model_copy(update={"legal": None}),
            "scoring": ctx.config.scoring.model_copy(update={"normalization": "none"}),
        }
    )
    return replace(ctx, config=plain)


def pretrained_rows(
    ctx: StageContext,
    name: str,
    conditions: Mapping[str, ConditionSets | None],
    verifier: str = "ge2e",
    checkpoint: str | None = None,
) -> list[dict[str, Any]]:
    """The score rows of a pretrained attacker of the zoo (``AttackerSpec.pretrained``: GE2E, or
    the operator's folder ``checkpoint``):
    every scenario of the config with cosine, on the first seed (nothing is trained, so seeds do
    not change it), each row naming ``name``. Embeddings are shared across scenarios."""
    cache: dict[tuple[str, str], EmbeddedSet] = {}

    def embedded(condition: str, set_name: str) -> EmbeddedSet:
        if (condition, set_name) not in cache:
            data = conditions.get(condition)
            assert data is not None, f"no {condition} sets"
            cache[(condition, set_name)] = pretrained_embedded(
                ctx, data, set_name, verifier, checkpoint
            )
        return cache[(condition, set_name)]

    rows = []
    seed = ctx.config.seeds[0]
    for scenario in ctx.config.scenarios:
        _, enrollment, trial = SCENARIO_PLAN[scenario]
        row = score_row(
            _plain(ctx),
            scenario,
            "cosine",
            seed,
            embedded(enrollment, "enrollment"),
            embedded(trial, "trial"),
            None,
        )
        rows.append(row | {"attacker": name})
    return rows


def _trials(ctx: StageContext, row: Mapping[str, Any]) -> SpeakerTrials:
    scored, _ = load_scored_trials(ctx.runner.folder("score", row["stage_key"]) / TRIALS_NAME)
    return speaker_trials(scored)


def _challenge(
    ctx: StageContext,
    rows: Sequence[Mapping[str, Any]],
    entry: Mapping[str, Any],
    scenario: str,
    conditions: Mapping[str, ConditionSets | None],
) -> dict[str, Any] | None:
    """The challenger block of one scenario against its worst-case ``entry``; None when its data
    or the entry's score stages are missing."""
    _, enrollment_condition, trial_condition = SCENARIO_PLAN[scenario]
    enrollment_sets = conditions.get(enrollment_condition)
    trial_sets = conditions.get(trial_condition)
    head_rows = [
        r
        for r in rows
        if r["scenario"] == scenario
        and row_attacker(r) == entry["attacker"]
        and r["backend"] == entry["backend"]
        and "stage_key" in r
    ]
    if enrollment_sets is None or trial_sets is None or not head_rows:
        return None
    start = cpu_clock()
    enrollment = pretrained_embedded(ctx, enrollment_sets, "enrollment")
    trial = pretrained_embedded(ctx, trial_sets, "trial")
    seed = ctx.config.seeds[0]  # as the pretrained zoo member's rows: the same score stage
    row = score_row(_plain(ctx), scenario, "cosine", seed, enrollment, trial, None)
    cpu_seconds = cpu_clock() - start
    block = challenger_block(
        scenario,
        entry,
        [_trials(ctx, r) for r in head_rows],
        row,
        _trials(ctx, row),
        cpu_seconds,
    )
    # What its stages took when computed (wall seconds; this run may have reused them).
    keys = [("embed", e[2].split(":")[1]) for e in (enrollment, trial)]
    keys.append(("score", str(row["stage_key"])))
    block["compute_seconds"] = round(sum(_compute_seconds(ctx, *k) for k in keys), 2)
    return block


SCENARIO_FIELDS = (
    catalogue.EER.key,
    "headline",
    "difference_points",
    "interval_points",
    "stronger",
)
"""What the block keeps of each attack scenario's challenge (``scenarios``)."""


def _entry(scenario: str, block: Mapping[str, Any]) -> dict[str, Any]:
    """What ``scenarios`` keeps of one scenario's challenge, with the verdict's row."""
    entry = {k: block.get(k) for k in SCENARIO_FIELDS}
    entry["row"] = verdict_row(scenario, entry)
    return entry


def challenge_stage(
    ctx: StageContext,
    rows: Sequence[Mapping[str, Any]],
    conditions: Mapping[str, ConditionSets | None],
    pretrained: Sequence[str] = (),
) -> dict[str, Any] | None:
    """The ``challenger`` block (``services.pipeline.challenger``) of a run's score rows: the
    headline scenario's challenge, and under ``scenarios`` every attack scenario's (ignorant,
    lazy-informed, semi-informed: is a trained attacker's row weaker than the pretrained
    verifier's beyond the interval?). None when no attack scenario was scored, its data is
    missing, or the verdict's attacker is already a pretrained zoo member (``pretrained``: their
    names), i.e. the challenger itself."""
    worst = worst_case(rows)
    scenario, attacker = headline(worst)
    if scenario is None or scenario not in SCENARIO_PLAN or scenario == "original":
        return None
    if attacker in pretrained:
        return None
    block = _challenge(ctx, rows, worst[scenario], scenario, conditions)
    if block is None:
        return None
    scenarios = {scenario: _entry(scenario, block)}
    cpu, compute = block["cpu_seconds"], block["compute_seconds"]
    for other in HEADLINE_SCENARIOS:
        entry = worst.get(other)
        if other == scenario or entry is None or entry["attacker"] in pretrained:
            continue
        found = _challenge(ctx, rows, entry, other, conditions)
        if found is not None:
            scenarios[other] = _entry(other, found)
            cpu += found["cpu_seconds"]
            compute += found["compute_seconds"]
    block["scenarios"] = scenarios
    block["cpu_seconds"], block["compute_seconds"] = round(cpu, 2), round(compute, 2)
    return block
