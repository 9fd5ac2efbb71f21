"""What every stage function reads: the config, the stage store, the progress reporter, audio."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from services.anonymizers.container_sandbox import ContainerSandbox
from services.audio import read_audio
from services.corpus.manifest import Manifest
from services.pipeline.config import EvaluationConfig
from services.pipeline.stage_runner import StageRunner

ProgressReporter = Callable[[str, float, str], None]
"""``(stage, fraction done in [0, 1], message)``; stages report as they go."""


def no_progress(stage: str, fraction: float, message: str) -> None:
    """The default reporter: reports nothing."""
    return None


class AudioCache:
    """Waveforms read once per run (the same utterance feeds training, embedding and SRD)."""

    def __init__(self) -> None:
        self._cache: dict[Path, np.ndarray] = {}

    def load(self, manifest: Manifest) -> list[np.ndarray]:
        """Mono float32 waveforms at 16 kHz, in manifest order."""
        out = []
        for u in manifest.utterances:
            p = manifest.resolve(u)
            if p not in self._cache:
                self._cache[p] = read_audio(p)[0]
            out.append(self._cache[p])
        return out


@dataclass(frozen=True)
class StageContext:
    """One evaluation's shared state, handed to every stage function."""

    config: EvaluationConfig
    runner: StageRunner
    """The (content-addressed) stage store the stages run in."""
    progress: ProgressReporter
    audio: AudioCache
    cache_dir: Path | None
    """Cache of embeddings and F0 tracks across evaluations (None = no cache)."""
    sandbox: ContainerSandbox
    """Where anonymizer containers run (anonymizer kind ``container``)."""


def json_default(obj: Any) -> Any:
    """``json.dumps`` fallback for what stages write: numpy scalars and arrays, paths."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serializable: {type(obj).__name__}")
