"""Database engines, transactions and migrations for the dashboard.

* SQLite (the default, a file in the user data dir) runs in WAL mode with a busy
  timeout; write transactions start with ``BEGIN IMMEDIATE`` (so two writers never
  deadlock on a lock upgrade) and are retried when the database stays locked.
* PostgreSQL by URL: ``postgresql+psycopg://user@host:port/dbname``.

The schema is created and upgraded by Alembic (``alembic upgrade head``), run
programmatically from the migrations shipped in this package.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import create_engine, event, select, text, update
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError
from sqlalchemy.pool import StaticPool

from ..core.userconfig import data_dir
from ..errors import CotkError
from .models import Meta

T = TypeVar("T")

DB_FILE = "dashboard.sqlite3"
ENV_DB = "COTK_REPRO_DASHBOARD_DB"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class DashboardDBError(CotkError):
    """The dashboard database cannot be opened or migrated."""


def default_db_url() -> str:
    """``$COTK_REPRO_DASHBOARD_DB``, else a SQLite file in the user data dir."""
    env = os.environ.get(ENV_DB)
    if env:
        return env
    return f"sqlite:///{data_dir() / DB_FILE}"


def _is_locked(exc: OperationalError) -> bool:
    msg = str(exc.orig if exc.orig is not None else exc).lower()
    return "locked" in msg or "busy" in msg


class Database:
    """A read engine and a write engine (the same one except on SQLite) and helpers."""

    def __init__(self, url: str, *, pool_size: int = 10, max_overflow: int = 30, echo: bool = False):
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise DashboardDBError(
                f"{url!r} is not a database URL (e.g. sqlite:////path/db.sqlite3 or postgresql+psycopg://user@host/db)"
            ) from None
        self.url = parsed
        #: records written here get a reproduction job (:mod:`.queue`; set by ``serve --reproduce-queue``)
        self.reproduce_queue = False
        self._queues: dict[Any, Any] = {}
        self._queue_lock = threading.Lock()
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            database = parsed.database or ""
            memory = database in ("", ":memory:") or "mode=memory" in str(parsed)
            if memory:
                self.read_engine = self.write_engine = self._sqlite_engine(url, immediate=True, memory=True)
            else:
                try:
                    Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise DashboardDBError(
                        f"cannot create the folder of the database {database}: {exc.strerror}"
                    ) from None
                self.write_engine = self._sqlite_engine(
                    url, immediate=True, pool_size=pool_size, max_overflow=max_overflow
                )
                self.read_engine = self._sqlite_engine(
                    url, immediate=False, pool_size=pool_size, max_overflow=max_overflow
                )
        elif self.dialect == "postgresql":
            # Reads: no ping per checkout (a round trip per lookup, two of an upload's four); a read on a
            # connection the server dropped is retried once instead (read()). Writes keep the ping: a
            # write cannot be retried blindly. Most writes go through the group-commit thread (a small pool).
            try:
                self.read_engine = create_engine(
                    parsed,
                    pool_size=pool_size,
                    max_overflow=max_overflow,
                    pool_recycle=1800,
                    pool_timeout=60,
                    echo=echo,
                )
                self.write_engine = create_engine(
                    parsed, pool_size=2, max_overflow=8, pool_pre_ping=True, pool_timeout=60, echo=echo
                )
            except ModuleNotFoundError as exc:
                raise DashboardDBError(
                    f"PostgreSQL needs the driver {exc.name}: pip install 'psycopg[binary]'"
                ) from None
        else:
            raise DashboardDBError(f"the dashboard supports SQLite and PostgreSQL, not {self.dialect!r}")

    @staticmethod
    def _sqlite_engine(
        url: str, *, immediate: bool, memory: bool = False, pool_size: int = 10, max_overflow: int = 30
    ) -> Engine:
        kwargs: dict[str, Any] = {"connect_args": {"timeout": 30, "check_same_thread": False}}
        if memory:
            kwargs["poolclass"] = StaticPool
        else:
            kwargs.update(pool_size=pool_size, max_overflow=max_overflow, pool_timeout=60)
        engine = create_engine(url, **kwargs)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):  # pragma: no cover - exercised through every test
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves (below)
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout=30000")
            if not memory:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):  # pragma: no cover
            conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

        return engine

    # -- transactions -------------------------------------------------------------
    def read(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn`` on a connection for reading. SQLite: in one read transaction (one snapshot).
        PostgreSQL: in autocommit mode, each statement on its own; the same as a READ COMMITTED
        transaction, where every statement takes a fresh snapshot, without the BEGIN and ROLLBACK round
        trips (two of the three a one-query lookup otherwise costs)."""
        if self.dialect == "postgresql":
            for attempt in (1, 2):
                try:
                    with self.read_engine.connect() as conn:
                        return fn(conn.execution_options(isolation_level="AUTOCOMMIT"))
                except DBAPIError as exc:  # the server dropped the connection (restart): once more, fresh
                    if not exc.connection_invalidated or attempt == 2:
                        raise
        with self.read_engine.connect() as conn:
            try:
                return fn(conn)
            finally:
                conn.rollback()

    def write(self, fn: Callable[[Connection], T], *, attempts: int = 8) -> T:
        """Run ``fn`` in a write transaction; on SQLite, retry while the database is locked."""
        for attempt in range(attempts):
            try:
                with self.write_engine.begin() as conn:
                    return fn(conn)
            except OperationalError as exc:
                if self.dialect != "sqlite" or not _is_locked(exc) or attempt + 1 == attempts:
                    raise
                time.sleep(min(2.0, 0.05 * (2**attempt)) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    def group_commit(self, write_batch: Callable[[Connection, Any], list[Any]]):
        """This database's :class:`.batching.GroupCommit` for ``write_batch`` (one writer thread each)."""
        with self._queue_lock:
            found = self._queues.get(write_batch)
            if found is None:
                from .batching import GroupCommit

                found = self._queues[write_batch] = GroupCommit(self, write_batch)
        return found

    def generation(self) -> int:
        """A counter that goes up on every write (cache key for pages and leaderboards)."""
        return self.read(lambda c: c.execute(select(Meta.value).where(Meta.key == "generation")).scalar() or 0)

    @staticmethod
    def bump(conn: Connection) -> None:
        conn.execute(update(Meta).where(Meta.key == "generation").values(value=Meta.value + 1))

    def dispose(self) -> None:
        self.read_engine.dispose()
        if self.write_engine is not self.read_engine:
            self.write_engine.dispose()

    # -- schema -------------------------------------------------------------------
    def upgrade(self, revision: str = "head") -> None:
        """``alembic upgrade head`` with the migrations shipped in the package (idempotent, concurrency-safe)."""
        from alembic import command
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        cfg.set_main_option("sqlalchemy.url", self.url.render_as_string(hide_password=False).replace("%", "%%"))
        try:
            with self.write_engine.begin() as conn:
                if self.dialect == "postgresql":  # several workers starting at once: one migrates
                    conn.execute(text("SELECT pg_advisory_xact_lock(7268210001)"))
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, revision)
        except OperationalError as exc:
            raise DashboardDBError(
                f"cannot open the dashboard database {self.safe_url()}: "
                f"{str(exc.orig).strip().splitlines()[0] if exc.orig else exc}"
            ) from None

    def current_revision(self) -> str | None:
        from alembic.runtime.migration import MigrationContext

        with self.read_engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()

    def safe_url(self) -> str:
        return self.url.render_as_string(hide_password=True)


def open_database(url: str | None = None, *, migrate: bool = True, **kwargs: Any) -> Database:
    """A :class:`Database` for ``url`` (else the default), migrated to the newest schema unless ``migrate=False``."""
    db = Database(url or default_db_url(), **kwargs)
    if migrate:
        db.upgrade()
    return db
