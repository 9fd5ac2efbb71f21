"""Archive submissions name their protocol in a column: submissions.protocol_id.

Until now the protocol an archive was made for lived only in its blob key
(``archives/protocol-<protocol id>/team-<team id>/<32 hex>``) and was parsed back with a regular
expression. The column (nullable: built-ins and containers run under any protocol) is the source
of truth from this revision on; new keys keep the same form, so nothing that reads stored keys
breaks. The upgrade backfills the column from the keys of existing archive submissions (keys of
another form, and protocol ids that no longer exist, stay NULL). The downgrade drops the column;
nothing is lost, since every key written by the API still carries the protocol id.

Batch operations: PostgreSQL gets plain ALTERs; SQLite copies the table (its named CHECK
constraints are carried over).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 00:00:00.000000
"""

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The archive key form written by api/uploads.py (copied: a migration must not depend on code
# that may change after it).
_ARCHIVE_KEY_RE = re.compile(r"^archives/protocol-(\d+)/team-(\d+)/[0-9a-f]{32}$")

_submissions = sa.table(
    "submissions",
    sa.column("id", sa.Integer()),
    sa.column("kind", sa.String()),
    sa.column("archive_blob_key", sa.String()),
    sa.column("protocol_id", sa.Integer()),
)
_protocols = sa.table("protocols", sa.column("id", sa.Integer()))


def upgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("protocol_id", sa.Integer(), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_submissions_protocol_id"), ["protocol_id"], unique=False
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_submissions_protocol_id_protocols"),
            "protocols",
            ["protocol_id"],
            ["id"],
            ondelete="RESTRICT",
        )
    _backfill_protocol_ids(op.get_bind())


def _backfill_protocol_ids(bind: sa.engine.Connection) -> None:
    """Set protocol_id of archive submissions from their blob keys (existing protocols only)."""
    known = set(bind.execute(sa.select(_protocols.c.id)).scalars())
    archives = bind.execute(
        sa.select(_submissions.c.id, _submissions.c.archive_blob_key).where(
            _submissions.c.kind == "archive",
            _submissions.c.archive_blob_key.is_not(None),
            _submissions.c.protocol_id.is_(None),
        )
    ).all()
    updates = []
    for submission_id, key in archives:
        match = _ARCHIVE_KEY_RE.match(key)
        if match is not None and int(match.group(1)) in known:
            updates.append({"submission_id": submission_id, "new_protocol_id": int(match.group(1))})
    if updates:
        bind.execute(
            sa.update(_submissions)
            .where(_submissions.c.id == sa.bindparam("submission_id"))
            .values(protocol_id=sa.bindparam("new_protocol_id")),
            updates,
        )


def downgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_submissions_protocol_id_protocols"), type_="foreignkey"
        )
        batch_op.drop_index(batch_op.f("ix_submissions_protocol_id"))
        batch_op.drop_column("protocol_id")
