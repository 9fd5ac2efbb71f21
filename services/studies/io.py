"""Embedding files of the dataset-size study (``.npz``).

Arrays (one row per embedding):

| key | shape | content |
|---|---|---|
| ``embeddings`` | (n, d) float | speaker embeddings, extracted once per target seed |
| ``speaker_ids`` | (n,) str | source speaker of the utterance |
| ``genders`` | (n,) str | ``f`` or ``m`` |
| ``target_seed`` | () or (n,) int | anonymization (TSA) seed of the file or of each row |
| ``roles`` | (n,) str, optional | ``trial``, ``enrollment`` or ``both`` (default ``both``) |
| ``utterance_ids`` | (n,) str, optional | rows sharing one are versions of one utterance |

PLDA training file (``--plda-train``): ``embeddings`` (n, d) and ``speaker_ids`` (n,) of the
attacker-train utterances.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from services.errors import InvalidInputError
from services.studies.dataset_size import EmbeddingTable, tables_from_arrays

REQUIRED_KEYS = ("embeddings", "speaker_ids", "genders", "target_seed")


def _load(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise InvalidInputError(f"{path}: embedding file not found")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path}: not a readable .npz file ({exc})") from None


def load_embedding_tables(paths: Sequence[str | Path]) -> dict[int, EmbeddingTable]:
    """``{target_seed: EmbeddingTable}`` from one or more study ``.npz`` files (format above)."""
    tables: dict[int, EmbeddingTable] = {}
    for raw in paths:
        path = Path(raw)
        data = _load(path)
        missing = [k for k in REQUIRED_KEYS if k not in data]
        if missing:
            raise InvalidInputError(f"{path}: missing array(s) {', '.join(missing)}")
        emb = data["embeddings"]
        n = emb.shape[0] if emb.ndim == 2 else -1
        seeds = data["target_seed"]
        seeds = np.full(n, int(seeds)) if seeds.ndim == 0 else seeds
        try:
            found = tables_from_arrays(
                emb,
                data["speaker_ids"],
                data["genders"],
                seeds,
                data.get("roles"),
                data.get("utterance_ids"),
            )
        except ValueError as exc:
            raise InvalidInputError(f"{path}: {exc}") from None
        clash = sorted(set(found) & set(tables))
        if clash:
            raise InvalidInputError(f"{path}: target seed(s) {clash} already given by another file")
        tables.update(found)
    if not tables:
        raise InvalidInputError("no embedding file given")
    return tables


def load_training_embeddings(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """``(embeddings, speaker_ids)`` of a PLDA training ``.npz``."""
    p = Path(path)
    data = _load(p)
    for key in ("embeddings", "speaker_ids"):
        if key not in data:
            raise InvalidInputError(f"{p}: missing array {key}")
    return data["embeddings"], data["speaker_ids"].astype(str)


def save_embedding_table(path: str | Path, table: EmbeddingTable, target_seed: int) -> None:
    """Write one table in the study format (the inverse of ``load_embedding_tables``)."""
    np.savez(
        path,
        embeddings=table.embeddings,
        speaker_ids=np.asarray(table.speaker_ids).astype(str),
        genders=np.asarray(table.genders).astype(str),
        target_seed=np.int64(target_seed),
        roles=np.asarray(table.roles).astype(str),
        utterance_ids=np.asarray(table.utterance_ids).astype(str),
    )
