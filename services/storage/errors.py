"""Errors of the storage layer. Each names the entity and the field at fault.

All derive from :class:`services.errors.InvalidInputError` (a 4xx, not a bug); the HTTP gateway
maps the subclasses to precise statuses: ``NotFoundError`` 404, ``AuthenticationError`` 401,
``PermissionDeniedError`` 403, ``ConflictError`` 409, ``BlobIntegrityError`` 422.
"""

from __future__ import annotations

from services.errors import InvalidInputError


class NotFoundError(InvalidInputError):
    """The named entity does not exist (or is not visible to the caller)."""


class ConflictError(InvalidInputError):
    """The request contradicts stored state (duplicate name, illegal state transition)."""


class IdempotencyConflictError(ConflictError):
    """An idempotency key was reused with a different request body."""


class ImmutableSubmissionError(ConflictError):
    """An accepted submission's content was about to change."""


class AuthenticationError(InvalidInputError):
    """A token is unknown, expired or revoked."""


class PermissionDeniedError(InvalidInputError):
    """A valid token lacks the scope the operation needs."""


class BlobStoreError(InvalidInputError):
    """A blob key is invalid or a blob is missing."""


class BlobNotFoundError(BlobStoreError, NotFoundError):
    """No blob under that key."""


class BlobIntegrityError(BlobStoreError):
    """A blob's size or sha256 differs from what was expected or recorded."""
