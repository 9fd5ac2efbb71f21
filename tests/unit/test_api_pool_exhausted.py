"""A request that finds every database connection in use is a 503 problem with Retry-After (a
burst of expensive reads must not answer 500)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from api.faults import TRANSIENT_RETRY_AFTER_S, install_fault_handlers
from api.problems import PROBLEM_MEDIA_TYPE, install_problem_handlers


def _app() -> FastAPI:
    app = FastAPI()
    install_problem_handlers(app)
    install_fault_handlers(app)

    @app.get("/busy")
    def busy() -> None:
        raise PoolTimeoutError(
            "QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00"
        )

    @app.get("/broken")
    def broken() -> None:
        raise RuntimeError("a bug")

    return app


def test_a_full_pool_is_a_503_with_retry_after() -> None:
    client = TestClient(_app(), raise_server_exceptions=False)
    answer = client.get("/busy")
    assert answer.status_code == 503
    assert answer.headers["content-type"].startswith(PROBLEM_MEDIA_TYPE)
    assert answer.headers["retry-after"] == str(TRANSIENT_RETRY_AFTER_S)
    assert "every database connection is in use" in answer.json()["detail"]
    assert "QueuePool" not in answer.text  # internals stay in the log


def test_other_errors_still_reach_the_generic_handler() -> None:
    answer = TestClient(_app(), raise_server_exceptions=False).get("/broken")
    assert answer.status_code == 500
