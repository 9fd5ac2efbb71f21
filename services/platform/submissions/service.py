"""Submissions: anonymizers handed in for evaluation, one of the anonymizer kinds
(``services.anonymizers.kinds``: built-in, archive, container).

A submission is accepted at once (built-ins, containers) or after its archive was validated; its
content is immutable from then on (``models.SUBMISSION_MUTABLE_COLUMNS`` are the exceptions).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from services.anonymizers.kinds.registry import kind_of
from services.platform.hashing import canonical_json_hash
from services.platform.pagination import DEFAULT_PAGE_SIZE, keyset_page
from services.platform.protocols import get_protocol_by_id
from services.platform.rows import WindowUsage, get_row
from services.platform.submissions.info import check_description, check_link
from services.storage.errors import ConflictError
from services.storage.models import (
    Submission,
    SubmissionStatus,
    Team,
    Visibility,
)
from services.storage.types import utc_now


def create_submission(
    session: Session,
    team_id: int,
    name: str,
    kind: str,
    *,
    visibility: str = Visibility.PRIVATE,
    created_by_user_id: int | None = None,
    accept: bool = True,
    description: str | None = None,
    paper_url: str | None = None,
    code_url: str | None = None,
    **columns: Any,
) -> Submission:
    """A new submission; accepted (and frozen) at once unless ``accept=False``.

    ``columns`` are the kind's own ``submissions`` columns (``services.anonymizers.kinds``:
    ``builtin`` ``builtin_name`` (+ ``builtin_params``), ``archive`` ``archive_blob_key`` and
    ``archive_sha256`` (+ ``protocol_id``, the protocol whose audio it anonymizes),
    ``container`` ``container_image`` and a pinned ``container_digest``); another kind's column
    is a :class:`ConflictError`. ``description``, ``paper_url`` and ``code_url`` are optional
    (checked by :mod:`services.platform.submissions.info`; :class:`InvalidInputError` naming the
    field).
    """
    description = check_description(description)
    paper_url = check_link(paper_url, "paper_url")
    code_url = check_link(code_url, "code_url")
    try:
        anonymizer_kind = kind_of(kind)
        visibility_value = Visibility(visibility).value
    except ValueError as exc:
        raise ConflictError(f"submission {name!r}: {exc}") from None
    get_row(session, Team, team_id)
    foreign = sorted(
        c for c, v in columns.items() if v is not None and c not in anonymizer_kind.columns
    )
    if foreign:
        # protocol_id: only pre-anonymized audio is made for one protocol.
        raise ConflictError(
            f"submission {name!r}: kind {anonymizer_kind.name} has no {', '.join(foreign)}"
        )
    try:
        stored = anonymizer_kind.normalize_columns(columns)
    except ValueError as exc:
        raise ConflictError(f"submission {name!r}: {exc}") from None
    if stored.get("protocol_id") is not None:
        get_protocol_by_id(session, stored["protocol_id"])
    content = {"kind": anonymizer_kind.name}
    content |= {c: stored[c] for c in anonymizer_kind.content_fields}
    submission = Submission(
        team_id=team_id,
        created_by_user_id=created_by_user_id,
        name=name,
        kind=anonymizer_kind.name,
        visibility=visibility_value,
        status=SubmissionStatus.PENDING.value,
        content_hash=canonical_json_hash(content),
        description=description,
        paper_url=paper_url,
        code_url=code_url,
        **stored,
    )
    session.add(submission)
    session.flush()
    if accept:
        accept_submission(session, submission.id)
    return submission


def accept_submission(
    session: Session, submission_id: int, *, now: dt.datetime | None = None
) -> Submission:
    """Mark a pending submission accepted; from then on its content cannot change."""
    submission = get_row(session, Submission, submission_id)
    if submission.status == SubmissionStatus.ACCEPTED.value:
        return submission
    if submission.status != SubmissionStatus.PENDING.value:
        raise ConflictError(f"submission {submission_id} is {submission.status}, not pending")
    submission.status = SubmissionStatus.ACCEPTED.value
    submission.accepted_at = now or utc_now()
    session.flush()
    return submission


MAX_REJECTION_REASON_CHARS = 4000


def reject_submission(
    session: Session, submission_id: int, *, reason: str | None = None
) -> Submission:
    """Mark a pending submission rejected (e.g. its archive failed validation), with ``reason``
    (shown to the team; cut to ``MAX_REJECTION_REASON_CHARS``)."""
    submission = get_row(session, Submission, submission_id)
    if submission.status == SubmissionStatus.REJECTED.value:
        return submission
    if submission.status != SubmissionStatus.PENDING.value:
        raise ConflictError(f"submission {submission_id} is {submission.status}, not pending")
    submission.status = SubmissionStatus.REJECTED.value
    if reason is not None:
        submission.rejection_reason = reason[:MAX_REJECTION_REASON_CHARS]
    session.flush()
    return submission


def get_submission(session: Session, submission_id: int) -> Submission:
    """The submission with ``submission_id`` or :class:`NotFoundError`."""
    return get_row(session, Submission, submission_id)


def find_submission_by_archive_key(
    session: Session, team_id: int, archive_blob_key: str
) -> Submission | None:
    """The team's archive submission stored under ``archive_blob_key``, if any."""
    return session.scalar(
        select(Submission).where(
            Submission.team_id == team_id, Submission.archive_blob_key == archive_blob_key
        )
    )


@dataclass(frozen=True)
class SubmissionPage:
    """One page of submissions, newest first; ``next_cursor`` None = last page."""

    items: list[Submission]
    next_cursor: str | None


def list_submissions(
    session: Session,
    *,
    team_id: int | None = None,
    kind: str | None = None,
    status: str | None = None,
    limit: int = DEFAULT_PAGE_SIZE,
    cursor: str | None = None,
) -> SubmissionPage:
    """Submissions newest first, keyset-paginated on the id (see :func:`keyset_page`)."""
    query = select(Submission)
    if team_id is not None:
        query = query.where(Submission.team_id == team_id)
    if kind is not None:
        query = query.where(Submission.kind == kind_of(kind).name)
    if status is not None:
        query = query.where(Submission.status == SubmissionStatus(status).value)
    items, next_cursor = keyset_page(session, query, Submission.id, limit, cursor)
    return SubmissionPage(items=items, next_cursor=next_cursor)


def count_submissions(
    session: Session,
    team_id: int,
    *,
    since: dt.datetime | None = None,
    exclude_statuses: Iterable[str] = (),
) -> WindowUsage:
    """Submissions of a team created ``since``, not in ``exclude_statuses``."""
    query = select(func.count(Submission.id), func.min(Submission.created_at)).where(
        Submission.team_id == team_id
    )
    excluded = [SubmissionStatus(s).value for s in exclude_statuses]
    if excluded:
        query = query.where(Submission.status.not_in(excluded))
    if since is not None:
        query = query.where(Submission.created_at >= since)
    count, oldest = session.execute(query).one()
    return WindowUsage(int(count), oldest)
