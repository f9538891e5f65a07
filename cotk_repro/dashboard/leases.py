"""Leases: reproduction jobs fetched on a volunteer's behalf, over HTTP (``dashboard worker --url``).

A volunteer never touches the database. The queue stays procrastinate's, in the dashboard's PostgreSQL
(:mod:`.queue`): each record accepted gets, beside the pool's job, K jobs in the volunteers' queue
(:data:`QUEUE`; K is the dashboard's ``--verified-by``). A *lease* is one of those jobs taken on a volunteer's
behalf: ``POST /api/v1/leases`` registers a procrastinate worker for the lease, marks the job ``doing`` for
that worker (as procrastinate's own fetch does), and answers with the record. Heartbeats are procrastinate's
(``procrastinate_update_heartbeat_v1``); a lease silent for ``lease_seconds`` is a stalled job, put back on the
queue by :func:`.queue.retry_stalled` (procrastinate's retry), which the server runs before handing out a
lease. The one thing added to procrastinate's fetch is the choice of job, because the server chooses the
record and a volunteer may not have some:

* never the record's signer (its owner) or one of its mirrors, and never a user who leased it before or sent
  a reproduction of it (``cotk_repro_leases`` holds one row per record and user, unique);
* never a record whose standing is settled (verified or refuted, :mod:`.standing`);
* at most :data:`MAX_LEASES` live leases per volunteer (429 beyond);
* one volunteer's leasing at a time (an advisory lock keyed by the user), so the cap and the "never twice"
  rule hold under concurrent requests.

A verdict (``POST /api/v1/leases/{id}/verdict``) is accepted only from the user holding the lease, while the
lease lives (its job still ``doing`` for the lease's worker, whose heartbeat is fresh), for the lease's
record, signed by a key that user proved (:func:`.store.add_reproduction`'s signer check; unsigned verdicts
are refused whatever ``--allow-unsigned`` says). It is stored with the job's end in one transaction; a
replay, a verdict after expiry and a verdict for another record are refused and store nothing. A verdict that
could not run gives the job back to the queue for another volunteer.

After every verdict on a record (:func:`follow_standing`, from :func:`.store.add_reproduction`): a settled
record's waiting volunteer jobs are cancelled; an unsettled one keeps at least ``max(1, K - agreeing)`` jobs
waiting or running (a disputed record is leased until a majority of at least K+1 verdicts agrees), at most
:data:`MAX_JOBS_PER_RECORD` in all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from ..core import jsonbudget
from ..core.ranking import decided
from ..errors import CotkError
from .auth import Principal

QUEUE = "cotk-repro-volunteer"
TASK = "cotk_repro.volunteer_reproduce"
TABLE = "cotk_repro_leases"
#: the most leases one volunteer holds at once
MAX_LEASES = 4
#: the most volunteer jobs one record gets in all (a record no majority settles stops there)
MAX_JOBS_PER_RECORD = 12
#: how long a lease lives without a heartbeat, unless the server says otherwise (``lease_seconds``)
DEFAULT_LEASE_SECONDS = 60.0
_USER_LOCK = 72682105  # pg_advisory_xact_lock(key, user id), two int4: one volunteer's leasing at a time
#: how many times a volunteer job may go back to the queue (expired, could not run) before it fails
MAX_ATTEMPTS = 5

DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id bigserial PRIMARY KEY,
    job_id bigint NOT NULL,
    worker_id bigint NOT NULL,
    record_id varchar(80) NOT NULL,
    user_id integer NOT NULL,
    leased_at timestamptz NOT NULL DEFAULT now(),
    ended_at timestamptz,
    outcome varchar(32),
    reproduction_pk integer
);
CREATE UNIQUE INDEX IF NOT EXISTS {TABLE}_record_user ON {TABLE} (record_id, user_id);
CREATE INDEX IF NOT EXISTS {TABLE}_user_live ON {TABLE} (user_id) WHERE ended_at IS NULL;
"""

_DEFER = text("""
SELECT unnest(procrastinate_defer_jobs_v1(ARRAY(
    SELECT ROW(:queue, :task, 0, NULL, NULL, jsonb_build_object('record_id', rid),
               NULL::timestamptz)::procrastinate_job_to_defer_v1
      FROM unnest(CAST(:rids AS text[])) AS rid)))
""")

_LIVE = f"""
SELECT count(*) FROM {TABLE} l JOIN procrastinate_jobs j ON j.id = l.job_id
 WHERE l.user_id = :uid AND l.ended_at IS NULL AND j.status = 'doing' AND j.worker_id = l.worker_id
"""  # noqa: S608 - only this module's constant table name is interpolated

_CANDIDATE = f"""
SELECT j.id, r.record_id, r.body, r.status, r.publication, r.signature FROM procrastinate_jobs j
  JOIN records r ON r.record_id = j.args->>'record_id'
 WHERE j.queue_name = :q AND j.status = 'todo' AND (j.scheduled_at IS NULL OR j.scheduled_at <= now())
   AND r.status = 'ok' AND r.user_id <> :uid AND r.standing NOT IN ('verified', 'refuted')
   AND NOT EXISTS (SELECT 1 FROM mirrors m WHERE m.record_pk = r.id AND m.user_id = :uid)
   AND NOT EXISTS (SELECT 1 FROM {TABLE} l WHERE l.record_id = r.record_id AND l.user_id = :uid)
   AND NOT EXISTS (SELECT 1 FROM reproductions rp WHERE rp.record_pk = r.id AND rp.user_id = :uid)
 ORDER BY j.priority DESC, j.id
 LIMIT 1
 FOR UPDATE OF j SKIP LOCKED
"""  # noqa: S608 - only this module's constant table name is interpolated

_HELD = f"""
SELECT l.id, l.user_id, l.record_id, l.job_id, l.worker_id, l.ended_at, l.outcome, j.status::text, j.worker_id,
       w.last_heartbeat > now() - make_interval(secs => :s)
  FROM {TABLE} l JOIN procrastinate_jobs j ON j.id = l.job_id
  LEFT JOIN procrastinate_workers w ON w.id = l.worker_id
 WHERE l.id = :id
"""  # noqa: S608 - only this module's constant table name is interpolated


class LeaseError(CotkError):
    """A lease request or verdict the server refuses; ``status`` is its HTTP status."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Lease:
    """A job taken on a volunteer's behalf: what the volunteer needs to reproduce the record."""

    id: int
    record_id: str
    record: dict[str, Any]
    status: str
    publication: Any
    record_signature: str | None
    lease_seconds: float

    def to_json(self) -> dict[str, Any]:
        """The answer of ``POST /api/v1/leases``."""
        return {
            "lease": self.id,
            "record_id": self.record_id,
            "record": self.record,
            "status": self.status,
            "publication": self.publication,
            "record_signature": self.record_signature,
            "expires_in": self.lease_seconds,
            "heartbeat_every": heartbeat_every(self.lease_seconds),
        }


def heartbeat_every(lease_seconds: float) -> float:
    """How often a volunteer heartbeats a lease that lives ``lease_seconds`` without one."""
    return max(0.2, lease_seconds / 4)


def ensure_schema(conn) -> None:
    """The leases table, where missing (run by :func:`.queue.ensure_schema`)."""
    conn.exec_driver_sql(DDL)


def enqueue(conn, record_ids: list[str], k: int) -> None:
    """``k`` volunteer jobs for each record, in the open transaction (the record's own write)."""
    if record_ids and k > 0:
        conn.execute(_DEFER, {"queue": QUEUE, "task": TASK, "rids": [r for r in record_ids for _ in range(k)]})


class Leases:
    """The server side of leasing, for one dashboard (``lease_seconds``: a lease's life without a heartbeat).

    ``sweep(db, seconds)`` puts the jobs of leases silent that long back on the queue (the app passes
    :func:`.queue.retry_stalled` for the volunteers' queue); ``attach`` stores a verdict
    (:func:`.store.add_reproduction`). Both are given, so that this module depends on neither."""

    def __init__(self, db, lease_seconds: float | None = None, *, sweep: Callable, attach: Callable):
        self.db = db
        self.lease_seconds = float(lease_seconds or DEFAULT_LEASE_SECONDS)
        self._sweep = sweep
        self._attach = attach
        self._swept_at = float("-inf")

    def sweep(self, force: bool = False) -> None:
        """Put the jobs of expired leases back on the queue (at most every quarter of a lease's life)."""
        now = time.monotonic()
        if force or now - self._swept_at >= heartbeat_every(self.lease_seconds):
            self._swept_at = now
            self._sweep(self.db, self.lease_seconds)

    def take(self, principal: Principal) -> Lease | None:
        """Lease a job to ``principal``: the server's choice of record, or None when none may go to them."""
        self.sweep()

        def tx(conn):
            conn.execute(
                text("SELECT pg_advisory_xact_lock(CAST(:k AS integer), CAST(:uid AS integer))"),
                {"k": _USER_LOCK, "uid": principal.user_id},
            )
            proven = conn.execute(
                text("SELECT count(*) FROM ssh_keys WHERE user_id = :uid AND proof IS NOT NULL AND revoked_at IS NULL"),
                {"uid": principal.user_id},
            ).scalar()
            if not proven:
                raise LeaseError(
                    f"{principal.name} has no proven key to sign verdicts with: register one with "
                    "`cotk-repro keys add` before lending your machine",
                    403,
                )
            live = conn.execute(text(_LIVE), {"uid": principal.user_id}).scalar() or 0
            if live >= MAX_LEASES:
                raise LeaseError(
                    f"{principal.name} holds {live} leases already, the most one volunteer may: send their verdicts first",
                    429,
                )
            row = conn.execute(text(_CANDIDATE), {"q": QUEUE, "uid": principal.user_id}).first()
            if row is None:
                return None
            job_id, rid, body, status, publication, signature = row
            worker = conn.execute(text("SELECT worker_id FROM procrastinate_register_worker_v1()")).scalar()
            conn.execute(
                text("UPDATE procrastinate_jobs SET status = 'doing', worker_id = :w WHERE id = :j"),
                {"w": worker, "j": job_id},
            )
            lease_id = conn.execute(
                text(
                    f"INSERT INTO {TABLE} (job_id, worker_id, record_id, user_id) "  # noqa: S608 - a constant table name
                    "VALUES (:j, :w, :rid, :uid) RETURNING id"
                ),
                {"j": job_id, "w": worker, "rid": rid, "uid": principal.user_id},
            ).scalar()
            return lease_id, rid, body, status, publication, signature

        got = self.db.write(tx)
        if got is None:
            return None
        lease_id, rid, body, status, publication, signature = got
        return Lease(
            id=int(lease_id),
            record_id=rid,
            record=jsonbudget.loads(body, what=f"the record {rid}"),
            status=status,
            publication=jsonbudget.loads(publication, what="the record's publication") if publication else None,
            record_signature=signature,
            lease_seconds=self.lease_seconds,
        )

    def _check(self, conn, lease_id: int, principal: Principal, *, lock: bool = False) -> tuple:
        row = conn.execute(
            text(_HELD + (" FOR UPDATE OF l, j" if lock else "")), {"id": lease_id, "s": self.lease_seconds}
        ).first()
        if row is None:
            raise LeaseError(f"there is no lease {lease_id} on this dashboard", 404)
        _id, uid, rid, job, worker, ended, outcome, job_status, job_worker, fresh = row
        if uid != principal.user_id:
            raise LeaseError(f"lease {lease_id} is not {principal.name}'s: only its holder may send its verdict", 403)
        if ended is not None:
            raise LeaseError(f"lease {lease_id} has ended ({outcome}): a verdict is taken once per lease", 409)
        if job_status != "doing" or job_worker != worker or not fresh:
            raise LeaseError(
                f"lease {lease_id} expired (no heartbeat for {self.lease_seconds:g} s): its job went back to the queue",
                409,
            )
        return rid, job, worker

    def heartbeat(self, lease_id: int, principal: Principal) -> dict[str, Any]:
        """Keep a lease alive; ``{"lease", "expires_in"}``."""

        def tx(conn):
            _rid, _job, worker = self._check(conn, lease_id, principal)
            conn.execute(text("SELECT procrastinate_update_heartbeat_v1(:w)"), {"w": worker})

        self.db.write(tx)
        return {"lease": lease_id, "expires_in": self.lease_seconds}

    def verdict(self, lease_id: int, principal: Principal, body: Any) -> dict[str, Any]:
        """Store the signed verdict of a lease and end it (:func:`.store.add_reproduction`, the same checks as
        any reproduction, plus the lease's); the stored reproduction's answer."""
        rid = self.db.read(lambda conn: self._check(conn, lease_id, principal))[0]
        verdict = body.get("reproduction") if isinstance(body, dict) else None
        signature = body.get("signature") if isinstance(body, dict) else None
        if not isinstance(signature, str) or not signature:
            raise LeaseError("a lease's verdict must be signed with your proven key (cotk-repro signs it)", 403)
        if not isinstance(verdict, dict) or verdict.get("record_id") != rid:
            named = verdict.get("record_id") if isinstance(verdict, dict) else None
            raise LeaseError(
                f"the verdict is for record {str(named)[:80]!r}, but lease {lease_id} is for record {rid}", 422
            )

        def in_tx(conn, reproduction_pk: int, computed: str) -> None:
            _rid, job, worker = self._check(conn, lease_id, principal, lock=True)  # still held, in this transaction
            if computed == "could not run":  # back to the queue for another volunteer
                conn.execute(text("SELECT procrastinate_retry_job_v2(:j, now(), NULL, NULL, NULL)"), {"j": job})
                outcome = "could not run"
            else:
                conn.execute(text("SELECT procrastinate_finish_job_v1(:j, 'succeeded', false)"), {"j": job})
                outcome = "verdict"
            conn.execute(text("SELECT procrastinate_unregister_worker_v1(:w)"), {"w": worker})
            conn.execute(
                text(
                    f"UPDATE {TABLE} SET ended_at = now(), outcome = :o, reproduction_pk = :pk "  # noqa: S608 - a constant table name
                    "WHERE id = :id"
                ),
                {"o": outcome, "pk": reproduction_pk, "id": lease_id},
            )

        added = self._attach(self.db, rid, principal, body, in_tx=in_tx)
        return {**added, "lease": lease_id}


def expired(conn, job_id: int, runs: int, max_attempts: int | None) -> None:
    """The lease on ``job_id`` expired (its job was just put back, or failed out of attempts): it ends, and its
    procrastinate worker goes."""
    worker = conn.execute(
        text(
            f"UPDATE {TABLE} SET ended_at = now(), outcome = 'expired' "  # noqa: S608 - a constant table name
            "WHERE job_id = :j AND ended_at IS NULL RETURNING worker_id"
        ),
        {"j": job_id},
    ).scalars()
    for w in list(worker):
        conn.execute(text("SELECT procrastinate_unregister_worker_v1(:w)"), {"w": w})


def follow_standing(conn, record_id: str, state: str, k: int, agree: int) -> None:
    """After a verdict on ``record_id`` (in its transaction): cancel the waiting volunteer jobs of a settled
    record; keep at least ``max(1, k - agree)`` waiting or running for an unsettled one (at most
    :data:`MAX_JOBS_PER_RECORD` in all)."""
    if decided(state):
        conn.execute(
            text(
                "UPDATE procrastinate_jobs SET status = 'cancelled' "
                "WHERE queue_name = :q AND status = 'todo' AND args->>'record_id' = :rid"
            ),
            {"q": QUEUE, "rid": record_id},
        )
        return
    open_, total = conn.execute(
        text(
            "SELECT count(*) FILTER (WHERE status IN ('todo', 'doing')), count(*) FROM procrastinate_jobs "
            "WHERE queue_name = :q AND args->>'record_id' = :rid"
        ),
        {"q": QUEUE, "rid": record_id},
    ).one()
    more = min(max(1, k - agree) - open_, MAX_JOBS_PER_RECORD - total)
    if more > 0:
        enqueue(conn, [record_id], more)
