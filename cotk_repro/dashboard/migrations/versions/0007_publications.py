"""Publications: the git remote of a record made before its project had one, taken when it was published and
signed by the record's signer (``records.publication``, the ``{"publication", "signature"}`` JSON text;
:mod:`cotk_repro.remote.publication`). NULL for every record stored before.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``records.publication`` (plain ADD COLUMN: no batch table copy, which on SQLite would cascade)."""
    op.add_column("records", sa.Column("publication", sa.Text, nullable=True))


def downgrade() -> None:
    """Drop ``records.publication``."""
    op.drop_column("records", "publication")  # SQLite >= 3.35 drops columns in place
