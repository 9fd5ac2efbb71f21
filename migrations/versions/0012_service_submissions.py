"""Anonymizers served over HTTP: the ``service`` submission kind.

``submissions.service_url``, ``service_secret`` (the request-signing secret, Fernet-encrypted),
``service_credential_header`` and ``service_credential`` (the maker's own header, encrypted);
the ``kind`` checks admit ``service``. ``phases.allowed_kinds``: the submission kinds a phase
accepts jobs of (NULL: every kind). Downgrade deletes service submissions (their jobs and
results go with them through the foreign keys' cascades) before narrowing the checks.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28 06:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


_KIND_FIELDS = (
    "(kind = 'builtin' AND builtin_name IS NOT NULL)"
    " OR (kind = 'archive' AND archive_blob_key IS NOT NULL)"
    " OR (kind = 'container' AND container_image IS NOT NULL"
    " AND container_digest IS NOT NULL)"
)
_SERVICE_FIELDS = (
    " OR (kind = 'service' AND service_url IS NOT NULL AND service_secret IS NOT NULL)"
)


def upgrade() -> None:
    with op.batch_alter_table("phases", schema=None) as batch_op:
        batch_op.add_column(sa.Column("allowed_kinds", _json(), nullable=True))
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("service_url", sa.String(length=2048), nullable=True))
        batch_op.add_column(sa.Column("service_secret", sa.Text(), nullable=True))
        batch_op.add_column(
            sa.Column("service_credential_header", sa.String(length=128), nullable=True)
        )
        batch_op.add_column(sa.Column("service_credential", sa.Text(), nullable=True))
        batch_op.drop_constraint(op.f("ck_submissions_kind"), type_="check")
        batch_op.drop_constraint(op.f("ck_submissions_kind_fields"), type_="check")
        batch_op.create_check_constraint(
            op.f("ck_submissions_kind"),
            "kind IN ('builtin', 'archive', 'container', 'service')",
        )
        batch_op.create_check_constraint(
            op.f("ck_submissions_kind_fields"), _KIND_FIELDS + _SERVICE_FIELDS
        )


def downgrade() -> None:
    op.execute("DELETE FROM submissions WHERE kind = 'service'")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_submissions_kind"), type_="check")
        batch_op.drop_constraint(op.f("ck_submissions_kind_fields"), type_="check")
        batch_op.create_check_constraint(
            op.f("ck_submissions_kind"), "kind IN ('builtin', 'archive', 'container')"
        )
        batch_op.create_check_constraint(op.f("ck_submissions_kind_fields"), _KIND_FIELDS)
        batch_op.drop_column("service_credential")
        batch_op.drop_column("service_credential_header")
        batch_op.drop_column("service_secret")
        batch_op.drop_column("service_url")
    with op.batch_alter_table("phases", schema=None) as batch_op:
        batch_op.drop_column("allowed_kinds")
