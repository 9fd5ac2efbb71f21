"""Challenge phases, the evaluator of each job, administrators' uncharged re-runs.

``phases`` (per protocol: window, per-team limit, public or hidden until a reveal time);
``jobs.phase_id`` (the phase a job was created in), ``jobs.evaluator`` (Unmask version, git
commit, stage-key versions, config hash; NULL for jobs from before), ``jobs.rerun_of_job_id`` and
``jobs.charged`` (False: an administrator's re-run, not counted against quotas; existing jobs are
charged).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 13:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _time() -> sa.types.TypeEngine:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "phases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("protocol_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("starts_at", _time(), nullable=False),
        sa.Column("ends_at", _time(), nullable=True),
        sa.Column("submission_limit", sa.Integer(), nullable=True),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("reveal_at", _time(), nullable=True),
        sa.Column("events_released_at", _time(), nullable=True),
        sa.Column("created_at", _time(), nullable=False),
        sa.CheckConstraint("visibility IN ('public', 'hidden')", name=op.f("ck_phases_visibility")),
        sa.CheckConstraint("ends_at IS NULL OR ends_at > starts_at", name=op.f("ck_phases_window")),
        sa.CheckConstraint(
            "submission_limit IS NULL OR submission_limit >= 1",
            name=op.f("ck_phases_limit_positive"),
        ),
        sa.CheckConstraint(
            "visibility <> 'hidden' OR reveal_at IS NOT NULL", name=op.f("ck_phases_hidden_reveal")
        ),
        sa.ForeignKeyConstraint(
            ["protocol_id"],
            ["protocols.id"],
            name=op.f("fk_phases_protocol_id_protocols"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_phases")),
        sa.UniqueConstraint("protocol_id", "name", name=op.f("uq_phases_protocol_id_name")),
    )
    with op.batch_alter_table("phases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_phases_protocol_id"), ["protocol_id"], unique=False)
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("phase_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("evaluator", _json(), nullable=True))
        batch_op.add_column(sa.Column("rerun_of_job_id", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("charged", sa.Boolean(), server_default=sa.true(), nullable=False)
        )
        batch_op.create_index(batch_op.f("ix_jobs_phase_id"), ["phase_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_jobs_rerun_of_job_id"), ["rerun_of_job_id"], unique=False
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_jobs_phase_id_phases"),
            "phases",
            ["phase_id"],
            ["id"],
            ondelete="RESTRICT",
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_jobs_rerun_of_job_id_jobs"),
            "jobs",
            ["rerun_of_job_id"],
            ["id"],
            ondelete="SET NULL",
        )


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_jobs_rerun_of_job_id_jobs"), type_="foreignkey")
        batch_op.drop_constraint(batch_op.f("fk_jobs_phase_id_phases"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_jobs_rerun_of_job_id"))
        batch_op.drop_index(batch_op.f("ix_jobs_phase_id"))
        batch_op.drop_column("charged")
        batch_op.drop_column("rerun_of_job_id")
        batch_op.drop_column("evaluator")
        batch_op.drop_column("phase_id")
    with op.batch_alter_table("phases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_phases_protocol_id"))
    op.drop_table("phases")
