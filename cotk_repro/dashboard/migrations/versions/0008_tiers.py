"""Dirty-tree and unsigned records rank below clean, signed ones: ``records.dirty`` and ``results.tier``.

``dirty`` is filled from each stored record's JSON (``code.dirty``); ``tier`` (:func:`cotk_repro.core.ranking.tier`)
is 0 for a result of a signed record run from a clean tree, 1 for any other. The leaderboard index gains the
tier before the value, so a group is read in ranking order (tier, then value).

Revision ID: 0008
Revises: 0007 (the publications column)
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

BATCH = 1000


def _dirty(body: str) -> bool:
    try:
        code = json.loads(body).get("code")
    except (ValueError, AttributeError):
        return False
    return isinstance(code, dict) and code.get("dirty") is True


def upgrade() -> None:
    """Add the columns, fill them from the stored records, and put the tier into the leaderboard index."""

    def tier(*, signed: bool, dirty: bool) -> int:  # the rule as it stood at this revision (two tiers)
        return 0 if signed and not dirty else 1

    # plain ADD COLUMN (no batch table copy: on SQLite, dropping the old records table would cascade to results)
    op.add_column("records", sa.Column("dirty", sa.Boolean, nullable=False, server_default=sa.false()))
    op.add_column("results", sa.Column("tier", sa.SmallInteger, nullable=False, server_default=sa.text("1")))
    conn = op.get_bind()
    records = sa.table("records", sa.column("id", sa.Integer), sa.column("dirty", sa.Boolean))
    results = sa.table("results", sa.column("record_pk", sa.Integer), sa.column("tier", sa.SmallInteger))
    last = 0
    while True:
        rows = conn.execute(
            sa.text("SELECT id, body, key_fingerprint FROM records WHERE id > :last ORDER BY id LIMIT :n"),
            {"last": last, "n": BATCH},
        ).all()
        if not rows:
            break
        last = rows[-1][0]
        dirty = [pk for pk, body, _ in rows if _dirty(body)]
        trusted = [pk for pk, body, fp in rows if tier(signed=fp is not None, dirty=_dirty(body)) == 0]
        if dirty:
            conn.execute(records.update().where(records.c.id.in_(dirty)).values(dirty=True))
        if trusted:
            conn.execute(results.update().where(results.c.record_pk.in_(trusted)).values(tier=0))
    op.create_index(
        "ix_results_board_v3", "results", ["task", "dataset", "metric", "hash", "tier", "value", "record_pk"]
    )
    op.drop_index("ix_results_board_v2", table_name="results")


def downgrade() -> None:
    """Drop the columns; the leaderboard index without the tier."""
    op.create_index("ix_results_board_v2", "results", ["task", "dataset", "metric", "hash", "value", "record_pk"])
    op.drop_index("ix_results_board_v3", table_name="results")
    op.drop_column("results", "tier")  # SQLite >= 3.35 drops columns in place
    op.drop_column("records", "dirty")
