"""The anonymize stage: a condition's sets through the anonymizer, targets drawn by the TSA."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.anonymizers.base import Anonymizer
from services.anonymizers.contract import SET_NAMES
from services.anonymizers.kinds.base import RunnerContext, StageFn
from services.anonymizers.kinds.registry import build_runner
from services.anonymizers.service import anonymize_manifest, build_target_voices
from services.anonymizers.target_selection import select_targets_with, targets_for_utterances
from services.attacker.embeddings import resolve_device
from services.corpus.loaders import read_manifest
from services.corpus.manifest import Manifest
from services.corpus.protocol import Protocol, TargetSelection
from services.pipeline.sets import ConditionSets
from services.pipeline.stages.context import StageContext
from services.settings import get_settings

CONTAINER_RUNS_NAME = "container-runs.json"
"""Record of the container runs of an anonymize stage (kind ``container``), in its folder."""


def anonymize_sets(
    ctx: StageContext,
    protocol: Protocol,
    manifest: Manifest,
    protocol_key: str,
    original: ConditionSets,
    *,
    tsa_seed: int | None = None,
    names: tuple[str, ...] = SET_NAMES,
) -> ConditionSets:
    """Anonymize the sets ``names``; enrollment and trial get independently drawn targets.

    ``tsa_seed`` replaces the TSA's seed (the size study anonymizes once per target seed);
    sets not in ``names`` are returned as the original ones.
    """
    cfg = ctx.config
    tsa: TargetSelection = cfg.tsa or protocol.target_selection
    if tsa_seed is not None:
        tsa = tsa.model_copy(update={"seed": tsa_seed})
    anonymizer = _build_anonymizer(ctx, protocol, manifest, protocol_key)
    # A container runs once per shard: hand it whole shards, not the default small batches.
    batch_size = int(getattr(anonymizer, "shard_size", 16))
    target_manifest = manifest.subset(
        u.utt_id for u in manifest.utterances if u.speaker_id in set(protocol.target_pool)
    )
    voices: dict[str, Any] | None = None
    out: dict[str, Manifest] = {n: original.get(n) for n in SET_NAMES}
    keys: dict[str, str] = dict(original.keys)
    for i, name in enumerate(names):
        subset = original.get(name)
        # Attacker training data is always anonymized at utterance level (PROTOCOLS.md s. 2).
        granularity = "utterance" if name in ("train", "validation") else tsa.granularity
        inputs = {
            "protocol": protocol_key,
            "set": name,
            "manifest": subset.content_hash(),
            "anonymizer": anonymizer.config(),
            "tsa": tsa.model_dump(mode="json"),
            "granularity": granularity,
        }

        def make(
            folder: Path,
            subset: Manifest = subset,
            name: str = name,
            g: str = granularity,
            i: int = i,
        ) -> dict[str, Any]:
            nonlocal voices
            if voices is None:
                voices = build_target_voices(target_manifest)
            # A protocol without a target pool (the VoicePrivacy lists: the anonymizer brings its
            # own voices) anonymizes in the no-target mode.
            mapping = (
                select_targets_with(tsa, subset, voices, salt=name, granularity=g)  # type: ignore[arg-type]
                if voices
                else {}
            )
            targets = targets_for_utterances(mapping, voices)

            def report(done: int, total: int) -> None:
                ctx.progress(
                    "anonymize",
                    (i + done / max(total, 1)) / len(names),
                    f"{name} {done}/{total}",
                )

            runs_before = len(getattr(anonymizer, "runs", ()))
            anonymize_manifest(
                subset,
                anonymizer,
                targets,
                folder / "audio",
                seed=tsa.seed,
                progress=report,
                batch_size=batch_size,
            )
            outputs = {"manifest": "audio/manifest.jsonl"}
            if _keep_container_runs(anonymizer, runs_before, folder):
                outputs["container_runs"] = CONTAINER_RUNS_NAME
            return outputs

        outcome = ctx.runner.run("anonymize", inputs, make)
        out[name] = read_manifest(outcome.folder / outcome.outputs["manifest"], check_audio=False)
        keys[name] = f"anonymize:{outcome.key}"
    return ConditionSets(out["train"], out["validation"], out["enrollment"], out["trial"], keys)


def _build_anonymizer(
    ctx: StageContext, protocol: Protocol, manifest: Manifest, protocol_key: str
) -> Anonymizer:
    """The configured anonymizer, built by its kind (an archive is validated first)."""
    cfg = ctx.config

    def run_stage(stage: str, inputs: dict[str, Any], fn: StageFn) -> Path:
        return ctx.runner.run(stage, inputs, fn).folder

    runner_context = RunnerContext(
        protocol=protocol,
        manifest=manifest,
        protocol_key=protocol_key,
        gpu=resolve_device(cfg.training.device).type == "cuda",
        sandbox_options=ctx.sandbox.anonymizer_options(),
        settings=get_settings(),
        run_stage=run_stage,
        progress=lambda fraction, message: ctx.progress("anonymize", fraction, message),
    )
    return build_runner(cfg.anonymizer, runner_context)


def _keep_container_runs(anonymizer: Anonymizer, runs_before: int, folder: Path) -> bool:
    """Write the runs since ``runs_before`` of an anonymizer that records them (a container) to
    ``folder/container-runs.json``; False for one that does not."""
    run_record = getattr(anonymizer, "run_record", None)
    if not callable(run_record):
        return False
    # A container's runs (exit code, wall time, log tail, metadata.json per shard) are otherwise
    # lost on success: keep those of this set with its audio.
    record = run_record()
    record["runs"] = record["runs"][runs_before:]
    (folder / CONTAINER_RUNS_NAME).write_text(json.dumps(record, indent=1))
    return True
