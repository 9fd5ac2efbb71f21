"""Access: which submissions and jobs a caller may see (else 404) or change (else 403)."""

from services.platform.access.errors import AccessDeniedError
from services.platform.access.service import (
    can_see,
    owned_job,
    owned_submission,
    visible_job,
    visible_submission,
    visible_submissions_clause,
)

__all__ = [
    "AccessDeniedError",
    "can_see",
    "owned_job",
    "owned_submission",
    "visible_job",
    "visible_submission",
    "visible_submissions_clause",
]
