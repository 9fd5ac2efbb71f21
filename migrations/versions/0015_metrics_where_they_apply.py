"""Metrics only where they apply: no empty Cllr at the aggregate seed.

Cllr applies to log-likelihood-ratio scores only (``services.metrics.catalogue``,
``Metric.applies``). Reports written before stored it as NULL at the aggregate seed (-1) of
every (job, attacker, scenario, back-end) whose per-seed rows had none (cosine scores), so the
metric had one name at the seeds and another in the aggregate. Upgrade deletes those aggregate
rows and the matching empty values of the job summaries; a row or value holding a number stays.
Downgrade leaves the data as it is: the deleted rows held no value.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 10:00:00
"""

import json
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The catalogue's key, spelled here as it was when this revision was written (a revision must not
# change when the code does).
CLLR = "cllr_bits"
AGGREGATE_SEED = -1
SEPARATOR = "|"


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    bind = op.get_bind()
    bind.execute(
        sa.text(
            "DELETE FROM results WHERE metric = :metric AND seed = :aggregate AND value IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM results AS s WHERE s.job_id = results.job_id"
            " AND s.attacker = results.attacker AND s.scenario = results.scenario"
            " AND s.backend = results.backend AND s.metric = results.metric"
            " AND s.seed <> :aggregate)"
        ),
        {"metric": CLLR, "aggregate": AGGREGATE_SEED},
    )
    with_value = {
        (int(job), str(scenario), str(backend))
        for job, scenario, backend in bind.execute(
            sa.text(
                "SELECT DISTINCT job_id, scenario, backend FROM results"
                " WHERE metric = :metric AND value IS NOT NULL"
            ),
            {"metric": CLLR},
        )
    }
    summaries = bind.execute(sa.text("SELECT job_id, metric_values FROM job_summaries")).all()
    for job_id, stored in summaries:
        values: dict[str, Any] = json.loads(stored) if isinstance(stored, str) else dict(stored)
        empty = [
            key
            for key, value in values.items()
            if value is None
            and key.endswith(SEPARATOR + CLLR)
            and (int(job_id), *key.split(SEPARATOR)[:2]) not in with_value
        ]
        if empty:
            for key in empty:
                del values[key]
            update = sa.text(
                "UPDATE job_summaries SET metric_values = :values WHERE job_id = :job"
            ).bindparams(sa.bindparam("values", type_=_json()))
            bind.execute(update, {"values": values, "job": job_id})


def downgrade() -> None:
    """Nothing to restore: the deleted rows and values held no number."""
