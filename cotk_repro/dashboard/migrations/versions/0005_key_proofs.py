"""Proof of possession for SSH keys: how each key was registered, registration challenges, an audit of moves.

Every key stored before this revision is marked unproven (``proof`` NULL): the database does not say which
were added through ``POST /api/v1/keys`` (anyone could name anyone's public key there) and which an
administrator vouched for, so none signs anything until its holder proves possession (``cotk-repro keys
add``) or the administrator vouches again (``cotk-repro dashboard add-key NAME FILE.pub``).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``ssh_keys.proof``/``proven_at`` (NULL: unproven), ``key_challenges`` and ``key_audit``."""
    op.add_column("ssh_keys", sa.Column("proof", sa.String(16), nullable=True))
    op.add_column("ssh_keys", sa.Column("proven_at", sa.String(40), nullable=True))
    op.create_table(
        "key_challenges",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("nonce", sa.String(64), nullable=False, unique=True),
        sa.Column("origin", sa.String(300), nullable=False),
        sa.Column("created_at", sa.String(40), nullable=False),
        sa.Column("expires_at", sa.String(40), nullable=False),
        sa.Column("expires_epoch", sa.Integer, nullable=False),
        sa.Column("used_at", sa.String(40), nullable=True),
    )
    op.create_table(
        "key_audit",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("at", sa.String(40), nullable=False),
        sa.Column("fingerprint", sa.String(80), nullable=False, index=True),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("from_user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.Column("to_user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="SET NULL"), nullable=True),
        sa.Column("records", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("reproductions", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("detail", sa.Text, nullable=False, server_default=""),
    )


def downgrade() -> None:
    """Drop the audit, the challenges and the proof columns."""
    op.drop_table("key_audit")
    op.drop_table("key_challenges")
    op.drop_column("ssh_keys", "proven_at")
    op.drop_column("ssh_keys", "proof")
