"""The ``service`` kind: an anonymizer the maker serves over HTTPS (docs/service-contract.md).

The worker calls the maker's endpoint: ``GET /info`` (name, version, sample rate, level), then one
``POST /anonymize`` per utterance with a 16 kHz mono float WAV, an opaque utterance id and, for
speaker-level anonymizers, a pseudonymous speaker key (HMACs under a key the endpoint never sees:
it learns neither corpus utterance nor speaker ids), signed with the submission's secret
(``Unmask-Signature: v1=<hex HMAC-SHA256(secret, "{timestamp}.{utterance}.{speaker}." + body)>``)
and carrying the maker's own credential header when one was registered (stored encrypted at rest,
:func:`encrypt_secret`).

The caller (:class:`ServiceClient`) obeys the outbound network policy (``services/net/policy.py``:
global addresses, pinned resolution, same-origin redirects only, TLS verified, bounded bodies and
total time), retries timeouts, 5xx, 429 and 503 with exponential backoff that honours
``Retry-After`` (capped), runs at most ``concurrency`` requests at once per submission, and checks
every answer exactly as an archive member is checked (``contract.check_audio_file``: format, 16
kHz, mono, duration against the original, finite samples, peak, size), naming the utterance.
Answers are cached per (endpoint, ``/info`` version, utterance, seed): a re-run does not call
again, and a changed version is a new evaluation (``ServiceAnonymizer.config`` carries it). An
``/info`` version that changes during a run fails the run. No FastAPI or Celery here.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import httpx
import numpy as np
import soundfile as sf
from pydantic import BaseModel, ConfigDict, Field

from services.anonymizers.base import AnonymizationItem, Anonymizer
from services.anonymizers.contract import ArchiveLimits, check_audio_file
from services.anonymizers.kinds.base import AnonymizerKind, KindConfig, RunnerContext
from services.audio import SAMPLE_RATE_HZ
from services.errors import InvalidFieldError
from services.net.policy import PolicyViolation, fetch, url_refusal

if TYPE_CHECKING:
    from services.settings import Settings

KIND = "service"

SERVICE_CONTRACT = "unmask-anonymizer-service"
SERVICE_CONTRACT_VERSION = 1
SIGNATURE_VERSION = "v1"
SECRET_PREFIX = "svcsec_"
USER_AGENT = "Unmask-Service-Caller/1"
MAX_INFO_BYTES = 64 * 1024
LEVELS = ("speaker", "utterance")


class ServiceError(RuntimeError):
    """The endpoint failed the contract or could not be reached; the message names the
    utterance (or ``/info``) and why."""


# --- secrets -------------------------------------------------------------------------------------


def generate_secret() -> str:
    """A new per-submission signing secret (shown to the maker once)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def encrypt_secret(plaintext: str, key: str) -> str:
    """``plaintext`` encrypted with the Fernet ``key`` (``Settings.service_secret_key``)."""
    from cryptography.fernet import Fernet

    return Fernet(key.encode()).encrypt(plaintext.encode()).decode()


def decrypt_secret(token: str, key: str) -> str:
    """The plaintext of :func:`encrypt_secret`; raises ``ServiceError`` with a wrong key."""
    from cryptography.fernet import Fernet, InvalidToken

    try:
        return Fernet(key.encode()).decrypt(token.encode()).decode()
    except (InvalidToken, ValueError):
        raise ServiceError(
            "a stored service secret does not decrypt with UNMASK_SERVICE_SECRET_KEY"
        ) from None


def sign(secret: str, timestamp: int, utterance: str, speaker: str, body: bytes) -> str:
    """The ``Unmask-Signature`` value of one request."""
    message = f"{timestamp}.{utterance}.{speaker}.".encode() + body
    digest = hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={digest}"


def verify_signature(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance_s: float = 300.0,
    now: float | None = None,
) -> bool:
    """What an endpoint does: whether the request is Unmask's (signature and a recent
    timestamp). ``headers`` matched case-insensitively."""
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        timestamp = int(lower["unmask-timestamp"])
        expected = sign(
            secret,
            timestamp,
            lower["unmask-utterance"],
            lower.get("unmask-speaker", ""),
            body,
        )
        presented = lower["unmask-signature"]
    except (KeyError, ValueError):
        return False
    current = time.time() if now is None else now
    return abs(current - timestamp) <= tolerance_s and hmac.compare_digest(expected, presented)


def pseudonym(key: bytes, kind: str, value: str) -> str:
    """An opaque, stable id of a corpus ``value`` (``kind`` ``u`` utterance, ``s`` speaker)."""
    digest = hmac.new(key, f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()[:24]
    return f"{kind}_{digest}"


# --- the endpoint's self-description -------------------------------------------------------------


@dataclass(frozen=True)
class ServiceInfo:
    """``GET /info``: the anonymizer's ``name`` and ``version``, its ``sample_rate`` (Hz) and
    ``level`` (``speaker``: one pseudonym per source speaker; ``utterance``: none)."""

    name: str
    version: str
    sample_rate: int
    level: str

    @classmethod
    def parse(cls, data: Any) -> ServiceInfo:
        """The info of a decoded ``/info`` answer, or :class:`ServiceError` naming the field."""
        if not isinstance(data, dict):
            raise ServiceError("/info: the answer must be a JSON object")
        if data.get("contract") != SERVICE_CONTRACT:
            raise ServiceError(f"/info: contract must be {SERVICE_CONTRACT!r}")
        if data.get("contract_version") != SERVICE_CONTRACT_VERSION:
            raise ServiceError(
                f"/info: contract_version {data.get('contract_version')!r} is not supported "
                f"(this server speaks {SERVICE_CONTRACT_VERSION})"
            )
        for field in ("name", "version"):
            value = data.get(field)
            if not isinstance(value, str) or not value or len(value) > 200:
                raise ServiceError(f"/info: {field} must be a string of 1-200 characters")
        if data.get("sample_rate") != SAMPLE_RATE_HZ:
            raise ServiceError(
                f"/info: sample_rate {data.get('sample_rate')!r}; {SAMPLE_RATE_HZ} is required"
            )
        if data.get("level") not in LEVELS:
            raise ServiceError(f"/info: level must be one of {', '.join(LEVELS)}")
        return cls(str(data["name"]), str(data["version"]), SAMPLE_RATE_HZ, str(data["level"]))


# --- the caller ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallPolicy:
    """How the caller treats the endpoint. Times in seconds: ``timeout_s`` per network
    operation, ``deadline_s`` per request (body included); ``max_attempts`` tries per utterance
    with ``backoff_s`` doubling up to ``max_backoff_s`` (a ``Retry-After`` above that is capped);
    ``concurrency``: requests in flight per submission; ``allow_private``: the test escape hatch
    of the network policy."""

    timeout_s: float = 30.0
    deadline_s: float = 120.0
    max_attempts: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    concurrency: int = 4
    allow_private: bool = False


def _retry_after_s(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: fall back to the backoff


def encode_wav(waveform: np.ndarray) -> bytes:
    """16 kHz mono 32-bit float WAV bytes of a waveform (what ``POST /anonymize`` carries: the
    samples exactly as the pipeline holds them)."""
    buffer = io.BytesIO()
    sf.write(buffer, np.asarray(waveform, dtype=np.float32), SAMPLE_RATE_HZ, "FLOAT", format="WAV")
    return buffer.getvalue()


class ServiceClient:
    """Calls one endpoint under the policy (module docstring). Thread-safe."""

    def __init__(
        self,
        url: str,
        *,
        secret: str,
        credential: tuple[str, str] | None = None,
        policy: CallPolicy = CallPolicy(),
        limits: ArchiveLimits = ArchiveLimits(),
        sleep: Callable[[float], None] = time.sleep,
        client: httpx.Client | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.secret = secret
        self.credential = credential
        self.policy = policy
        self.limits = limits
        self._sleep = sleep
        self._client = client
        self.calls = 0
        self._lock = threading.Lock()

    def _headers(self) -> dict[str, str]:
        headers = {"user-agent": USER_AGENT}
        if self.credential is not None:
            headers[self.credential[0]] = self.credential[1]
        return headers

    def info(self) -> ServiceInfo:
        """``GET /info``, checked (:class:`ServiceError` naming the problem)."""
        try:
            answer = fetch(
                "GET",
                self.url + "/info",
                allow_private=self.policy.allow_private,
                headers={**self._headers(), "accept": "application/json"},
                timeout_s=self.policy.timeout_s,
                deadline_s=self.policy.deadline_s,
                max_bytes=MAX_INFO_BYTES,
                client=self._client,
            )
        except (PolicyViolation, httpx.HTTPError) as exc:
            raise ServiceError(f"/info: {type(exc).__name__}: {exc}") from None
        if answer.status_code != 200:
            raise ServiceError(f"/info: HTTP {answer.status_code}")
        try:
            return ServiceInfo.parse(json.loads(answer.content))
        except ValueError:
            raise ServiceError("/info: the answer is not JSON") from None

    def anonymize(
        self,
        waveform: np.ndarray,
        *,
        utterance: str,
        speaker: str,
        seed: int,
        label: str,
    ) -> np.ndarray:
        """One utterance through ``POST /anonymize``, retried as the policy says; the checked
        answer, or :class:`ServiceError` naming ``label`` (the corpus utterance)."""
        body = encode_wav(waveform)
        original_s = waveform.size / SAMPLE_RATE_HZ
        max_bytes = self.limits.max_audio_bytes(original_s)
        last = "no attempt"
        for attempt in range(1, self.policy.max_attempts + 1):
            delay = self.policy.backoff_s * 2.0 ** (attempt - 1)
            timestamp = int(time.time())
            headers = {
                **self._headers(),
                "content-type": "audio/wav",
                "accept": "audio/wav",
                "unmask-utterance": utterance,
                "unmask-seed": str(seed),
                "unmask-timestamp": str(timestamp),
                "unmask-signature": sign(self.secret, timestamp, utterance, speaker, body),
            }
            if speaker:
                headers["unmask-speaker"] = speaker
            with self._lock:
                self.calls += 1
            try:
                answer = fetch(
                    "POST",
                    self.url + "/anonymize",
                    allow_private=self.policy.allow_private,
                    headers=headers,
                    content=body,
                    timeout_s=self.policy.timeout_s,
                    deadline_s=self.policy.deadline_s,
                    max_bytes=max_bytes,
                    client=self._client,
                )
            except PolicyViolation as exc:
                if "in time" not in str(exc):
                    raise ServiceError(f"{label}: {exc}") from None
                last = str(exc)  # a slow drip: retried like a timeout
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if answer.status_code == 200:
                    return self._checked(answer.content, label, original_s)
                last = f"HTTP {answer.status_code}"
                if answer.status_code in (429, 503):
                    after = _retry_after_s(answer.headers.get("retry-after"))
                    delay = delay if after is None else after
                elif answer.status_code < 500:
                    raise ServiceError(f"{label}: the endpoint answered {last}")
            if attempt < self.policy.max_attempts:
                self._sleep(min(delay, self.policy.max_backoff_s))
        raise ServiceError(f"{label}: no answer after {self.policy.max_attempts} tries ({last})")

    def _checked(self, content: bytes, label: str, original_s: float) -> np.ndarray:
        with tempfile.NamedTemporaryFile(suffix=".wav") as handle:
            handle.write(content)
            handle.flush()
            wav, problem = check_audio_file(Path(handle.name), label, original_s, self.limits)
        if problem is not None or wav is None:
            raise ServiceError(problem or f"{label}: no audio")
        return wav


class ServiceAnonymizer(Anonymizer):
    """The anonymize stage's view of an endpoint: items in, checked waveforms out, cached.

    ``pseudonym_key``: the key of the opaque utterance ids and speaker keys (never sent);
    ``cache_dir``: answers kept per (endpoint, ``/info`` version, utterance, seed).
    """

    name = "service"

    def __init__(
        self,
        client: ServiceClient,
        *,
        pseudonym_key: bytes,
        cache_dir: Path | None = None,
    ) -> None:
        self.client = client
        self.info = client.info()
        self.pseudonym_key = pseudonym_key
        self.cache_dir = cache_dir

    def config(self) -> dict[str, object]:
        """The endpoint and what it says it runs: a new ``/info`` version is a new evaluation."""
        return {
            **super().config(),
            "endpoint": self.client.url,
            "service_name": self.info.name,
            "service_version": self.info.version,
            "level": self.info.level,
        }

    def _cache_path(self, utterance: str, seed: int, waveform: np.ndarray) -> Path | None:
        """Per (endpoint, /info version, utterance, seed), and the input audio's hash."""
        if self.cache_dir is None:
            return None
        endpoint = hashlib.sha256(self.client.url.encode()).hexdigest()[:16]
        version = hashlib.sha256(self.info.version.encode()).hexdigest()[:16]
        audio = hashlib.sha256(np.ascontiguousarray(waveform).tobytes()).hexdigest()[:16]
        return self.cache_dir / endpoint / version / f"{utterance}.{seed}.{audio}.npy"

    def _one(self, item: AnonymizationItem, seed: int) -> np.ndarray:
        utterance = pseudonym(self.pseudonym_key, "u", item.utt_id)
        speaker = ""
        if self.info.level == "speaker":
            speaker = pseudonym(self.pseudonym_key, "s", item.source_speaker_id)
        cached = self._cache_path(utterance, seed, item.waveform)
        if cached is not None and cached.is_file():
            return np.load(cached)
        wav = self.client.anonymize(
            item.waveform, utterance=utterance, speaker=speaker, seed=seed, label=item.utt_id
        )
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(".partial.npy")
            np.save(partial, wav)
            partial.replace(cached)
        return wav

    def anonymize(self, items: Sequence[AnonymizationItem], seed: int) -> list[np.ndarray]:
        """Every item through the endpoint, ``concurrency`` at a time; the ``/info`` version is
        checked again at the end (a change mid-run fails it)."""
        workers = max(1, self.client.policy.concurrency)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            out = list(pool.map(lambda item: self._one(item, seed), items))
        if items:
            now = self.client.info()
            if now.version != self.info.version:
                raise ServiceError(
                    f"/info: version changed from {self.info.version!r} to {now.version!r} "
                    "during the run (outputs would mix two anonymizers)"
                )
        return out


# --- the kind ------------------------------------------------------------------------------------

HEADER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$"
_RESERVED_HEADERS = frozenset({"host", "content-type", "content-length", "user-agent", "accept"})


class ServiceAnonymizerConfig(KindConfig):
    """``service``: an endpoint speaking the service contract (docs/service-contract.md). The
    secrets are Fernet ciphertexts under ``UNMASK_SERVICE_SECRET_KEY`` (the job config never holds
    them in clear)."""

    kind: Literal["service"] = Field(description="service: an anonymizer served over HTTPS.")
    url: str = Field(min_length=8, max_length=2048, description="The endpoint's base URL.")
    secret: str = Field(min_length=1, description="The signing secret, encrypted.")
    credential_header: str | None = Field(None, description="The maker's header, if any.")
    credential: str | None = Field(None, description="Its value, encrypted.")


class ServiceSpec(BaseModel):
    """An anonymizer served over HTTPS (docs/service-contract.md)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        min_length=8,
        max_length=2048,
        description="Base URL of the endpoint (`GET {url}/info`, `POST {url}/anonymize`): https, "
        "a globally routable address.",
        examples=["https://anon.my-lab.example/v1"],
    )
    credential_header: str | None = Field(
        None,
        max_length=64,  # as the pattern (column submissions.service_credential_header: 128)
        pattern=HEADER_NAME_PATTERN,
        description="Optional header the endpoint requires (e.g. `Authorization`, `X-Api-Key`); "
        "its value is stored encrypted and never shown again.",
    )
    credential: str | None = Field(
        None, min_length=1, max_length=4096, description="The header's value."
    )


class ServiceKind(AnonymizerKind):
    """The maker's code on the maker's servers, called per utterance over HTTPS."""

    name = KIND
    title = "Service"
    description = "an HTTPS endpoint speaking the service contract, called per utterance"
    config_model = ServiceAnonymizerConfig
    submission_field = "service"
    submission_model = ServiceSpec
    submission_doc = (
        "Submit an anonymizer served over HTTPS; the answer carries `service_secret` (request "
        "signing) this once."
    )
    columns = ("service_url", "service_secret", "service_credential_header", "service_credential")
    content_fields = ("service_url", "service_credential_header")

    def submission_columns(self, spec: BaseModel, settings: Settings) -> dict[str, Any]:
        """The URL under the outbound policy; a new signing secret; secrets encrypted."""
        assert isinstance(spec, ServiceSpec)
        allow_private = settings.outbound_allow_private_hosts
        refusal = url_refusal(
            spec.url, allow_private=allow_private, require_https=not allow_private, noun="url"
        )
        if refusal is not None:
            raise InvalidFieldError("body.service.url", refusal)
        if (spec.credential_header is None) != (spec.credential is None):
            raise InvalidFieldError(
                "body.service.credential", "credential_header and credential go together"
            )
        header = spec.credential_header
        if header is not None and header.lower() in _RESERVED_HEADERS | {"unmask-signature"}:
            raise InvalidFieldError("body.service.credential_header", f"{header} is reserved")
        key = settings.resolved_service_secret_key()
        return {
            "service_url": spec.url.rstrip("/"),
            "service_secret": encrypt_secret(generate_secret(), key),
            "service_credential_header": header,
            "service_credential": None
            if spec.credential is None
            else encrypt_secret(spec.credential, key),
        }

    def normalize_columns(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        if not columns.get("service_url") or not columns.get("service_secret"):
            raise ValueError("kind service needs service_url and service_secret")
        return {c: columns.get(c) for c in self.columns}

    def config_section(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "kind": KIND,
            "url": columns["service_url"],
            "secret": columns["service_secret"],
            "credential_header": columns.get("service_credential_header"),
            "credential": columns.get("service_credential"),
        }

    def public_fields(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        return {"service_url": columns["service_url"]}

    def created_fields(self, columns: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
        """The signing secret, in clear, for the creation answer only."""
        key = settings.resolved_service_secret_key()
        return {"service_secret": decrypt_secret(columns["service_secret"], key)}

    def check(self, config: Any, *, engine_url: str | None = None) -> list[str]:
        refusal = url_refusal(config.url, allow_private=True)
        return [] if refusal is None else [f"anonymizer.url: {refusal}"]

    def describe(self, config: Any) -> str:
        return f"service anonymizer at {config.url} (one HTTPS call per utterance and seed)"

    def calls_note(self, n_utterances: int) -> str | None:
        return (
            f"{n_utterances} HTTPS calls to the anonymizer service per seed not yet cached "
            "(its time is not estimated)"
        )

    def build(self, config: Any, ctx: RunnerContext) -> Anonymizer:
        """A caller under the outbound policy, with this host's limits and cache."""
        settings = ctx.settings
        key = settings.resolved_service_secret_key()
        credential = None
        if config.credential_header and config.credential:
            credential = (config.credential_header, decrypt_secret(config.credential, key))
        client = ServiceClient(
            config.url,
            secret=decrypt_secret(config.secret, key),
            credential=credential,
            policy=CallPolicy(
                timeout_s=settings.service_timeout_s,
                deadline_s=4.0 * settings.service_timeout_s,
                max_attempts=settings.service_max_attempts,
                concurrency=settings.service_concurrency,
                allow_private=settings.outbound_allow_private_hosts,
            ),
            limits=ArchiveLimits.from_settings(settings),
        )
        pseudonym_key = hmac.new(
            settings.token_hmac_key.encode(), config.url.encode(), hashlib.sha256
        ).digest()
        cache = settings.resolved_cache_dir() / "service-answers"
        return ServiceAnonymizer(client, pseudonym_key=pseudonym_key, cache_dir=cache)
