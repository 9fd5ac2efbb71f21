"""Corpora: manifests, importers, validation, duration filter, speaker roles, splits, protocols.

- ``manifest``: the ``Utterance`` / ``Manifest`` data model.
- ``loaders``: read/write CSV and JSONL manifests.
- ``importers``: LibriSpeech / LibriTTS folder layouts and plain manifests.
- ``validation``: row and audio checks, ``ManifestProblem`` reports, the ``DurationFilter``.
- ``splits``: speaker roles, evaluation (enrollment/trial) and validation splits.
- ``protocol``: the ``Protocol`` file and ``TargetSelection`` settings.
- ``synthetic``: the built-in synthetic corpus (imported on demand; it is heavier).
"""

from services.corpus.importers import import_corpus, import_librispeech, import_libritts
from services.corpus.loaders import load_manifest, read_manifest, write_manifest
from services.corpus.manifest import Gender, Manifest, Utterance
from services.corpus.protocol import (
    Protocol,
    TargetSelection,
    build_protocol,
    load_protocol,
    load_protocol_and_manifest,
    save_protocol,
)
from services.corpus.splits import (
    SpeakerRoles,
    assign_speaker_roles,
    split_evaluation,
    split_validation,
)
from services.corpus.validation import (
    DurationFilter,
    LoadReport,
    ManifestProblem,
    validate_manifest,
)

__all__ = [
    "DurationFilter",
    "Gender",
    "LoadReport",
    "Manifest",
    "ManifestProblem",
    "Protocol",
    "SpeakerRoles",
    "TargetSelection",
    "Utterance",
    "assign_speaker_roles",
    "build_protocol",
    "import_corpus",
    "import_librispeech",
    "import_libritts",
    "load_manifest",
    "load_protocol",
    "load_protocol_and_manifest",
    "read_manifest",
    "save_protocol",
    "split_evaluation",
    "split_validation",
    "validate_manifest",
    "write_manifest",
]
