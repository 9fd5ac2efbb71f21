"""Who is calling: the verified token's user, team and scopes, and what that lets them see."""

from __future__ import annotations

from dataclasses import dataclass

from services.storage.models import ApiToken, TokenScope, Visibility


@dataclass(frozen=True)
class Principal:
    """Who is calling: the verified token's user, team and scopes."""

    token_id: int
    token_prefix: str
    user_id: int
    team_id: int
    team_slug: str
    scopes: tuple[str, ...]

    @classmethod
    def of_token(cls, token: ApiToken) -> Principal:
        """The principal of a verified token row (its user and team loaded)."""
        return cls(
            token_id=token.id,
            token_prefix=token.prefix,
            user_id=token.user.id,
            team_id=token.user.team_id,
            team_slug=token.user.team.slug,
            scopes=tuple(token.scopes),
        )

    @property
    def is_admin(self) -> bool:
        """Whether the token carries the ``admin`` scope (sees every team's objects)."""
        return TokenScope.ADMIN.value in self.scopes

    def can_see(self, team_id: int, visibility: str) -> bool:
        """Whether an object of ``team_id`` with ``visibility`` may be read by this caller."""
        return self.is_admin or team_id == self.team_id or visibility == Visibility.PUBLIC.value

    def owns(self, team_id: int) -> bool:
        """Whether the caller may change an object of ``team_id``."""
        return self.is_admin or team_id == self.team_id
