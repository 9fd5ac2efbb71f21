"""OpenID Connect ID tokens of CI systems (GitHub Actions, GitLab CI): verified, claims read.

A CI run asks its platform for a short-lived ID token (a JWT signed by the platform's issuer,
e.g. ``https://token.actions.githubusercontent.com``) whose claims name the repository, ref,
workflow and run. :func:`verify_id_token` checks it with joserfc (a maintained JOSE library; no
hand-written signature code) against the issuer's published key set (JWKS), which
:class:`KeySetCache` fetches through the outbound network policy (``services/net/policy.py``),
caches and refreshes when a key id it does not know appears (key rotation).

Refused, each with the claim or header member at fault (:class:`IdTokenRefused`, a 401):
a token larger than the size bound; ``alg`` ``none`` or any algorithm outside the asymmetric
ones issuers use (so an HS256 token "signed" with the public key is refused before any key is
touched); an issuer that is not configured (``iss``); a ``kid`` not in the issuer's key set; a bad
signature; an ``aud`` without the platform's audience; ``exp`` passed, ``nbf`` or ``iat`` in the
future (each with ``leeway_s`` seconds of clock skew); a missing ``jti`` or ``sub``; a missing
claim the issuer's profile needs (``repository_id``, ...). Single use of ``jti`` and the
trusted-submitter policies are checked by ``trusted.py``. No FastAPI or Celery here.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import BadSignatureError, JoseError
from joserfc.jwk import KeySet

from services.net.policy import PolicyViolation, fetch, url_refusal
from services.storage.errors import AuthenticationError, PermissionDeniedError

GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
GITLAB_ISSUER = "https://gitlab.com"
# Asymmetric algorithms only: an ID token is signed with the issuer's private key.
ALLOWED_ALGORITHMS: tuple[str, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
)
MAX_KEY_SET_BYTES = 256 * 1024
PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target", "merge_request_event"})


class IdTokenRefused(AuthenticationError):
    """An ID token that does not verify; ``claim`` names the claim or header member at fault."""

    def __init__(self, claim: str, reason: str) -> None:
        super().__init__(f"ID token refused: `{claim}` {reason}")
        self.claim = claim


class IdTokenForbidden(PermissionDeniedError):
    """A verified ID token that no trusted submitter allows; ``claim`` names the claim."""

    def __init__(self, claim: str, reason: str) -> None:
        super().__init__(f"ID token not allowed: `{claim}` {reason}")
        self.claim = claim


# --- claims of the CI platforms ----------------------------------------------------------------


@dataclass(frozen=True)
class CiRun:
    """What an ID token says about the CI run, in the terms trusted submitters match.

    ``workflow``: the path of the workflow (GitHub) or CI configuration (GitLab) file in the
    repository; ``pull_request``: the run was started by a pull or merge request.
    """

    repository: str
    repository_id: str
    owner_id: str | None
    ref: str | None
    environment: str | None
    workflow: str | None
    run_id: str | None
    event_name: str | None

    @property
    def pull_request(self) -> bool:
        """Whether a pull (GitHub) or merge (GitLab) request started the run."""
        return self.event_name in PULL_REQUEST_EVENTS


def _text(claims: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = claims.get(name)
    if value is None or value == "":
        if required:
            raise IdTokenRefused(name, "is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise IdTokenRefused(name, "is not a string")
    return str(value)


def _github_run(claims: Mapping[str, Any]) -> CiRun:
    repository = _text(claims, "repository", required=True) or ""
    workflow_ref = _text(claims, "workflow_ref")  # owner/repo/.github/workflows/x.yml@refs/...
    workflow = None
    if workflow_ref is not None:
        workflow = workflow_ref.split("@", 1)[0].removeprefix(repository + "/")
    return CiRun(
        repository=repository,
        repository_id=_text(claims, "repository_id", required=True) or "",
        owner_id=_text(claims, "repository_owner_id"),
        ref=_text(claims, "ref"),
        environment=_text(claims, "environment"),
        workflow=workflow,
        run_id=_text(claims, "run_id"),
        event_name=_text(claims, "event_name"),
    )


def _gitlab_run(claims: Mapping[str, Any]) -> CiRun:
    config_uri = _text(claims, "ci_config_ref_uri")  # gitlab.com/group/proj//.gitlab-ci.yml@refs/
    workflow = None
    if config_uri is not None and "//" in config_uri:
        workflow = config_uri.split("//", 1)[1].split("@", 1)[0]
    return CiRun(
        repository=_text(claims, "project_path", required=True) or "",
        repository_id=_text(claims, "project_id", required=True) or "",
        owner_id=_text(claims, "namespace_id"),
        ref=_text(claims, "ref_path"),
        environment=_text(claims, "environment"),
        workflow=workflow,
        run_id=_text(claims, "pipeline_id"),
        event_name=_text(claims, "pipeline_source"),
    )


PROFILES: dict[str, Callable[[Mapping[str, Any]], CiRun]] = {
    "github": _github_run,
    "gitlab": _gitlab_run,
}
"""How to read each CI platform's claims; ``Settings.oidc_issuers`` maps an issuer to one."""


# --- key sets ----------------------------------------------------------------------------------


class KeySetCache:
    """The issuers' key sets, fetched through the outbound policy and kept ``ttl_s`` seconds.

    A ``kid`` not in the cached set triggers a refetch (an issuer rotating its keys), at most once
    per ``min_refresh_s`` seconds per issuer, so tokens with invented key ids cannot make the
    platform hammer the issuer. Thread-safe. Times in seconds of ``clock``.
    """

    def __init__(
        self,
        *,
        allow_private: bool,
        ttl_s: float = 3600.0,
        min_refresh_s: float = 60.0,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        client: httpx.Client | None = None,
    ) -> None:
        self.allow_private = allow_private
        self.ttl_s = ttl_s
        self.min_refresh_s = min_refresh_s
        self.timeout_s = timeout_s
        self._clock = clock
        self._client = client
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[float, KeySet]] = {}
        self._forced: dict[str, float] = {}
        self.fetches = 0

    def key_set(self, issuer: str, kid: str) -> KeySet:
        """The key set of ``issuer``, refreshed when stale or when it lacks ``kid``."""
        with self._lock:
            now = self._clock()
            cached = self._sets.get(issuer)
            if cached is not None:
                fetched_at, keys = cached
                fresh = now - fetched_at < self.ttl_s
                if fresh and any(key.kid == kid for key in keys.keys):
                    return keys
                last_forced = self._forced.get(issuer)
                if fresh and last_forced is not None and now - last_forced < self.min_refresh_s:
                    return keys  # refreshed for an unknown kid moments ago: not again
                if fresh:
                    self._forced[issuer] = now
            keys = self._fetch(issuer)
            self._sets[issuer] = (now, keys)
            return keys

    def _get_json(self, url: str, what: str) -> Any:
        refusal = url_refusal(
            url, allow_private=self.allow_private, require_https=not self.allow_private
        )
        if refusal is not None:
            raise IdTokenRefused("iss", f"{what} URL is not allowed: {refusal}")
        try:
            answer = fetch(
                "GET",
                url,
                allow_private=self.allow_private,
                headers={"accept": "application/json"},
                timeout_s=self.timeout_s,
                max_bytes=MAX_KEY_SET_BYTES,
                client=self._client,
            )
        except (PolicyViolation, httpx.HTTPError) as exc:
            raise IdTokenRefused("iss", f"{what} could not be fetched: {exc}") from None
        if answer.status_code != 200:
            raise IdTokenRefused("iss", f"{what} answered HTTP {answer.status_code}")
        try:
            return json.loads(answer.content)
        except ValueError:
            raise IdTokenRefused("iss", f"{what} is not JSON") from None

    def _fetch(self, issuer: str) -> KeySet:
        self.fetches += 1
        discovery = self._get_json(
            issuer.rstrip("/") + "/.well-known/openid-configuration", "the issuer's discovery"
        )
        if not isinstance(discovery, dict) or discovery.get("issuer") != issuer:
            raise IdTokenRefused("iss", f"the discovery document does not name {issuer}")
        jwks_uri = discovery.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise IdTokenRefused("iss", "the discovery document has no jwks_uri")
        document = self._get_json(jwks_uri, "the issuer's key set")
        try:
            return KeySet.import_key_set(document)
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise IdTokenRefused("iss", f"the issuer's key set is not a JWKS: {exc}") from None


# --- verification ------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifiedIdToken:
    """A verified ID token: its issuer, claims, subject, ``jti`` and expiry, and the CI run."""

    issuer: str
    claims: dict[str, Any]
    subject: str
    jti: str
    expires_at: dt.datetime
    run: CiRun


def _segment(part: str, name: str) -> Any:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        return json.loads(raw)
    except (binascii.Error, ValueError):
        raise IdTokenRefused(name, "is not base64url-encoded JSON") from None


def _number(claims: Mapping[str, Any], name: str, *, required: bool) -> float | None:
    value = claims.get(name)
    if value is None:
        if required:
            raise IdTokenRefused(name, "is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IdTokenRefused(name, "is not a number")
    return float(value)


def verify_id_token(
    token: str,
    *,
    issuers: Mapping[str, str],
    audience: str,
    key_sets: KeySetCache,
    leeway_s: float = 60.0,
    max_bytes: int = 8192,
    now: float | None = None,
) -> VerifiedIdToken:
    """The verified ID token, or :class:`IdTokenRefused` naming what is wrong.

    ``issuers``: issuer URL -> claim profile (``github``/``gitlab``, :data:`PROFILES`);
    ``audience``: the value ``aud`` must contain; ``leeway_s``: clock skew allowed on ``exp``,
    ``nbf`` and ``iat`` (seconds); ``max_bytes``: the largest token accepted; ``now``: Unix
    seconds (default the clock).
    """
    if len(token.encode("utf-8", "replace")) > max_bytes:
        raise IdTokenRefused("token", f"is larger than {max_bytes} bytes")
    parts = token.split(".")
    if len(parts) != 3:
        raise IdTokenRefused("token", "is not a compact JWS (three dot-separated parts)")
    header = _segment(parts[0], "header")
    payload = _segment(parts[1], "payload")
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise IdTokenRefused("token", "header and payload must be JSON objects")
    alg = header.get("alg")
    if alg not in ALLOWED_ALGORITHMS:
        why = "an unsigned token" if str(alg).lower() == "none" else "not an issuer's algorithm"
        raise IdTokenRefused("alg", f"is {alg!r} ({why}; allowed: {', '.join(ALLOWED_ALGORITHMS)})")
    issuer = payload.get("iss")
    if not isinstance(issuer, str) or issuer not in issuers:
        raise IdTokenRefused("iss", f"{issuer!r} is not a configured issuer")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise IdTokenRefused("kid", "is missing")
    keys = key_sets.key_set(issuer, kid)
    matching = [key for key in keys.keys if key.kid == kid]
    if not matching:
        raise IdTokenRefused("kid", f"{kid!r} is not in the key set of {issuer}")
    try:
        verified = jwt.decode(token, matching[0], algorithms=[alg])
    except BadSignatureError:
        raise IdTokenRefused("signature", "does not verify with the issuer's key") from None
    except JoseError as exc:
        raise IdTokenRefused("alg", f"{alg} does not fit the key {kid!r}: {exc}") from None
    claims = dict(verified.claims)
    current = time.time() if now is None else now
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if audience not in audiences:
        raise IdTokenRefused("aud", f"{aud!r} does not contain {audience!r}")
    exp = _number(claims, "exp", required=True) or 0.0
    if current > exp + leeway_s:
        raise IdTokenRefused("exp", f"{exp:.0f} has passed (now {current:.0f})")
    nbf = _number(claims, "nbf", required=False)
    if nbf is not None and current + leeway_s < nbf:
        raise IdTokenRefused("nbf", f"{nbf:.0f} is in the future (now {current:.0f})")
    iat = _number(claims, "iat", required=True) or 0.0
    if current + leeway_s < iat:
        raise IdTokenRefused("iat", f"{iat:.0f} is in the future (now {current:.0f})")
    jti = _text(claims, "jti", required=True) or ""
    subject = _text(claims, "sub", required=True) or ""
    if len(jti) > 256 or len(subject) > 512:
        raise IdTokenRefused("jti" if len(jti) > 256 else "sub", "is too long")
    run = PROFILES[issuers[issuer]](claims)
    return VerifiedIdToken(
        issuer=issuer,
        claims=claims,
        subject=subject,
        jti=jti,
        expires_at=dt.datetime.fromtimestamp(exp, tz=dt.UTC),
        run=run,
    )
