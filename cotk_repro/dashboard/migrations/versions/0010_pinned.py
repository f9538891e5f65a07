"""Results of unpinned systems rank below pinned ones: ``results.pinned``.

A result computed on the outputs of a system not pinned to its weights (a language model served by an endpoint,
:mod:`cotk_repro.llm.system`) says ``"pinned": false`` (on the result, or on the record's ``system``); its
``tier`` is then 1 (:func:`cotk_repro.core.ranking.tier`) and stays 1 when a signed upload adopts the record.
Nothing needs filling: before this revision the dashboard refused a record with either key (a key its
record schema did not define), so every stored result is pinned, the column's default.

Revision ID: 0010_pinned
Revises: 0009_key_origin
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_pinned"
down_revision = "0009_key_origin"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``results.pinned`` (true for every stored result)."""
    op.add_column("results", sa.Column("pinned", sa.Boolean, nullable=False, server_default=sa.true()))


def downgrade() -> None:
    """Drop ``results.pinned``."""
    op.drop_column("results", "pinned")  # SQLite >= 3.35 drops columns in place
