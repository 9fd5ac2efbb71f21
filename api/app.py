"""The Unmask HTTP gateway (FastAPI), versioned under ``/v1``.

``create_app(settings)`` builds an app on the given (or the process) settings; ``app`` is the
default instance for ``uvicorn api.app:app``. Routes live in ``api/routes/``, pages in
``api/pages/``; errors are RFC 9457 problem details (``api/problems.py``); authentication is a
bearer API token (``api/auth.py``). See docs/api.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles

from api import pages
from api.auth import BEARER_SCHEME_NAME
from api.context import ApiContext
from api.faults import install_fault_handlers
from api.middleware import install_middleware
from api.problems import PROBLEM_MEDIA_TYPE, install_problem_handlers, problem_responses
from api.routes import (
    admin,
    badges,
    blobs,
    compare,
    health,
    jobs,
    phases,
    protocols,
    submissions,
    tokens,
    webhooks,
)
from services.json_values import JSON_VALUE_SCHEMA
from services.platform.jobs.reactions import register_job_reactions
from services.platform.outbox import MessageSender
from services.settings import Settings, get_settings
from services.storage.blob_interface import BlobStore
from services.storage.db import Database

API_VERSION = "1.0.0"
DESCRIPTION = """\
Measures how much privacy a voice anonymizer gives by playing the strongest known attacker.

Authenticate with `Authorization: Bearer <API token>`; each route names the scope it needs in
`x-required-scope`. Errors are `application/problem+json` (RFC 9457). See docs/api.md.
"""

TAGS = [
    {"name": "health", "description": "Liveness and readiness probes (no token)."},
    {"name": "identity", "description": "The calling token."},
    {"name": "protocols", "description": "Evaluation protocols and their leaderboards."},
    {"name": "submissions", "description": "Anonymizers handed in for evaluation."},
    {"name": "jobs", "description": "Evaluations of a submission under a protocol."},
    {"name": "admin", "description": "Teams, tokens, protocols (admin scope)."},
    {"name": "blobs", "description": "Signed URLs of the local blob store (embedded mode)."},
    {"name": "webhooks", "description": "Signed job events POSTed to a team's URLs."},
    {"name": "phases", "description": "Challenge phases of a protocol; re-runs of old results."},
    {"name": "compare", "description": "Two submissions of a protocol side by side."},
]


def _problem_response_doc(status: int) -> dict[str, Any]:
    entry = problem_responses(status)[status]
    return {
        "description": entry["description"],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


def _openapi_with_problems(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, with every 4xx/5xx body as ``application/problem+json``."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        tags=TAGS,
    )
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            responses = operation.setdefault("responses", {})
            if "requestBody" in operation:
                # Answered before the route runs: a body that is not JSON (400), one above the
                # body limit (413, api/middleware/body_limit.py).
                for status in (400, 413):
                    responses.setdefault(str(status), _problem_response_doc(status))
            for code, response in responses.items():
                content = response.get("content")
                if code[:1] in {"4", "5"} and content and "application/json" in content:
                    content[PROBLEM_MEDIA_TYPE] = content.pop("application/json")
    # Every 422 is documented with the Problem model; FastAPI's default error models are unused.
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    # The free-form JSON objects (config, config_overrides, builtin.params) refer to it.
    components["JsonValue"] = JSON_VALUE_SCHEMA
    for unused in ("HTTPValidationError", "ValidationError"):
        text = str(schema.get("paths", {}))
        if f"#/components/schemas/{unused}'" not in text:
            components.pop(unused, None)
    app.openapi_schema = schema
    return schema


def operation_id(route: APIRoute) -> str:
    """The OpenAPI operation id of a route: ``<first tag>-<route name>`` (e.g.
    ``jobs-create_job``), stable names for the generated client's functions."""
    return f"{route.tags[0]}-{route.name}" if route.tags else route.name


def create_app(
    settings: Settings | None = None,
    *,
    database: Database | None = None,
    blob_store: BlobStore | None = None,
    senders: Mapping[str, MessageSender] | None = None,
) -> FastAPI:
    """A gateway on ``settings`` (default: the process settings).

    ``database`` and ``blob_store`` default to the ones the settings name; ``senders`` (the
    outbox senders installed at start-up) to the Celery ones of ``workers.app``, imported at
    start-up. Tests pass fakes here.
    """
    # A job's state change summarizes it for the leaderboard and queues its webhook event.
    register_job_reactions()
    context = ApiContext(
        settings or get_settings(),
        database=database,
        blob_store=blob_store,
        senders=senders,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        context.start()
        yield
        context.close()

    app = FastAPI(
        generate_unique_id_function=operation_id,
        title="Unmask API",
        version=API_VERSION,
        description=DESCRIPTION,
        lifespan=lifespan,
        openapi_url="/v1/openapi.json",
        docs_url="/v1/docs",
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
    )
    app.state.context = context
    install_problem_handlers(app)
    install_fault_handlers(app)
    for module in (health, admin, tokens, protocols, submissions, jobs, blobs):
        app.include_router(module.router)
    app.include_router(jobs.submission_jobs_router)
    app.include_router(phases.router)
    app.include_router(badges.router)
    app.include_router(compare.router)
    # Outgoing webhooks (/v1/webhooks) and the server-rendered pages (/, /protocols/..., HTML).
    app.include_router(webhooks.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=pages.STATIC_DIR), name="static")
    app.openapi = lambda: _openapi_with_problems(app)  # type: ignore[method-assign]

    # Request limits, host filtering, HTTP semantics, security headers (api/middleware/).
    install_middleware(app, context.settings)
    return app


# The default instance for `uvicorn api.app:app`: nothing is connected until the first request.
app = create_app()

__all__ = ["BEARER_SCHEME_NAME", "app", "create_app"]
