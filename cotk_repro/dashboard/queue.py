"""The reproduction queue: one procrastinate job per record, enqueued in the record's own write transaction.

The queue lives in the dashboard's PostgreSQL database (procrastinate's schema beside the dashboard's
tables), so a fleet needs no second service. How "exactly one job per record" holds:

* **Same transaction.** :func:`write_records_and_enqueue` runs in the upload's group-commit transaction:
  the records it creates and their jobs commit together or not at all. A process that dies between the
  record write and the enqueue leaves neither (PostgreSQL rolls the open transaction back), and the
  client's retry stores both.
* **One row per record.** ``cotk_repro_reproduce_jobs`` maps a record id (its primary key) to its job:
  a second job for a record is a unique violation, whatever code path tried it. A duplicate upload
  creates no record, so it enqueues nothing.
* The job carries the record id as its procrastinate ``queueing_lock`` (never two waiting jobs for one
  record). No procrastinate ``lock``: with one job per record it would add nothing but a subquery to every
  fetch; a record is attached at most once by the pool whatever runs it (:mod:`.worker`).

The schema (procrastinate's own, plus the mapping table) is applied by :func:`ensure_schema` when
``dashboard serve --reproduce-queue`` or ``dashboard worker`` starts, under an advisory lock, and only
where it is missing. Turning the queue on for a database that already holds records enqueues one
job for each record without one (:func:`enqueue_missing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import text

from ..errors import CotkError
from . import leases
from .standing import verified_by

QUEUE = "cotk-repro-reproduce"
TASK = "cotk_repro.reproduce_record"
TABLE = "cotk_repro_reproduce_jobs"
_SCHEMA_LOCK = 7268210002  # pg_advisory_xact_lock key (the migrations use ...001)
_SWEEP_LOCK = 7268210003  # one stalled-job sweep at a time, across every worker

#: procrastinate's job status -> what the dashboard calls it
STATES = {
    "todo": "pending",
    "doing": "running",
    "succeeded": "done",
    "failed": "failed",
    "cancelled": "failed",
    "aborting": "running",
    "aborted": "failed",
}

_MAPPING_DDL = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    record_id varchar(80) PRIMARY KEY,
    job_id bigint NOT NULL,
    enqueued_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0,
    reason text,
    pool_user varchar(64),
    reproduction_pk integer,
    updated_at timestamptz
);
CREATE INDEX IF NOT EXISTS {TABLE}_job_idx ON {TABLE} (job_id);
ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS requeued_at timestamptz;
"""
#: the volunteers' jobs of one record, found by its id (after each verdict, :func:`.leases.follow_standing`)
_VOLUNTEER_INDEX = (
    "CREATE INDEX IF NOT EXISTS cotk_repro_volunteer_jobs_record ON procrastinate_jobs ((args->>'record_id')) "
    f"WHERE queue_name = '{leases.QUEUE}'"
)

_DEFER = text("""
SELECT unnest(procrastinate_defer_jobs_v1(ARRAY(
    SELECT ROW(:queue, :task, 0, NULL, rid, jsonb_build_object('record_id', rid),
               NULL::timestamptz)::procrastinate_job_to_defer_v1
      FROM unnest(CAST(:rids AS text[])) AS rid)))
""")
_MAP = text(f"""
INSERT INTO {TABLE} (record_id, job_id)
SELECT args->>'record_id', id FROM procrastinate_jobs WHERE id = ANY(CAST(:ids AS bigint[]))
""")  # noqa: S608 - only this module's constant table names and fixed keys are interpolated


class QueueError(CotkError):
    """The reproduction queue cannot be used here (SQLite, no procrastinate, no schema)."""


def require_postgresql(db) -> None:
    """Refuse, in one sentence, a database the queue cannot live in."""
    if db.dialect != "postgresql":
        raise QueueError(
            f"the reproduction queue needs PostgreSQL: {db.safe_url()} is {db.dialect}; serve with "
            "--db postgresql+psycopg://USER@HOST/DB, or reproduce by hand with "
            "`cotk-repro reproduce URL --submit`"
        )
    try:
        import procrastinate  # noqa: F401
    except ModuleNotFoundError:
        raise QueueError("the reproduction queue needs procrastinate: pip install 'cotk-repro[postgres]'") from None


def conninfo(db) -> str:
    """The libpq connection string of the dashboard's database (for procrastinate's psycopg pool)."""
    return db.url.set(drivername="postgresql").render_as_string(hide_password=False)


def ensure_schema(db) -> bool:
    """Apply procrastinate's schema and the mapping table where missing (one process at a time); True if
    procrastinate's schema was applied now."""
    require_postgresql(db)
    from procrastinate.schema import SchemaManager

    applied = False
    with db.write_engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK})
        if conn.execute(text("SELECT to_regclass('procrastinate_jobs')")).scalar() is None:
            conn.exec_driver_sql(SchemaManager.get_schema().replace("%", "%%"))
            applied = True
        conn.exec_driver_sql(_MAPPING_DDL)
        conn.exec_driver_sql(_VOLUNTEER_INDEX)
        leases.ensure_schema(conn)
    return applied


def start(db, *, backfill: bool = True) -> int:
    """Turn the queue on for ``db``: refuse SQLite, apply the schema where missing, mark ``db`` so that its
    record writes enqueue, and (``backfill``) give every record stored before a job; how many got one."""
    ensure_schema(db)
    db.reproduce_queue = True
    return enqueue_missing(db) if backfill else 0


def enqueue(conn, record_ids: Sequence[str]) -> list[int]:
    """Defer one pool reproduction job per record id, and K volunteer jobs (:mod:`.leases`; K the dashboard's
    ``--verified-by``), in the open transaction ``conn``; the pool's job ids."""
    rids = sorted(set(record_ids))
    if not rids:
        return []
    ids = list(conn.execute(_DEFER, {"queue": QUEUE, "task": TASK, "rids": rids}).scalars())
    conn.execute(_MAP, {"ids": ids})
    leases.enqueue(conn, rids, verified_by(conn))
    return ids


def write_records_and_enqueue(conn, items) -> list:
    """:func:`.record_writes.write_records` and, in the same transaction, a job for each record it created."""
    from .record_writes import write_records

    created = write_records(conn, items)
    enqueue(conn, [item.record_id for item, new in zip(items, created) if new is True])  # not a refused name
    return created


def enqueue_missing(db) -> int:
    """A job for every stored record that has none (the queue turned on after records arrived); how many."""

    def tx(conn):
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK})
        rids = (
            conn.execute(
                text(
                    f"SELECT r.record_id FROM records r WHERE NOT EXISTS "  # noqa: S608 - only constant table/column names and fixed keys are interpolated
                    f"(SELECT 1 FROM {TABLE} m WHERE m.record_id = r.record_id)"
                )
            )
            .scalars()
            .all()
        )
        return len(enqueue(conn, rids))

    return db.write(tx)


_STALLED = text("""
SELECT job.id, job.attempts FROM procrastinate_jobs job
  LEFT JOIN procrastinate_workers w ON w.id = job.worker_id
 WHERE job.status = 'doing' AND job.queue_name = :q
   AND (job.worker_id IS NULL OR w.id IS NULL OR w.last_heartbeat < now() - make_interval(secs => :s))
   FOR UPDATE OF job SKIP LOCKED
""")

#: why a job's attempt ended when its worker went silent (the worker cannot say: it is gone)
WORKER_DIED = (
    "the worker running it stopped mid-job (killed, out of memory, or its machine lost) and sent no heartbeat "
    "for {seconds:g} s"
)
#: the reason a job waits for (and, out of attempts, fails for) the publication of a record that names no remote
AWAITING_PUBLICATION = (
    "the record names no git remote its code can be fetched from, and its publication "
    "(the remote taken when it was published) has not arrived"
)


def retry_stalled(db, seconds: float, max_attempts: int | None = None, *, queue: str = QUEUE) -> list[tuple[int, str]]:
    """Put back on the queue the running jobs of workers silent for ``seconds`` (killed, lost), or fail those
    that have had ``max_attempts`` runs; ``[(job id, "retried" | "failed")]``.

    A worker's death is an attempt like any other (procrastinate counts it: its ``attempts`` column), so a
    job that kills every worker that takes it (out of memory, a crash) ends failed, with the reason, after
    ``max_attempts`` runs instead of going round the fleet for ever. One transaction under an advisory lock:
    the jobs are found and retried or failed (procrastinate's ``procrastinate_retry_job_v2`` /
    ``procrastinate_finish_job_v1``) together, so two workers sweeping at once never touch a job that a live
    worker took in between. ``queue``: the pool's (default) or the volunteers' (:data:`.leases.QUEUE`: a lease
    whose heartbeat stopped)."""
    died = WORKER_DIED.format(seconds=float(seconds))

    def tx(conn):
        lock = _SWEEP_LOCK if queue == QUEUE else _SWEEP_LOCK + 10  # each queue's sweep apart
        if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": lock}).scalar():
            return []  # another worker is sweeping
        out = []
        for job_id, done in conn.execute(_STALLED, {"q": queue, "s": float(seconds)}).all():
            runs = int(done or 0) + 1  # the attempt its worker died in counts
            if max_attempts is not None and runs >= max_attempts:
                conn.execute(text("SELECT procrastinate_finish_job_v1(:id, 'failed', false)"), {"id": job_id})
                reason = f"could not run: {died}, on attempt {runs} of {max_attempts}: given up"
                out.append((job_id, "failed"))
            else:
                conn.execute(text("SELECT procrastinate_retry_job_v2(:id, now(), NULL, NULL, NULL)"), {"id": job_id})
                reason = f"could not run: {died} (attempt {runs}); queued again"
                out.append((job_id, "retried"))
            if queue == leases.QUEUE:  # a volunteer's lease: its row ends; the pool's mapping row is not this job's
                leases.expired(conn, job_id, runs, max_attempts)
                continue
            conn.execute(
                text(
                    f"UPDATE {TABLE} SET attempts = :n, reason = :reason, updated_at = now() "  # noqa: S608 - only the constant table name is interpolated
                    "WHERE job_id = :id"
                ),
                {"n": runs, "reason": reason, "id": job_id},
            )
        if out:
            db.bump(conn)  # the record pages show the job's state
        return out

    return db.write(tx)


def requeue_for_publication(conn, record_id: str) -> bool:
    """In the open transaction that stores a record's publication: when the record's job failed waiting for it
    (:data:`AWAITING_PUBLICATION`, out of attempts before the publication arrived), queue the job again with its
    attempts back to none, once per record (``requeued_at``); whether it did."""
    job = conn.execute(
        text(
            f"SELECT m.job_id FROM {TABLE} m JOIN procrastinate_jobs j ON j.id = m.job_id "  # noqa: S608 - only the constant table name is interpolated
            "WHERE m.record_id = :rid AND j.status = 'failed' AND m.requeued_at IS NULL "
            "AND m.reproduction_pk IS NULL AND strpos(m.reason, :why) > 0 FOR UPDATE OF m, j"
        ),
        {"rid": record_id, "why": AWAITING_PUBLICATION},
    ).scalar()
    if job is None:
        return False
    conn.execute(
        text("UPDATE procrastinate_jobs SET status = 'todo', attempts = 0, scheduled_at = NULL WHERE id = :id"),
        {"id": job},
    )
    conn.execute(
        text(
            f"UPDATE {TABLE} SET attempts = 0, requeued_at = now(), updated_at = now(), "  # noqa: S608 - only the constant table name is interpolated
            "reason = 'its publication arrived after the job had failed waiting for it: queued again' "
            "WHERE record_id = :rid"
        ),
        {"rid": record_id},
    )
    return True


def counts(db) -> dict[str, Any]:
    """``{"pending", "running", "done", "failed", "oldest_pending_age_s"}`` of the reproduction queue."""
    out: dict[str, Any] = {"pending": 0, "running": 0, "done": 0, "failed": 0}

    def q(conn):
        rows = conn.execute(
            text("SELECT status::text, count(*) FROM procrastinate_jobs WHERE queue_name = :q GROUP BY status"),
            {"q": QUEUE},
        ).all()
        oldest = conn.execute(
            text(
                f"SELECT extract(epoch FROM now() - min(m.enqueued_at)) FROM {TABLE} m "  # noqa: S608 - only constant table/column names and fixed keys are interpolated
                "JOIN procrastinate_jobs j ON j.id = m.job_id WHERE j.status = 'todo'"
            )
        ).scalar()
        return rows, oldest

    rows, oldest = db.read(q)
    for status, n in rows:
        out[STATES.get(status, "failed")] += int(n)
    out["oldest_pending_age_s"] = round(float(oldest), 3) if oldest is not None else None
    return out


def record_state(conn, record_id: str) -> dict[str, Any] | None:
    """The record's job: ``{"state", "attempts", "reason", "verified_by"}``; None when it has none."""
    row = conn.execute(
        text(
            f"SELECT j.status::text, m.attempts, m.reason, m.pool_user, m.reproduction_pk, j.id, "  # noqa: S608 - only constant table/column names and fixed keys are interpolated
            f"r.verdict FROM {TABLE} m JOIN procrastinate_jobs j ON j.id = m.job_id "
            "LEFT JOIN reproductions r ON r.id = m.reproduction_pk "
            "WHERE m.record_id = :rid"
        ),
        {"rid": record_id},
    ).first()
    if row is None:
        return None
    status, attempts, reason, pool, repro, job_id, verdict = row
    state = STATES.get(status, "failed")
    if state == "failed" and not reason:  # a job failed by hand (procrastinate's CLI, SQL): never a bare "failed"
        reason = f"the job was {status} without a reason recorded"
    return {
        "job": job_id,
        "state": state,
        "attempts": attempts,
        "reason": reason,
        "pool": pool,
        "reproduction": repro,
        "verdict": verdict,
        "verified_by": pool if verdict == "reproduced" else None,
    }


def pool_verdicts(conn, record_ids: Iterable[str]) -> dict[str, str]:
    """``{record_id: pool user}`` for the records the pool has verified (a pool reproduction attached)."""
    rids = sorted(set(record_ids))
    if not rids:
        return {}
    rows = conn.execute(
        text(
            f"SELECT m.record_id, m.pool_user FROM {TABLE} m "  # noqa: S608 - only constant table/column names and fixed keys are interpolated
            "JOIN reproductions r ON r.id = m.reproduction_pk "
            "WHERE m.record_id = ANY(CAST(:rids AS text[])) AND r.verdict = 'reproduced'"
        ),
        {"rids": rids},
    ).all()
    return {rid: user for rid, user in rows}


def annotate_entries(db, entries: list[dict[str, Any]]) -> None:
    """Add ``verified_by`` (the pool's user name, or None) to leaderboard / table entries, in place."""
    if not getattr(db, "reproduce_queue", False) or not entries:
        return
    found = db.read(lambda conn: pool_verdicts(conn, [e["id"] for e in entries]))
    for e in entries:
        e["verified_by"] = found.get(e["id"])


def annotate_board(db, board: dict[str, Any]) -> dict[str, Any]:
    """:func:`annotate_entries` over every group of a leaderboard (see :mod:`.leaderboard`)."""
    annotate_entries(db, [e for g in board.get("groups", []) for e in g.get("entries", [])])
    return board
