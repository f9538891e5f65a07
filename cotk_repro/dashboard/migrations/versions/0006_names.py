"""Names are identifiers: the metric, task, dataset and project names a dashboard holds, by key.

A new name that shares a key (:func:`cotk_repro.dashboard.names.keys`: the confusables skeleton, case
folded) with a stored one of its kind is refused. Filled here from the names already stored, oldest
record first (where two stored names share a key already, the older one is registered).

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``names`` and register every name stored."""
    from cotk_repro.dashboard.names import rows_for

    names = op.create_table(
        "names",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.UniqueConstraint("kind", "key", name="uq_names_kind_key"),
    )
    conn = op.get_bind()
    seen: set[tuple[str, str]] = set()
    rows = []

    def add(kind: str, name: str) -> None:
        for row in rows_for(kind, name):
            if (kind, row["key"]) not in seen:
                seen.add((kind, row["key"]))
                rows.append(row)

    for kind, column, table in (
        ("task", "task", "records"),
        ("dataset", "dataset", "records"),
        ("project", "project_name", "records"),
        ("metric", "metric", "results"),
    ):
        for (name,) in conn.execute(sa.text(f"SELECT {column} FROM {table} GROUP BY {column} ORDER BY MIN(id)")):  # noqa: S608 - only constant table/column names and fixed keys are interpolated
            add(kind, name)
    if rows:
        op.bulk_insert(names, rows)


def downgrade() -> None:
    """Drop ``names``."""
    op.drop_table("names")
