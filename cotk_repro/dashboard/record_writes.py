"""Writing validated record uploads, many per transaction (the group commit of :mod:`.batching`).

A batch costs a fixed handful of statements, however many uploads it holds: one lookup of the ids
already stored, one multi-row insert of the new records (ids returned), one of their results, one
upsert per leaderboard group touched (counts summed, in one order so concurrent writers never
deadlock). Only the rare cases run per upload: an unsigned record taken over by its signer, and
mirrors (another user uploading a record signed by its owner).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from sqlalchemy import bindparam, insert, select, update

from .auth import now_iso
from .models import BoardGroup, Mirror, Record, Result


@dataclass(frozen=True)
class PendingRecord:
    """One validated upload, ready to write: the record's columns, results, owner and signature."""

    record_id: str
    task: str
    dataset: str
    project_name: str
    status: str
    body: str
    results: tuple[tuple[str, float, str | None], ...]  # (metric, value, hash)
    owner_id: int
    uploader_id: int
    signature: str | None
    fingerprint: str | None

    @property
    def mirror(self) -> bool:
        return self.owner_id != self.uploader_id


_FIND = select(Record.id, Record.record_id, Record.signature).where(Record.record_id.in_(bindparam("rids",
                                                                                               expanding=True)))
_INSERT_RECORDS = insert(Record).returning(Record.id, Record.record_id, sort_by_parameter_order=True)
_INSERT_RESULTS = insert(Result)


@lru_cache(maxsize=None)
def _count_stmt(dialect: str):
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert
    stmt = upsert(BoardGroup).values(task=bindparam("task"), dataset=bindparam("dataset"),
                                     metric=bindparam("metric"), hash=bindparam("hash"), n=bindparam("n"))
    return stmt.on_conflict_do_update(index_elements=["task", "dataset", "metric", "hash"],
                                      set_={"n": BoardGroup.n + stmt.excluded.n})


def write_records(conn, items: Sequence[PendingRecord]) -> list[bool]:
    """Store the uploads ``items`` in the open transaction; one ``created`` flag per item (False: already there)."""
    found = {rid: (pk, sig) for pk, rid, sig in conn.execute(_FIND, {"rids": sorted({i.record_id for i in items})})}
    new: dict[str, PendingRecord] = {}
    for item in items:
        if item.record_id not in found and item.record_id not in new:
            new[item.record_id] = item
    created_flags = [False] * len(items)
    if new:
        at = now_iso()
        rows = conn.execute(_INSERT_RECORDS, [
            {"record_id": i.record_id, "user_id": i.owner_id, "task": i.task, "dataset": i.dataset,
             "project_name": i.project_name, "status": i.status, "submitted_at": at, "body": i.body,
             "signature": i.signature, "key_fingerprint": i.fingerprint} for i in new.values()]).all()
        pks = {rid: pk for pk, rid in rows}
        results = [{"record_pk": pks[i.record_id], "task": i.task, "dataset": i.dataset, "metric": m, "hash": h,
                    "value": v} for i in new.values() if i.status == "ok" for m, v, h in i.results]
        if results:
            conn.execute(_INSERT_RESULTS, results)
            counts = Counter((r["task"], r["dataset"], r["metric"], r["hash"] or "") for r in results)
            stmt = _count_stmt(conn.dialect.name)
            for (task, dataset, metric, h), n in sorted(counts.items()):
                conn.execute(stmt, {"task": task, "dataset": dataset, "metric": metric, "hash": h, "n": n})
        for rid, pk in pks.items():
            found[rid] = (pk, new[rid].signature)
    for n, item in enumerate(items):
        pk, stored_sig = found[item.record_id]
        if new.get(item.record_id) is item:
            created_flags[n] = True
        elif stored_sig is None and item.signature is not None:  # stored unsigned before: the signer owns it now
            conn.execute(update(Record).where(Record.id == pk).values(
                user_id=item.owner_id, signature=item.signature, key_fingerprint=item.fingerprint))
            found[item.record_id] = (pk, item.signature)
        if item.mirror and conn.execute(select(Mirror.id).where(Mirror.record_pk == pk,
                                                                Mirror.user_id == item.uploader_id)).first() is None:
            conn.execute(insert(Mirror).values(record_pk=pk, user_id=item.uploader_id, submitted_at=now_iso()))
    return created_flags
