"""Checks of manifest rows and audio files, with problems that name the file and the row.

A *problem* is one thing wrong with one row (or one file, for importers). Readers collect every
problem instead of stopping at the first; the caller then either raises one ``CorpusError`` that
lists them (up to ``MAX_LISTED_PROBLEMS``) or, with ``skip_invalid=True``, drops the bad rows and
returns the problems as a report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from services.audio import audio_info
from services.corpus.manifest import Gender, Manifest, Utterance
from services.errors import CorpusError

MAX_LISTED_PROBLEMS = 20
"""How many problems one ``CorpusError`` message lists before saying "... and N more"."""

MAX_KEPT_PROBLEMS = 100
"""How many problems an importer keeps (in the order found); the others are only counted, so a
corpus of a million bad rows costs no more memory than one of a hundred."""

DURATION_TOLERANCE_S = 0.1
"""How far (seconds) a declared ``duration_s`` may be from the audio header's duration."""

REQUIRED_FIELDS = ("utt_id", "speaker_id", "gender", "path", "duration_s")
OPTIONAL_FIELDS = ("text", "chapter_id", "original_sample_rate", "target_id")
MANIFEST_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS

_GENDER_ALIASES: dict[str, Gender] = {"f": "f", "female": "f", "m": "m", "male": "m"}


@dataclass(frozen=True)
class ManifestProblem:
    """One thing wrong with a manifest row or a corpus file.

    ``source`` is the manifest file (or audio/speaker file for importers); ``row`` the 1-based
    line number in that file, or ``None`` when the problem is not tied to one line.
    """

    source: str
    row: int | None
    message: str

    def __str__(self) -> str:
        where = self.source if self.row is None else f"{self.source}:{self.row}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class LoadReport:
    """A manifest plus the problems found (and skipped) while reading or importing it.

    ``omitted_problems``: problems found beyond those listed (an importer keeps the first
    :data:`MAX_KEPT_PROBLEMS`); :attr:`problem_count` is the total.
    """

    manifest: Manifest
    problems: list[ManifestProblem]
    omitted_problems: int = 0

    @property
    def problem_count(self) -> int:
        """Every problem found, listed or not."""
        return len(self.problems) + self.omitted_problems


class ProblemLog:
    """Problems in the order found: the first ``limit`` kept, the rest only counted."""

    def __init__(self, limit: int = MAX_KEPT_PROBLEMS) -> None:
        self.limit = limit
        self.kept: list[ManifestProblem] = []
        self.omitted = 0

    def add(self, problem: ManifestProblem) -> None:
        """Keep ``problem`` while fewer than ``limit`` are kept, else count it."""
        if len(self.kept) < self.limit:
            self.kept.append(problem)
        else:
            self.omitted += 1

    def __len__(self) -> int:
        return len(self.kept) + self.omitted


def one_line(text: object) -> str:
    """``text`` with line breaks folded into spaces (error messages are one line on the CLI)."""
    return " ".join(str(text).split())


def format_problems(
    problems: Sequence[ManifestProblem], limit: int = MAX_LISTED_PROBLEMS, omitted: int = 0
) -> str:
    """One line listing up to ``limit`` problems, then how many more there are (``omitted``:
    problems found but not kept, counted in the total)."""
    shown = "; ".join(str(p) for p in problems[:limit])
    total = len(problems) + omitted
    more = total - min(limit, len(problems))
    count = f"{total} problem" + ("s" if total != 1 else "")
    return f"{count}: {shown}" + (f"; ... and {more} more" if more > 0 else "")


def raise_if_problems(
    problems: Sequence[ManifestProblem], limit: int = MAX_LISTED_PROBLEMS, omitted: int = 0
) -> None:
    """Raise one ``CorpusError`` listing ``problems`` (up to ``limit``; ``omitted`` more were
    counted, not kept); do nothing if none."""
    if problems or omitted:
        raise CorpusError(format_problems(problems, limit, omitted))


def normalize_gender(value: object) -> Gender:
    """``f``/``m`` from F, M, female, male (any case, surrounding blanks ignored).

    Raises ``ValueError`` with the offending value otherwise.
    """
    key = str(value).strip().lower() if value is not None else ""
    if key not in _GENDER_ALIASES:
        raise ValueError(f"unknown gender {value!r} (expected f, m, female or male)")
    return _GENDER_ALIASES[key]


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and value.strip() == "")


def parse_duration(value: object) -> float:
    """A duration in seconds: a finite number > 0. Raises ``ValueError`` naming the value."""
    if isinstance(value, bool):
        raise ValueError(f"bad duration_s {value!r} (expected seconds > 0)")
    try:
        d = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"bad duration_s {value!r} (expected seconds > 0)") from None
    if not math.isfinite(d) or d <= 0:
        raise ValueError(f"bad duration_s {value!r} (expected seconds > 0)")
    return d


def _parse_sample_rate(value: object) -> int:
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"bad original_sample_rate {value!r} (expected Hz > 0)") from None
    if not math.isfinite(f) or f <= 0 or f != int(f):
        raise ValueError(f"bad original_sample_rate {value!r} (expected Hz > 0)")
    return int(f)


def utterance_from_row(row: Mapping[str, Any]) -> Utterance:
    """Build an ``Utterance`` from a CSV/JSONL row; unknown keys are ignored.

    Blank optional fields become ``None``; a blank ``duration_s`` is an error (callers that can
    read the audio header fill it in before calling). Raises ``ValueError`` listing every bad
    field of the row.
    """
    errors: list[str] = []
    fields: dict[str, Any] = {}
    for name in ("utt_id", "speaker_id", "path"):
        value = row.get(name)
        if _blank(value):
            errors.append(f"missing {name}")
        else:
            fields[name] = str(value).strip()
    try:
        fields["gender"] = normalize_gender(row.get("gender"))
    except ValueError as exc:
        errors.append("missing gender" if _blank(row.get("gender")) else str(exc))
    if _blank(row.get("duration_s")):
        errors.append("missing duration_s")
    else:
        try:
            fields["duration_s"] = parse_duration(row.get("duration_s"))
        except ValueError as exc:
            errors.append(str(exc))
    for name in ("text", "chapter_id", "target_id"):
        value = row.get(name)
        if not _blank(value):
            fields[name] = str(value).strip() if name != "text" else str(value)
    if not _blank(row.get("original_sample_rate")):
        try:
            fields["original_sample_rate"] = _parse_sample_rate(row.get("original_sample_rate"))
        except ValueError as exc:
            errors.append(str(exc))
    if errors:
        raise ValueError("; ".join(errors))
    return Utterance(**fields)


def check_audio_file(manifest: Manifest, utt: Utterance) -> tuple[float, int]:
    """Header duration (s) and sample rate (Hz) of an utterance's file.

    Raises ``CorpusError`` (file missing, unreadable, empty) or ``ValueError`` when the declared
    ``duration_s`` is more than ``DURATION_TOLERANCE_S`` away from the header's.
    """
    duration_s, sample_rate = audio_info(manifest.resolve(utt))
    if abs(duration_s - utt.duration_s) > DURATION_TOLERANCE_S:
        raise ValueError(
            f"duration_s {utt.duration_s:g} differs from the audio header's {duration_s:.3f} s"
        )
    return duration_s, sample_rate


def validate_manifest(
    manifest: Manifest, *, source: str = "manifest", check_audio: bool = True
) -> list[ManifestProblem]:
    """Every problem of an in-memory manifest; ``row`` is the 1-based position in it.

    Checks duplicate utterance ids, one gender per speaker and, with ``check_audio``, that each
    file exists, is readable, is not empty and matches its declared duration.
    """
    problems: list[ManifestProblem] = []
    tracker = ConsistencyTracker()
    for i, utt in enumerate(manifest.utterances, start=1):
        messages = tracker.check(utt)
        if check_audio:
            try:
                check_audio_file(manifest, utt)
            except ValueError as exc:  # CorpusError is a ValueError too
                messages.append(one_line(exc))
        if not messages:
            tracker.add(utt, i)
        problems.extend(ManifestProblem(source, i, m) for m in messages)
    return problems


class ConsistencyTracker:
    """Duplicate-id and one-gender-per-speaker checks over rows arriving one by one.

    Only rows passed to ``add`` (the kept ones) count as earlier rows.
    """

    def __init__(self) -> None:
        self._first_row: dict[str, int] = {}
        self._speaker_gender: dict[str, tuple[Gender, int]] = {}

    def check(self, utt: Utterance) -> list[str]:
        """Problems of ``utt`` relative to the rows added before it."""
        messages: list[str] = []
        if utt.utt_id in self._first_row:
            messages.append(
                f"duplicate utt_id {utt.utt_id!r} (first at row {self._first_row[utt.utt_id]})"
            )
        known = self._speaker_gender.get(utt.speaker_id)
        if known is not None and known[0] != utt.gender:
            messages.append(
                f"speaker {utt.speaker_id!r} has gender {utt.gender!r} here but {known[0]!r} "
                f"at row {known[1]}"
            )
        return messages

    def add(self, utt: Utterance, row: int) -> None:
        """Remember a kept row."""
        self._first_row.setdefault(utt.utt_id, row)
        self._speaker_gender.setdefault(utt.speaker_id, (utt.gender, row))


class DurationFilter(BaseModel):
    """Keep utterances with ``min_s <= duration_s <= max_s`` (seconds, both ends inclusive).

    Default 2-25 s (PROTOCOLS.md section 1, Georgiou et al.).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_s: float = Field(2.0, ge=0)
    max_s: float = Field(25.0, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> DurationFilter:
        if self.max_s < self.min_s:
            raise ValueError(f"max_s ({self.max_s}) must be >= min_s ({self.min_s})")
        return self

    def keeps(self, duration_s: float) -> bool:
        """Whether an utterance of ``duration_s`` seconds passes."""
        return self.min_s <= duration_s <= self.max_s

    def apply(self, manifest: Manifest, *, source: str = "manifest") -> LoadReport:
        """The manifest without out-of-range utterances.

        The report's problems name every speaker left with no utterance (a problem only if the
        caller treats it as one: strict importers raise, ``build_protocol`` just drops them).
        """
        kept = [u for u in manifest.utterances if self.keeps(u.duration_s)]
        left = {u.speaker_id for u in kept}
        problems = [
            ManifestProblem(
                source,
                None,
                f"speaker {spk!r} has no utterance left after the {self.min_s:g}-{self.max_s:g} s "
                "duration filter",
            )
            for spk in manifest.speakers()
            if spk not in left
        ]
        return LoadReport(manifest.with_utterances(kept), problems)
