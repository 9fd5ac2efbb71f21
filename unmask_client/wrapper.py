"""A thin, typed, raising client of the Unmask HTTP API over the generated one.

Every call returns the API's typed model (``JobOut``, ``ProtocolOut``, ...) or raises
:class:`UnmaskError` (carrying the problem document's status and detail): no
``X | Problem | None`` to check at each call. 429 and 503 answers are waited out as their
``Retry-After`` asks (:class:`~unmask_client.retry.RetryAfterTransport`). ``iter_jobs`` and
``iter_submissions`` follow the keyset pages; ``wait_for_job`` polls until a job is finished,
giving up only when it stalls (no new heartbeat, progress or state for ``stall_timeout_s``).

    from unmask_client import Client

    with Client.from_env() as unmask:                  # UNMASK_URL, UNMASK_TOKEN
        protocol = unmask.find_protocol("vpc-lazy")
        submission = unmask.submit_builtin("pitch +4", "pitch", {"semitones": 4})
        job = unmask.create_job(submission.id, protocol.id, idempotency_key="ci-1234")
        job = unmask.wait_for_job(job.id)
        print(unmask.job_config(job).scenarios)         # typed view of job.config
        for row in unmask.results(job.id).results:
            print(row.scenario, row.metric, row.value)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import httpx

from unmask_client.api_client import AuthenticatedClient
from unmask_client.api_client.api.identity import identity_me
from unmask_client.api_client.api.jobs import (
    jobs_create_job,
    jobs_get_job,
    jobs_get_results,
    jobs_list_jobs,
)
from unmask_client.api_client.api.protocols import (
    protocols_get_leaderboard,
    protocols_get_protocol,
    protocols_list_protocols,
)
from unmask_client.api_client.api.submissions import (
    submissions_create_submission,
    submissions_get_submission,
    submissions_list_submissions,
)
from unmask_client.api_client.models import (
    BuiltinSubmissionCreate,
    ContainerSubmissionCreate,
    JobCreate,
    JobCreateConfigOverrides,
    JobOut,
    JobOutState,
    JobPageOut,
    LeaderboardOut,
    Me,
    Problem,
    ProtocolOut,
    ResultsOut,
    SubmissionOut,
    SubmissionPageOut,
)
from unmask_client.api_client.types import UNSET, Response
from unmask_client.job_config import JobConfigView
from unmask_client.retry import RetryAfterTransport

T = TypeVar("T")
FINISHED_JOB_STATES = frozenset({JobOutState.SUCCEEDED, JobOutState.FAILED, JobOutState.CANCELLED})
"""The job states after which nothing changes (of the API's ``JobOut.state`` enum)."""
DEFAULT_STALL_TIMEOUT_S = 30 * 60.0


class UnmaskError(RuntimeError):
    """The API refused a call, answered something unexpected, or could not be reached.
    ``status``: the HTTP status (None: no answer); ``detail``: the problem's detail."""

    def __init__(self, message: str, *, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


def _detail(content: bytes) -> str:
    try:
        body = json.loads(content)
    except ValueError:
        return content[:300].decode(errors="replace")
    return str(body.get("detail") or body) if isinstance(body, dict) else str(body)


class Client:
    """Calls ``/v1`` with a bearer token; typed answers, :class:`UnmaskError` otherwise."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        retry_attempts: int = 8,
    ) -> None:
        if not url or not token:
            raise UnmaskError("an API URL and a token are needed (UNMASK_URL, UNMASK_TOKEN)")
        self.url = url.rstrip("/")
        self.http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "unmask-client/1"},
            timeout=timeout_s,
            transport=RetryAfterTransport(transport, attempts=retry_attempts),
        )
        self.api = AuthenticatedClient(base_url=self.url, token=token).set_httpx_client(self.http)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> Client:
        """A client for ``UNMASK_URL`` with ``UNMASK_TOKEN``."""
        env = os.environ if environ is None else environ
        return cls(env.get("UNMASK_URL", ""), env.get("UNMASK_TOKEN", ""), **kwargs)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, operation: Any, expected: type[T], **kwargs: Any) -> T:
        """One generated operation (``unmask_client.api_client.api...``) in raising mode: its
        parsed answer when it is an ``expected``, else :class:`UnmaskError`."""
        try:
            response: Response[Any] = operation.sync_detailed(client=self.api, **kwargs)
        except httpx.HTTPError as exc:
            raise UnmaskError(f"{operation.__name__}: {type(exc).__name__}: {exc}") from None
        parsed = response.parsed
        if isinstance(parsed, expected):
            return parsed
        status = int(response.status_code)
        detail = parsed.detail if isinstance(parsed, Problem) else _detail(response.content)
        name = operation.__name__.rsplit(".", 1)[-1]
        raise UnmaskError(f"{name} answered {status}: {detail}", status=status, detail=detail)

    # --- reading ---------------------------------------------------------------------------

    def me(self) -> Me:
        """The calling token: team, scopes, quota usage."""
        return self.call(identity_me, Me)

    def protocol(self, protocol_id: int) -> ProtocolOut:
        return self.call(protocols_get_protocol, ProtocolOut, protocol_id=protocol_id)

    def protocols(self, name: str | None = None) -> list[ProtocolOut]:
        """Every protocol version (``name``: that name's)."""
        answer = self.call(protocols_list_protocols, list, name=UNSET if name is None else name)
        return [p for p in answer if isinstance(p, ProtocolOut)]

    def find_protocol(self, name_or_id: str | int) -> ProtocolOut:
        """A protocol by id, by name (its latest version) or ``name@VERSION``."""
        text = str(name_or_id)
        if text.isdigit():
            return self.protocol(int(text))
        name, _, version = text.partition("@")
        versions = [p for p in self.protocols(name) if not version or str(p.version) == version]
        if not versions:
            raise UnmaskError(f"protocol {text!r} not found", status=404)
        return max(versions, key=lambda p: p.version)

    def leaderboard(self, protocol_id: int, **params: Any) -> LeaderboardOut:
        """The protocol's leaderboard (``metric``, ``scenario``, ``backend``, ``limit``...);
        each row's ``metrics`` maps metric keys to floats (or None)."""
        return self.call(
            protocols_get_leaderboard, LeaderboardOut, protocol_id=protocol_id, **params
        )

    def job(self, job_id: int, *, log_chars: int = 500) -> JobOut:
        return self.call(jobs_get_job, JobOut, job_id=job_id, log_chars=log_chars)

    def job_config(self, job: JobOut | int) -> JobConfigView:
        """The typed view of a job's config (``job``: a fetched job, or its id to fetch)."""
        found = job if isinstance(job, JobOut) else self.job(job, log_chars=0)
        return JobConfigView.from_config(found.config)

    def results(self, job_id: int) -> ResultsOut:
        """A job's metric rows (``results``) and trust assessment."""
        return self.call(jobs_get_results, ResultsOut, job_id=job_id)

    def submission(self, submission_id: int) -> SubmissionOut:
        return self.call(submissions_get_submission, SubmissionOut, submission_id=submission_id)

    def _pages(self, operation: Any, page_type: type[Any], **params: Any) -> Iterator[Any]:
        cursor: str | None = None
        while True:
            page = self.call(
                operation, page_type, cursor=UNSET if cursor is None else cursor, **params
            )
            yield from page.items
            cursor = page.next_cursor if isinstance(page.next_cursor, str) else None
            if cursor is None:
                return

    def iter_jobs(self, *, page_size: int = 50, **filters: Any) -> Iterator[JobOut]:
        """Every job of the team (newest first), page after page (``state``, ``protocol_id``,
        ``submission_id`` filter)."""
        yield from self._pages(jobs_list_jobs, JobPageOut, limit=page_size, **filters)

    def iter_submissions(self, *, page_size: int = 50, **filters: Any) -> Iterator[SubmissionOut]:
        """Every submission of the team (newest first), page after page (``kind`` filters)."""
        yield from self._pages(
            submissions_list_submissions, SubmissionPageOut, limit=page_size, **filters
        )

    # --- writing ---------------------------------------------------------------------------

    def submit_builtin(
        self,
        name: str,
        builtin: str,
        params: Mapping[str, Any] | None = None,
        *,
        visibility: str = "private",
    ) -> SubmissionOut:
        """Submit a built-in anonymizer with parameters (an equal one: the existing one)."""
        body = BuiltinSubmissionCreate.from_dict(
            {
                "kind": "builtin",
                "name": name,
                "visibility": visibility,
                "builtin": {"name": builtin, "params": dict(params or {})},
            }
        )
        return self.call(submissions_create_submission, SubmissionOut, body=body)

    def submit_container(
        self, name: str, image: str, *, visibility: str = "private"
    ) -> SubmissionOut:
        """Submit a container image pinned by digest (``name@sha256:<64 hex>``)."""
        body = ContainerSubmissionCreate.from_dict(
            {
                "kind": "container",
                "name": name,
                "visibility": visibility,
                "container": {"image": image},
            }
        )
        return self.call(submissions_create_submission, SubmissionOut, body=body)

    def submit_archive(
        self,
        name: str,
        path: str | os.PathLike[str],
        protocol_id: int,
        *,
        visibility: str = "private",
    ) -> SubmissionOut:
        """Upload a pre-anonymized archive file, streamed from disk (``validating`` until the
        workers have checked it: :meth:`wait_until_accepted`)."""
        size = os.stat(path).st_size

        def chunks() -> Iterator[bytes]:
            with open(path, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    yield chunk

        try:
            response = self.http.post(
                "/v1/submissions/archive",
                params={"name": name, "protocol_id": protocol_id, "visibility": visibility},
                content=chunks(),
                headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
            )
        except httpx.HTTPError as exc:
            raise UnmaskError(f"archive upload: {type(exc).__name__}: {exc}") from None
        if response.status_code not in (200, 201):
            detail = _detail(response.content)
            raise UnmaskError(
                f"archive upload answered {response.status_code}: {detail}",
                status=response.status_code,
                detail=detail,
            )
        return SubmissionOut.from_dict(response.json())

    def wait_until_accepted(
        self, submission_id: int, *, poll_s: float = 2.0, timeout_s: float = 3600.0
    ) -> SubmissionOut:
        """Poll a validating (archive) submission until accepted; rejected raises."""
        deadline = time.monotonic() + timeout_s
        while True:
            submission = self.submission(submission_id)
            if str(submission.status) == "accepted":
                return submission
            if str(submission.status) == "rejected":
                reason = submission.rejection_reason or "no reason given"
                raise UnmaskError(f"submission {submission_id} was rejected: {reason}")
            if time.monotonic() > deadline:
                raise UnmaskError(f"submission {submission_id} still validating")
            time.sleep(poll_s)

    def create_job(
        self,
        submission_id: int,
        protocol_id: int,
        *,
        config_overrides: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        phase: str | None = None,
    ) -> JobOut:
        """Start a job; a repeated call with the same ``idempotency_key`` returns that job."""
        body = JobCreate(
            submission_id=submission_id,
            protocol_id=protocol_id,
            config_overrides=JobCreateConfigOverrides.from_dict(dict(config_overrides or {})),
            phase=UNSET if phase is None else phase,
        )
        key = UNSET if idempotency_key is None else idempotency_key
        return self.call(jobs_create_job, JobOut, body=body, idempotency_key=key)

    def wait_for_job(
        self,
        job_id: int,
        *,
        poll_s: float = 5.0,
        stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S,
        on_update: Callable[[JobOut], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> JobOut:
        """Poll until the job is succeeded, failed or cancelled; returns it. A slow job is
        waited for as long as it changes; one whose stages show no new heartbeat, progress or
        state for ``stall_timeout_s`` seconds raises :class:`UnmaskError` (it keeps its place
        on the server)."""
        last: tuple[Any, ...] | None = None
        changed_at = clock()
        while True:
            job = self.job(job_id, log_chars=200)
            if on_update is not None:
                on_update(job)
            if str(job.state) in FINISHED_JOB_STATES:
                return job
            signature = (
                str(job.state),
                tuple((s.name, str(s.state), s.progress, s.heartbeat_at) for s in job.stages),
            )
            if signature != last:
                last, changed_at = signature, clock()
            elif clock() - changed_at > stall_timeout_s:
                raise UnmaskError(
                    f"job {job_id} stalled: no heartbeat, progress or state change for "
                    f"{stall_timeout_s:.0f} s (still {job.state})"
                )
            sleep(poll_s)
