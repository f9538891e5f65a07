"""``dashboard worker``: a pool process that drains the reproduction queue (:mod:`.queue`).

Each job reproduces one record from its git remote with the Docker runtime (every sandbox rule of
``cotk-repro reproduce``: the same :func:`cotk_repro.reproduce.core.reproduce`), signs the verdict with
the pool's key (namespace ``cotk-repro-reproduction``, :func:`cotk_repro.core.signing.sign_reproduction`,
as ``reproduce --submit`` does) and attaches it through :func:`.store.add_reproduction`, the code behind
``POST /api/v1/records/{id}/reproductions`` (the server's verdict, the signer check). The pool is one
dashboard user (the owner of ``--key``): however many workers run, it counts once.

Faults:

* **Exactly one pool reproduction per record.** The reproduction and the job's mapping row
  (``reproduction_pk``) are written in one transaction, the row locked first; a job that finds its
  record already verified (a worker killed after attaching, before finishing the job) attaches nothing.
* **A worker killed mid-job** (``kill -9``, out of memory, a crash, a lost machine) stops sending heartbeats;
  every worker sweeps for jobs of workers silent for ``stalled_after`` seconds and puts them back on the queue
  (:func:`.queue.retry_stalled`: procrastinate's retry, one sweep at a time), where another worker takes them.
  The dead worker's run counts as an attempt: a job that kills every worker that takes it is failed, with
  that reason, after ``max_attempts`` runs.
* **The database restarting**: procrastinate's pool reconnects; a job's own database work waits for the
  database (:func:`with_database`), so a finished reproduction is not thrown away.
* **A stranger's git remote**: only plain https / ssh / git / scp-like URLs (:func:`check_remote`), and git
  itself limited to those transports.
* **A job that cannot run** is retried, at most ``max_attempts`` runs in all, then marked failed with its
  one-sentence reason (kept beside the job; the record page shows it): every failure has one, an unexpected
  exception included. A record that can never run (not marked ok, refused by the server's verdict checks)
  fails at once. A record that names no remote waits for its publication; when the publication arrives after
  the job failed for that, the job is queued again, once (:func:`.queue.requeue_for_publication`).
* **SIGTERM / SIGINT**: procrastinate stops fetching, waits for the running jobs, and after
  ``graceful_timeout`` seconds abandons them (they are retried as stalled jobs).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select, text

from ..core import jsonbudget
from ..errors import CotkError
from ..records.diffing import summarize
from .auth import Principal
from .queue import AWAITING_PUBLICATION, QUEUE, TABLE, TASK, conninfo, ensure_schema

log = logging.getLogger("cotk_repro.dashboard.worker")

#: a record -> its reproduction verdict document (``could not run`` with ``error`` when it could not); for a record
#: whose remote came with its publication, called as ``(record, publication, record_signature)``
Reproducer = Callable[..., dict[str, Any]]

DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_STALLED_AFTER = 30.0
REASON_MAX = 300


class WorkerError(CotkError):
    """The worker cannot start (no Docker runtime, an unregistered key, SQLite)."""


class Retryable(Exception):
    """This attempt could not run; the job is retried while attempts remain."""


class Permanent(Exception):
    """This job can never succeed; it fails at once."""


def one_sentence(message: str | None, limit: int = REASON_MAX) -> str:
    """The first line of ``message``, cut to ``limit`` characters."""
    line = (message or "").strip().splitlines()[0] if (message or "").strip() else "no reason given"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def failure_reason(verdict: dict[str, Any]) -> str:
    """``could not run: ...`` / ``timed out: ...`` from a verdict that could not run."""
    error = one_sentence(verdict.get("error"))
    kind = "timed out" if "time limit" in error or "timed out" in error else "could not run"
    return f"{kind}: {error}"


@dataclass(frozen=True)
class PoolIdentity:
    """The pool's signing key and the dashboard user that owns it."""

    key: Any  # core.signing.SigningKey
    principal: Principal
    fingerprint: str


def pool_identity(db, key_path: str | Path) -> PoolIdentity:
    """The user whose registered, unrevoked SSH key is ``key_path``; :class:`WorkerError` otherwise."""
    from ..core.signing import SigningError, key_from_path
    from .models import SshKey, User

    try:
        key = key_from_path(Path(key_path), "--key")
    except SigningError as exc:
        raise WorkerError(exc.message) from None
    fp = key.public.fingerprint
    row = db.read(
        lambda c: c.execute(
            select(User.id, User.name)
            .join(SshKey, SshKey.user_id == User.id)
            .where(SshKey.fingerprint == fp, SshKey.revoked_at.is_(None))
        ).first()
    )
    if row is None:
        raise WorkerError(
            f"the key {fp} ({key_path}) is not registered on this dashboard (or is revoked): register "
            f"the pool's user with `cotk-repro dashboard add-user NAME --ssh-key {key_path}.pub`"
        )
    from ..core.signing import NS_REPRODUCTION, sign_bytes

    try:  # a key that cannot sign (a passphrase, no agent) is said now, not after every job's reproduction
        sign_bytes(b"cotk-repro worker start", NS_REPRODUCTION, key)
    except SigningError as exc:
        raise WorkerError(f"the pool's key cannot sign: {exc.message}") from None
    return PoolIdentity(key=key, principal=Principal(user_id=row[0], name=row[1]), fingerprint=fp)


#: the git transports a worker fetches a stranger's record over (set as GIT_ALLOW_PROTOCOL for the process)
ALLOWED_PROTOCOLS = "https:ssh:git"
_PLAIN_URL = re.compile(
    r"^(?:(?:https|ssh|git)://[A-Za-z0-9._~@:\[\]-]+/|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:)"
    r"[A-Za-z0-9._~/%+@:=-]*$"
)


def check_remote(url: Any) -> str:
    """The record's git remote when it is a plain ``https://``, ``ssh://``, ``git://`` or scp-like
    (``user@host:path``) URL; :class:`Permanent` otherwise. A stranger writes this URL and the worker hands
    it to git: no ``file://`` (the worker's own disk), no ``ext::`` (a command), no leading ``-`` (an option),
    no spaces or control characters."""
    if not isinstance(url, str) or not _PLAIN_URL.fullmatch(url):
        shown = url[:120] if isinstance(url, str) else type(url).__name__
        raise Permanent(f"the record's git remote {shown!r} is not a plain https://, ssh://, git:// or scp-like URL")
    host = url.split("://", 1)[1].split("/", 1)[0] if "://" in url else url.split("@", 1)[1].split(":", 1)[0]
    if host.split("@")[-1].startswith("-"):
        raise Permanent(f"the record's git remote {url[:120]!r} names a host that starts with '-'")
    return url


def docker_reproducer(
    base_image: str | None = None, *, timeout: float | None = None, memory: str | None = None, cpus: float | None = None
) -> Reproducer:
    """Reproduce a record with the Docker runtime from the git remote it names (never a host runtime)."""
    from ..records.view import RecordView
    from ..remote.publication import takes_publication
    from ..reproduce.core import ReproduceOptions, reproduce
    from ..reproduce.source import source_for_record

    def run(record: dict[str, Any], publication: Any = None, record_signature: str | None = None) -> dict[str, Any]:
        url = RecordView.of(record).code.remote_url
        if publication is None:
            if takes_publication(url):
                # made before its project had a remote: `publish` uploads the remote it took (signed) right after
                # the record, whose upload queued this job; a worker may be faster than that second upload
                raise Retryable(AWAITING_PUBLICATION)
            check_remote(url)
        try:
            source = source_for_record(record, publication=publication, record_signature=record_signature)
        except CotkError as exc:
            raise Permanent(one_sentence(exc.message)) from None
        check_remote(source.git_url)  # the publication's URL: verified, and held to the worker's own rule too
        opts = ReproduceOptions(
            runtime="docker",
            base_image=base_image,
            timeout=timeout,
            memory=memory,
            cpus=cpus,
            submit=False,
            allow_unsigned=False,
            trust_remote_code=False,
        )
        return reproduce(source, opts).verdict

    return run


def _server_rows(record: dict[str, Any], verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows the dashboard will store for this verdict (its own computation), for the job's reason and log."""
    from .verdicts import server_verdict

    try:
        return server_verdict(record, verdict)[1]
    except CotkError:
        return []  # the server refuses it too, and says why


def check_docker() -> None:
    """The Docker engine answers (the worker runs nothing on its host); :class:`WorkerError` otherwise."""
    from ..reproduce import ReproduceError
    from ..reproduce.engine import connect

    try:
        connect(timeout=30)
    except ReproduceError as exc:
        raise WorkerError(f"the worker needs the Docker engine: {exc.message}") from None


#: how long a job waits for the database to come back (a restart, a fail-over) before giving up the attempt
DB_PATIENCE = 120.0


def with_database(fn: Callable[[], Any], what: str, patience: float = DB_PATIENCE) -> Any:
    """``fn()``, again while the database is unreachable (connection refused or dropped, the server restarting),
    for up to ``patience`` seconds; then :class:`Retryable`. Every ``fn`` here is safe to repeat: reads, the
    progress note, and the attach (a repeat after a commit whose answer was lost finds the record attached)."""
    from sqlalchemy.exc import InterfaceError, OperationalError

    deadline = time.monotonic() + patience
    wait = 0.25
    while True:
        try:
            return fn()
        except (OperationalError, InterfaceError) as exc:
            if time.monotonic() + wait > deadline:
                raise Retryable(
                    f"could not run: the dashboard database did not answer while {what} "
                    f"({one_sentence(str(exc.orig or exc), 160)})"
                ) from None
            log.warning("the database did not answer while %s; trying again in %.1f s", what, wait)
            time.sleep(wait)
            wait = min(5.0, wait * 2)


def reproduce_one(
    reproducer: Reproducer, record: dict[str, Any], status: Any, publication: Any, record_signature: str | None
) -> dict[str, Any]:
    """The verdict of one record, as every reproducer of the fleet makes it: the pool's workers and the
    volunteers leasing over HTTP (:mod:`.volunteer`) alike, with the same ``reproducer`` (:func:`docker_reproducer`:
    the same sandbox, limits and budgets). A publication (the remote taken at publish time, signed) goes to
    reproducers that take one. Raises :class:`Permanent` (the record can never be reproduced) or
    :class:`Retryable` (this attempt could not run), each with its one-sentence reason."""
    if status != "ok":
        raise Permanent(f"could not run: the record is marked {status}; there is no successful result to reproduce")
    try:
        verdict = reproducer(record) if publication is None else reproducer(record, publication, record_signature)
    except Permanent as exc:
        raise Permanent(f"could not run: {exc}") from None
    except Retryable as exc:
        raise Retryable(f"could not run: {exc}") from None
    except CotkError as exc:
        raise Retryable(f"could not run: {one_sentence(exc.message)}") from None
    if verdict.get("verdict") == "could not run":
        raise Retryable(failure_reason(verdict))
    return verdict


class Pool:
    """What one job does: read the record, reproduce it, sign, attach; the job's reason kept beside it."""

    def __init__(
        self,
        db,
        identity: PoolIdentity,
        reproducer: Reproducer,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        db_patience: float = DB_PATIENCE,
    ):
        self.db = db
        self.identity = identity
        self.reproducer = reproducer
        self.max_attempts = max_attempts
        self.db_patience = db_patience

    def _note(self, record_id: str, **values: Any) -> None:
        sets = ", ".join(f"{k} = :{k}" for k in values)

        def tx(conn):
            # a progress note: losing the last one in a server crash is harmless, so no wait for the WAL flush
            conn.execute(text("SET LOCAL synchronous_commit = off"))
            conn.execute(
                text(f"UPDATE {TABLE} SET {sets}, updated_at = now() WHERE record_id = :rid"),  # noqa: S608 - only constant table/column names and fixed keys are interpolated
                {**values, "rid": record_id},
            )
            self.db.bump(conn)  # the record page shows the job's state

        with_database(lambda: self.db.write(tx), "noting the job's progress", self.db_patience)

    def run_job(self, record_id: str, attempt: int) -> str:
        """Reproduce ``record_id``; the verdict attached ("already verified" when it was before). Raises
        :class:`Retryable` or :class:`Permanent` with the one-sentence reason, kept beside the job: an
        unexpected exception too (a failure is never without its reason)."""
        try:
            return self._run_job(record_id, attempt)
        except (Retryable, Permanent):
            raise
        except Exception as exc:  # a bug, or a stranger's record that trips one: said, then retried (bounded)
            log.exception("record %s: unexpected failure", record_id)
            detail = one_sentence(str(exc), 200) if str(exc).strip() else "no message"
            return self._fail(record_id, Retryable, f"could not run: unexpected {type(exc).__name__}: {detail}")

    def _run_job(self, record_id: str, attempt: int) -> str:
        from ..core.signing import sign_reproduction
        from . import store

        row = with_database(
            lambda: self.db.read(
                lambda c: c.execute(
                    text(
                        f"SELECT m.reproduction_pk, r.body, r.status, r.publication, r.signature FROM {TABLE} m "  # noqa: S608 - only the constant table name is interpolated
                        "JOIN records r ON r.record_id = m.record_id "
                        "WHERE m.record_id = :rid"
                    ),
                    {"rid": record_id},
                ).first()
            ),
            "reading the record",
            self.db_patience,
        )
        if row is None:
            raise Permanent(f"there is no record {record_id} on this dashboard")
        if row[0] is not None:
            return "already verified"
        self._note(record_id, attempts=attempt, reason=None)
        try:  # stored after the API parsed it, yet parsed within the same budget as any stranger's JSON
            record = jsonbudget.loads(row[1], what=f"the queued record {record_id}")
        except jsonbudget.JSONBudgetError as exc:
            return self._fail(record_id, Permanent, f"could not run: {exc.message}")
        try:
            publication = None if row[3] is None else jsonbudget.loads(row[3], what="the queued publication")
            verdict = reproduce_one(self.reproducer, record, row[2], publication, row[4])
        except Permanent as exc:
            return self._fail(record_id, Permanent, str(exc))
        except Retryable as exc:
            return self._fail(record_id, Retryable, str(exc))
        try:
            signature = sign_reproduction(verdict, self.identity.key)
        except CotkError as exc:
            return self._fail(record_id, Retryable, f"could not sign: {one_sentence(exc.message)}")
        pool_user = self.identity.principal.name
        already: list[bool] = []
        rows = _server_rows(record, verdict)

        def attach(conn, reproduction_pk: int, computed: str) -> None:
            held = conn.execute(
                text(f"SELECT reproduction_pk FROM {TABLE} WHERE record_id = :rid FOR UPDATE"),  # noqa: S608 - only constant table/column names and fixed keys are interpolated
                {"rid": record_id},
            ).scalar()
            if held is not None:  # another run of this job attached first (a worker killed after attaching)
                already.append(True)
                raise _AlreadyVerified
            words = f" ({summarize(rows)})" if rows else ""
            reason = (
                None if computed == "reproduced" else f"{computed}: the pool's rerun differs from the record{words}"
            )
            conn.execute(
                text(
                    f"UPDATE {TABLE} SET reproduction_pk = :pk, pool_user = :u, reason = :reason, "  # noqa: S608 - only constant table/column names and fixed keys are interpolated
                    "updated_at = now() WHERE record_id = :rid"
                ),
                {"pk": reproduction_pk, "u": pool_user, "reason": reason, "rid": record_id},
            )

        try:
            added = with_database(
                lambda: store.add_reproduction(
                    self.db,
                    record_id,
                    self.identity.principal,
                    {"reproduction": verdict, "signature": signature},
                    in_tx=attach,
                    pool=True,
                ),
                "attaching the reproduction",
                self.db_patience,
            )
        except _AlreadyVerified:
            return "already verified"
        except CotkError as exc:  # the server's checks refused it (Invalid, Forbidden, BadSignature): never retried
            return self._fail(record_id, Permanent, f"refused by the dashboard: {one_sentence(exc.message)}")
        log.info("record %s: %s: %s", record_id, added["verdict"], summarize(rows))  # identical / within tolerance
        return added["verdict"]

    def _fail(self, record_id: str, kind: type[Exception], reason: str) -> str:
        self._note(record_id, reason=one_sentence(reason))
        raise kind(reason)


class _AlreadyVerified(Exception):
    pass


def make_app(
    db, pool: Pool | None, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS, retry_wait: float = 5.0, pool_size: int = 4
):
    """The procrastinate app over the dashboard's database, with the reproduction task (``pool`` runs it)."""
    import procrastinate
    from procrastinate import RetryStrategy

    # The queue's own transitions (fetch, finish, heartbeat) commit without waiting for the WAL flush: a
    # server crash may lose the last few ms of them, which only reruns a job (a lost "started": it is taken
    # again; a lost "finished": retried as stalled), and a rerun attaches nothing twice (see Pool.run_job).
    # The attach transaction itself, on the dashboard's engine, stays durable.
    options = " ".join(
        filter(
            None,
            [
                db.url.query.get("options") if isinstance(db.url.query.get("options"), str) else None,
                "-c synchronous_commit=off",
            ],
        )
    )
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=conninfo(db), min_size=1, max_size=pool_size, kwargs={"options": options}
        )
    )

    # procrastinate's max_attempts counts the retries, and 0 there means "no limit": one run is no retry at all
    retry = (
        RetryStrategy(max_attempts=max_attempts - 1, wait=int(retry_wait), retry_exceptions={Retryable})
        if max_attempts > 1
        else False
    )

    @app.task(name=TASK, queue=QUEUE, pass_context=True, retry=retry)
    def reproduce_record(context, record_id: str) -> str:
        if pool is None:
            raise Retryable("no pool in this process")
        attempt = (context.job.attempts or 0) + 1
        started = time.monotonic()
        outcome = pool.run_job(record_id, attempt)
        log.info("record %s: %s (attempt %d, %.1f s)", record_id, outcome, attempt, time.monotonic() - started)
        return outcome

    return app


async def _retry_stalled(db, stalled_after: float, every: float, max_attempts: int | None) -> None:
    """Every ``every`` s, put the jobs of workers silent for ``stalled_after`` s back on the queue, or fail
    those out of attempts (:func:`.queue.retry_stalled`)."""
    from .queue import retry_stalled

    while True:
        await asyncio.sleep(every)
        try:
            for job_id, what in await asyncio.to_thread(retry_stalled, db, stalled_after, max_attempts):
                if what == "failed":
                    log.warning("job %s of a silent worker: out of attempts, failed", job_id)
                else:
                    log.warning("job %s of a silent worker: back on the queue", job_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the database restarting: the next sweep tries again
            log.warning("stalled-job sweep failed: %s", one_sentence(str(exc), 200))


async def run_async(
    app,
    db,
    *,
    concurrency: int = 1,
    stalled_after: float = DEFAULT_STALLED_AFTER,
    graceful_timeout: float | None = None,
    name: str | None = None,
    max_attempts: int | None = DEFAULT_MAX_ATTEMPTS,
) -> None:
    """Run a worker until SIGTERM / SIGINT: ``concurrency`` jobs at once, heartbeats every
    ``stalled_after / 4`` s, and the stalled-job sweep (a job whose worker died in its ``max_attempts``-th run
    is failed)."""
    heartbeat = max(0.5, stalled_after / 4)
    async with app.open_async():
        sweep = asyncio.create_task(_retry_stalled(db, stalled_after, heartbeat, max_attempts))
        try:
            await app.run_worker_async(
                queues=[QUEUE],
                concurrency=concurrency,
                name=name,
                update_heartbeat_interval=heartbeat,
                stalled_worker_timeout=stalled_after,
                shutdown_graceful_timeout=graceful_timeout,
                install_signal_handlers=True,
                fetch_job_polling_interval=2.0,
            )
        finally:
            sweep.cancel()
            try:
                await sweep
            except asyncio.CancelledError:
                pass


def run_worker(
    db_url: str,
    key_path: str | Path,
    *,
    concurrency: int = 1,
    reproducer: Reproducer | None = None,
    base_image: str | None = None,
    timeout: float | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    stalled_after: float = DEFAULT_STALLED_AFTER,
    graceful_timeout: float | None = None,
    retry_wait: float = 5.0,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve reproduction jobs from the dashboard database at ``db_url`` until stopped (blocking).

    ``reproducer`` defaults to :func:`docker_reproducer` with ``base_image`` (else ``$COTK_REPRO_BASE_IMAGE``);
    tests pass a stand-in to exercise the queue alone.
    """
    from .db import open_database
    from .queue import require_postgresql

    if max_attempts < 1:
        raise WorkerError(f"--max-attempts must be at least 1, not {max_attempts}")
    db = open_database(db_url, migrate=False)
    require_postgresql(db)
    db.upgrade()
    ensure_schema(db)
    identity = pool_identity(db, key_path)
    if reproducer is None:
        os.environ["GIT_ALLOW_PROTOCOL"] = ALLOWED_PROTOCOLS  # git itself refuses any other transport (submodules too)
        check_docker()
        reproducer = docker_reproducer(base_image or os.environ.get("COTK_REPRO_BASE_IMAGE") or None, timeout=timeout)
    pool = Pool(db, identity, reproducer, max_attempts=max_attempts)
    app = make_app(db, pool, max_attempts=max_attempts, retry_wait=retry_wait, pool_size=max(2, concurrency + 2))
    if on_ready:
        on_ready(
            f"worker for {db.safe_url()} as {identity.principal.name} ({identity.fingerprint}), {concurrency} at once"
        )
    try:
        asyncio.run(
            run_async(
                app,
                db,
                concurrency=concurrency,
                stalled_after=stalled_after,
                graceful_timeout=graceful_timeout,
                max_attempts=max_attempts,
                name=f"cotk-repro-{os.uname().nodename}-{os.getpid()}",
            )
        )
    finally:
        db.dispose()
