"""Errors of access control."""

from __future__ import annotations

from services.storage.errors import PermissionDeniedError


class AccessDeniedError(PermissionDeniedError):
    """The caller may read the object but not change it (another team's public object): 403.

    Objects the caller may not even read raise ``NotFoundError`` instead, so their existence is
    not disclosed.
    """
