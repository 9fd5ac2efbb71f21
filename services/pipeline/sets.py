"""The evaluation's data: the protocol (corpus stage) and its sets per data condition.

A data condition is ``original`` (the protocol's speech) or ``anonymized`` (the same sets through
the anonymizer, ``stages.anonymize``). Each condition has four sets (``SET_NAMES``, as the
anonymizer contract names them): the attacker's ``train`` and ``validation`` sets and the
evaluation speakers' ``enrollment`` and ``trial`` sets. A set's key
names where it came from; stages that read a set put its key in their inputs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.anonymizers.contract import SET_NAMES
from services.corpus.manifest import Manifest
from services.corpus.protocol import (
    FixedTrials,
    Protocol,
    build_protocol,
    load_protocol,
    load_protocol_and_manifest,
    save_protocol,
)
from services.corpus.synthetic import generate_synthetic_corpus
from services.pipeline.config import EvaluationConfig
from services.pipeline.stage_runner import DONE_FILE, stage_key
from services.pipeline.stages.context import StageContext


@dataclass
class ConditionSets:
    """Manifests of one data condition (original or anonymized) and their stage keys."""

    train: Manifest
    validation: Manifest
    enrollment: Manifest
    trial: Manifest
    keys: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Manifest:
        """The set ``name`` (one of ``SET_NAMES``)."""
        return {
            "train": self.train,
            "validation": self.validation,
            "enrollment": self.enrollment,
            "trial": self.trial,
        }[name]


def corpus_stage(ctx: StageContext) -> tuple[Protocol, Manifest, str]:
    """The protocol, its (duration-filtered) manifest and the stage key.

    With ``protocol`` set in the config, the protocol file; else the synthetic corpus and its
    protocol, generated in a stage keyed by the synthetic spec.
    """
    cfg = ctx.config
    if cfg.protocol_file is not None:
        protocol, manifest = load_protocol_and_manifest(cfg.protocol_file)
        return protocol, manifest, protocol.content_hash or protocol.compute_hash()
    spec = cfg.synthetic

    def make(folder: Path) -> dict[str, Any]:
        ctx.progress("corpus", 0.0, "generating the synthetic corpus")
        manifest = generate_synthetic_corpus(
            folder / "corpus",
            n_speakers=spec.n_speakers,
            utts_per_speaker=spec.utts_per_speaker,
            seed=spec.seed,
            min_duration_s=spec.min_duration_s,
            max_duration_s=spec.max_duration_s,
            # The reporter is throttled; the last hundredth is the protocol's construction.
            progress=lambda done, total: ctx.progress(
                "corpus", 0.99 * done / total, f"{done}/{total} utterances synthesized"
            ),
        )
        protocol = build_protocol(
            manifest,
            name=f"synthetic-{spec.n_speakers}x{spec.utts_per_speaker}-s{spec.seed}",
            manifest_path="corpus/manifest.jsonl",
            n_attacker_train_speakers=spec.n_attacker_train_speakers,
            n_eval_speakers=spec.n_eval_speakers,
            n_target_speakers=spec.n_target_speakers,
            trials_per_speaker=spec.trials_per_speaker,
            enrollments_per_speaker=spec.enrollments_per_speaker,
            seed=spec.seed,
        )
        save_protocol(protocol, folder / "protocol.json")
        ctx.progress("corpus", 1.0, f"{len(manifest)} utterances")
        return {"protocol": "protocol.json"}

    outcome = ctx.runner.run("corpus", synthetic_corpus_inputs(cfg), make)
    protocol, manifest = load_protocol_and_manifest(outcome.folder / "protocol.json")
    return protocol, manifest, protocol.content_hash or protocol.compute_hash()


def synthetic_corpus_inputs(cfg: EvaluationConfig) -> dict[str, Any]:
    """The synthetic corpus stage's inputs (its key) for ``cfg``."""
    # ``transcripts``: manifests carry each utterance's unit sequence as ``text`` (the utility
    # ASR's references); corpora generated before that are generated again.
    return {"synthetic": cfg.synthetic.model_dump(mode="json"), "transcripts": 1}


def stored_corpus_key(cfg: EvaluationConfig, stages_dir: Path) -> str | None:
    """The corpus key (protocol content hash) ``corpus_stage`` would return, read without
    computing anything: from the protocol file, or from the synthetic corpus's finished folder in
    the stage store ``stages_dir``; None when that folder is not there."""
    if cfg.protocol_file is not None:
        protocol = load_protocol(cfg.protocol_file, check_manifest=False)
    else:
        folder = stages_dir / "corpus" / stage_key("corpus", synthetic_corpus_inputs(cfg))
        if not (folder / DONE_FILE).is_file():
            return None
        protocol = load_protocol(folder / "protocol.json", check_manifest=False)
    return protocol.content_hash or protocol.compute_hash()


def original_sets(protocol: Protocol, manifest: Manifest, key: str) -> ConditionSets:
    """The protocol's sets of original speech; ``key`` is the corpus stage's (protocol) key."""
    sets = ConditionSets(
        train=manifest.subset(protocol.attacker_train),
        validation=manifest.subset(protocol.attacker_validation),
        enrollment=manifest.subset(protocol.enrollment),
        trial=manifest.subset(protocol.trial),
    )
    sets.keys = {name: f"original:{key}:{name}" for name in SET_NAMES}
    return sets


def fixed_trials_of(ctx: StageContext) -> FixedTrials | None:
    """The protocol's fixed trial lists (VoicePrivacy), or None (every pair is a trial).

    The synthetic corpus has none; a protocol file is read once per (path, modification time).
    """
    if ctx.config.protocol_file is None:
        return None
    path = Path(ctx.config.protocol_file).resolve()
    return _fixed_trials(str(path), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _fixed_trials(path: str, mtime_ns: int) -> FixedTrials | None:
    return load_protocol(path, check_manifest=False).fixed_trials
