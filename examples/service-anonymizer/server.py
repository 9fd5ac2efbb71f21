"""An anonymizer served over HTTP, as the service contract asks (docs/service-contract.md).

This example wraps one of Unmask's built-in anonymizers; a maker puts their own model where
``anonymizer.anonymize`` is called. Run it (from an Unmask checkout; FastAPI, uvicorn, numpy and
soundfile installed):

    UNMASK_SERVICE_SECRET=svcsec_... ANONYMIZER=pitch PARAMS='{"semitones": 4}' \\
        PYTHONPATH=.:examples/service-anonymizer uvicorn --factory server:create_app_from_env

(or ``python examples/service-anonymizer/server.py`` on port 8080). Behind TLS in production:
Unmask calls only https URLs on globally routable addresses. Every request is checked against
the submission's signing secret (shown once when the submission was created): anything not
signed by Unmask gets 401.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import numpy as np
import soundfile as sf
from fastapi import FastAPI, HTTPException, Request, Response

from services.anonymizers.base import AnonymizationItem
from services.anonymizers.kinds.service import (
    SERVICE_CONTRACT,
    SERVICE_CONTRACT_VERSION,
    verify_signature,
)
from services.anonymizers.registry import build_anonymizer

SAMPLE_RATE_HZ = 16_000
MAX_BODY_BYTES = 64 * 1024 * 1024


def create_app(
    secret: str,
    anonymizer_name: str = "pitch",
    params: dict[str, Any] | None = None,
    *,
    version: str = "1",
    credential: tuple[str, str] | None = None,
) -> FastAPI:
    """The endpoint: ``GET /info`` and ``POST /anonymize`` around a built-in anonymizer.

    ``credential``: a header (name, value) every request must carry, the maker's own access
    control on top of the signature (registered with the submission, stored encrypted).
    """
    anonymizer = build_anonymizer(anonymizer_name, params or {})
    app = FastAPI(title=f"{anonymizer_name} as a service", docs_url=None, redoc_url=None)
    app.state.version = version

    def check_credential(request: Request) -> None:
        if credential is not None and request.headers.get(credential[0]) != credential[1]:
            raise HTTPException(401, "missing or wrong credential header")

    @app.get("/info")
    def info(request: Request) -> dict[str, Any]:
        check_credential(request)
        return {
            "contract": SERVICE_CONTRACT,
            "contract_version": SERVICE_CONTRACT_VERSION,
            "name": f"builtin-{anonymizer_name}",
            "version": app.state.version,
            "sample_rate": SAMPLE_RATE_HZ,
            "level": "utterance",
        }

    @app.post("/anonymize")
    async def anonymize(request: Request) -> Response:
        check_credential(request)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            raise HTTPException(413, "body too large")
        if not verify_signature(secret, request.headers, body):
            raise HTTPException(401, "not signed by Unmask (or the timestamp is too old)")
        try:
            waveform, rate = sf.read(io.BytesIO(body), dtype="float32", always_2d=False)
        except Exception as exc:  # soundfile raises several types for bad data
            raise HTTPException(400, f"not a WAV: {exc}") from None
        if rate != SAMPLE_RATE_HZ or np.ndim(waveform) != 1:
            raise HTTPException(400, "16 kHz mono audio is required")
        item = AnonymizationItem(
            utt_id=request.headers["unmask-utterance"],
            waveform=np.asarray(waveform, dtype=np.float32),
            sample_rate=SAMPLE_RATE_HZ,
            source_speaker_id=request.headers.get("unmask-speaker", "unknown"),
            source_gender="f",
        )
        seed = int(request.headers.get("unmask-seed", "0"))
        (out,) = anonymizer.anonymize([item], seed)
        buffer = io.BytesIO()  # 32-bit float: the samples exactly as computed
        sf.write(buffer, np.asarray(out, dtype=np.float32), SAMPLE_RATE_HZ, "FLOAT", format="WAV")
        return Response(buffer.getvalue(), media_type="audio/wav")

    return app


def create_app_from_env() -> FastAPI:
    """The app configured by ``UNMASK_SERVICE_SECRET``, ``ANONYMIZER`` and ``PARAMS`` (JSON)."""
    return create_app(
        os.environ["UNMASK_SERVICE_SECRET"],
        os.environ.get("ANONYMIZER", "pitch"),
        json.loads(os.environ.get("PARAMS", "{}")),
        version=os.environ.get("SERVICE_VERSION", "1"),
    )


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(create_app_from_env(), host="0.0.0.0", port=8080)
