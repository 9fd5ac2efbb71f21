"""The embed stage: embeddings of one set by one trained recognizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from services.attacker.embeddings import extract_embeddings
from services.corpus.manifest import Manifest
from services.pipeline.sets import ConditionSets
from services.pipeline.stages.context import StageContext
from services.pipeline.stages.train import TrainedModels


def embed_manifest(
    ctx: StageContext, model_key: str, checkpoint: Path, data: Manifest, data_key: str
) -> np.ndarray:
    """Embeddings (n, dim) of ``data`` by the recognizer at ``checkpoint`` (manifest order).

    ``model_key`` names the recognizer (``train:<stage key>``), ``data_key`` the set.
    """
    inputs = {"model": model_key, "data": data_key, "manifest": data.content_hash()}

    def make(folder: Path) -> dict[str, Any]:
        ctx.progress("embed", 0.0, f"loading {len(data)} utterances of {data_key}")
        waves = ctx.audio.load(data)

        def counted(done: int, total: int) -> None:
            ctx.progress("embed", done / total, f"{done}/{total} utterances of {data_key}")

        emb = extract_embeddings(
            checkpoint,
            waves,
            cache=ctx.cache_dir,
            device=ctx.config.training.device,
            progress=counted,
        )
        np.save(folder / "embeddings.npy", emb)
        (folder / "utt_ids.json").write_text(json.dumps([u.utt_id for u in data.utterances]))
        ctx.progress("embed", 1.0, f"{len(data)} utterances of {data_key}")
        return {"embeddings": "embeddings.npy", "utt_ids": "utt_ids.json"}

    outcome = ctx.runner.run("embed", inputs, make)
    return np.load(outcome.folder / "embeddings.npy")


def embed_set(
    ctx: StageContext,
    models: TrainedModels,
    model: tuple[str, int],
    data: ConditionSets,
    set_name: str,
) -> np.ndarray:
    """Embeddings of the set ``set_name`` of ``data`` by the recognizer ``model``'s best epoch."""
    trained, outcome = models[model]
    model_key = f"train:{outcome.key}"
    return embed_manifest(
        ctx, model_key, trained.best_checkpoint, data.get(set_name), data.keys[set_name]
    )
