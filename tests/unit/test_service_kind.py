"""The ``service`` kind (services/anonymizers/kinds/service.py): secrets encrypted at rest and
shown once, signed requests, the example server (examples/service-anonymizer/) on loopback giving
the built-in's output, and every fault the caller must survive or name."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from services.anonymizers.base import AnonymizationItem
from services.anonymizers.kinds.registry import kind_of
from services.anonymizers.kinds.service import (
    CallPolicy,
    ServiceAnonymizer,
    ServiceClient,
    ServiceError,
    ServiceSpec,
    decrypt_secret,
    sign,
    verify_signature,
)
from services.anonymizers.registry import build_anonymizer
from services.errors import InvalidFieldError
from services.pipeline.config import parse_config
from services.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SECRET = "svcsec_test-secret"
RATE = 16_000


def _settings(**changes: Any) -> Settings:
    return Settings(_env_file=None, **changes)  # type: ignore[call-arg]


def _wave(seconds: float = 0.5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    wav = 0.3 * np.sin(2 * np.pi * 180 * t) + 0.01 * rng.standard_normal(t.size)
    # PCM16 values, as corpus audio is: the service's WAV carries them exactly.
    return (np.round(wav * 32767) / 32767).astype(np.float32)


def _item(utt: str = "spk1-utt1", seconds: float = 0.5) -> AnonymizationItem:
    return AnonymizationItem(
        utt_id=utt,
        waveform=_wave(seconds, seed=len(utt)),
        sample_rate=RATE,
        source_speaker_id=utt.split("-")[0],
        source_gender="f",
    )


# --- the kind: submission columns, secrets -----------------------------------------------------


def test_secrets_are_encrypted_at_rest_and_the_signing_secret_shown_once() -> None:
    settings = _settings()
    kind = kind_of("service")
    spec = ServiceSpec(
        url="https://anon.example.org/v1/", credential_header="X-Api-Key", credential="k-123"
    )
    columns = kind.submission_columns(spec, settings)
    key = settings.resolved_service_secret_key()
    assert columns["service_url"] == "https://anon.example.org/v1"
    assert "k-123" not in columns["service_credential"]
    assert decrypt_secret(columns["service_credential"], key) == "k-123"
    shown = kind.created_fields(columns, settings)["service_secret"]
    assert shown.startswith("svcsec_") and shown not in columns["service_secret"]
    assert kind.public_fields(columns) == {"service_url": "https://anon.example.org/v1"}
    section = kind.config_section(columns)
    assert "k-123" not in str(section) and shown not in str(section)
    assert parse_config({"anonymizer": section}).anonymizer.kind == "service"
    # Another key cannot read them.
    with pytest.raises(ServiceError, match="UNMASK_SERVICE_SECRET_KEY"):
        other = _settings(token_hmac_key="other").resolved_service_secret_key()
        decrypt_secret(columns["service_secret"], other)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"url": "http://anon.example.org"}, "body.service.url"),
        ({"url": "https://10.0.0.7/"}, "body.service.url"),
        ({"url": "https://127.1/"}, "body.service.url"),
        ({"url": "https://a.example", "credential_header": "X-Key"}, "body.service.credential"),
        (
            {"url": "https://a.example", "credential_header": "Host", "credential": "x"},
            "body.service.credential_header",
        ),
    ],
)
def test_bad_service_submissions_name_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidFieldError) as caught:
        kind_of("service").submission_columns(ServiceSpec(**spec), _settings())
    assert caught.value.field == field


def test_signatures_bind_timestamp_ids_and_body() -> None:
    now = int(time.time())
    headers = {
        "Unmask-Timestamp": str(now),
        "Unmask-Utterance": "u_1",
        "Unmask-Signature": sign(SECRET, now, "u_1", "", b"body"),
    }
    assert verify_signature(SECRET, headers, b"body")
    assert not verify_signature(SECRET, headers, b"other body")
    assert not verify_signature("svcsec_other", headers, b"body")
    assert not verify_signature(SECRET, {**headers, "Unmask-Utterance": "u_2"}, b"body")
    assert not verify_signature(SECRET, headers, b"body", now=now + 3600)


# --- the example server on loopback ------------------------------------------------------------


def _example_module() -> Any:
    path = ROOT / "examples" / "service-anonymizer" / "server.py"
    spec = importlib.util.spec_from_file_location("service_anonymizer_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _serve_asgi(app: Any) -> Iterator[str]:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()


def _client(url: str, **policy: Any) -> ServiceClient:
    fields: dict[str, Any] = {"allow_private": True, "timeout_s": 5.0, "deadline_s": 10.0}
    fields.update(policy)
    return ServiceClient(url, secret=SECRET, policy=CallPolicy(**fields), sleep=lambda s: None)


def test_the_example_server_gives_the_builtins_output_and_answers_are_cached(
    tmp_path: Path,
) -> None:
    example = _example_module()
    app = example.create_app(SECRET, "pitch", {"semitones": 4}, credential=("X-Api-Key", "k"))
    items = [_item("spk1-a"), _item("spk2-b", 0.7), _item("spk1-c", 0.3)]
    local = build_anonymizer("pitch", {"semitones": 4}).anonymize(items, 3)
    with _serve_asgi(app) as url:
        # The maker's own credential header is required.
        with pytest.raises(ServiceError, match="HTTP 401"):
            _client(url).info()
        client = _client(url)
        client.credential = ("X-Api-Key", "k")
        service = ServiceAnonymizer(client, pseudonym_key=b"k" * 32, cache_dir=tmp_path)
        assert service.info.name == "builtin-pitch" and service.info.level == "utterance"
        out = service.anonymize(items, 3)
        for got, want in zip(out, local, strict=True):
            np.testing.assert_array_equal(got, want)  # float answers: bit for bit
        assert client.calls == 3
        again = ServiceAnonymizer(client, pseudonym_key=b"k" * 32, cache_dir=tmp_path)
        cached = again.anonymize(items, 3)
        assert all(np.array_equal(a, b) for a, b in zip(cached, out, strict=True))
        assert client.calls == 3  # cached: no new call
        # A new /info version is a new evaluation: a new config, called again.
        app.state.version = "2"
        changed = ServiceAnonymizer(client, pseudonym_key=b"k" * 32, cache_dir=tmp_path)
        assert changed.config() != service.config()
        changed.anonymize(items[:1], 3)
        assert client.calls == 4


def test_a_version_that_changes_during_a_run_fails_it(tmp_path: Path) -> None:
    example = _example_module()
    app = example.create_app(SECRET, "pitch", {"semitones": 2})
    with _serve_asgi(app) as url:
        service = ServiceAnonymizer(_client(url), pseudonym_key=b"k" * 32, cache_dir=None)
        original = service.client.anonymize

        def bump(*args: Any, **kwargs: Any) -> np.ndarray:
            app.state.version = "1.1"
            return original(*args, **kwargs)

        service.client.anonymize = bump  # type: ignore[method-assign]
        with pytest.raises(ServiceError, match=r"version changed from '1' to '1\.1'"):
            service.anonymize([_item()], 0)


# --- faults --------------------------------------------------------------------------------------


Behaviour = Callable[[BaseHTTPRequestHandler, int], None]


def _wav_bytes(seconds: float, rate: int = RATE, value: float = 0.1) -> bytes:
    buffer = io.BytesIO()
    data = np.full(int(seconds * rate), value, dtype=np.float32)
    sf.write(buffer, data, rate, "FLOAT", format="WAV")
    return buffer.getvalue()


def _send(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", **headers: str) -> None:
    handler.send_response(status)
    for key, value in headers.items():
        handler.send_header(key.replace("_", "-"), value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextlib.contextmanager
def _fault_server(behaviour: Behaviour) -> Iterator[tuple[str, list[int]]]:
    calls: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            calls.append(len(calls) + 1)
            with contextlib.suppress(OSError):
                behaviour(self, len(calls))

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", calls
    finally:
        httpd.shutdown()
        httpd.server_close()


def _call(url: str, sleeps: list[float] | None = None, **policy: Any) -> np.ndarray:
    client = _client(url, **policy)
    if sleeps is not None:
        client._sleep = sleeps.append
    return client.anonymize(_wave(0.5), utterance="u_x", speaker="", seed=0, label="spk1-utt7")


def _drip(handler: BaseHTTPRequestHandler, _: int) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    for _ in range(200):
        handler.wfile.write(b"\0")
        handler.wfile.flush()
        time.sleep(0.05)


FAULTS: dict[str, tuple[Behaviour, dict[str, Any], str]] = {
    "500 every time": (
        lambda h, n: _send(h, 500),
        {},
        r"spk1-utt7: no answer after 4 tries \(HTTP 500\)",
    ),
    "429 every time": (lambda h, n: _send(h, 429, Retry_After="1"), {}, r"HTTP 429"),
    "a timeout": (lambda h, n: time.sleep(1.0), {"timeout_s": 0.2, "max_attempts": 2}, "Timeout"),
    "a slow drip": (_drip, {"timeout_s": 2.0, "deadline_s": 0.5, "max_attempts": 2}, "in time"),
    "a wrong sample rate": (
        lambda h, n: _send(h, 200, _wav_bytes(0.5, rate=8000)),
        {},
        "spk1-utt7: sample rate 8000 Hz, 16000 Hz is required",
    ),
    "a wrong duration": (lambda h, n: _send(h, 200, _wav_bytes(2.0)), {}, "spk1-utt7: duration"),
    "NaN samples": (
        lambda h, n: _send(h, 200, _wav_bytes(0.5, value=float("nan"))),
        {},
        "spk1-utt7: non-finite",
    ),
    "a huge response": (
        lambda h, n: _send(h, 200, b"\0" * 2_000_000),
        {},
        r"spk1-utt7: .* more than the \d+",
    ),
    "not audio": (lambda h, n: _send(h, 200, b"<html>hi</html>"), {}, "spk1-utt7: not decodable"),
    "a redirect to a private address": (
        lambda h, n: _send(h, 307, Location="http://10.0.0.1/anonymize"),
        {},
        "spk1-utt7: .* another origin",
    ),
    "a 400": (lambda h, n: _send(h, 400), {}, r"spk1-utt7: the endpoint answered HTTP 400"),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_faults_fail_naming_the_utterance(case: str) -> None:
    behaviour, policy, message = FAULTS[case]
    with _fault_server(behaviour) as (url, calls):
        with pytest.raises(ServiceError, match=message):
            _call(url, **policy)
    expected_calls = {"a 400": 1, "a redirect to a private address": 1}.get(case)
    if expected_calls is not None:  # permanent faults are not retried
        assert len(calls) == expected_calls


def test_retries_back_off_and_honour_retry_after() -> None:
    def flaky(handler: BaseHTTPRequestHandler, n: int) -> None:
        if n == 1:
            _send(handler, 500)
        elif n == 2:
            _send(handler, 503, Retry_After="7")
        elif n == 3:
            _send(handler, 429, Retry_After="120")
        else:
            _send(handler, 200, _wav_bytes(0.5))

    sleeps: list[float] = []
    with _fault_server(flaky) as (url, calls):
        out = _call(url, sleeps, backoff_s=0.5, max_backoff_s=30.0, max_attempts=4)
    assert out.size == RATE // 2 and len(calls) == 4
    # 500: backoff 0.5 s; 503: Retry-After 7 s; 429: Retry-After 120 s capped at 30 s.
    assert sleeps == [0.5, 7.0, 30.0]


def test_the_concurrency_limit_holds(tmp_path: Path) -> None:
    active, peak = [0], [0]
    lock = threading.Lock()
    seen: list[tuple[str, str]] = []

    def slow(handler: BaseHTTPRequestHandler, n: int) -> None:
        seen.append((handler.headers["Unmask-Utterance"], handler.headers["Unmask-Speaker"]))
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.1)
        with lock:
            active[0] -= 1
        _send(handler, 200, _wav_bytes(0.5))

    with _fault_server(slow) as (url, calls):
        client = _client(url, concurrency=2)
        service = ServiceAnonymizer.__new__(ServiceAnonymizer)
        service.client, service.pseudonym_key, service.cache_dir = client, b"k" * 32, None
        service.info = type("I", (), {"version": "1", "level": "speaker", "name": "x"})()
        client.info = lambda: service.info  # type: ignore[method-assign]
        service.anonymize([_item(f"spk{i}-u{i}") for i in range(6)], 0)
    assert len(calls) == 6 and peak[0] == 2
    # Opaque ids only: the endpoint learns no corpus utterance or speaker id, and one speaker
    # keeps one pseudonym.
    assert all(u.startswith("u_") and s.startswith("s_") and "spk" not in u + s for u, s in seen)
    assert len({s for _, s in seen}) == 6


def test_the_plan_counts_the_calls(tmp_path: Path) -> None:
    from services.pipeline import estimates
    from services.pipeline.config_checks import plan_lines

    section = {"kind": "service", "url": "https://anon.example.org", "secret": "x"}
    cfg = parse_config(
        {"anonymizer": section, "synthetic": {"n_speakers": 12, "utts_per_speaker": 6}}
    )
    lines = plan_lines(cfg, tmp_path / "stages")
    assert "service anonymizer at https://anon.example.org" in lines[0]
    (cost,) = [line for line in lines if "HTTPS calls" in line]
    calls = int(cost.removeprefix("plan: cost: ").split()[0])
    audio = estimates.synthetic_training_audio(cfg)
    assert calls == audio.n_eval + audio.n_train > 0  # both scenarios read anonymized speech
