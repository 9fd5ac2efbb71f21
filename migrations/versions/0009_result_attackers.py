"""The attacker zoo: results per attacker, the report's worst case in job summaries.

``results.attacker`` (the zoo attacker of a row, ``services.pipeline.zoo``; existing rows and jobs
without a zoo are ``baseline``) joins the unique key (job, attacker, scenario, back-end, seed,
metric). ``job_summaries.worst_case`` keeps the report's ``worst_case`` block (NULL = one
attacker). Downgrade keeps the baseline attacker's rows of each job (or, for a job without one,
those of its alphabetically first attacker) so the old unique key holds again.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 14:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("attacker", sa.String(length=32), server_default="baseline", nullable=False)
        )
        batch_op.drop_constraint("uq_results_job_id_scenario_backend_seed_metric", type_="unique")
        batch_op.create_unique_constraint(
            "uq_results_job_id_attacker_scenario_backend_seed_metric",
            ["job_id", "attacker", "scenario", "backend", "seed", "metric"],
        )
    with op.batch_alter_table("job_summaries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("worst_case", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("job_summaries", schema=None) as batch_op:
        batch_op.drop_column("worst_case")
    # One attacker per job survives: the baseline where the job has it, else the first by name.
    op.execute(
        "DELETE FROM results WHERE attacker <> ("
        " SELECT CASE WHEN SUM(CASE WHEN r2.attacker = 'baseline' THEN 1 ELSE 0 END) > 0"
        " THEN 'baseline' ELSE MIN(r2.attacker) END"
        " FROM results r2 WHERE r2.job_id = results.job_id)"
    )
    with op.batch_alter_table("results", schema=None) as batch_op:
        batch_op.drop_constraint(
            "uq_results_job_id_attacker_scenario_backend_seed_metric", type_="unique"
        )
        batch_op.create_unique_constraint(
            "uq_results_job_id_scenario_backend_seed_metric",
            ["job_id", "scenario", "backend", "seed", "metric"],
        )
        batch_op.drop_column("attacker")
