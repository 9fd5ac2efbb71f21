"""Identity: teams, users, API tokens, and the :class:`Principal` a verified token stands for.

Tokens: ``tokens`` (generation, HMAC hashing); ``service``: the session-first functions.
"""

from services.platform.identity.principal import Principal
from services.platform.identity.service import (
    IssuedToken,
    authenticate,
    create_team,
    create_user,
    get_or_create_user,
    get_team,
    get_team_by_slug,
    get_token,
    issue_team_token,
    issue_token,
    lock_team,
    revoke_token,
    team_robot_email,
    verify_token,
)

__all__ = [
    "IssuedToken",
    "Principal",
    "authenticate",
    "create_team",
    "create_user",
    "get_or_create_user",
    "get_team",
    "get_team_by_slug",
    "get_token",
    "issue_team_token",
    "issue_token",
    "lock_team",
    "revoke_token",
    "team_robot_email",
    "verify_token",
]
