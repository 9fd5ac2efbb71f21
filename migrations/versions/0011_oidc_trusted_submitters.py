"""OpenID Connect trusted submitters: CI workflows that submit without a stored secret.

``trusted_submitters`` (per team: issuer, repository id and name, optional owner id, ref,
environment and workflow constraints, whether pull-request events may submit) and
``oidc_exchanges`` (the audit row of each ID token exchanged for a short-lived API token; unique
``(issuer, jti)``, so an ID token is used once).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28 06:04:13.130453
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "trusted_submitters",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("issuer", sa.String(length=512), nullable=False),
        sa.Column("repository", sa.String(length=256), nullable=False),
        sa.Column("repository_id", sa.String(length=64), nullable=False),
        sa.Column("repository_owner_id", sa.String(length=64), nullable=True),
        sa.Column("ref", sa.String(length=256), nullable=True),
        sa.Column("environment", sa.String(length=256), nullable=True),
        sa.Column("workflow", sa.String(length=512), nullable=True),
        sa.Column("allow_pull_requests", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_trusted_submitters_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trusted_submitters")),
    )
    with op.batch_alter_table("trusted_submitters", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_trusted_submitters_repository_id"), ["repository_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_trusted_submitters_team_id"), ["team_id"], unique=False
        )

    op.create_table(
        "oidc_exchanges",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("trusted_submitter_id", sa.Integer(), nullable=True),
        sa.Column("token_id", sa.Integer(), nullable=True),
        sa.Column("issuer", sa.String(length=512), nullable=False),
        sa.Column("jti", sa.String(length=256), nullable=False),
        sa.Column("subject", sa.String(length=512), nullable=False),
        sa.Column("repository", sa.String(length=256), nullable=False),
        sa.Column("ref", sa.String(length=256), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("event_name", sa.String(length=64), nullable=True),
        sa.Column("id_token_expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["team_id"],
            ["teams.id"],
            name=op.f("fk_oidc_exchanges_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["token_id"],
            ["api_tokens.id"],
            name=op.f("fk_oidc_exchanges_token_id_api_tokens"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["trusted_submitter_id"],
            ["trusted_submitters.id"],
            name=op.f("fk_oidc_exchanges_trusted_submitter_id_trusted_submitters"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oidc_exchanges")),
        sa.UniqueConstraint("issuer", "jti", name=op.f("uq_oidc_exchanges_issuer_jti")),
    )
    with op.batch_alter_table("oidc_exchanges", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_oidc_exchanges_team_id"), ["team_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_oidc_exchanges_token_id"), ["token_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_oidc_exchanges_trusted_submitter_id"),
            ["trusted_submitter_id"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("oidc_exchanges", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_oidc_exchanges_trusted_submitter_id"))
        batch_op.drop_index(batch_op.f("ix_oidc_exchanges_token_id"))
        batch_op.drop_index(batch_op.f("ix_oidc_exchanges_team_id"))

    op.drop_table("oidc_exchanges")
    with op.batch_alter_table("trusted_submitters", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_trusted_submitters_team_id"))
        batch_op.drop_index(batch_op.f("ix_trusted_submitters_repository_id"))

    op.drop_table("trusted_submitters")
