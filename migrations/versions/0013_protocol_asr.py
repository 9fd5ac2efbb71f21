"""The utility ASR trained at a protocol's registration: its state on the protocol.

``protocols.asr_state`` (NULL: the protocol trains no ASR; else queued, running, ready or failed),
``asr_key`` (its ``utility-asr`` stage key once ready), ``asr_error`` and ``asr_updated_at``.
Protocols registered before this revision keep NULL: their jobs train the ASR in their utility
phase, once per protocol through the stage store, as before.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("protocols", schema=None) as batch_op:
        batch_op.add_column(sa.Column("asr_state", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("asr_key", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("asr_error", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("asr_updated_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_check_constraint(
            op.f("ck_protocols_asr_state"),
            "asr_state IS NULL OR asr_state IN ('queued', 'running', 'ready', 'failed')",
        )


def downgrade() -> None:
    with op.batch_alter_table("protocols", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_protocols_asr_state"), type_="check")
        batch_op.drop_column("asr_updated_at")
        batch_op.drop_column("asr_error")
        batch_op.drop_column("asr_key")
        batch_op.drop_column("asr_state")
