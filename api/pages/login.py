"""Sign-in and sign-out: a team pastes an API token with the ``read`` scope; the page session
cookie and the CSRF tokens of both forms are in ``api/pages/session.py``."""

from __future__ import annotations

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from api.auth import Principal
from api.auth_limits import client_address
from api.context import ApiContext
from api.deps import ContextDep
from api.pages.rendering import page_viewer, render
from api.pages.session import (
    clear_session_cookie,
    login,
    login_csrf_ok,
    login_csrf_secret,
    login_csrf_token,
    logout_csrf_ok,
    set_login_csrf_cookie,
    set_session_cookie,
)
from services.storage.errors import AuthenticationError, PermissionDeniedError

router = APIRouter(include_in_schema=False)


def _safe_next(target: str | None) -> str:
    """Only same-site relative paths (no //host, no scheme) may be redirected to."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


@router.get("/login", response_class=HTMLResponse)
def login_form(
    request: Request,
    context: ContextDep,
    next: str | None = Query(None),
) -> Response:
    """The sign-in form: paste an API token with the ``read`` scope."""
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
    return _login_page(request, context, viewer, 200, next, None)


def _login_page(
    request: Request,
    context: ApiContext,
    viewer: Principal | None,
    status_code: int,
    next: str | None,
    error: str | None,
) -> HTMLResponse:
    """The form with a CSRF token bound to the browser's login cookie (api/pages/session.py)."""
    secret = login_csrf_secret(request)
    response = render(
        request,
        "login.html",
        viewer,
        status_code,
        next=_safe_next(next),
        error=error,
        csrf_token=login_csrf_token(context.settings, secret),
    )
    set_login_csrf_cookie(response, request, secret)
    return response


@router.post("/login", response_class=HTMLResponse)
def login_submit(
    request: Request,
    context: ContextDep,
    token: str = Form(..., max_length=200),
    next: str = Form("/"),
    csrf_token: str = Form("", max_length=200),
) -> Response:
    """Verify the token, set the session cookie, go back to ``next``.

    403 without the form's CSRF token; 429 after too many failed sign-ins from this address.
    """
    if not login_csrf_ok(request, context.settings, csrf_token):
        error = "the sign-in form expired or came from another site; sign in again"
        return _login_page(request, context, None, 403, next, error)
    client = client_address(request)
    retry_after = context.auth_limiter.retry_after_s(client)
    if retry_after is not None:
        error = f"too many failed sign-ins from this address; retry in {retry_after} s"
        page = _login_page(request, context, None, 429, next, error)
        page.headers["Retry-After"] = str(retry_after)
        return page
    try:
        with context.database.session_scope() as session:
            principal = login(session, context.settings, token)
    except (AuthenticationError, PermissionDeniedError) as exc:
        if isinstance(exc, AuthenticationError):
            context.auth_limiter.record_failure(client)
        return _login_page(request, context, None, 401, next, str(exc))
    response = RedirectResponse(_safe_next(next), status_code=303)
    set_session_cookie(response, request, context.settings, principal.token_id)
    return response


@router.post("/logout")
def logout(
    request: Request,
    context: ContextDep,
    csrf_token: str = Form("", max_length=200),
) -> Response:
    """Forget the session cookie; 403 (nothing cleared) without the form's CSRF token."""
    if not logout_csrf_ok(request, context.settings, csrf_token):
        return render(
            request,
            "error.html",
            None,
            403,
            title="Not signed out",
            message="the sign-out form expired or came from another site; use Sign out again",
        )
    response = RedirectResponse("/", status_code=303)
    clear_session_cookie(response)
    return response
