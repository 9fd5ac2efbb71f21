"""The utterance manifest: one row per utterance (PROTOCOLS.md section 1).

This module holds the data model only; reading and writing manifests lives in
`services.corpus.loaders`, importers of corpus folder layouts in `services.corpus.importers`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Gender = Literal["f", "m"]


class Utterance(BaseModel):
    """One utterance of a corpus.

    ``duration_s`` is in seconds. ``source_speaker_id`` / ``target_id`` are set on anonymized
    manifests: the speaker the audio came from and the target voice the anonymizer converted to.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    utt_id: str = Field(min_length=1)
    speaker_id: str = Field(min_length=1)
    gender: Gender
    path: str = Field(min_length=1)
    duration_s: float = Field(gt=0)
    text: str | None = None
    chapter_id: str | None = None
    original_sample_rate: int | None = Field(None, description="Hz, before resampling to 16 kHz.")
    target_id: str | None = None


class Manifest(BaseModel):
    """An ordered list of utterances with unique ids.

    Relative ``path`` values are resolved against ``root`` (the manifest file's folder).
    """

    model_config = ConfigDict(frozen=True)

    utterances: tuple[Utterance, ...]
    root: str = "."

    def __len__(self) -> int:
        return len(self.utterances)

    def __iter__(self) -> Iterator[Utterance]:  # type: ignore[override]
        return iter(self.utterances)

    def resolve(self, utt: Utterance) -> Path:
        """Absolute path of an utterance's audio file."""
        p = Path(utt.path)
        return p if p.is_absolute() else (Path(self.root) / p).resolve()

    def speakers(self) -> list[str]:
        """Speaker ids, sorted."""
        return sorted({u.speaker_id for u in self.utterances})

    def by_speaker(self) -> dict[str, list[Utterance]]:
        """Utterances grouped by speaker id (speakers sorted, utterances in manifest order)."""
        out: dict[str, list[Utterance]] = {s: [] for s in self.speakers()}
        for u in self.utterances:
            out[u.speaker_id].append(u)
        return out

    def speaker_gender(self) -> dict[str, Gender]:
        """Gender of each speaker."""
        return {u.speaker_id: u.gender for u in self.utterances}

    def subset(self, utt_ids: Iterable[str]) -> Manifest:
        """The utterances whose id is in ``utt_ids``, in manifest order."""
        keep = set(utt_ids)
        return Manifest(
            utterances=tuple(u for u in self.utterances if u.utt_id in keep), root=self.root
        )

    def with_utterances(self, utterances: Iterable[Utterance]) -> Manifest:
        """A manifest with the same root and the given utterances."""
        return Manifest(utterances=tuple(utterances), root=self.root)

    def absolute(self) -> Manifest:
        """The same utterances with absolute paths (root no longer matters)."""
        rows = tuple(u.model_copy(update={"path": str(self.resolve(u))}) for u in self.utterances)
        return Manifest(utterances=rows, root=self.root)

    @staticmethod
    def concat(*manifests: Manifest) -> Manifest:
        """Utterances of several manifests (possibly with different roots), paths made absolute."""
        rows = tuple(u for m in manifests for u in m.absolute().utterances)
        return Manifest(utterances=rows, root="/")

    def content_hash(self) -> str:
        """SHA-256 of the rows (not the audio bytes, not the root): names what a result used."""
        rows = [u.model_dump(mode="json", exclude_none=True) for u in self.utterances]
        blob = json.dumps(rows, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()
