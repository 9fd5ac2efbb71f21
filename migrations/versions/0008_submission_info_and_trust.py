"""Submission descriptions and paper/code links; the report's trust mark and DET points in job
summaries.

``submissions.description``, ``paper_url``, ``code_url`` (optional, shown on the leaderboard and
the submission page). ``job_summaries.trustworthy`` / ``trust_reasons`` (the report's ``trust``
block; NULL = the report has none, shown as unknown) and ``det_curves`` (the DET points the
leaderboard's overlaid DET plot draws). Self-contained: only adds nullable columns.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 22:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("description", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("paper_url", sa.String(length=2048), nullable=True))
        batch_op.add_column(sa.Column("code_url", sa.String(length=2048), nullable=True))
    with op.batch_alter_table("job_summaries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("trustworthy", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("trust_reasons", _json(), nullable=True))
        batch_op.add_column(sa.Column("det_curves", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("job_summaries", schema=None) as batch_op:
        batch_op.drop_column("det_curves")
        batch_op.drop_column("trust_reasons")
        batch_op.drop_column("trustworthy")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_column("code_url")
        batch_op.drop_column("paper_url")
        batch_op.drop_column("description")
