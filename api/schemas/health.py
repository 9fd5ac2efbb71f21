"""Liveness and readiness probes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class CheckOut(BaseModel):
    """One dependency check of the readiness probe."""

    status: Literal["ok", "failed", "skipped"]
    latency_ms: float | None = None
    detail: str = ""


class Liveness(BaseModel):
    """The process answers."""

    status: Literal["ok"]


class Readiness(BaseModel):
    """Whether the database, the broker and the blob store answer."""

    status: Literal["ready"]
    checks: dict[str, CheckOut]
