"""A record's standing from the reproductions stored for it, and the tiers of its results that follow.

The rule is :func:`cotk_repro.core.ranking.standing` and :func:`~cotk_repro.core.ranking.tier`; this module reads
its evidence and keeps ``records.standing`` and ``results.tier`` in step, inside the transaction that changed
the evidence (a reproduction attached, a record adopted by its signer or mirrored by another user). A verdict
counts when it is the latest of its user (not superseded), the user is neither the record's owner (the
signer) nor one of its mirrors, the verdict is the server's own ``reproduced`` / ``not reproduced`` (a run that
could not run says nothing of the record), and it is signed by a key its holder proved (or the operator
vouched for) and that is not revoked. The pool's reproduction (``reproductions.pool``) is one such verdict,
and its "reproduced" verifies alone.

K, the number of reproducers that verify a record, is the dashboard's (``dashboard serve --verified-by K``),
kept in ``dashboard_meta`` (``verified_by``) so that every server process and migration read the same one;
serving with another K re-derives every record's standing once (:func:`use_verified_by`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from sqlalchemy import bindparam, text

from ..core.ranking import DEFAULT_VERIFIED_BY, UNVERIFIED, standing, tier

META_KEY = "verified_by"
BATCH = 1000

_EVIDENCE = text("""
SELECT rp.record_pk, rp.user_id, rp.verdict, rp.pool FROM reproductions rp
  JOIN ssh_keys k ON k.fingerprint = rp.key_fingerprint AND k.proof IS NOT NULL AND k.revoked_at IS NULL
 WHERE rp.record_pk IN :pks AND NOT rp.superseded AND NOT rp.by_author
   AND rp.verdict IN ('reproduced', 'not reproduced')
   AND NOT EXISTS (SELECT 1 FROM mirrors m WHERE m.record_pk = rp.record_pk AND m.user_id = rp.user_id)
""").bindparams(bindparam("pks", expanding=True))
_RECORDS = text("SELECT id, key_fingerprint, dirty, standing FROM records WHERE id IN :pks").bindparams(
    bindparam("pks", expanding=True)
)
_RESULTS = text("SELECT id, record_pk, pinned, tier FROM results WHERE record_pk IN :pks").bindparams(
    bindparam("pks", expanding=True)
)
_SET_STANDING = text("UPDATE records SET standing = :s WHERE id IN :pks").bindparams(bindparam("pks", expanding=True))
_SET_TIER = text("UPDATE results SET tier = :t WHERE id IN :ids").bindparams(bindparam("ids", expanding=True))


def verified_by(conn) -> int:
    """The dashboard's K (``dashboard_meta.verified_by``; :data:`~cotk_repro.core.ranking.DEFAULT_VERIFIED_BY`
    when never set)."""
    value = conn.execute(text("SELECT value FROM dashboard_meta WHERE key = :k"), {"k": META_KEY}).scalar()
    return int(value) if value is not None else DEFAULT_VERIFIED_BY


def evidence(conn, pks: Sequence[int]) -> dict[int, tuple[bool | None, int, int]]:
    """``{record_pk: (pool verdict, reproducers agreeing, reproducers differing)}`` of the records ``pks``."""
    pool: dict[int, bool | None] = {}
    agree: dict[int, set[int]] = defaultdict(set)
    differ: dict[int, set[int]] = defaultdict(set)
    for pk, user, verdict, by_pool in conn.execute(_EVIDENCE, {"pks": list(pks)}).all():
        ok = verdict == "reproduced"
        if by_pool:
            pool[pk] = ok
        else:
            (agree if ok else differ)[pk].add(user)
    return {pk: (pool.get(pk), len(agree[pk]), len(differ[pk])) for pk in pks}


def refresh(conn, pks: Iterable[int], k: int | None = None) -> dict[int, str]:
    """Re-derive the standing of the records ``pks`` and the tiers of their results, in the open transaction
    ``conn``; ``{record_pk: standing}``. Writes only what changed."""
    pks = sorted(set(pks))
    if not pks:
        return {}
    k = verified_by(conn) if k is None else k
    out: dict[int, str] = {}
    for start in range(0, len(pks), BATCH):
        chunk = pks[start : start + BATCH]
        found = evidence(conn, chunk)
        records = {
            pk: (fp is not None, bool(dirty), old) for pk, fp, dirty, old in conn.execute(_RECORDS, {"pks": chunk})
        }
        moved: dict[str, list[int]] = defaultdict(list)
        for pk, (_signed, _dirty, old) in records.items():
            out[pk] = standing(*found[pk], k)
            if out[pk] != old:
                moved[out[pk]].append(pk)
        for state, ids in moved.items():
            conn.execute(_SET_STANDING, {"s": state, "pks": ids})
        retier: dict[int, list[int]] = defaultdict(list)
        for rid, pk, pinned, old_tier in conn.execute(_RESULTS, {"pks": chunk}):
            signed, dirty, _old = records[pk]
            new = tier(signed=signed, dirty=dirty, pinned=bool(pinned), standing=out[pk])
            if new != old_tier:
                retier[new].append(rid)
        for t, ids in retier.items():
            conn.execute(_SET_TIER, {"t": t, "ids": ids})
    return out


def refresh_all(conn, k: int | None = None) -> int:
    """:func:`refresh` over every stored record, in batches; how many records."""
    last, n = 0, 0
    while True:
        pks = list(
            conn.execute(
                text("SELECT id FROM records WHERE id > :last ORDER BY id LIMIT :n"), {"last": last, "n": BATCH}
            ).scalars()
        )
        if not pks:
            return n
        refresh(conn, pks, k)
        last, n = pks[-1], n + len(pks)


def use_verified_by(db, k: int) -> bool:
    """Make ``k`` the dashboard's K; when it differs from the stored one, re-derive every record's standing and
    tiers in the same transaction. Whether anything was re-derived."""

    def tx(conn) -> bool:
        if db.dialect == "postgresql":  # several servers starting at once: one re-derives
            conn.execute(text("SELECT pg_advisory_xact_lock(7268210004)"))
        stored = conn.execute(text("SELECT value FROM dashboard_meta WHERE key = :k"), {"k": META_KEY}).scalar()
        if stored is not None and int(stored) == k:
            return False
        if stored is None:
            conn.execute(text("INSERT INTO dashboard_meta (key, value) VALUES (:k, :v)"), {"k": META_KEY, "v": k})
        else:
            conn.execute(text("UPDATE dashboard_meta SET value = :v WHERE key = :k"), {"k": META_KEY, "v": k})
        refresh_all(conn, k)
        db.bump(conn)
        return True

    return db.write(tx)


__all__ = ["META_KEY", "UNVERIFIED", "evidence", "refresh", "refresh_all", "use_verified_by", "verified_by"]
