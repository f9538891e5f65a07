"""Storing and reading records and reproductions (the work behind the API and pages).

Uploads are validated with :mod:`cotk_repro.records` (schema, required keys, the
id recomputed from the content) and :func:`cotk_repro.core.results.normalize_results`
(every metric a finite number with a 64-hex hash or none). Records are immutable:
the same record twice is one row (a unique constraint; a concurrent duplicate's
``IntegrityError`` is the "already there" answer).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError

from ..core.canonical import canonical_json
from ..errors import CotkError
from ..records import ID_PREFIX, validate_record
from ..core.results import RESULT_SCHEMA, normalize_results
from .auth import Principal, now_iso
from .db import Database
from .models import NAME_MAX, BoardGroup, Record, Reproduction, Result, User

REPRODUCTION_SCHEMA = "cotk-repro/reproduction"
VERDICTS = ("reproduced", "not reproduced", "could not run")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class Invalid(CotkError):
    """An upload that does not pass validation (HTTP 422)."""


class NotFound(CotkError):
    """No such record (HTTP 404)."""


def normalize_id(ref: str) -> str | None:
    """``sha256:<hex>`` from a full id or its bare hex (any case); None when it is neither."""
    ref = (ref or "").strip().lower()
    hexpart = ref[len(ID_PREFIX):] if ref.startswith(ID_PREFIX) else ref
    return ID_PREFIX + hexpart if _HEX64.match(hexpart) else None


def _name(value: Any, what: str, *, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise Invalid(f"the record's {what} must be a string")
    if len(value) > NAME_MAX:
        raise Invalid(f"the record's {what} is longer than {NAME_MAX} characters")
    if "\x00" in value:
        raise Invalid(f"the record's {what} contains a NUL character")
    return value


def validate_upload(record: Any) -> dict[str, Any]:
    """Check an uploaded record; returns the columns to store. Raises :class:`Invalid`."""
    try:
        validate_record(record, where="the record")
        for key in ("code", "environment", "project", "command"):
            if not isinstance(record.get(key), dict):
                raise Invalid(f"the record's {key!r} must be an object")
        if not isinstance(record.get("status"), str) or len(record["status"]) > 32:
            raise Invalid("the record's 'status' must be a short string")
        results = record["results"]
        if results:
            normalized = normalize_results({"schema": RESULT_SCHEMA, "results": results}, where="the record")["results"]
        else:
            normalized = {}
        for name in normalized:
            _name(name, f"metric name {name[:40]!r}")
        project = record["project"]
        return {
            "record_id": record["id"],
            "task": _name(project.get("task"), "project task"),
            "dataset": _name(project.get("dataset"), "project dataset"),
            "project_name": _name(project.get("name"), "project name"),
            "status": record["status"],
            "results": {k: (float(v["value"]), v["hash"]) for k, v in normalized.items()},
        }
    except Invalid:
        raise
    except CotkError as exc:
        raise Invalid(exc.message) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise Invalid(f"the record cannot be read: {type(exc).__name__}") from None


def dumps(obj: Any) -> str:
    """Storage form: JSON text, ASCII only (so any database takes it), keys sorted."""
    return json.dumps(obj, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False)


def store_record(db: Database, record: dict[str, Any], principal: Principal) -> bool:
    """Store a validated record; True when it was created, False when it was already there."""
    cols = validate_upload(record)
    rid = cols["record_id"]
    body = dumps(record)

    def tx(conn):
        if conn.execute(select(Record.id).where(Record.record_id == rid)).first() is not None:
            return False
        pk = conn.execute(insert(Record).values(
            record_id=rid, user_id=principal.user_id, task=cols["task"], dataset=cols["dataset"],
            project_name=cols["project_name"], status=cols["status"], submitted_at=now_iso(), body=body,
        )).inserted_primary_key[0]
        if cols["status"] == "ok" and cols["results"]:
            conn.execute(insert(Result), [
                {"record_pk": pk, "task": cols["task"], "dataset": cols["dataset"], "metric": name,
                 "hash": h, "value": value}
                for name, (value, h) in cols["results"].items()])
            # sorted, so that concurrent uploads lock the counters in one order (no deadlocks)
            for name, (_, h) in sorted(cols["results"].items(), key=lambda kv: (kv[0], kv[1][1] or "")):
                count_result(conn, db.dialect, cols["task"], cols["dataset"], name, h)
        db.bump(conn)
        return True

    try:
        return db.write(tx)
    except IntegrityError:
        # a concurrent upload of the same record won the race: the record is there, no-op
        if db.read(lambda c: c.execute(select(Record.id).where(Record.record_id == rid)).first()) is not None:
            return False
        raise


def count_result(conn, dialect: str, task: str, dataset: str, metric: str, h: str | None) -> None:
    """One more result in its leaderboard group (an upsert on ``board_groups``)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert
    stmt = upsert(BoardGroup).values(task=task, dataset=dataset, metric=metric, hash=h or "", n=1)
    conn.execute(stmt.on_conflict_do_update(index_elements=["task", "dataset", "metric", "hash"],
                                            set_={"n": BoardGroup.n + 1}))


def validate_reproduction(verdict: Any, record_id: str) -> str:
    if not isinstance(verdict, dict):
        raise Invalid("the reproduction must be a JSON object (the `cotk-repro reproduce --json` output)")
    if verdict.get("schema") != REPRODUCTION_SCHEMA:
        raise Invalid(f"the reproduction's schema must be {REPRODUCTION_SCHEMA!r}")
    v = verdict.get("verdict")
    if v not in VERDICTS:
        raise Invalid(f"the reproduction's verdict must be one of {', '.join(VERDICTS)}")
    rid = verdict.get("record_id")
    if rid is not None and (not isinstance(rid, str) or normalize_id(rid) != record_id):
        raise Invalid("the reproduction's record_id is not the record it is attached to")
    for key in ("metrics", "environment_differences"):
        if verdict.get(key) is not None and not isinstance(verdict.get(key), list):
            raise Invalid(f"the reproduction's {key!r} must be a list")
    try:
        canonical_json(verdict)  # finite numbers, string keys, encodable text
    except (TypeError, ValueError, RecursionError) as exc:
        raise Invalid(f"the reproduction cannot be stored: {exc}") from None
    return v


def add_reproduction(db: Database, record_ref: str, principal: Principal, verdict: Any) -> int:
    rid = normalize_id(record_ref)
    if rid is None:
        raise NotFound(f"{record_ref!r} is not a record id")
    v = validate_reproduction(verdict, rid)
    body = dumps(verdict)

    def tx(conn):
        pk = conn.execute(select(Record.id).where(Record.record_id == rid)).scalar()
        if pk is None:
            raise NotFound(f"there is no record {rid} on this dashboard")
        new = conn.execute(insert(Reproduction).values(record_pk=pk, user_id=principal.user_id,
                                                       submitted_at=now_iso(), verdict=v, body=body))
        db.bump(conn)
        return new.inserted_primary_key[0]

    return db.write(tx)


def get_record(db: Database, record_ref: str) -> dict[str, Any]:
    """``{"record", "user", "submitted_at", "reproductions": [...]}``; raises :class:`NotFound`."""
    rid = normalize_id(record_ref)
    if rid is None:
        raise NotFound(f"{record_ref!r} is not a record id")

    def q(conn):
        row = conn.execute(select(Record.id, Record.body, Record.submitted_at, User.name)
                           .join(User, User.id == Record.user_id).where(Record.record_id == rid)).first()
        if row is None:
            raise NotFound(f"there is no record {rid} on this dashboard")
        repros = conn.execute(select(Reproduction.id, User.name, Reproduction.submitted_at, Reproduction.body)
                              .join(User, User.id == Reproduction.user_id)
                              .where(Reproduction.record_pk == row[0]).order_by(Reproduction.id)).all()
        return {
            "record": json.loads(row[1]),
            "user": row[3],
            "submitted_at": row[2],
            "reproductions": [{"id": i, "user": u, "submitted_at": s, "verdict": json.loads(b)}
                              for i, u, s, b in repros],
        }

    return db.read(q)


def reproduced_by(reproductions: list[dict[str, Any]]) -> int:
    return len({r["user"] for r in reproductions if r["verdict"].get("verdict") == "reproduced"})


def list_records(db: Database, *, task: str | None = None, dataset: str | None = None, user: str | None = None,
                 page: int = 1, per_page: int = 50) -> dict[str, Any]:
    def q(conn):
        cond = []
        if task is not None:
            cond.append(Record.task == task)
        if dataset is not None:
            cond.append(Record.dataset == dataset)
        if user is not None:
            cond.append(User.name == user)
        base = select(Record.id, Record.record_id, Record.project_name, Record.task, Record.dataset, Record.status,
                      Record.submitted_at, User.name).join(User, User.id == Record.user_id).where(*cond)
        total = conn.execute(select(func.count()).select_from(Record).join(User, User.id == Record.user_id)
                             .where(*cond)).scalar() or 0
        rows = conn.execute(base.order_by(Record.id.desc()).limit(per_page).offset((page - 1) * per_page)).all()
        pks = [r[0] for r in rows]
        results: dict[int, dict[str, Any]] = {pk: {} for pk in pks}
        if pks:
            for pk, metric, value, h in conn.execute(select(Result.record_pk, Result.metric, Result.value, Result.hash)
                                                     .where(Result.record_pk.in_(pks))).all():
                results[pk][metric] = {"value": value, "hash": h}
        items = [{"id": rid, "project": name, "task": t, "dataset": d, "status": s, "submitted_at": at, "user": u,
                  "results": results[pk]} for pk, rid, name, t, d, s, at, u in rows]
        return {"records": items, "page": page, "per_page": per_page, "total": total,
                "pages": max(1, math.ceil(total / per_page))}

    return db.read(q)
