"""Group commit: the upload writes of one process run in one transaction, by one thread.

Under many concurrent uploads, one transaction per upload makes every writer wait for the others:
on SQLite for the database's single write lock (``BEGIN IMMEDIATE``, with the busy handler's
sleeps), on PostgreSQL for the row locks on the shared counters (``meta.generation``, the
leaderboard group counts) and for one commit (WAL flush) each. Here the items that arrive while
a commit is in flight queue up, and the writer thread hands all of them to ``write_batch(conn,
items)`` in the next transaction: one lock, a few statements for the lot, one commit, one
generation bump.

When a batch fails, it is rolled back and every item is written again on its own (with
:meth:`Database.write`'s retries), so an item's error reaches only its own caller.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from sqlalchemy import text

MAX_BATCH = 256
ADVISORY_KEY = 7268210002  # PostgreSQL advisory lock of the batch writers (db.py's migration lock is ...01)

WriteBatch = Callable[[Any, Sequence[Any]], list[Any]]


class GroupCommit:
    """Writes submitted items in batches, one transaction per batch, on one thread."""

    def __init__(self, db: Any, write_batch: WriteBatch, *, max_batch: int = MAX_BATCH):
        self.db = db
        self.write_batch = write_batch
        self.max_batch = max_batch
        self._items: queue.SimpleQueue[tuple[Any, Future]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def submit(self, item: Any) -> Any:
        """Write ``item`` in the next batch; returns what ``write_batch`` said for it once committed (or raises)."""
        future: Future = Future()
        self._items.put((item, future))
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
            batch = [self._items.get()]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._items.get_nowait())
                except queue.Empty:
                    break
            self._run(batch)

    def _transaction(self, conn: Any, items: Sequence[Any]) -> list[Any]:
        if self.db.dialect == "postgresql":  # batches of several worker processes, one at a time: no deadlocks
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": ADVISORY_KEY})
        results = self.write_batch(conn, items)
        self.db.bump(conn)
        return results

    def _run(self, batch: list[tuple[Any, Future]]) -> None:
        if len(batch) > 1:
            try:
                results = self.db.write(lambda conn: self._transaction(conn, [item for item, _f in batch]))
            except BaseException:
                pass
            else:
                for (_item, future), result in zip(batch, results):
                    future.set_result(result)
                return
        for item, future in batch:
            try:
                future.set_result(self.db.write(lambda conn, item=item: self._transaction(conn, [item])[0]))
            except BaseException as exc:
                future.set_exception(exc)
