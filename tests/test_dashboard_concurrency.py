"""50 clients upload 1,000 distinct records at once over real HTTP (plus racing duplicates):
every record is stored exactly once, none is lost, no 5xx. SQLite (WAL) and PostgreSQL."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from dashboard_support import fake_hash, make_record, pg_schema_url
from sqlalchemy import func, select

from cotk_repro.dashboard import leaderboard as lb
from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.models import Record, Result
from cotk_repro.dashboard.server import start_in_thread

pytestmark = pytest.mark.slow

CLIENTS = 50
RECORDS = 1000
DUPLICATES = 100  # of those, uploaded by two clients at the same moment


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'conc.sqlite3'}"
    else:
        yield from pg_schema_url("conc")


def test_fifty_clients_thousand_records_each_stored_once(db_url):
    db = open_database(db_url)
    tokens = [add_user(db, f"user{i}")[0] for i in range(5)]
    url, stop = start_in_thread(
        db_url, allow_unsigned=True
    )  # default settings: the default rate limit must not get in the way
    records = [
        make_record(
            {"bleu": (i / RECORDS, fake_hash(f"refs-{i % 3}")), "distinct-1": (0.5, None)},
            name=f"sys{i}",
            task="concurrency",
            dataset="d",
            nonce=f"n{i}",
        )
        for i in range(RECORDS)
    ]
    assert len({r["id"] for r in records}) == RECORDS
    jobs = [(i, r) for i, r in enumerate(records)] + [(RECORDS + i, records[i]) for i in range(DUPLICATES)]
    local = threading.local()
    statuses: list[tuple[str, int]] = []
    lock = threading.Lock()

    def upload(job):
        n, rec = job
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
        r = session.post(
            url + "/api/v1/records",
            json=rec,
            timeout=120,
            headers={"Authorization": f"Bearer {tokens[n % len(tokens)]}"},
        )
        with lock:
            statuses.append((rec["id"], r.status_code))

    # interleave each duplicate right next to its original so that the two race
    order = []
    for i in range(RECORDS):
        order.append(jobs[i])
        if i < DUPLICATES:
            order.append(jobs[RECORDS + i])
    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(upload, order))
    finally:
        stop()

    codes = [c for _, c in statuses]
    assert len(codes) == RECORDS + DUPLICATES
    assert not [c for c in codes if c >= 500], "server errors under load"
    assert set(codes) <= {200, 201}, sorted(set(codes))
    assert codes.count(201) == RECORDS and codes.count(200) == DUPLICATES
    created = {rid for rid, c in statuses if c == 201}
    assert created == {r["id"] for r in records}
    n_records = db.read(lambda c: c.execute(select(func.count()).select_from(Record)).scalar())
    n_results = db.read(lambda c: c.execute(select(func.count()).select_from(Result)).scalar())
    stored = set(db.read(lambda c: [x[0] for x in c.execute(select(Record.record_id)).all()]))
    # the leaderboard's group counters, updated by concurrent upserts, add up exactly
    sizes = dict(db.read(lambda c: lb.group_sizes(c, "concurrency", "d", "bleu")))
    assert sizes == {fake_hash(f"refs-{k}"): len(range(k, RECORDS, 3)) for k in range(3)}
    assert dict(db.read(lambda c: lb.group_sizes(c, "concurrency", "d", "distinct-1"))) == {None: RECORDS}
    db.dispose()
    assert n_records == RECORDS and stored == created
    assert n_results == 2 * RECORDS
