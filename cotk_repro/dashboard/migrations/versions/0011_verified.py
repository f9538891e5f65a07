"""Tiers from evidence: ``records.standing``, ``reproductions.pool``, three tiers, pinned derived.

A result's tier is now 0 when its record is *verified* (reproduced by the dashboard's pool, or by at least K
reproducers other than its signer and its mirrors, each signing with a proven key), 1 when it is signed, from a
clean tree, by a pinned system and not verified, 2 otherwise (:func:`cotk_repro.core.ranking.tier`). This
revision fills, for every stored record:

* ``reproductions.pool``: the reproductions the worker pool attached (the reproduction queue's mapping table
  names them, where the queue ran);
* ``results.pinned`` again, derived from the system the stored record describes
  (:meth:`cotk_repro.records.view.RecordView.pinned`: an ``openai`` system, or a signature naming one, is
  unpinned whatever the record claims);
* ``records.standing`` and ``results.tier`` from the reproductions stored (:mod:`cotk_repro.dashboard.standing`),
  with K = 1 (``dashboard_meta.verified_by``; ``dashboard serve --verified-by K`` re-derives them for another K).

Revision ID: 0011_verified
Revises: 0010_pinned
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0011_verified"
down_revision = "0010_pinned"
branch_labels = None
depends_on = None

BATCH = 1000
JOBS = "cotk_repro_reproduce_jobs"


def _pinned(body: str, metrics: list[str]) -> dict[str, bool]:
    from cotk_repro.records.view import RecordView

    try:
        view = RecordView.of(json.loads(body))
    except (ValueError, RecursionError):
        return {}
    return {m: view.pinned(m) for m in metrics}


def upgrade() -> None:
    """Add the columns; fill pool, pinned, standing and tier from what is stored."""
    from cotk_repro.dashboard.standing import META_KEY, refresh_all

    op.add_column(
        "records", sa.Column("standing", sa.String(16), nullable=False, server_default=sa.text("'unverified'"))
    )
    op.add_column("reproductions", sa.Column("pool", sa.Boolean, nullable=False, server_default=sa.false()))
    conn = op.get_bind()
    if sa.inspect(conn).has_table(JOBS):
        conn.execute(
            sa.text(
                f"UPDATE reproductions SET pool = true WHERE id IN "  # noqa: S608 - a constant table name
                f"(SELECT reproduction_pk FROM {JOBS} WHERE reproduction_pk IS NOT NULL)"
            )
        )
    results = sa.table("results", sa.column("id", sa.Integer), sa.column("pinned", sa.Boolean))
    last = 0
    while True:
        rows = conn.execute(
            sa.text("SELECT id, body FROM records WHERE id > :last ORDER BY id LIMIT :n"), {"last": last, "n": BATCH}
        ).all()
        if not rows:
            break
        last = rows[-1][0]
        bodies: dict[int, str] = {pk: body for pk, body in rows}
        stored = conn.execute(
            sa.text("SELECT id, record_pk, metric, pinned FROM results WHERE record_pk IN :pks").bindparams(
                sa.bindparam("pks", expanding=True)
            ),
            {"pks": list(bodies)},
        ).all()
        by_record: dict[int, list[tuple[int, str, bool]]] = {}
        for rid, pk, metric, pinned in stored:
            by_record.setdefault(pk, []).append((rid, metric, bool(pinned)))
        unpin = []
        for pk, items in by_record.items():
            derived = _pinned(bodies[pk], [m for _, m, _ in items])
            unpin += [rid for rid, m, pinned in items if pinned and derived.get(m) is False]
        if unpin:  # the worse claim wins: derivation only ever lowers
            conn.execute(results.update().where(results.c.id.in_(unpin)).values(pinned=False))
    if conn.execute(sa.text("SELECT 1 FROM dashboard_meta WHERE key = :k"), {"k": META_KEY}).first() is None:
        conn.execute(sa.text("INSERT INTO dashboard_meta (key, value) VALUES (:k, 1)"), {"k": META_KEY})
    refresh_all(conn, 1)


def downgrade() -> None:
    """Drop the columns (tiers back to 0 signed, clean and pinned, 1 the rest)."""
    conn = op.get_bind()
    conn.execute(
        sa.text(
            "UPDATE results SET tier = CASE WHEN pinned AND record_pk IN (SELECT id FROM records WHERE "
            "key_fingerprint IS NOT NULL AND NOT dirty) THEN 0 ELSE 1 END"
        )
    )
    conn.execute(sa.text("DELETE FROM dashboard_meta WHERE key = 'verified_by'"))
    op.drop_column("reproductions", "pool")
    op.drop_column("records", "standing")
