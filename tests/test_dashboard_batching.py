"""Group commit (cotk_repro.dashboard.batching): uploads waiting together share one transaction, and one
upload's error reaches only its own caller, on a real SQLite database."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import insert, select

from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.models import User


@pytest.fixture
def db(tmp_path):
    database = open_database(f"sqlite:///{tmp_path / 'batch.sqlite3'}")
    yield database
    database.dispose()


def test_waiting_writes_share_a_transaction_and_errors_stay_with_their_caller(db):
    first_running, release = threading.Event(), threading.Event()
    batches: list[list[str]] = []

    def write_users(conn, names):
        batches.append(list(names))
        if names == ["first"]:
            first_running.set()
            release.wait(10)  # hold the writer so the others queue up behind this commit
        out = []
        for name in names:
            if name == "bad":
                raise ValueError("bad item")
            conn.execute(insert(User).values(name=name, created_at="2026-01-01T00:00:00Z"))
            out.append(name.upper())
        return out

    queue = db.group_commit(write_users)
    assert db.group_commit(write_users) is queue  # one writer per batch function
    gen0 = db.generation()
    with ThreadPoolExecutor(12) as pool:
        first = pool.submit(queue.submit, "first")
        assert first_running.wait(10)
        names = [f"u{i}" for i in range(10)] + ["bad"]
        rest = {name: pool.submit(queue.submit, name) for name in names}
        for _ in range(1000):  # all of them waiting behind the first commit
            if queue._items.qsize() == len(names):
                break
            threading.Event().wait(0.01)
        release.set()
        assert first.result(10) == "FIRST"
        with pytest.raises(ValueError, match="bad item"):
            rest["bad"].result(10)
        assert {n: f.result(10) for n, f in rest.items() if n != "bad"} == {f"u{i}": f"U{i}" for i in range(10)}
    stored = set(db.read(lambda c: c.execute(select(User.name)).scalars().all()))
    assert stored == {"first"} | {f"u{i}" for i in range(10)}
    # the queued writes were tried together in one transaction; it failed on "bad", so each was written alone
    assert max(len(b) for b in batches) > 1
    assert ["bad"] in batches
    # one generation bump per committed transaction, not per item
    assert db.generation() - gen0 == len([b for b in batches if "bad" not in b])


@pytest.fixture
def pg_url():
    from dashboard_support import pg_schema_url

    yield from pg_schema_url("reconnect")


@pytest.mark.postgres
def test_reads_survive_the_server_dropping_every_connection(pg_url):
    """PostgreSQL reads skip the per-checkout ping (a round trip per lookup): a dropped connection is
    retried once, fresh, instead of failing the request."""
    from sqlalchemy import create_engine, text

    db = open_database(pg_url)
    try:
        gen = db.generation()
        admin = create_engine(pg_url)
        for _ in range(3):  # the pooled connection, killed by the server as a restart would
            pid = db.read(lambda c: c.execute(text("SELECT pg_backend_pid()")).scalar())
            with admin.connect() as conn:
                assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
            assert db.generation() == gen
            assert db.read(lambda c: c.execute(text("SELECT pg_backend_pid()")).scalar()) != pid
        admin.dispose()
    finally:
        db.dispose()
