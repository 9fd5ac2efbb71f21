"""Errors of challenge phases (the interfaces map them by their base class)."""

from __future__ import annotations

from services.errors import InvalidFieldError, InvalidInputError
from services.storage.errors import ConflictError


class PhaseDefinitionError(InvalidInputError):
    """A phase's window, limit or visibility is invalid (422 naming the field)."""


class PhaseWindowError(PhaseDefinitionError, InvalidFieldError):
    """A phase's window ends at or before its start (422 naming ``ends_at``)."""


class PhaseUpdateConflictError(ConflictError):
    """A change the phase's stored fields do not allow (e.g. an end before its stored start, a
    reveal time after its events were released): 409 naming the rule."""


class PhaseOverlapError(ConflictError):
    """A phase's window overlaps another phase of the same protocol (409 naming it)."""


class PhaseClosedError(ConflictError):
    """No job may be created in the phase now: it has not started or has ended (409)."""


class PhaseLimitError(ConflictError):
    """The team used the phase's submission limit (409)."""


class PhaseKindError(ConflictError):
    """The phase does not accept jobs of the submission's kind (409)."""


class PhaseInUseError(ConflictError):
    """A phase with jobs cannot be deleted (409)."""
