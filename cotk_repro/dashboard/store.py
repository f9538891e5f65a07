"""Storing and reading records and reproductions (the work behind the API and pages).

Uploads are validated through the models of :mod:`cotk_repro.records.model` (the
record's shape, every metric a finite number with a 64-hex hash or none, the id
recomputed from the content; the reproduction verdict's shape) and the metric's
declared range (:mod:`.verdicts`); names are identifiers (:mod:`.names`: NFKC, no control or format
characters, checked against the names the dashboard holds when written), and values of metrics no
loaded metric declares are kept in the record but never ranked. Records are immutable: the same record twice is one row (a
unique constraint; a concurrent duplicate's ``IntegrityError`` is the "already there" answer).
Validated uploads are written many per transaction (:mod:`.record_writes`, :mod:`.batching`).

Signed uploads are ``{"record": ..., "signature": ...}`` / ``{"reproduction": ..., "signature": ...}``
(SSHSIG over the canonical bytes, see :mod:`cotk_repro.core.signing`); a bare record or verdict is
unsigned, accepted only when the dashboard allows unsigned uploads. The owner of a record is the
user whose key signed it; another user uploading it stores a *mirror*. A reproduction's verdict is
recomputed here (:func:`.verdicts.server_verdict`); a user's newer reproduction of a record
supersedes their older one, and the owner's own reruns are kept apart (``by_author``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import distinct, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..core.ranking import VERIFIED_STANDING
from ..core.signing import NS_RECORD, NS_REPRODUCTION, record_bytes, reproduction_bytes
from ..errors import CotkError
from ..records import ID_PREFIX, RecordView, validate_record
from .auth import Principal, now_iso
from .db import Database
from .identity import Forbidden, Signer, check_uploader, signer_of
from .models import NAME_MAX, Mirror, Record, Reproduction, Result, User
from .names import NameError_, check_form
from .record_writes import PendingRecord, write_records
from .standing import refresh as refresh_standing
from .verdicts import VerdictError, _facts, check_values, server_verdict

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class Invalid(CotkError):
    """An upload that does not pass validation (HTTP 422)."""


class NotFound(CotkError):
    """No such record (HTTP 404)."""


class Unsigned(CotkError):
    """An unsigned upload to a dashboard that requires signatures (HTTP 403)."""


def unwrap(body: Any, kind: str) -> tuple[Any, str | None]:
    """``(payload, signature)`` of an upload: ``{kind: payload, "signature": text}`` or a bare (unsigned) payload."""
    if isinstance(body, dict) and kind in body and "schema" not in body:
        extra = set(body) - {kind, "signature"}
        if extra:
            raise Invalid(f"a signed upload holds only {kind!r} and 'signature', not {', '.join(sorted(extra))[:80]}")
        signature = body.get("signature")
        if signature is not None and not isinstance(signature, str):
            raise Invalid("the signature must be the armored text of an SSH signature")
        return body[kind], signature or None
    return body, None


def _signer(
    db: Database, data: Callable[[], bytes], signature: str | None, namespace: str, allow_unsigned: bool, what: str
) -> Signer | None:
    if signature is None:
        if not allow_unsigned:
            raise Unsigned(
                f"this dashboard accepts only signed {what}s: sign it with your SSH key (cotk-repro "
                "publishes and submits signed when `cotk-repro keys` shows a key) and register the key "
                "with `cotk-repro keys add`"
            )
        return None
    return signer_of(db, data(), signature, namespace)


def normalize_id(ref: str) -> str | None:
    """``sha256:<hex>`` from a full id or its bare hex (any case); None when it is neither."""
    ref = (ref or "").strip().lower()
    hexpart = ref[len(ID_PREFIX) :] if ref.startswith(ID_PREFIX) else ref
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
    try:
        return check_form(value, f"record's {what}")
    except NameError_ as exc:
        raise Invalid(exc.message) from None


def known_metric(name: str) -> bool:
    """Whether a metric this dashboard has loaded (built in or from a plugin) reports the result key ``name``."""
    return _facts(name) is not None


def record_names(cols: dict[str, Any]) -> tuple[tuple[str, str, str, bool], ...]:
    """The names a record brings, ``(kind, name, what, register)``: its task, dataset, project and metric
    names, checked against the names the dashboard holds when it is written (:mod:`.record_writes`);
    metrics no loaded plugin declares are checked, never registered."""
    out = [
        ("task", cols["task"], "record's project task", True),
        ("dataset", cols["dataset"], "record's project dataset", True),
        ("project", cols["project_name"], "record's project name", True),
    ]
    out += [("metric", m, "record's metric name", True) for m in cols["results"]]
    out += [("metric", m, "record's metric name", False) for m in cols["unranked"]]
    return tuple(out)


def validate_upload(record: Any) -> dict[str, Any]:
    """Check an uploaded record; returns the columns to store. Raises :class:`Invalid`."""
    from ..records.model import undefined_key

    try:
        validate_record(record, where="the record")  # its shape (records.model.Record) and its id
        extra = undefined_key(record)
        if extra is not None:  # the signature covers it, but nothing here would show or rank it: not stored
            raise Invalid(f"the record has a key the record schema does not define: {extra[:80]!r}")
        view = RecordView.of(record)  # validated: every result is an object with a finite value
        results = view.results
        for name in results:
            _name(name, "metric name")
        # values of metrics no loaded metric declares are not taken: kept in the (signed) record, never ranked
        unranked = sorted(k for k in results if not known_metric(k))
        columns = {
            k: (float(r.value), r.hash.lower() if r.hash else None)
            for k, r in results.items()
            if k not in unranked and r.value is not None
        }
        check_values(columns, "the record")
        project = view.project
        return {
            "record_id": view.id,
            "task": _name(project.task, "project task"),
            "dataset": _name(project.dataset, "project dataset"),
            "project_name": _name(project.name, "project name"),
            "status": view.status,
            "dirty": view.code.dirty is True,
            "results": columns,
            "unranked": unranked,
            # results of a system not pinned to its weights: tier 2, derived from the system the record
            # describes (RecordView.pinned: a claim to be pinned raises nothing, an openai system is unpinned)
            "unpinned": sorted(k for k in columns if not view.pinned(k)),
        }
    except Invalid:
        raise
    except CotkError as exc:  # RecordError, VerdictError (a value outside its metric's range)
        raise Invalid(exc.message) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise Invalid(f"the record cannot be read: {type(exc).__name__}") from None


def dumps(obj: Any) -> str:
    """Storage form: JSON text, ASCII only (so any database takes it), keys sorted."""
    return json.dumps(obj, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False)


def store_record(
    db: Database, body: Any, principal: Principal, *, allow_unsigned: bool = False
) -> tuple[bool, dict[str, Any]]:
    """Store an uploaded record; ``(created, info)`` with ``info = {"id", "owner", "signed", "mirror"}``.

    ``created`` is False when it was already there (a signed upload of a record stored unsigned makes the
    signer its owner). Raises :class:`Invalid`, :class:`Unsigned`, :class:`BadSignature` or :class:`Forbidden`.
    """
    record, signature = unwrap(body, "record")
    cols = validate_upload(record)
    rid = cols["record_id"]
    signer = _signer(db, lambda: record_bytes(record), signature, NS_RECORD, allow_unsigned, "record")
    owner_id = signer.user_id if signer else principal.user_id
    owner_name = signer.name if signer else principal.name
    mirror = owner_id != principal.user_id
    fp = signer.fingerprint if signer else None
    pending = PendingRecord(
        record_id=rid,
        task=cols["task"],
        dataset=cols["dataset"],
        project_name=cols["project_name"],
        status=cols["status"],
        body=dumps(record),
        owner_id=owner_id,
        uploader_id=principal.user_id,
        results=tuple((name, value, h) for name, (value, h) in cols["results"].items()),
        signature=signature,
        fingerprint=fp,
        names=record_names(cols),
        dirty=cols["dirty"],
        unpinned=tuple(cols["unpinned"]),
    )
    info = {
        "id": rid,
        "owner": owner_name,
        "signed": signer is not None,
        "mirror": mirror,
        "key": fp,
        "unranked": cols["unranked"],
    }
    try:
        if db.reproduce_queue:  # the record and its reproduction job in one transaction (see .queue)
            from .queue import write_records_and_enqueue as writer
        else:
            writer = write_records
        created = db.group_commit(writer).submit(pending)
        if isinstance(created, NameError_):  # a name another spelling of one the dashboard holds: not written
            raise Invalid(created.message)
        return created, info
    except IntegrityError:
        # a concurrent upload of the same record (through another worker process) won the race: no-op
        found = db.read(lambda c: c.execute(select(Record.id).where(Record.record_id == rid)).first())
        if found is not None:
            return False, info
        raise


def validate_reproduction(verdict: Any, record_id: str) -> str:
    """Check a reproduction verdict's shape (:class:`cotk_repro.records.model.Reproduction`); its claimed verdict."""
    from ..records.model import check_reproduction

    try:
        return check_reproduction(verdict, record_id)["verdict"]
    except CotkError as exc:
        raise Invalid(exc.message) from None
    except RecursionError:
        raise Invalid("the reproduction is nested too deeply") from None


def add_reproduction(
    db: Database,
    record_ref: str,
    principal: Principal,
    body: Any,
    *,
    allow_unsigned: bool = False,
    in_tx: Callable[[Any, int, str], None] | None = None,
    pool: bool = False,
) -> dict[str, Any]:
    """Attach a reproduction; returns ``{"id", "verdict", "claimed", "by_author", "standing"}`` (the verdict is
    the server's; ``standing`` the record's after it, :mod:`.standing`).

    ``in_tx(conn, reproduction_pk, verdict)`` runs in the same transaction after the insert (the reproduction
    queue records its pool reproduction there, a lease its verdict; raising in it stores nothing). ``pool``: the
    dashboard's own worker pool made it (its "reproduced" verifies the record alone)."""
    rid = normalize_id(record_ref)
    if rid is None:
        raise NotFound(f"{record_ref!r} is not a record id")
    verdict, signature = unwrap(body, "reproduction")
    claimed = validate_reproduction(verdict, rid)
    signer = _signer(
        db, lambda: reproduction_bytes(verdict), signature, NS_REPRODUCTION, allow_unsigned, "reproduction"
    )
    if signer is not None:
        check_uploader(signer, principal, "reproduction")
    found = db.read(
        lambda c: c.execute(select(Record.id, Record.user_id, Record.body).where(Record.record_id == rid)).first()
    )
    if found is None:
        raise NotFound(f"there is no record {rid} on this dashboard")
    pk, owner_id, record_body = found
    try:
        computed, rows = server_verdict(json.loads(record_body), verdict)
    except VerdictError as exc:
        raise Invalid(exc.message) from None
    by_author = owner_id == principal.user_id
    stored = dumps({**verdict, "verdict": computed, "metrics": rows, "claimed_verdict": claimed})

    def tx(conn):
        conn.execute(
            update(Reproduction)
            .where(
                Reproduction.record_pk == pk,
                Reproduction.user_id == principal.user_id,
                Reproduction.superseded.is_(False),
            )
            .values(superseded=True)
        )
        new = conn.execute(
            insert(Reproduction).values(
                record_pk=pk,
                user_id=principal.user_id,
                submitted_at=now_iso(),
                verdict=computed,
                body=stored,
                client_verdict=claimed,
                signature=signature,
                key_fingerprint=signer.fingerprint if signer else None,
                by_author=by_author,
                superseded=False,
                pool=pool,
            )
        )
        n = (
            conn.execute(
                select(func.count(distinct(Reproduction.user_id))).where(
                    Reproduction.record_pk == pk,
                    Reproduction.verdict == "reproduced",
                    Reproduction.by_author.is_(False),
                    Reproduction.superseded.is_(False),
                )
            ).scalar()
            or 0
        )
        conn.execute(update(Record).where(Record.id == pk).values(reproduced_by=n))
        if in_tx is not None:
            in_tx(conn, new.inserted_primary_key[0], computed)
        state = refresh_standing(conn, [pk])[pk]  # the record's standing and tiers, with this verdict
        if db.reproduce_queue:  # volunteers' jobs follow it: cancelled once settled, more while disputed
            from .leases import follow_standing
            from .standing import evidence, verified_by

            follow_standing(conn, rid, state, verified_by(conn), evidence(conn, [pk])[pk][1])
        db.bump(conn)
        return new.inserted_primary_key[0], state

    new_id, state = db.write(tx)
    return {"id": new_id, "verdict": computed, "claimed": claimed, "by_author": by_author, "standing": state}


def add_publication(
    db: Database, record_ref: str, principal: Principal, body: Any, *, allow_unsigned: bool = False
) -> dict[str, Any]:
    """Store the publication of a stored record (the git remote taken when it was published, signed by the
    record's signer: :mod:`cotk_repro.remote.publication`); ``{"id", "remote_url", "created"}``.

    Checked before it is stored: it names this record and its commit, its URL is one a reproducer may fetch,
    and it is signed by the key that signed the record (a registered one, the uploader's); an unsigned one
    only for an unsigned record on a dashboard that accepts unsigned uploads, from the record's owner, and
    never in place of one stored: only the record's signer replaces a publication."""
    from ..remote.publication import NS_PUBLICATION, PublicationError, publication_bytes, verify

    rid = normalize_id(record_ref)
    if rid is None:
        raise NotFound(f"{record_ref!r} is not a record id")
    found = db.read(
        lambda c: c.execute(
            select(Record.id, Record.body, Record.signature, Record.publication, Record.user_id).where(
                Record.record_id == rid
            )
        ).first()
    )
    if found is None:
        raise NotFound(f"there is no record {rid} on this dashboard")
    pk, record_body, record_sig, stored, owner_id = found
    record = json.loads(record_body)
    try:
        url, _fp = verify(record, body, record_sig, allow_unsigned=allow_unsigned)
    except PublicationError as exc:
        if record_sig is not None and isinstance(body, dict) and body.get("signature") is None:
            raise Unsigned(exc.message) from None
        raise Invalid(exc.message) from None
    if body["signature"] is not None:  # verified against the record's key above; that key must be the uploader's
        signer = signer_of(db, publication_bytes(body["publication"]), body["signature"], NS_PUBLICATION)
        check_uploader(signer, principal, "publication")
    elif not allow_unsigned:
        raise Unsigned("this dashboard accepts only signed publications")
    elif owner_id != principal.user_id:
        raise Forbidden(f"record {rid[:19]} is another user's: only they may attach an unsigned publication to it")
    text_ = dumps(body)
    if stored == text_:
        return {"id": rid, "remote_url": url, "created": False}
    if stored is not None and body["signature"] is None:
        raise Forbidden(f"record {rid[:19]} has a publication already, and an unsigned one never replaces it")

    def tx(conn):
        query = update(Record).where(Record.id == pk)
        if body["signature"] is None:  # only where none is stored yet, also against a concurrent upload
            query = query.where(Record.publication.is_(None))
        if conn.execute(query.values(publication=text_)).rowcount != 1:
            raise Forbidden(f"record {rid[:19]} has a publication already, and an unsigned one never replaces it")
        if db.reproduce_queue:  # a job that failed waiting for this publication runs again, once (see .queue)
            from .queue import requeue_for_publication

            requeue_for_publication(conn, rid)
        db.bump(conn)

    db.write(tx)
    return {"id": rid, "remote_url": url, "created": True}


def get_record(db: Database, record_ref: str) -> dict[str, Any]:
    """``{"record", "user", "submitted_at", "reproductions": [...]}``; raises :class:`NotFound`."""
    rid = normalize_id(record_ref)
    if rid is None:
        raise NotFound(f"{record_ref!r} is not a record id")

    def q(conn):
        row = conn.execute(
            select(
                Record.id,
                Record.body,
                Record.submitted_at,
                User.name,
                Record.signature,
                Record.key_fingerprint,
                Record.publication,
                Record.standing,
            )
            .join(User, User.id == Record.user_id)
            .where(Record.record_id == rid)
        ).first()
        if row is None:
            raise NotFound(f"there is no record {rid} on this dashboard")
        repros = conn.execute(
            select(
                Reproduction.id,
                User.name,
                Reproduction.submitted_at,
                Reproduction.body,
                Reproduction.by_author,
                Reproduction.superseded,
                Reproduction.key_fingerprint,
                Reproduction.pool,
            )
            .join(User, User.id == Reproduction.user_id)
            .where(Reproduction.record_pk == row[0])
            .order_by(Reproduction.id)
        ).all()
        mirrors = (
            conn.execute(
                select(User.name)
                .join(Mirror, Mirror.user_id == User.id)
                .where(Mirror.record_pk == row[0])
                .order_by(Mirror.id)
            )
            .scalars()
            .all()
        )
        extra = {}
        if db.reproduce_queue:  # the record's reproduction job and the pool's verdict (see .queue)
            from .queue import record_state

            extra["queue"] = record_state(conn, rid)
        return {
            **extra,
            "record": json.loads(row[1]),
            "user": row[3],
            "submitted_at": row[2],
            "signed": row[4] is not None,
            "signature": row[4],
            "key": row[5],
            "publication": json.loads(row[6]) if row[6] else None,
            "standing": row[7],
            "verified": row[7] == VERIFIED_STANDING,
            "mirrored_by": list(mirrors),
            "reproductions": [
                {
                    "id": i,
                    "user": u,
                    "submitted_at": s,
                    "verdict": json.loads(b),
                    "by_author": bool(a),
                    "superseded": bool(sup),
                    "signed": k is not None,
                    "key": k,
                    "pool": bool(pool),
                }
                for i, u, s, b, a, sup, k, pool in repros
            ],
        }

    return db.read(q)


def reproduced_by(reproductions: list[dict[str, Any]]) -> int:
    """Distinct users other than the author whose latest verdict (the server's) is ``reproduced``."""
    return len(
        {
            r["user"]
            for r in reproductions
            if r["verdict"].get("verdict") == "reproduced" and not r.get("by_author") and not r.get("superseded")
        }
    )


def list_records(
    db: Database,
    *,
    task: str | None = None,
    dataset: str | None = None,
    user: str | None = None,
    page: int = 1,
    per_page: int = 50,
) -> dict[str, Any]:
    """A page of record summaries, newest first, filtered by task / dataset / user; with its page counts."""

    def q(conn):
        cond = []
        if task is not None:
            cond.append(Record.task == task)
        if dataset is not None:
            cond.append(Record.dataset == dataset)
        if user is not None:
            cond.append(User.name == user)
        base = (
            select(
                Record.id,
                Record.record_id,
                Record.project_name,
                Record.task,
                Record.dataset,
                Record.status,
                Record.submitted_at,
                User.name,
            )
            .join(User, User.id == Record.user_id)
            .where(*cond)
        )
        total = (
            conn.execute(
                select(func.count()).select_from(Record).join(User, User.id == Record.user_id).where(*cond)
            ).scalar()
            or 0
        )
        rows = conn.execute(base.order_by(Record.id.desc()).limit(per_page).offset((page - 1) * per_page)).all()
        pks = [r[0] for r in rows]
        results: dict[int, dict[str, Any]] = {pk: {} for pk in pks}
        if pks:
            for pk, metric, value, h in conn.execute(
                select(Result.record_pk, Result.metric, Result.value, Result.hash).where(Result.record_pk.in_(pks))
            ).all():
                results[pk][metric] = {"value": value, "hash": h}
        items = [
            {
                "id": rid,
                "project": name,
                "task": t,
                "dataset": d,
                "status": s,
                "submitted_at": at,
                "user": u,
                "results": results[pk],
            }
            for pk, rid, name, t, d, s, at, u in rows
        ]
        return {
            "records": items,
            "page": page,
            "per_page": per_page,
            "total": total,
            "pages": max(1, math.ceil(total / per_page)),
        }

    return db.read(q)
