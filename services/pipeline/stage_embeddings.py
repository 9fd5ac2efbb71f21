"""Read the embeddings an evaluation wrote (``OUT/stages/embed/<key>/``) for the analyses CLI.

An embed stage folder holds ``embeddings.npy`` (n, d) and ``utt_ids.json`` (n ids, manifest
order), and its ``DONE.json`` names the set it embedded: ``anonymize:<key>`` (an anonymized set,
whose manifest is in the same stage store) or ``original:<protocol hash>:<set>`` (the protocol's
original speech; the synthetic corpus stage's protocol is looked up in the store). From that
manifest come each row's speaker and gender, and the set name gives its role (enrollment or
trial), which is what ``unmask analyses size-study`` and ``srd --embeddings`` need.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from services.errors import InvalidInputError

EMBEDDINGS_FILE = "embeddings.npy"
UTT_IDS_FILE = "utt_ids.json"


@dataclass(frozen=True)
class StageEmbeddings:
    """One embed stage's rows: embeddings (n, d), utterance ids, speakers, genders, role."""

    embeddings: np.ndarray
    utt_ids: list[str]
    speaker_ids: list[str]
    genders: list[str]
    role: str  # enrollment, trial or both


def is_embed_stage(path: Path) -> bool:
    """Whether ``path`` is an embed stage folder or the ``embeddings.npy`` inside one."""
    folder = path if path.is_dir() else path.parent
    return (folder / EMBEDDINGS_FILE).is_file() and (folder / UTT_IDS_FILE).is_file()


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path}: not readable JSON ({exc})") from None


def read_embed_stage(path: Path) -> StageEmbeddings:
    """The rows of the embed stage at ``path`` (its folder or its ``embeddings.npy``)."""
    folder = path if path.is_dir() else path.parent
    if not is_embed_stage(path):
        raise InvalidInputError(
            f"{path}: not an embed stage folder (expected {EMBEDDINGS_FILE} and {UTT_IDS_FILE}, "
            "as in OUT/stages/embed/<key>/ written by `unmask evaluate`)"
        )
    try:
        emb = np.load(folder / EMBEDDINGS_FILE, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"{folder / EMBEDDINGS_FILE}: not a readable .npy ({exc})"
        ) from None
    ids = _json(folder / UTT_IDS_FILE)
    if not isinstance(ids, list) or emb.ndim != 2 or len(ids) != emb.shape[0]:
        raise InvalidInputError(
            f"{folder}: {UTT_IDS_FILE} must list one id per row of {EMBEDDINGS_FILE} "
            f"(shape {emb.shape})"
        )
    done = folder / "DONE.json"
    if not done.is_file():
        raise InvalidInputError(f"{folder}: no DONE.json (not a finished stage folder)")
    data = str(_json(done).get("inputs", {}).get("data", ""))
    manifest_path, role = _manifest_of(folder.parent.parent, data, folder)
    from services.corpus.loaders import read_manifest

    manifest = read_manifest(manifest_path, check_audio=False)
    by_id = {u.utt_id: u for u in manifest}
    missing = [u for u in ids if u not in by_id]
    if missing:
        raise InvalidInputError(
            f"{folder}: {len(missing)} utterance(s) not in {manifest_path}, e.g. {missing[:3]}"
        )
    return StageEmbeddings(
        emb,
        [str(u) for u in ids],
        [by_id[u].speaker_id for u in ids],
        [by_id[u].gender for u in ids],
        role,
    )


def _manifest_of(store: Path, data: str, folder: Path) -> tuple[Path, str]:
    """(manifest path, role) of the set an embed stage embedded."""
    kind, _, rest = data.partition(":")
    if kind == "anonymize":
        anon = store / "anonymize" / rest
        record = _json(anon / "DONE.json") if (anon / "DONE.json").is_file() else None
        if record is None:
            raise InvalidInputError(f"{folder}: its anonymized set {anon} is not in the store")
        role = str(record.get("inputs", {}).get("set", "both"))
        return anon / str(record.get("outputs", {}).get("manifest", "audio/manifest.jsonl")), (
            role if role in ("enrollment", "trial") else "both"
        )
    if kind == "original":
        proto_hash, _, set_name = rest.rpartition(":")
        from services.corpus.protocol import load_protocol, resolve_manifest_path

        for protocol_file in sorted((store / "corpus").glob("*/protocol.json")):
            if _json(protocol_file).get("content_hash") == proto_hash:
                protocol = load_protocol(protocol_file, check_manifest=False)
                role = set_name if set_name in ("enrollment", "trial") else "both"
                return resolve_manifest_path(protocol, protocol_file), role
        raise InvalidInputError(
            f"{folder}: embeds original speech of protocol {proto_hash[:12]}..., whose corpus "
            f"stage is not in {store}"
        )
    raise InvalidInputError(f"{folder}: DONE.json names no embedded set (data {data!r})")
