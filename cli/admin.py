"""`unmask admin ...`: teams and API tokens, straight on the database named by the settings;
protocols and challenge phases over HTTP (``unmask admin protocol|phase``, cli/admin_http.py).

Teams and tokens: the same operations as the admin routes of the HTTP API, for bootstrapping (the
first admin token cannot come from the API) and for operators on the database host.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer

from services.errors import InvalidInputError

admin_app = typer.Typer(
    rich_markup_mode=None,  # plain help: rich tables cut long option names at 80 columns
    help="Teams and API tokens (writes to UNMASK_DATABASE_URL); protocols and phases (over "
    "HTTP: UNMASK_URL, UNMASK_TOKEN with the admin scope).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

SECONDS_PER_DAY = 86_400


def _add_http_commands() -> None:
    from cli.admin_http import phase_app, protocol_app

    admin_app.add_typer(protocol_app, name="protocol")
    admin_app.add_typer(phase_app, name="phase")


_add_http_commands()


@contextlib.contextmanager
def _database_errors(url: str) -> Iterator[None]:
    """A database that is unreachable or not migrated is an environment problem: one line."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import OperationalError, ProgrammingError

    shown = make_url(url).render_as_string(hide_password=True)
    try:
        yield
    except (OperationalError, ProgrammingError) as exc:
        cause = str(exc.orig).splitlines()[0] if exc.orig is not None else type(exc).__name__
        raise InvalidInputError(
            f"database {shown}: {cause} (is it reachable and migrated? `alembic upgrade head`)"
        ) from None


@admin_app.command("create-team")
def create_team_command(
    name: str = typer.Argument(help="Team slug: lowercase letters, digits, '-'."),
    display_name: str | None = typer.Option(None, help="Human-readable name."),
) -> None:
    """Create a team."""
    from services.platform import identity
    from services.storage.db import Database

    database = Database.from_settings()
    try:
        with _database_errors(database.url), database.session_scope() as session:
            team = identity.create_team(session, name, display_name)
            typer.echo(f"team {team.slug} (id {team.id}) created")
    finally:
        database.dispose()


@admin_app.command("create-token")
def create_token_command(
    team: str = typer.Option(..., "--team", help="Team slug."),
    scopes: str = typer.Option("submit,read", help="Comma-separated: submit, read, admin."),
    expires_days: float | None = typer.Option(None, help="Lifetime in days (default: none)."),
    name: str = typer.Option("", help="A label for the token (e.g. ci)."),
    email: str | None = typer.Option(None, help="Owner (default: the team's robot user)."),
    create_team: bool = typer.Option(
        False, "--create-team", help="Create the team first when it does not exist."
    ),
) -> None:
    """Issue an API token and print its plaintext once (it is never shown again)."""
    from services.platform import identity
    from services.settings import get_settings
    from services.storage.db import Database
    from services.storage.errors import NotFoundError

    scope_list = [s.strip() for s in scopes.split(",") if s.strip()]
    if expires_days is not None and expires_days <= 0:
        raise InvalidInputError(f"--expires-days must be positive, got {expires_days}")
    settings = get_settings()
    database = Database.from_settings(settings)
    try:
        with _database_errors(database.url), database.session_scope() as session:
            created = None
            try:
                identity.get_team_by_slug(session, team)
            except NotFoundError:
                if not create_team:
                    raise InvalidInputError(
                        f"team {team!r} not found: create it first (`unmask admin create-team "
                        f"{team}`) or pass --create-team"
                    ) from None
                created = identity.create_team(session, team, None)
            issued = identity.issue_team_token(
                session,
                team,
                hmac_key=settings.token_hmac_key,
                scopes=scope_list,
                name=name,
                expires_in_s=None if expires_days is None else expires_days * SECONDS_PER_DAY,
                email=email,
            )
            token = issued.token
            # Said once the token is issued too: a refused token creates no team.
            if created is not None:
                typer.echo(f"team {created.slug} (id {created.id}) created", err=True)
            expiry = token.expires_at.isoformat() if token.expires_at else "never"
            typer.echo(
                f"token id {token.id} for team {team}, scopes {','.join(token.scopes)}, "
                f"expires {expiry}",
                err=True,
            )
            typer.echo(issued.plaintext)
    finally:
        database.dispose()


@admin_app.command("revoke-token")
def revoke_token_command(token_id: int = typer.Argument(help="Token id.")) -> None:
    """Revoke an API token."""
    from services.platform import identity
    from services.storage.db import Database

    database = Database.from_settings()
    try:
        with _database_errors(database.url), database.session_scope() as session:
            token = identity.revoke_token(session, token_id)
            typer.echo(f"token {token.id} ({token.prefix}...) revoked at {token.revoked_at}")
    finally:
        database.dispose()
