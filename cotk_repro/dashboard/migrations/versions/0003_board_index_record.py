"""The leaderboard index also covers the record, so a page of a group is read from the index alone.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Replace the leaderboard index with one that also covers ``record_pk``."""
    op.create_index("ix_results_board_v2", "results", ["task", "dataset", "metric", "hash", "value", "record_pk"])
    op.drop_index("ix_results_board", table_name="results")


def downgrade() -> None:
    """Restore the leaderboard index without ``record_pk``."""
    op.create_index("ix_results_board", "results", ["task", "dataset", "metric", "hash", "value"])
    op.drop_index("ix_results_board_v2", table_name="results")
