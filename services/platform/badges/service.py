"""A README badge of a submission: its worst-case EER against the semi-informed attacker, the
report's trust mark, a colour from the EER's thresholds (shields-style SVG by ``anybadge``,
system fonts only: the SVG makes no request of its own; colours with accessible contrast, a
tooltip saying what the number and the mark mean). Without a public result yet the badge is a
neutral ``pending`` one.

Which job stands for the submission is the leaderboard's rule (its latest succeeded job under
the protocol whose results are public now: a hidden phase's job is left out until the reveal).
The EER is the worst case for the maker over the job's back-ends and attackers (lowest EER):
the summary already holds each (scenario, back-end)'s worst over attackers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from html import escape

import anybadge
from sqlalchemy.orm import Session

from services.metrics import catalogue
from services.platform.leaderboard import representative_job
from services.results.keys import ResultKey
from services.storage.errors import ConflictError
from services.storage.models import JobSummaryRecord, ProtocolRecord, Submission
from services.vocab import HEADLINE_SCENARIOS, trust_mark

BADGE_SCENARIO = HEADLINE_SCENARIOS[0]
"""The attacker the badge reports: the semi-informed one (knows the anonymizer, retrains on
its output), the strongest standard scenario."""

EER_COLOURS: tuple[tuple[float, str], ...] = (
    (10.0, "red"),
    (25.0, "orange"),
    (40.0, "yellow"),
    (math.inf, "green"),
)
"""EER (%) upper bounds (exclusive) and their colour: below 10 % an attacker links most speakers;
40 % and above is close to chance (50 %)."""

BADGE_LABEL = "unmask EER"
"""The badge's left half: short, so the badge stays small in a README."""

BADGE_FILLS: dict[str, tuple[str, str]] = {
    "red": ("#b42318", "#ffffff"),
    "orange": ("#b54708", "#ffffff"),
    "yellow": ("#f5c518", "#1d2430"),
    "green": ("#1f7a3a", "#ffffff"),
    "lightgrey": ("#5d6675", "#ffffff"),
}
"""Each colour name's (fill, text colour): every pair has a WCAG contrast of at least 4.5:1
(AA for small text); yellow carries dark text."""

PENDING_COLOUR = "lightgrey"
"""The neutral badge of a submission with no public result yet."""


class NoSucceededJobError(ConflictError):
    """The submission has no succeeded (and public) job under the protocol yet (409)."""


@dataclass(frozen=True)
class BadgeData:
    """What a badge shows. ``eer_percent`` None: the job has no semi-informed EER."""

    submission_id: int
    job_id: int
    eer_percent: float | None
    trustworthy: bool | None
    colour: str


def eer_colour(eer_percent: float | None) -> str:
    """The badge colour of an EER (%) (grey when missing)."""
    if eer_percent is None:
        return "lightgrey"
    return next(colour for bound, colour in EER_COLOURS if eer_percent < bound)


def badge_data(session: Session, *, protocol: ProtocolRecord, submission: Submission) -> BadgeData:
    """The badge of a (visible) submission under ``protocol``; :class:`NoSucceededJobError`
    when it has no public succeeded job there."""
    job = representative_job(session, submission.id, protocol.id)
    if job is None:
        raise NoSucceededJobError(
            f"submission {submission.id} has no succeeded job under protocol {protocol.id} "
            f"({protocol.name} v{protocol.version}) yet; the badge shows one once it succeeds"
        )
    summary = session.get(JobSummaryRecord, job.id)
    metric_values = (summary.metric_values if summary else None) or {}
    keys = [ResultKey.parse_value_key(k) for k in metric_values]
    # The worst case for the maker over the back-ends (the catalogue's rule for EER).
    by_backend = {
        k.backend: metric_values[k.format()]
        for k in keys
        if k is not None and k.scenario == BADGE_SCENARIO and k.metric == catalogue.EER.key
    }
    worst = catalogue.worst_for_maker(catalogue.EER.key, by_backend)
    eer = by_backend[worst] if worst is not None else None
    return BadgeData(
        submission_id=submission.id,
        job_id=job.id,
        eer_percent=eer,
        trustworthy=summary.trustworthy if summary else None,
        colour=eer_colour(eer),
    )


def _svg(value: str, colour: str, title: str) -> str:
    """A shields-style badge (anybadge) with accessible colours and ``title`` as its tooltip
    and accessible name."""
    fill, text = BADGE_FILLS[colour]
    badge = anybadge.Badge(
        label=BADGE_LABEL, value=value, default_color=fill, text_color=f"#ffffff,{text}"
    )
    # Without anybadge's 1-pixel drop shadow: on the light (yellow) fill it doubles dark text.
    svg = re.sub(
        r"\s*<text [^>]*fill-opacity=\".3\"[^>]*>[^<]*</text>", "", str(badge.badge_svg_text)
    )
    safe = escape(title)
    return re.sub(
        r"<svg ([^>]*)>",
        lambda m: f'<svg role="img" aria-label="{safe}" {m.group(1)}>\n<title>{safe}</title>',
        svg,
        count=1,
    )


def badge_title(data: BadgeData | None) -> str:
    """The badge's tooltip: what the number is and what the trust mark means (None: pending)."""
    if data is None:
        return (
            "Unmask privacy evaluation: pending (no public result yet; the badge shows the EER "
            "once an evaluation has succeeded and its results are public)"
        )
    digits = catalogue.EER.digits
    value = "no EER" if data.eer_percent is None else f"EER {data.eer_percent:.{digits}f} %"
    trust = {
        True: "the attacker passed the trust checks",
        False: "the attacker failed a trust check (too weak): the EER may overestimate privacy",
        None: "the attacker's strength was not checked",
    }[data.trustworthy]
    return (
        f"Unmask privacy evaluation: {value} against the {BADGE_SCENARIO} attacker, worst case "
        f"over back-ends (50 % = chance, higher = more private); {trust}"
    )


def badge_svg(data: BadgeData) -> str:
    """The badge as SVG text: ``unmask EER | 37.9 % <mark>`` (the vocabulary's trust mark; a
    failed trust check adds ``weak attacker``), its tooltip saying what the number and the mark
    mean."""
    digits = catalogue.EER.digits
    value = "n/a" if data.eer_percent is None else f"{data.eer_percent:.{digits}f} %"
    # The mark and the words after it (a README reader has no tooltip) are the vocabulary's.
    trust = trust_mark(data.trustworthy)
    mark = trust.symbol + trust.badge_words
    return _svg(f"{value} {mark}", data.colour, badge_title(data))


def pending_badge_svg() -> str:
    """The neutral badge of a public submission without a public succeeded job under the
    protocol (still running, not yet evaluated, or its phase's results still hidden): a README
    shows ``unmask EER | pending`` rather than a broken image."""
    return _svg("pending", PENDING_COLOUR, badge_title(None))


def badge_markdown(*, base_url: str, protocol_id: int, submission_id: int) -> str:
    """The Markdown snippet that shows the badge and links to the submission page."""
    root = base_url.rstrip("/")
    image = f"{root}/protocols/{protocol_id}/submissions/{submission_id}/badge.svg"
    page = f"{root}/submissions/{submission_id}"
    return f"[![Unmask privacy]({image})]({page})"
