"""Signed records and reproductions: users' SSH keys, record signatures and owners, mirrors,
server-computed verdicts (the client's kept apart), author reruns and superseded reproductions.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add SSH keys, mirrors, signature columns and reproduction flags, and backfill the flags and counts."""
    op.create_table(
        "ssh_keys",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("fingerprint", sa.String(80), nullable=False, unique=True),
        sa.Column("key_type", sa.String(64), nullable=False),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("comment", sa.String(200), nullable=False, server_default=""),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("revoked_at", sa.String(40), nullable=True),
    )
    op.create_table(
        "mirrors",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("record_pk", sa.Integer, sa.ForeignKey("records.id", ondelete="CASCADE"), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("submitted_at", sa.String(40), nullable=False),
        sa.UniqueConstraint("record_pk", "user_id", name="uq_mirrors_record_user"),
    )
    # plain ADD COLUMN (no batch table copy: on SQLite, dropping the old table would cascade to results)
    op.add_column("records", sa.Column("signature", sa.Text, nullable=True))
    op.add_column("records", sa.Column("key_fingerprint", sa.String(80), nullable=True))
    op.add_column("records", sa.Column("reproduced_by", sa.Integer, nullable=False, server_default=sa.text("0")))
    op.add_column("reproductions", sa.Column("client_verdict", sa.String(32), nullable=True))
    op.add_column("reproductions", sa.Column("signature", sa.Text, nullable=True))
    op.add_column("reproductions", sa.Column("key_fingerprint", sa.String(80), nullable=True))
    op.add_column("reproductions", sa.Column("by_author", sa.Boolean, nullable=False, server_default=sa.false()))
    op.add_column("reproductions", sa.Column("superseded", sa.Boolean, nullable=False, server_default=sa.false()))
    op.create_index("ix_reproductions_record_user", "reproductions", ["record_pk", "user_id", "superseded"])
    # existing reproductions: the owner's own ones are author reruns; only the newest per user counts
    op.execute(
        "UPDATE reproductions SET by_author = (user_id = (SELECT r.user_id FROM records r "
        "WHERE r.id = reproductions.record_pk))"
    )
    op.execute(
        "UPDATE reproductions SET superseded = (id < (SELECT MAX(p.id) FROM reproductions p "
        "WHERE p.record_pk = reproductions.record_pk AND p.user_id = reproductions.user_id))"
    )
    op.execute(
        "UPDATE records SET reproduced_by = (SELECT COUNT(DISTINCT p.user_id) FROM reproductions p "
        "WHERE p.record_pk = records.id AND p.verdict = 'reproduced' AND NOT p.by_author "
        "AND NOT p.superseded)"
    )


def downgrade() -> None:
    """Drop the tables, columns and index that signatures added."""
    op.drop_index("ix_reproductions_record_user", table_name="reproductions")
    for col in ("superseded", "by_author", "key_fingerprint", "signature", "client_verdict"):
        op.drop_column("reproductions", col)  # SQLite >= 3.35 drops columns in place
    for col in ("reproduced_by", "key_fingerprint", "signature"):
        op.drop_column("records", col)
    op.drop_table("mirrors")
    op.drop_table("ssh_keys")
