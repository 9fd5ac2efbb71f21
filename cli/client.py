"""A small Python client of the Unmask HTTP API, for CI pipelines and scripts.

Built on the ``unmask-client`` distribution (``unmask_client``: the generated, typed client
``unmask_client/api_client`` from the API's OpenAPI document, ``make client``; the Retry-After
transport), plus the metric catalogue for the thresholds; no FastAPI, no Celery, no torch:
``from cli.client import UnmaskClient``. The archive upload streams from disk through ``httpx``
directly (the generated operation takes the body in memory).

    client = UnmaskClient.from_env()                  # UNMASK_URL, UNMASK_TOKEN (or GitHub OIDC)
    protocol = client.find_protocol("vpc-lazy")       # by name (latest version) or id
    submission = client.submit_builtin("pitch +4", "pitch", {"semitones": 4})
    job = client.create_job(submission["id"], protocol["id"], idempotency_key="ci-1234")
    job = client.wait_for_job(job["id"], on_update=print)
    verdict = check_thresholds(client.results(job["id"])["results"], Thresholds(min_eer=30))
    assert verdict.passed, verdict.failures

``unmask submit`` (cli/submit.py) is this client behind a command line; docs/ci.md.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from services.metrics import catalogue
from services.vocab import HEADLINE_SCENARIOS, TERMINAL_STATE_VALUES
from unmask_client.api_client import AuthenticatedClient
from unmask_client.api_client.api.identity import identity_me
from unmask_client.api_client.api.jobs import jobs_create_job, jobs_get_job, jobs_get_results
from unmask_client.api_client.api.phases import phases_list_phases, phases_rerun_outdated_results
from unmask_client.api_client.api.protocols import protocols_get_protocol, protocols_list_protocols
from unmask_client.api_client.api.submissions import (
    submissions_create_submission,
    submissions_get_submission,
)
from unmask_client.api_client.models import (
    BuiltinSpecName,
    BuiltinSubmissionCreate,
    ContainerSubmissionCreate,
    JobCreate,
    JobCreateConfigOverrides,
    RerunRequest,
)
from unmask_client.api_client.types import UNSET
from unmask_client.oidc import GitHubOidcTokenSource, OidcExchangeError, github_oidc_available
from unmask_client.retry import RetryAfterTransport
from unmask_client.submit import THRESHOLD_SPECS, Verdict
from unmask_client.submit import check_thresholds as check_bounds

TERMINAL_JOB_STATES = frozenset(TERMINAL_STATE_VALUES)
DEFAULT_TIMEOUT_S = 60.0
UPLOAD_CHUNK_BYTES = 1024 * 1024
# A protocol id, or its name (the API's name rule) with an optional @VERSION.
PROTOCOL_REFERENCE = re.compile(r"[0-9]+|[a-z0-9][a-z0-9._-]{0,127}(@[0-9]+)?")


class UnmaskApiError(RuntimeError):
    """The API answered an error (problem+json ``detail`` in the message) or was unreachable."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class UnmaskConfigError(ValueError):
    """The client is missing its URL or token, or was given bad arguments."""


def _describe(response: httpx.Response) -> str:
    try:
        body = response.json()
        detail = body.get("detail") if isinstance(body, dict) else None
    except ValueError:
        detail = None
    return str(detail or response.text[:300] or response.reason_phrase)


def _detail(content: bytes) -> str:
    """The problem's ``detail`` of an error body, else its first characters."""
    try:
        body = json.loads(content)
        detail = body.get("detail") if isinstance(body, dict) else None
    except ValueError:
        detail = None
    return str(detail or content[:300].decode(errors="replace") or "no body")


class UnmaskClient:
    """Calls ``/v1`` with a bearer token. Every error is an :class:`UnmaskApiError`."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
        token_source: GitHubOidcTokenSource | None = None,
    ) -> None:
        if not url:
            raise UnmaskConfigError("no API URL: set UNMASK_URL (e.g. https://unmask.example.org)")
        if not token and token_source is None:
            raise UnmaskConfigError(
                "no API token: set UNMASK_TOKEN (a token with submit + read), or run in GitHub "
                "Actions with `permissions: id-token: write` for a trusted submitter"
            )
        self.url = url.rstrip("/")
        self._token_source = token_source
        if token_source is not None:
            token = token_source.token()  # fails here, before anything is submitted
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "unmask-client/1"},
            timeout=timeout_s,
            # A busy server (429/503) is waited for as its Retry-After asks, then retried.
            transport=RetryAfterTransport(transport),
            # Short-lived exchanged tokens are renewed before each request that needs it.
            event_hooks={"request": [token_source.authorize]} if token_source else None,
        )
        # The generated, typed client (unmask_client/api_client) over the same connection pool.
        self._api = AuthenticatedClient(base_url=self.url, token=token).set_httpx_client(self._http)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **kwargs: Any) -> UnmaskClient:
        """A client for ``UNMASK_URL`` with ``UNMASK_TOKEN``; without one, in a GitHub Actions
        job that may mint ID tokens, with tokens exchanged for them (unmask_client/oidc.py)."""
        env = os.environ if environ is None else environ
        url, token = env.get("UNMASK_URL", ""), env.get("UNMASK_TOKEN", "")
        if not token and url and github_oidc_available(env):
            source = GitHubOidcTokenSource(url, env, transport=kwargs.get("transport"))
            try:
                return cls(url, "", token_source=source, **kwargs)
            except OidcExchangeError as exc:
                source.close()
                raise UnmaskApiError(f"OpenID Connect: {exc}", status=exc.status) from None
        return cls(url, token, **kwargs)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()
        if self._token_source is not None:
            self._token_source.close()

    def __enter__(self) -> UnmaskClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self, method: str, path: str, *, expected: Sequence[int] = (200,), **kw: Any
    ) -> Any:
        """One API call; the parsed JSON body (None for 204)."""
        try:
            response = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise UnmaskApiError(
                f"{method} {self.url}{path}: {type(exc).__name__}: {exc}"
            ) from None
        if response.status_code not in expected:
            raise UnmaskApiError(
                f"{method} {path} answered {response.status_code}: {_describe(response)}",
                status=response.status_code,
            )
        return None if response.status_code == 204 or not response.content else response.json()

    def _call(
        self,
        operation: Any,
        *,
        expected: Sequence[int] = (200,),
        idempotent: bool = False,
        **kwargs: Any,
    ) -> Any:
        """One call of a generated operation (``unmask_client.api_client``, typed request); the
        answer's JSON body (None for 204). Errors as :meth:`request`.

        ``idempotent``: the operation may be sent again after the answer timed out (the server
        may have applied it: a second call answers what the first one did); once.
        """
        route = operation._get_kwargs(**kwargs)
        label = f"{route['method'].upper()} {route['url']}"
        tries = 2 if idempotent else 1
        for attempt in range(tries):
            try:
                response = operation.sync_detailed(client=self._api, **kwargs)
                break
            except httpx.ReadTimeout as exc:
                if attempt + 1 < tries:
                    continue
                raise UnmaskApiError(f"{label}: {type(exc).__name__}: {exc}") from None
            except httpx.HTTPError as exc:
                raise UnmaskApiError(f"{label}: {type(exc).__name__}: {exc}") from None
        if response.status_code not in expected:
            raise UnmaskApiError(
                f"{label} answered {response.status_code}: {_detail(response.content)}",
                status=int(response.status_code),
            )
        return json.loads(response.content) if response.content else None

    # --- reading ---------------------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        """The calling token: team, scopes, quota usage."""
        result: dict[str, Any] = self._call(identity_me)
        return result

    def find_protocol(self, name_or_id: str | int) -> dict[str, Any]:
        """A protocol by id, or by name (its latest version; ``name@3`` for version 3)."""
        text = str(name_or_id)
        if not PROTOCOL_REFERENCE.fullmatch(text):
            raise UnmaskConfigError(
                f"--protocol {text[:40]!r} is not a protocol name (lowercase letters, digits, "
                "'.', '_', '-'), name@VERSION or id"
            )
        if text.isdigit():
            result: dict[str, Any] = self._call(protocols_get_protocol, protocol_id=int(text))
            return result
        name, _, version = text.partition("@")
        versions = self._call(protocols_list_protocols, name=name)
        if version:
            versions = [p for p in versions if str(p["version"]) == version]
        if not versions:
            suffix = f" version {version}" if version else ""
            raise UnmaskApiError(f"protocol {name!r}{suffix} not found", status=404)
        latest: dict[str, Any] = max(versions, key=lambda p: p["version"])
        return latest

    def job(self, job_id: int, *, log_chars: int = 500) -> dict[str, Any]:
        """A job with its stages and log tails."""
        result: dict[str, Any] = self._call(jobs_get_job, job_id=job_id, log_chars=log_chars)
        return result

    def results(self, job_id: int) -> dict[str, Any]:
        """A job's metric rows (``results``: scenario, backend, seed, metric, value)."""
        result: dict[str, Any] = self._call(jobs_get_results, job_id=job_id)
        return result

    def submission(self, submission_id: int) -> dict[str, Any]:
        """A submission (``status``: validating, accepted, rejected)."""
        result: dict[str, Any] = self._call(submissions_get_submission, submission_id=submission_id)
        return result

    # --- submitting ------------------------------------------------------------------------

    def submit_builtin(
        self,
        name: str,
        builtin: str,
        params: Mapping[str, Any] | None = None,
        *,
        visibility: str = "private",
    ) -> dict[str, Any]:
        """Submit a built-in anonymizer with parameters."""
        try:
            body = BuiltinSubmissionCreate.from_dict(
                {
                    "kind": "builtin",
                    "name": name,
                    "visibility": visibility,
                    "builtin": {"name": builtin, "params": dict(params or {})},
                }
            )
        except ValueError:  # the typed client knows the API's built-in names
            known = ", ".join(n.value for n in BuiltinSpecName)
            raise UnmaskConfigError(
                f"body.builtin.name: {builtin!r} is not a built-in anonymizer (known: {known}); "
                f"visibility must be public or private (got {visibility!r})"
            ) from None
        result: dict[str, Any] = self._call(
            submissions_create_submission, body=body, expected=(200, 201)
        )
        return result

    def submit_container(
        self, name: str, image: str, *, visibility: str = "private"
    ) -> dict[str, Any]:
        """Submit a container image pinned by digest (``name@sha256:...``)."""
        body = ContainerSubmissionCreate.from_dict(
            {
                "kind": "container",
                "name": name,
                "visibility": visibility,
                "container": {"image": image},
            }
        )
        result: dict[str, Any] = self._call(
            submissions_create_submission, body=body, expected=(200, 201)
        )
        return result

    def submit_archive(
        self,
        name: str,
        path: str | Path,
        protocol_id: int,
        *,
        visibility: str = "private",
        sha256: str | None = None,
    ) -> dict[str, Any]:
        """Upload a pre-anonymized archive through the API (streamed from disk, never whole in
        memory). The submission is ``validating`` until the workers have checked it."""
        archive = Path(path)
        if not archive.is_file():
            raise UnmaskConfigError(f"archive {archive} is not a file")

        def chunks() -> Iterator[bytes]:
            with archive.open("rb") as handle:
                while chunk := handle.read(UPLOAD_CHUNK_BYTES):
                    yield chunk

        params: dict[str, Any] = {
            "name": name,
            "protocol_id": protocol_id,
            "visibility": visibility,
        }
        if sha256:
            params["sha256"] = sha256
        result: dict[str, Any] = self.request(
            "POST",
            "/v1/submissions/archive",
            params=params,
            content=chunks(),
            headers={
                "Content-Type": "application/octet-stream",
                "Content-Length": str(archive.stat().st_size),
            },
            expected=(200, 201),
        )
        return result

    def wait_until_accepted(
        self, submission_id: int, *, timeout_s: float = 3600.0, poll_s: float = 2.0
    ) -> dict[str, Any]:
        """Poll a validating (archive) submission until accepted; rejected -> UnmaskApiError."""
        deadline = time.monotonic() + timeout_s
        while True:
            submission = self.submission(submission_id)
            if submission["status"] == "accepted":
                return submission
            if submission["status"] == "rejected":
                raise UnmaskApiError(f"submission {submission_id} was rejected by validation")
            if time.monotonic() > deadline:
                raise UnmaskApiError(f"submission {submission_id} still validating")
            time.sleep(poll_s)

    def create_job(
        self,
        submission_id: int,
        protocol_id: int,
        *,
        config_overrides: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        phase: str | None = None,
    ) -> dict[str, Any]:
        """Start a job (a retried call with the same ``idempotency_key`` returns the same job),
        in the protocol's ``phase`` (default: the one open now, if it has phases)."""
        body = JobCreate(
            submission_id=submission_id,
            protocol_id=protocol_id,
            config_overrides=JobCreateConfigOverrides.from_dict(dict(config_overrides or {})),
            phase=UNSET if phase is None else phase,
        )
        result: dict[str, Any] = self._call(
            jobs_create_job,
            body=body,
            idempotency_key=UNSET if idempotency_key is None else idempotency_key,
            expected=(200, 201),
        )
        return result

    def phases(self, protocol_id: int) -> list[dict[str, Any]]:
        """The protocol's phases in order."""
        result: list[dict[str, Any]] = self._call(phases_list_phases, protocol_id=protocol_id)
        return result

    def protocols(self, *, name: str | None = None) -> list[dict[str, Any]]:
        """Every protocol version (``name``: that name's versions)."""
        params = {} if name is None else {"name": name}
        result: list[dict[str, Any]] = self.request("GET", "/v1/protocols", params=params)
        return result

    def register_protocol(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Administrators: register a protocol (``name``, ``config``, ``leaderboard``, ...);
        ``created`` in the answer says whether a new version was made (False: the same content
        as the latest version, which is returned)."""
        try:
            response = self._http.post("/v1/admin/protocols", json=dict(body))
        except httpx.HTTPError as exc:
            raise UnmaskApiError(f"POST /v1/admin/protocols: {type(exc).__name__}: {exc}") from None
        if response.status_code not in (200, 201):
            raise UnmaskApiError(
                f"POST /v1/admin/protocols answered {response.status_code}: {_describe(response)}",
                status=response.status_code,
            )
        result: dict[str, Any] = response.json()
        return {**result, "created": response.status_code == 201}

    def create_phase(self, protocol_id: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """Administrators: add a phase (``name``, ``starts_at``, ...) to a protocol."""
        result: dict[str, Any] = self.request(
            "POST", f"/v1/protocols/{protocol_id}/phases", json=dict(body), expected=(201,)
        )
        return result

    def update_phase(self, protocol_id: int, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Administrators: change a phase's fields in ``body``."""
        result: dict[str, Any] = self.request(
            "PATCH", f"/v1/protocols/{protocol_id}/phases/{name}", json=dict(body)
        )
        return result

    def delete_phase(self, protocol_id: int, name: str) -> None:
        """Administrators: delete a phase without jobs."""
        self.request("DELETE", f"/v1/protocols/{protocol_id}/phases/{name}", expected=(204,))

    def rerun_outdated(self, protocol_id: int, *, include_current: bool = False) -> dict[str, Any]:
        """Administrators: queue uncharged re-runs of the protocol's results of an older
        scorer (``include_current``: of every result).

        Idempotent on the server (a submission with a queued re-run gets none more), so an
        answer that timed out is asked for again: the second answer names the re-runs the
        first call queued under ``already_running``."""
        result: dict[str, Any] = self._call(
            phases_rerun_outdated_results,
            idempotent=True,
            protocol_id=protocol_id,
            body=RerunRequest(include_current=include_current),
        )
        return result

    def wait_for_job(
        self,
        job_id: int,
        *,
        timeout_s: float = 6 * 3600.0,
        poll_s: float = 5.0,
        on_update: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Poll until the job is succeeded, failed or cancelled; returns the final job.

        ``on_update`` sees every polled state (progress display). A timeout raises
        :class:`UnmaskApiError` (the job keeps running on the server).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.job(job_id)
            if on_update is not None:
                on_update(job)
            if job["state"] in TERMINAL_JOB_STATES:
                return job
            if time.monotonic() > deadline:
                raise UnmaskApiError(
                    f"job {job_id} did not finish within {timeout_s:.0f} s (still {job['state']})"
                )
            time.sleep(poll_s)


# --- verdict ---------------------------------------------------------------------------------


def _threshold_label(metric: catalogue.Metric) -> str:
    unit = f" ({metric.unit})" if metric.unit and metric.unit not in metric.label else ""
    return f"{metric.label}{unit}"


@dataclass(frozen=True)
class Thresholds:
    """Privacy requirements on the seed-aggregated results. None = not checked.

    Units: EER and IdR in %, SRD MeanD in bits, min Cllr in bits, linkability D_sys in [0, 1],
    top-1 linkability and singling out in %. Each privacy field is named after its threshold
    flag (``min_eer``: ``--min-eer``, :data:`unmask_client.submit.THRESHOLD_SPECS`).
    """

    min_eer: float | None = None
    max_srd_meand: float | None = None
    max_srd_idr: float | None = None
    min_cllr: float | None = None
    max_linkability: float | None = None
    max_wer_increase: float | None = None
    """Utility: WER increase (percentage points) at most this, and usable speech."""
    max_linkability_top1: float | None = None
    """Legal top-1 linkability (%) at the headline point at most this."""
    max_singling_out: float | None = None
    """Legal singling out (%) at the headline point at most this."""

    def bounds(self) -> dict[str, float | None]:
        """Threshold flag -> bound (None: not checked) of every privacy threshold, as the
        shared check (:func:`unmask_client.submit.check_thresholds`) reads them."""
        return {spec.flag: getattr(self, spec.flag.replace("-", "_")) for spec in THRESHOLD_SPECS}


def check_thresholds(
    results: Sequence[Mapping[str, Any]],
    thresholds: Thresholds,
    *,
    scenario: str = HEADLINE_SCENARIOS[0],
    backend: str | None = None,
) -> Verdict:
    """Check ``thresholds`` on the ``scenario`` rows of a job's results.

    Every back-end must pass (default: all back-ends in the results; the attacker picks the one
    that works best). A threshold whose metric is missing fails: privacy that was not measured
    is not shown. The check is the installable client's (one definition for ``unmask submit``
    and ``unmask-submit``); its lines name the metrics as the catalogue does.
    """
    labels = {s.metric: _threshold_label(catalogue.metric(s.metric)) for s in THRESHOLD_SPECS}
    return check_bounds(
        results,
        thresholds.bounds(),
        scenario=scenario,
        backend=backend,
        max_wer_increase=thresholds.max_wer_increase,
        labels=labels,
    )
