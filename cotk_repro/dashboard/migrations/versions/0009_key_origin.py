"""Proofs of possession bound to the dashboard's configured origin: ``ssh_keys.proof_origin``, old proofs re-checked.

Before this revision a dashboard served without ``--public-url`` named, in each key registration
challenge, the origin it read from the request's ``Host`` header. A server of an attacker's could relay
``keys add`` to the dashboard under its own ``Host`` with the attacker's token: the victim's client saw
the origin it talked to and signed, and the dashboard registered the victim's key to the attacker "with
proof". The database did not keep which origin each proof named (used challenges are deleted after
minutes), so no proof of possession made before can be told apart from a relayed one: every key
registered by ``possession`` becomes unproven (``proof`` NULL; it signs nothing) until its holder runs
``cotk-repro keys add`` again, which, when the key sits with another user, moves it and what it signed
to the holder. A ``key_audit`` row (action ``recheck``) records each. Keys the administrator vouched for
(``operator``) are kept. From now on ``proof_origin`` holds the origin the proof named.

Revision ID: 0009_key_origin
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_key_origin"
down_revision = "0008"
branch_labels = None
depends_on = None

DETAIL = (
    "proven before 0009_key_origin, against a challenge that named the origin from the request's Host header "
    "(a relaying site could get one): its holder proves it again with `cotk-repro keys add`"
)


def upgrade() -> None:
    """Add ``ssh_keys.proof_origin``; demote every earlier proof of possession to unproven, audited."""
    op.add_column("ssh_keys", sa.Column("proof_origin", sa.String(300), nullable=True))
    bind = op.get_bind()
    keys = sa.table(
        "ssh_keys",
        sa.column("id", sa.Integer),
        sa.column("user_id", sa.Integer),
        sa.column("fingerprint", sa.String),
        sa.column("proof", sa.String),
        sa.column("proven_at", sa.String),
    )
    audit = sa.table(
        "key_audit",
        sa.column("at", sa.String),
        sa.column("fingerprint", sa.String),
        sa.column("action", sa.String),
        sa.column("from_user_id", sa.Integer),
        sa.column("to_user_id", sa.Integer),
        sa.column("records", sa.Integer),
        sa.column("reproductions", sa.Integer),
        sa.column("detail", sa.Text),
    )
    rows = bind.execute(
        sa.select(keys.c.id, keys.c.user_id, keys.c.fingerprint).where(keys.c.proof == "possession")
    ).all()
    if not rows:
        return
    from datetime import datetime, timezone

    at = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    bind.execute(
        audit.insert(),
        [
            {
                "at": at,
                "fingerprint": fp,
                "action": "recheck",
                "from_user_id": uid,
                "to_user_id": None,
                "records": 0,
                "reproductions": 0,
                "detail": DETAIL,
            }
            for _id, uid, fp in rows
        ],
    )
    bind.execute(keys.update().where(keys.c.proof == "possession").values(proof=None, proven_at=None))


def downgrade() -> None:
    """Drop ``proof_origin`` (the demoted proofs stay unproven: they were never known good)."""
    op.drop_column("ssh_keys", "proof_origin")
