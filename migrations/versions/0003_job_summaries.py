"""Job summaries: the leaderboard metrics of each succeeded job, precomputed.

The leaderboard page reads one row per submission from here instead of aggregating its result
rows (services/storage/leaderboard_table.py). Jobs that succeeded before this revision have no
summary; the page computes theirs from the results on the fly. Generated with
`alembic revision --autogenerate`, then reviewed (plain create_index on the new table).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 00:00:34.204718
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_summaries",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("protocol_id", sa.Integer(), nullable=True),
        sa.Column(
            "metric_values",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_job_summaries_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["protocol_id"],
            ["protocols.id"],
            name=op.f("fk_job_summaries_protocol_id_protocols"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_job_summaries")),
    )
    op.create_index(
        op.f("ix_job_summaries_protocol_id"), "job_summaries", ["protocol_id"], unique=False
    )


def downgrade() -> None:
    op.drop_table("job_summaries")
