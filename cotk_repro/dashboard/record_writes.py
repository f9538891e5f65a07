"""Writing validated record uploads, many per transaction (the group commit of :mod:`.batching`).

A batch costs a fixed handful of statements, however many uploads it holds: one lookup of the ids
already stored, one multi-row insert of the new records (ids returned), one of their results, one
upsert per leaderboard group touched (counts summed, in one order so concurrent writers never
deadlock). Only the rare cases run per upload: an unsigned record taken over by its signer (its results
move to the signed tier, unless its tree was dirty or the result's system is unpinned: :mod:`.standing`), and
mirrors (another user uploading a record signed by its owner).

Names are identifiers (:mod:`.names`): a new record whose task, dataset, project or metric name shares a
key with another name of its kind the dashboard holds is not written; its result is the
:class:`.names.NameError_` saying so. The check runs here, inside the writers' transaction (one writer at
a time: on PostgreSQL under the batch lock, on SQLite under the write lock), so two look-alikes uploaded
at once cannot both pass; the names a process has seen are remembered (a name once stored stays), so a
batch of known names costs no query, a batch with new ones one lookup and one insert.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from sqlalchemy import bindparam, insert, select, tuple_, update

from ..core.ranking import tier
from .auth import now_iso
from .models import BoardGroup, Mirror, Name, Record, Result
from .names import NameError_, check_against, digests
from .standing import refresh as refresh_standing


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
    #: the record's names, ``(kind, name, what, register)``, checked against the names the dashboard holds
    names: tuple[tuple[str, str, str, bool], ...] = ()
    #: run from a work tree with uncommitted changes (the record's ``code.dirty``)
    dirty: bool = False
    #: the metrics whose results were computed on an unpinned system's outputs (tier 2 whatever the signature)
    unpinned: tuple[str, ...] = ()

    def tier(self, metric: str) -> int:
        """The tier of the record's result ``metric`` (:func:`cotk_repro.core.ranking.tier`)."""
        return tier(signed=self.fingerprint is not None, dirty=self.dirty, pinned=metric not in self.unpinned)

    @property
    def mirror(self) -> bool:
        return self.owner_id != self.uploader_id


_FIND = select(Record.id, Record.record_id, Record.signature, Record.dirty).where(
    Record.record_id.in_(bindparam("rids", expanding=True))
)
_INSERT_RECORDS = insert(Record).returning(Record.id, Record.record_id, sort_by_parameter_order=True)
_INSERT_RESULTS = insert(Result)


@cache
def _count_stmt(dialect: str):
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        # the same upsert in SQLite's dialect: its Insert is another class with the same on_conflict_do_update
        from sqlalchemy.dialects.sqlite import insert as upsert  # type: ignore[assignment]
    stmt = upsert(BoardGroup).values(
        task=bindparam("task"),
        dataset=bindparam("dataset"),
        metric=bindparam("metric"),
        hash=bindparam("hash"),
        n=bindparam("n"),
    )
    return stmt.on_conflict_do_update(
        index_elements=["task", "dataset", "metric", "hash"], set_={"n": BoardGroup.n + stmt.excluded.n}
    )


#: per database engine: (kind, key digest) -> the name stored under it (names are never removed)
_KNOWN: weakref.WeakKeyDictionary[object, dict[tuple[str, str], str]] = weakref.WeakKeyDictionary()
_KNOWN_LOCK = threading.Lock()
_KNOWN_MAX = 200_000


def _check_names(conn, new: dict[str, PendingRecord]) -> dict[str, NameError_]:
    """Check the names of the records ``new`` against the stored ones (and each other, in order); register
    the first spelling of each new name. Returns the refused records' errors by record id."""
    with _KNOWN_LOCK:
        known = _KNOWN.setdefault(conn.engine, {})
    wanted = {(kind, h) for item in new.values() for kind, name, _w, _r in item.names for h in digests(name)}
    missing = [k for k in wanted if k not in known]
    stored: dict[tuple[str, str], str] = {}
    if missing:
        for i in range(0, len(missing), 500):
            chunk = missing[i : i + 500]
            stored.update(
                ((k, h), n)
                for k, h, n in conn.execute(
                    select(Name.kind, Name.key, Name.name).where(tuple_(Name.kind, Name.key).in_(chunk))
                )
            )
    held = {**stored}
    refused: dict[str, NameError_] = {}
    rows: list[dict[str, str]] = []
    for rid, item in new.items():
        added: dict[tuple[str, str], str] = {}
        try:
            for kind, name, what, register in item.names:
                for h in digests(name):
                    check_against(name, what, known.get((kind, h)) or held.get((kind, h)) or added.get((kind, h)))
                    if register and (kind, h) not in known and (kind, h) not in held:
                        added[(kind, h)] = name
        except NameError_ as exc:
            refused[rid] = exc
            continue
        held.update(added)
        rows += [{"kind": k, "key": h, "name": n} for (k, h), n in added.items()]
    if rows:
        conn.execute(insert(Name), rows)
    with _KNOWN_LOCK:  # remembered once committed would be exact; a rolled-back batch is retried item by item
        if len(known) + len(held) > _KNOWN_MAX:
            known.clear()
        known.update(stored)
    return refused


def write_records(conn, items: Sequence[PendingRecord]) -> list[bool | NameError_]:
    """Store the uploads ``items`` in the open transaction; one ``created`` flag per item (False: already there),
    or the :class:`.names.NameError_` that kept a new record out."""
    found = {
        rid: (pk, sig, dirty)
        for pk, rid, sig, dirty in conn.execute(_FIND, {"rids": sorted({i.record_id for i in items})})
    }
    new: dict[str, PendingRecord] = {}
    for item in items:
        if item.record_id not in found and item.record_id not in new:
            new[item.record_id] = item
    created_flags: list[bool | NameError_] = [False] * len(items)
    refused = _check_names(conn, new) if new else {}
    for rid in refused:
        del new[rid]
    if new:
        at = now_iso()
        rows = conn.execute(
            _INSERT_RECORDS,
            [
                {
                    "record_id": i.record_id,
                    "user_id": i.owner_id,
                    "task": i.task,
                    "dataset": i.dataset,
                    "project_name": i.project_name,
                    "status": i.status,
                    "submitted_at": at,
                    "body": i.body,
                    "signature": i.signature,
                    "key_fingerprint": i.fingerprint,
                    "dirty": i.dirty,
                }
                for i in new.values()
            ],
        ).all()
        pks = {rid: pk for pk, rid in rows}
        results = [
            {
                "record_pk": pks[i.record_id],
                "task": i.task,
                "dataset": i.dataset,
                "metric": m,
                "hash": h,
                "value": v,
                "tier": i.tier(m),
                "pinned": m not in i.unpinned,
            }
            for i in new.values()
            if i.status == "ok"
            for m, v, h in i.results
        ]
        if results:
            conn.execute(_INSERT_RESULTS, results)
            counts = Counter((r["task"], r["dataset"], r["metric"], r["hash"] or "") for r in results)
            stmt = _count_stmt(conn.dialect.name)
            for (task, dataset, metric, h), n in sorted(counts.items()):
                conn.execute(stmt, {"task": task, "dataset": dataset, "metric": metric, "hash": h, "n": n})
        for rid, pk in pks.items():
            found[rid] = (pk, new[rid].signature, new[rid].dirty)
    for n, item in enumerate(items):
        if item.record_id in refused:
            created_flags[n] = refused[item.record_id]
            continue
        pk, stored_sig, stored_dirty = found[item.record_id]
        if new.get(item.record_id) is item:
            created_flags[n] = True
        elif stored_sig is None and item.signature is not None:  # stored unsigned before: the signer owns it now
            conn.execute(
                update(Record)
                .where(Record.id == pk)
                .values(user_id=item.owner_id, signature=item.signature, key_fingerprint=item.fingerprint)
            )
            # its tiers again (an unpinned result stays in tier 2: a signature vouches for who ran it, not for
            # weights), and its standing: the new owner's own reproductions no longer count
            refresh_standing(conn, [pk])
            found[item.record_id] = (pk, item.signature, stored_dirty)
        if (
            item.mirror
            and conn.execute(
                select(Mirror.id).where(Mirror.record_pk == pk, Mirror.user_id == item.uploader_id)
            ).first()
            is None
        ):
            conn.execute(insert(Mirror).values(record_pk=pk, user_id=item.uploader_id, submitted_at=now_iso()))
            refresh_standing(conn, [pk])  # a mirror's reproductions of the record no longer count
    return created_flags
