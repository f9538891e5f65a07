"""Leaderboard group sizes kept up to date on upload (no counting 100k rows per request).

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create board_groups and fill it with the current group sizes of every leaderboard."""
    op.create_table(
        "board_groups",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("task", sa.String(200), nullable=False),
        sa.Column("dataset", sa.String(200), nullable=False),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),  # "" for results without a hash (unverifiable)
        sa.Column("n", sa.Integer, nullable=False),
        sa.UniqueConstraint("task", "dataset", "metric", "hash", name="uq_board_groups"),
    )
    op.execute(
        "INSERT INTO board_groups (task, dataset, metric, hash, n) "
        "SELECT task, dataset, metric, COALESCE(hash, ''), COUNT(*) FROM results "
        "GROUP BY task, dataset, metric, COALESCE(hash, '')"
    )


def downgrade() -> None:
    """Drop board_groups."""
    op.drop_table("board_groups")
