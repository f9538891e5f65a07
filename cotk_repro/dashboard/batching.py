"""Group commit: the upload writes of one process run in one transaction, by one thread.

Under many concurrent uploads, one transaction per upload makes every writer wait for the others:
on SQLite for the database's single write lock (``BEGIN IMMEDIATE``, with the busy handler's
sleeps), on PostgreSQL for the row locks on the shared counters (``meta.generation``, the
leaderboard group counts) and for one commit (WAL flush) each. Here the uploads that arrive while
a commit is in flight queue up, and the writer thread runs all of them in the next transaction:
one lock, one commit, one generation bump for the lot.

A job is a transaction function (what :meth:`Database.write` takes); the queue bumps the database
generation once per transaction, so a job does not. When the batch fails, it is
rolled back and every job is run again on its own (:meth:`Database.write`, with its retries), so a
job's error reaches only its own caller.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable

from sqlalchemy import text

MAX_BATCH = 64
ADVISORY_KEY = 7268210002  # PostgreSQL advisory lock of the batch writers (db.py's migration lock is ...01)


class WriteQueue:
    """Runs submitted transaction functions in batches, one transaction per batch, on one thread."""

    def __init__(self, db: Any, *, max_batch: int = MAX_BATCH):
        self.db = db
        self.max_batch = max_batch
        self._jobs: queue.SimpleQueue[tuple[Callable[[Any], Any], Future]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def submit(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(conn)`` in the next batch's transaction; returns its result once committed (or raises)."""
        future: Future = Future()
        self._jobs.put((fn, future))
        self._ensure_thread()
        return future.result()

    def _ensure_thread(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="cotk-repro-dashboard-writer", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            batch = [self._jobs.get()]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            self._run(batch)

    def _batch(self, conn: Any, batch: list[tuple[Callable[[Any], Any], Future]]) -> list[Any]:
        if self.db.dialect == "postgresql":  # batches of several worker processes, one at a time: no deadlocks
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": ADVISORY_KEY})
        results = [fn(conn) for fn, _f in batch]
        self.db.bump(conn)
        return results

    def _run(self, batch: list[tuple[Callable[[Any], Any], Future]]) -> None:
        if len(batch) > 1:
            try:
                results = self.db.write(lambda conn: self._batch(conn, batch))
            except BaseException:  # noqa: BLE001 - each job is run again alone and gets its own error
                pass
            else:
                for (_fn, future), result in zip(batch, results):
                    future.set_result(result)
                return
        for fn, future in batch:
            try:
                future.set_result(self.db.write(lambda conn, fn=fn: self._batch(conn, [(fn, future)])[0]))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller waiting on it
                future.set_exception(exc)
