"""The outbox: work handed to the workers after the transaction that wrote it committed.

One table, ``outbox_messages`` (services/platform/outbox/): a row is written in the same
transaction as the state change it follows and marked sent once the broker accepted it; a periodic
relay re-sends what is still unsent. Written to match `alembic revision --autogenerate` on
services/storage/models.py (plain create_index on the new table).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "outbox_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("topic", sa.String(length=64), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("available_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.CheckConstraint("attempts >= 0", name=op.f("ck_outbox_messages_attempts_nonnegative")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox_messages")),
    )
    op.create_index(
        "ix_outbox_messages_sent_at_available_at",
        "outbox_messages",
        ["sent_at", "available_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_table("outbox_messages")
