"""Initial dashboard schema: users, tokens, records, results, reproductions, meta.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the users, tokens, records, results, reproductions and dashboard_meta tables."""
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.String(40), nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("revoked_at", sa.String(40), nullable=True),
    )
    op.create_index("ix_tokens_user_id", "tokens", ["user_id"])
    op.create_table(
        "records",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("record_id", sa.String(80), nullable=False, unique=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("task", sa.String(200), nullable=False),
        sa.Column("dataset", sa.String(200), nullable=False),
        sa.Column("project_name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("submitted_at", sa.String(40), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_index("ix_records_task_dataset", "records", ["task", "dataset", "id"])
    op.create_index("ix_records_user", "records", ["user_id", "id"])
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("record_pk", sa.Integer, sa.ForeignKey("records.id", ondelete="CASCADE"), nullable=False),
        sa.Column("task", sa.String(200), nullable=False),
        sa.Column("dataset", sa.String(200), nullable=False),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("hash", sa.String(64), nullable=True),
        sa.Column("value", sa.Float, nullable=False),
        sa.UniqueConstraint("record_pk", "metric", name="uq_results_record_metric"),
    )
    op.create_index("ix_results_board", "results", ["task", "dataset", "metric", "hash", "value"])
    op.create_table(
        "reproductions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("record_pk", sa.Integer, sa.ForeignKey("records.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("submitted_at", sa.String(40), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_index("ix_reproductions_record_pk", "reproductions", ["record_pk"])
    meta = op.create_table(
        "dashboard_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Integer, nullable=False),
    )
    op.bulk_insert(meta, [{"key": "generation", "value": 0}])


def downgrade() -> None:
    """Drop every table of the initial schema."""
    for name in ("dashboard_meta", "reproductions", "results", "records", "tokens", "users"):
        op.drop_table(name)
