"""The challenger in job summaries: ``job_summaries.challenger``.

Keeps the report's ``challenger`` block (a pretrained verifier scored on the verdict's trials;
``services.pipeline.challenger``), so a job's results answer carries it beside the trust check.
NULL = the report has none (and every job recorded before this revision). Downgrade drops it.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("job_summaries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("challenger", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("job_summaries", schema=None) as batch_op:
        batch_op.drop_column("challenger")
