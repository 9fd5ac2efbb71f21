"""The dependencies routes declare, as ``Annotated`` aliases so that every route reads the same way.

``context: ContextDep`` instead of ``context: ApiContext = Depends(get_context)``; a route that
needs a caller names the scope in the alias (``principal: SubmitPrincipal``). Read-only routes take
a :class:`~api.auth.Reader` (``reader: ReadReader``), which verifies the token inside the route's
own transaction.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from api.auth import Reader, reader_any, reader_read, require_admin, require_submit
from api.context import ApiContext, get_context
from services.platform.identity import Principal

ContextDep = Annotated[ApiContext, Depends(get_context)]
"""The app's shared state: settings, database, blob store."""

SubmitPrincipal = Annotated[Principal, Depends(require_submit)]
"""A caller whose token has the ``submit`` scope (401/403 otherwise)."""

AdminPrincipal = Annotated[Principal, Depends(require_admin)]
"""A caller whose token has the ``admin`` scope (401/403 otherwise)."""

ReadReader = Annotated[Reader, Depends(reader_read)]
"""A bearer token to verify with the ``read`` scope inside the route (``reader.open()``)."""

AnyReader = Annotated[Reader, Depends(reader_any)]
"""A bearer token of any scope, verified inside the route (``reader.open()``)."""

__all__ = ["AdminPrincipal", "AnyReader", "ContextDep", "ReadReader", "SubmitPrincipal"]
