"""The reproduction fleet (docs/fleet.md): procrastinate jobs on the dashboard's PostgreSQL, real worker processes.

Every test runs on a database of its own on the test PostgreSQL server. The queue-mechanics tests run
real ``dashboard worker`` processes (:func:`cotk_repro.dashboard.worker.run_worker`) with a stand-in
reproducer that returns at once instead of running Docker (a test double, see ``fleet_support.py``);
``test_fleet_docker.py`` runs the real Docker runtime end to end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import run_cli
from dashboard_support import fake_hash, make_record
from fleet_support import own_database, private_postgresql, start_worker, stop, wait_for
from signing_support import make_key
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from cotk_repro.core.signing import key_from_path, sign_record
from cotk_repro.dashboard import queue, store

pytest.importorskip(
    "procrastinate", reason="the fleet's queue needs procrastinate (pip install 'cotk-repro[postgres]')"
)
from cotk_repro.dashboard.auth import Principal, add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.identity import add_key


class Fleet:
    """A queue-enabled dashboard database with an author (alice), another uploader (bob) and the pool (verifier)."""

    def __init__(self, url: str, tmp: Path, *, queue_on: bool = True):
        self.url, self.tmp = url, tmp
        self.db = open_database(url)
        if queue_on:
            queue.start(self.db)
        self.keys, self.users, self.tokens = {}, {}, {}
        for name in ("alice", "bob", "verifier"):
            self.tokens[name] = add_user(self.db, name)[0]
            self.keys[name] = make_key(tmp / f"{name}-keys")
            add_key(self.db, name, self.keys[name].with_suffix(".pub").read_text())
            uid = self.db.read(
                lambda c, n=name: c.execute(text("SELECT id FROM users WHERE name = :n"), {"n": n}).scalar()
            )
            self.users[name] = Principal(user_id=uid, name=name)
        self.trace = tmp / "trace.txt"
        self.trace.touch()

    def record(self, name: str = "proj", value: float = 0.25) -> dict:
        return make_record({"bleu": (value, fake_hash("refs"))}, name=name)

    def signed(self, record: dict, signer: str = "alice") -> dict:
        return {"record": record, "signature": sign_record(record, key_from_path(self.keys[signer], "test"))}

    def upload(self, record: dict, uploader: str = "alice", signer: str = "alice") -> bool:
        return store.store_record(self.db, self.signed(record, signer), self.users[uploader])[0]

    def sql(self, query: str, **params):
        return self.db.read(lambda c: c.execute(text(query), params).all())

    def jobs_of(self, record_id: str) -> int:
        """The record's jobs in the pool's queue (the volunteers' queue holds K more of its own, issue 47)."""
        return self.sql(
            "SELECT count(*) FROM procrastinate_jobs WHERE args->>'record_id' = :r AND queue_name = :q",
            r=record_id,
            q=queue.QUEUE,
        )[0][0]

    def state(self, record_id: str) -> dict:
        return self.db.read(lambda c: queue.record_state(c, record_id))

    def pool_reproductions(self, record_id: str) -> list[dict]:
        return [r for r in store.get_record(self.db, record_id)["reproductions"] if r["user"] == "verifier"]

    def worker(self, **kwargs) -> subprocess.Popen:
        proc = start_worker(self.url, self.keys["verifier"], trace=self.trace, log=self.tmp / "workers.log", **kwargs)
        self.procs.append(proc)
        return proc

    def starts(self) -> list[tuple[int, str]]:
        return [
            (int(p), r)
            for p, r, what in (line.split() for line in self.trace.read_text().splitlines())
            if what == "start"
        ]

    procs: list


@pytest.fixture
def fleet(tmp_path):
    with own_database("t") as url:
        f = Fleet(url, tmp_path)
        f.procs = []
        try:
            yield f
        finally:
            for proc in f.procs:
                stop(proc, signal.SIGKILL, timeout=10)
            f.db.dispose()


def _log(fleet) -> str:
    path = fleet.tmp / "workers.log"
    return path.read_text(errors="replace")[-4000:] if path.exists() else ""


# -- the SPEC interface: refusals in one sentence ----------------------------------------------------------------
def test_serve_with_the_queue_is_refused_on_sqlite_in_one_sentence(tmp_path):
    db = tmp_path / "dash.sqlite3"
    res = run_cli("dashboard", "serve", "--db", f"sqlite:///{db}", "--reproduce-queue", "--port", "0", timeout=60)
    assert res.returncode == 2, res
    assert "the reproduction queue needs PostgreSQL: " in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    key = make_key(tmp_path / "k")
    res = run_cli("dashboard", "worker", "--db", f"sqlite:///{db}", "--key", str(key), timeout=60)
    assert res.returncode == 2 and "the reproduction queue needs PostgreSQL: " in res.stderr, res


def test_worker_refuses_a_key_that_cannot_sign(fleet, tmp_path):
    locked = make_key(tmp_path / "locked", passphrase="secret")
    add_key(fleet.db, "verifier", locked.with_suffix(".pub").read_text())
    res = run_cli("dashboard", "worker", "--db", fleet.url, "--key", str(locked), timeout=60, env={"SSH_AUTH_SOCK": ""})
    assert res.returncode == 2 and "the pool's key cannot sign" in res.stderr, res


def test_worker_refuses_a_key_nobody_registered(fleet, tmp_path):
    stranger = make_key(tmp_path / "stranger")
    res = run_cli("dashboard", "worker", "--db", fleet.url, "--key", str(stranger), timeout=60)
    assert res.returncode == 2, res
    assert "is not registered on this dashboard" in res.stderr and "Traceback" not in res.stderr


# -- enqueue: exactly one job per record ----------------------------------------------------------------------------
def test_every_record_gets_one_job_and_a_duplicate_or_mirror_none(fleet):
    rec = fleet.record("dup")
    assert fleet.upload(rec) is True
    assert fleet.upload(rec) is False  # the same record again
    assert fleet.upload(rec, uploader="bob", signer="alice") is False  # a mirror of it
    assert fleet.jobs_of(rec["id"]) == 1
    # the same new record uploaded by 8 threads at once (through the group commit): one record, one job
    rec2 = fleet.record("race")
    results = []
    threads = [threading.Thread(target=lambda: results.append(fleet.upload(rec2))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False] * 7 + [True]
    assert fleet.jobs_of(rec2["id"]) == 1
    # a mirror that brings a record nobody stored yet creates it, and its one job
    rec3 = fleet.record("mirrored-first")
    assert fleet.upload(rec3, uploader="bob", signer="alice") is True
    assert fleet.jobs_of(rec3["id"]) == 1
    rows = fleet.sql(
        "SELECT j.queue_name, j.lock, j.queueing_lock, j.status::text FROM procrastinate_jobs j "
        "JOIN cotk_repro_reproduce_jobs m ON m.job_id = j.id WHERE m.record_id = :r",
        r=rec3["id"],
    )
    assert rows == [(queue.QUEUE, None, rec3["id"], "todo")]
    # a second job for a record is refused by the database itself, whatever code path tries it
    with pytest.raises(IntegrityError):  # procrastinate's unique queueing_lock
        fleet.db.write(lambda conn: queue.enqueue(conn, [rec3["id"]]))
    assert fleet.jobs_of(rec3["id"]) == 1


def test_serve_with_the_queue_enqueues_every_http_upload(fleet):
    """`dashboard serve --reproduce-queue` with 2 server processes (the settings travel by environment)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "dashboard",
            "serve",
            "--db",
            fleet.url,
            "--reproduce-queue",
            "--port",
            "0",
            "--workers",
            "2",
            "--no-access-log",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://"), proc.stderr.read() if proc.poll() is not None else url

        def post(record):
            req = urllib.request.Request(
                url + "/api/v1/records",
                data=json.dumps(fleet.signed(record)).encode(),
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {fleet.tokens['alice']}"},
            )
            return urllib.request.urlopen(req, timeout=30).status

        wait_for(lambda: _answers(url + "/api/v1/health"), 60, what="the server")
        recs = [fleet.record(f"http-{i}") for i in range(6)]
        assert [post(r) for r in recs] == [201] * 6
        assert [post(r) for r in recs[:3]] == [200] * 3  # duplicates: no new job
        assert [fleet.jobs_of(r["id"]) for r in recs] == [1] * 6
        counts = json.loads(urllib.request.urlopen(url + "/api/v1/queue", timeout=30).read())
        assert counts["enabled"] is True and counts["pending"] == 6 and counts["oldest_pending_age_s"] >= 0
    finally:
        stop(proc, signal.SIGTERM)


def _answers(url: str) -> bool:
    try:
        return urllib.request.urlopen(url, timeout=5).status == 200
    except OSError:
        return False


CRASH = r"""
import os, sys, json
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.record_writes import PendingRecord, write_records
db = open_database(sys.argv[1], migrate=False)
item = PendingRecord(**json.loads(sys.argv[2]))
def tx(conn):
    write_records(conn, [item])          # the record is written in this transaction...
    sys.stdout.write("written\n"); sys.stdout.flush()
    os._exit(9)                          # ...and the process dies before the enqueue and the commit
db.write(tx)
"""


def test_a_crash_between_the_record_write_and_the_enqueue_leaves_neither(fleet):
    rec = fleet.record("crash")
    item = {
        "record_id": rec["id"],
        "task": "lm",
        "dataset": "coco",
        "project_name": "crash",
        "status": "ok",
        "body": store.dumps(rec),
        "results": [["bleu", 0.25, fake_hash("refs")]],
        "owner_id": fleet.users["alice"].user_id,
        "uploader_id": fleet.users["alice"].user_id,
        "signature": None,
        "fingerprint": None,
    }
    proc = subprocess.run(
        [sys.executable, "-c", CRASH, fleet.url, json.dumps(item)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert proc.returncode == 9 and "written" in proc.stdout, proc.stderr
    assert fleet.sql("SELECT count(*) FROM records WHERE record_id = :r", r=rec["id"])[0][0] == 0
    assert fleet.jobs_of(rec["id"]) == 0
    # the enqueue itself failing (here: made to fail) rolls the record back with it
    original = queue.enqueue

    def failing(conn, rids):
        raise RuntimeError("enqueue failed")

    queue.enqueue = failing
    try:
        with pytest.raises(RuntimeError):
            fleet.upload(rec)
    finally:
        queue.enqueue = original
    assert fleet.sql("SELECT count(*) FROM records WHERE record_id = :r", r=rec["id"])[0][0] == 0
    # the client's retry stores both
    assert fleet.upload(rec) is True
    assert fleet.jobs_of(rec["id"]) == 1


def test_turning_the_queue_on_gives_every_earlier_record_one_job(tmp_path):
    with own_database("backfill") as url:
        f = Fleet(url, tmp_path, queue_on=False)
        try:
            recs = [f.record(f"early-{i}") for i in range(3)]
            for r in recs:
                f.upload(r)
            assert queue.start(f.db) == 3
            assert queue.start(f.db) == 0  # twice: nothing more
            assert [f.jobs_of(r["id"]) for r in recs] == [1, 1, 1]
        finally:
            f.db.dispose()


# -- workers ------------------------------------------------------------------------------------------------------
def test_two_workers_verify_every_record_once_and_the_dashboard_shows_it(fleet):
    from cotk_repro.dashboard.server import start_in_thread

    recs = [fleet.record("sleep-0.2", value=0.1 + i / 100) for i in range(8)]
    differs, cannot = fleet.record("differs"), fleet.record("cannot-run")
    for r in [*recs, differs, cannot]:
        fleet.upload(r)
    w1, w2 = fleet.worker(max_attempts=2), fleet.worker(max_attempts=2)
    c = wait_for(
        lambda: (x := queue.counts(fleet.db))["done"] + x["failed"] == 10 and x,
        90,
        what=f"10 jobs finished\n{_log(fleet)}",
    )
    assert (c["done"], c["failed"], c["pending"], c["running"]) == (9, 1, 0, 0)
    for r in recs:
        pool = fleet.pool_reproductions(r["id"])
        assert [(p["verdict"]["verdict"], p["signed"], p["superseded"]) for p in pool] == [("reproduced", True, False)]
    assert len({pid for pid, _ in fleet.starts()}) == 2, "both workers took jobs"
    assert sorted(rid for _, rid in fleet.starts() if rid != cannot["id"]) == sorted(r["id"] for r in [*recs, differs])
    assert fleet.state(differs["id"])["state"] == "done"
    assert fleet.pool_reproductions(differs["id"])[0]["verdict"]["verdict"] == "not reproduced"
    # the reason words each metric as reproduce does: the stand-in's rerun halves bleu
    assert fleet.state(differs["id"])["reason"].startswith(
        "not reproduced: the pool's rerun differs from the record (differs: bleu (moved by"
    ), fleet.state(differs["id"])

    url, stop_server = start_in_thread(fleet.url, reproduce_queue=True, migrate=False)
    try:
        get = lambda path: urllib.request.urlopen(url + path, timeout=30).read().decode()  # noqa: E731
        counts = json.loads(get("/api/v1/queue"))
        assert {k: counts[k] for k in ("pending", "running", "done", "failed")} == {
            "pending": 0,
            "running": 0,
            "done": 9,
            "failed": 1,
        }
        assert all(isinstance(counts[k], int) for k in ("pending", "running", "done", "failed"))
        api = json.loads(get(f"/api/v1/records/{recs[0]['id']}"))
        assert [(r["user"], r["verdict"]["verdict"]) for r in api["reproductions"]] == [("verifier", "reproduced")]
        assert api["verified_by"] == "verifier" and api["queue"]["state"] == "done"
        assert api["reproduced_by"] == 1  # the pool counts once, as one identity
        page = get(f"/records/{recs[0]['id']}")
        assert "verified by verifier" in page and "reproduced by 1" in page and "Reproduction job: done" in page
        failed = get(f"/records/{cannot['id']}")
        assert "Reproduction job: failed" in failed and "verified by" not in failed
        assert "could not run: the entry main.py exited with status 1 (stand-in)" in failed
        nope = get(f"/records/{differs['id']}")
        assert "verified by" not in nope and "not reproduced" in nope
        board = json.loads(get("/api/v1/leaderboard?task=lm&dataset=coco&metric=bleu"))
        verified = {e["id"]: e.get("verified_by") for g in board["groups"] for e in g["entries"]}
        assert verified[recs[0]["id"]] == "verifier" and verified[differs["id"]] is None
        # the pool's reproduction alone verifies: tier 0 (issue 47); its "differs" lowers nothing by itself
        tiers = {e["id"]: (e["tier"], e["verified"]) for g in board["groups"] for e in g["entries"]}
        assert tiers[recs[0]["id"]] == (0, True) and tiers[differs["id"]][1] is False
        assert "verified by verifier" in get("/leaderboard?task=lm&dataset=coco&metric=bleu")
        table = json.loads(get("/api/v1/table?task=lm&dataset=coco"))
        assert {r["id"]: r.get("verified_by") for r in table["rows"]}[recs[0]["id"]] == "verifier"
        assert "verified by verifier" in get("/leaderboard?task=lm&dataset=coco")
    finally:
        stop_server()
    for w in (w1, w2):
        assert stop(w) == 0


def test_a_worker_killed_mid_job_is_replaced_and_the_record_gets_one_pool_reproduction(fleet):
    rec = fleet.record("sleep-6")
    fleet.upload(rec)
    first = fleet.worker(stalled_after=3)
    wait_for(lambda: fleet.starts(), 60, what=f"the first worker to start the job\n{_log(fleet)}")
    assert fleet.state(rec["id"])["state"] == "running"
    first.send_signal(signal.SIGKILL)  # kill -9 mid-job
    first.wait(timeout=10)
    second = fleet.worker(stalled_after=3)
    wait_for(lambda: fleet.state(rec["id"])["state"] == "done", 90, what=f"the job to be finished\n{_log(fleet)}")
    starts = fleet.starts()
    assert [pid for pid, _ in starts] == [first.pid, second.pid]
    state = fleet.state(rec["id"])
    assert state["attempts"] == 2 and state["verified_by"] == "verifier"
    assert len(fleet.pool_reproductions(rec["id"])) == 1
    assert stop(second) == 0


def test_postgresql_restarted_under_load_loses_no_job_and_duplicates_no_reproduction(tmp_path):
    """A server of the test's own (the shared one is not ours to restart), restarted while two workers drain."""
    with private_postgresql() as (url, restart):
        f = Fleet(url, tmp_path)
        f.procs = []
        try:
            recs = [f.record("sleep-0.3", value=0.1 + i / 100) for i in range(24)]
            for r in recs:
                f.upload(r)
            f.worker(stalled_after=4), f.worker(stalled_after=4)
            wait_for(lambda: queue.counts(f.db)["done"] >= 4, 60, what=f"a few jobs done\n{_log(f)}")
            restart()  # every connection dropped, jobs running
            c = wait_for(
                lambda: (x := queue.counts(f.db))["done"] + x["failed"] == len(recs) and x,
                180,
                what=f"every job finished after the restart\n{_log(f)}",
            )
            assert c["done"] == len(recs), _log(f)
            for r in recs:
                assert len(f.pool_reproductions(r["id"])) == 1, r["id"]
            assert all(p.poll() is None for p in f.procs), "the workers survived the restart\n" + _log(f)
        finally:
            for proc in f.procs:
                stop(proc, signal.SIGKILL, timeout=10)
            f.db.dispose()


def test_a_job_that_cannot_run_is_retried_a_bounded_number_of_times_then_failed_with_its_reason(fleet):
    rec = fleet.record("cannot-run")
    fleet.upload(rec)
    w = fleet.worker(max_attempts=3)
    wait_for(lambda: fleet.state(rec["id"])["state"] == "failed", 90, what=f"the job to fail\n{_log(fleet)}")
    time.sleep(1.0)  # no further attempt comes
    assert [r for _, r in fleet.starts()] == [rec["id"]] * 3
    state = fleet.state(rec["id"])
    assert state["attempts"] == 3
    assert state["reason"] == "could not run: the entry main.py exited with status 1 (stand-in)"
    assert fleet.pool_reproductions(rec["id"]) == []
    assert stop(w) == 0


def test_one_attempt_means_no_retry(fleet):
    """procrastinate reads a retry limit of 0 as "no limit": --max-attempts 1 must still mean one run."""
    rec = fleet.record("cannot-run")
    fleet.upload(rec)
    w = fleet.worker(max_attempts=1)
    wait_for(lambda: fleet.state(rec["id"])["state"] == "failed", 60, what=f"the job to fail\n{_log(fleet)}")
    time.sleep(1.5)
    assert [r for _, r in fleet.starts()] == [rec["id"]]
    assert fleet.state(rec["id"])["attempts"] == 1
    assert stop(w) == 0


def test_sigterm_stops_a_worker_after_its_running_job(fleet):
    rec, later = fleet.record("sleep-3"), fleet.record("later")
    fleet.upload(rec)
    w = fleet.worker()
    wait_for(lambda: fleet.starts(), 60, what=f"the job to start\n{_log(fleet)}")
    fleet.upload(later)  # queued while the worker is busy: must stay pending after the stop
    w.send_signal(signal.SIGTERM)
    assert w.wait(timeout=30) == 0
    assert fleet.state(rec["id"])["state"] == "done"
    assert len(fleet.pool_reproductions(rec["id"])) == 1
    assert fleet.state(later["id"])["state"] == "pending"


# -- attacker: a stranger writes the record, and so the git remote a worker fetches -------------------------------
@pytest.mark.parametrize(
    "remote",
    [
        "ext::sh -c touch% {canary}://x",  # git's ext transport runs a command
        "file://{tmp}/private",  # the worker's own disk
        "-oProxyCommand=touch {canary}@host:x",  # an option to git
        "ssh://-oProxyCommand=touch%20{canary}/x",  # an option to ssh
        "https://host/a\n",  # a line break
    ],
)
def test_a_record_naming_a_hostile_git_remote_fails_at_once_and_runs_nothing(fleet, tmp_path, remote):
    from dashboard_support import make_record

    from cotk_repro.dashboard.worker import Permanent, Pool, docker_reproducer, pool_identity

    canary = tmp_path / "canary"
    (tmp_path / "private").mkdir()
    rec = make_record(
        {"bleu": (0.25, fake_hash("refs"))}, name="hostile", remote_url=remote.format(canary=canary, tmp=tmp_path)
    )
    fleet.upload(rec)
    pool = Pool(fleet.db, pool_identity(fleet.db, fleet.keys["verifier"]), docker_reproducer())
    with pytest.raises(Permanent):
        pool.run_job(rec["id"], 1)
    assert not canary.exists()
    reason = fleet.state(rec["id"])["reason"]
    assert reason.startswith("could not run: the record's git remote ") and "\n" not in reason
    assert fleet.pool_reproductions(rec["id"]) == []


@pytest.mark.parametrize("remote", [None, "local:proj"])
def test_a_record_naming_no_fetchable_remote_waits_for_its_publication_and_runs_nothing(fleet, tmp_path, remote):
    """A record made before its project had a remote (None, or only a path on the author's machine): its remote
    comes later, signed, as its publication (publish uploads it right after the record, whose upload queued the
    job); until then the job is retried (bounded), with its reason, and nothing runs."""
    from dashboard_support import make_record

    from cotk_repro.dashboard.worker import Pool, Retryable, docker_reproducer, pool_identity

    rec = make_record({"bleu": (0.25, fake_hash("refs"))}, name="early", remote_url=remote)
    fleet.upload(rec)
    pool = Pool(fleet.db, pool_identity(fleet.db, fleet.keys["verifier"]), docker_reproducer())
    with pytest.raises(Retryable):
        pool.run_job(rec["id"], 1)
    assert "has not arrived" in fleet.state(rec["id"])["reason"]
    assert fleet.pool_reproductions(rec["id"]) == []


def test_a_stored_publication_reaches_the_reproducer_with_the_record_signature(fleet):
    """The remote taken at publish time (verified by the dashboard when it was stored) goes to the reproducer
    with the record's own signature, which the reproducer verifies it against (reproduce/source.py)."""
    from dashboard_support import make_record

    from cotk_repro.core.signing import key_from_path, sign_bytes
    from cotk_repro.dashboard.worker import Pool, Retryable, pool_identity
    from cotk_repro.remote.publication import KIND, NS_PUBLICATION, publication_bytes

    rec = make_record({"bleu": (0.25, fake_hash("refs"))}, name="later", remote_url=None)
    fleet.upload(rec)
    doc = {
        "kind": KIND,
        "record_id": rec["id"],
        "commit": rec["code"]["commit"],
        "remote_url": "git://127.0.0.1:9/alice/later.git",
    }
    body = {
        "publication": doc,
        "signature": sign_bytes(publication_bytes(doc), NS_PUBLICATION, key_from_path(fleet.keys["alice"], "test")),
    }
    store.add_publication(fleet.db, rec["id"], fleet.users["alice"], body)
    seen = []

    def reproducer(record, publication=None, record_signature=None):
        seen.append((record["id"], publication, record_signature))
        raise Retryable("stop here")

    with pytest.raises(Retryable):
        Pool(fleet.db, pool_identity(fleet.db, fleet.keys["verifier"]), reproducer).run_job(rec["id"], 1)
    ((rid, publication, signature),) = seen
    assert rid == rec["id"] and publication == body
    assert signature == store.get_record(fleet.db, rec["id"])["signature"]


def test_plain_git_remotes_are_accepted():
    from cotk_repro.dashboard.worker import check_remote

    for url in (
        "https://github.com/a/b.git",
        "git://127.0.0.1:9418/alice/proj.git",
        "ssh://git@github.com/a/b",
        "git@github.com:a/b.git",
        "https://gitlab.example.org:8443/group/sub/p",
    ):
        assert check_remote(url) == url


def test_the_stalled_job_sweep_takes_only_jobs_of_silent_workers(fleet):
    rec = fleet.record("sweep")
    fleet.upload(rec)

    def run(sql, **p):
        return fleet.db.write(
            lambda c: (
                c.execute(text(sql), p).all() if "RETURNING" in sql or "SELECT" in sql else c.execute(text(sql), p)
            )
        )

    wid = run("INSERT INTO procrastinate_workers (last_heartbeat) VALUES (now()) RETURNING id")[0][0]
    run("UPDATE procrastinate_jobs SET status = 'doing', worker_id = :w", w=wid)
    assert queue.retry_stalled(fleet.db, 5) == []  # a live worker's job stays its own
    run("UPDATE procrastinate_workers SET last_heartbeat = now() - interval '1 minute' WHERE id = :w", w=wid)
    job = fleet.db.read(lambda c: queue.record_state(c, rec["id"]))["job"]
    assert queue.retry_stalled(fleet.db, 5, max_attempts=3) == [(job, "retried")]
    state = fleet.state(rec["id"])
    assert state["state"] == "pending" and state["attempts"] == 1 and "stopped mid-job" in state["reason"]
    assert queue.retry_stalled(fleet.db, 5, max_attempts=3) == []  # once
    assert fleet.sql("SELECT attempts FROM procrastinate_jobs WHERE id = :j", j=job) == [(1,)]
    # its second run dies too, then its third: the third death is its last attempt, and it fails with why
    for attempt, outcome in ((2, "retried"), (3, "failed")):
        run("UPDATE procrastinate_jobs SET status = 'doing', worker_id = :w", w=wid)
        assert queue.retry_stalled(fleet.db, 5, max_attempts=3) == [(job, outcome)]
        assert fleet.sql("SELECT attempts FROM procrastinate_jobs WHERE id = :j", j=job) == [(attempt,)]
    state = fleet.state(rec["id"])
    assert state["state"] == "failed" and state["attempts"] == 3
    assert state["reason"].startswith("could not run: the worker running it stopped mid-job")
    assert state["reason"].endswith("on attempt 3 of 3: given up")


def _supervise(fleet, rec_id: str, *, kill_from_outside: bool, timeout: float = 120.0) -> list[int]:
    """What a supervisor (systemd, Kubernetes) does: a worker that died is started again, at once. With
    ``kill_from_outside``, each worker that starts the job is also sent SIGKILL mid-job (``kill -9``). Runs until
    the record's job is finished; the pids of the workers that died."""
    deadline = time.monotonic() + timeout
    dead: list[int] = []
    current = fleet.worker(max_attempts=3, stalled_after=2)
    while fleet.state(rec_id)["state"] not in ("failed", "done"):
        assert time.monotonic() < deadline, f"the job never ended\n{_log(fleet)}"
        if kill_from_outside and current.poll() is None and current.pid in {pid for pid, _ in fleet.starts()}:
            current.send_signal(signal.SIGKILL)  # kill -9 mid-job
        if current.poll() is not None:
            current.wait()
            assert current.returncode == -signal.SIGKILL, current.returncode
            dead.append(current.pid)
            current = fleet.worker(max_attempts=3, stalled_after=2)
        time.sleep(0.1)
    time.sleep(3)  # long enough for another sweep and another fetch: nothing more comes
    assert stop(current) == 0, _log(fleet)
    return dead


@pytest.mark.parametrize("kill_from_outside", [False, True], ids=["job-kills-its-worker", "kill-9-mid-job"])
def test_a_job_whose_worker_dies_every_time_fails_with_its_reason_after_its_attempts(fleet, kill_from_outside):
    """A job that kills its worker (out of memory) went round the fleet for ever: the supervisor restarted the
    worker, the stalled-job sweep put the job back without counting, 15 runs in 2 minutes with --max-attempts 3.
    Each death is an attempt; after the third the job fails, with the reason, and no worker takes it again."""
    rec = fleet.record("sleep-600" if kill_from_outside else "kill-worker")
    fleet.upload(rec)
    dead = _supervise(fleet, rec["id"], kill_from_outside=kill_from_outside)
    starts = fleet.starts()
    assert [r for _, r in starts] == [rec["id"]] * 3, starts
    assert [pid for pid, _ in starts] == dead  # each run in a worker of its own, each worker killed in it
    state = fleet.state(rec["id"])
    assert state["state"] == "failed" and state["attempts"] == 3
    assert state["reason"].startswith("could not run: the worker running it stopped mid-job (killed, out of memory")
    assert state["reason"].endswith("on attempt 3 of 3: given up")
    assert fleet.pool_reproductions(rec["id"]) == []
    assert queue.counts(fleet.db)["failed"] == 1


def test_a_job_that_trips_an_unexpected_exception_fails_with_a_reason_never_none(fleet):
    """A result nested 200,000 deep made the parser raise RecursionError, which no handler expected: the job
    failed with the reason None. Every failure now has its sentence."""
    rec = fleet.record("deep")
    fleet.upload(rec)
    w = fleet.worker(max_attempts=2)
    wait_for(lambda: fleet.state(rec["id"])["state"] == "failed", 90, what=f"the job to fail\n{_log(fleet)}")
    state = fleet.state(rec["id"])
    assert state["attempts"] == 2 and [r for _, r in fleet.starts()] == [rec["id"]] * 2
    assert state["reason"].startswith("could not run: unexpected RecursionError: "), state
    assert "\n" not in state["reason"] and len(state["reason"]) <= 300
    assert stop(w) == 0
    # a job failed by hand (procrastinate's own CLI, or SQL) still shows a reason, not None
    other = fleet.record("by-hand")
    fleet.upload(other)
    fleet.db.write(
        lambda c: c.execute(
            text(
                "UPDATE procrastinate_jobs SET status = 'cancelled' WHERE id = "
                "(SELECT job_id FROM cotk_repro_reproduce_jobs WHERE record_id = :r)"
            ),
            {"r": other["id"]},
        )
    )
    assert fleet.state(other["id"])["reason"] == "the job was cancelled without a reason recorded"


def test_a_result_nested_too_deeply_is_one_sentence_from_the_parser():
    from types import SimpleNamespace

    from cotk_repro.reproduce import ReproduceError
    from cotk_repro.reproduce.job import parse_result

    job = SimpleNamespace(result_rel="result.json", command={"entry": "main.py"})
    with pytest.raises(ReproduceError) as caught:
        parse_result(b"[" * 200_000 + b"]" * 200_000, job, "the rerun's result.json")
    # the parse budget refuses it before json.loads (core/jsonbudget: depth 64), in one sentence
    assert caught.value.message == "the rerun's result file result.json nests deeper than 64 levels"


def _publish_late(fleet, rec: dict, remote_url: str = "git://127.0.0.1:9/alice/late.git") -> dict:
    from cotk_repro.core.signing import sign_bytes
    from cotk_repro.remote.publication import KIND, NS_PUBLICATION, publication_bytes

    doc = {"kind": KIND, "record_id": rec["id"], "commit": rec["code"]["commit"], "remote_url": remote_url}
    body = {
        "publication": doc,
        "signature": sign_bytes(publication_bytes(doc), NS_PUBLICATION, key_from_path(fleet.keys["alice"], "test")),
    }
    return store.add_publication(fleet.db, rec["id"], fleet.users["alice"], body)


def _fail_by_hand(fleet, job: int, reason: str) -> None:
    def tx(c):
        c.execute(text("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = :j"), {"j": job})
        c.execute(
            text("UPDATE cotk_repro_reproduce_jobs SET reproduction_pk = NULL, reason = :r WHERE job_id = :j"),
            {"j": job, "r": reason},
        )

    fleet.db.write(tx)


def test_a_publication_that_arrives_after_its_job_failed_waiting_for_it_queues_the_job_again_once(fleet):
    """`publish` uploads the record, then its publication (the remote): a slow second upload, or one retried
    later, came after the job had used its attempts waiting, and the record stayed failed for good."""
    rec = make_record({"bleu": (0.25, fake_hash("refs"))}, name="late", remote_url=None)
    fleet.upload(rec)
    w = fleet.worker(max_attempts=2)
    wait_for(lambda: fleet.state(rec["id"])["state"] == "failed", 60, what=f"the job to fail\n{_log(fleet)}")
    state = fleet.state(rec["id"])
    assert state["attempts"] == 2 and queue.AWAITING_PUBLICATION in state["reason"]
    assert _publish_late(fleet, rec)["created"] is True
    wait_for(lambda: fleet.state(rec["id"])["state"] == "done", 60, what=f"the job to run again\n{_log(fleet)}")
    assert [r for _, r in fleet.starts()] == [rec["id"]] * 3
    assert fleet.state(rec["id"])["verified_by"] == "verifier"
    assert len(fleet.pool_reproductions(rec["id"])) == 1
    assert stop(w) == 0
    # once: had it failed waiting again, another publication would not queue it a second time
    job = fleet.state(rec["id"])["job"]
    _fail_by_hand(fleet, job, "could not run: " + queue.AWAITING_PUBLICATION)
    assert _publish_late(fleet, rec, "git://127.0.0.1:9/alice/late-again.git")["created"] is True
    assert fleet.state(rec["id"])["state"] == "failed"


def test_a_publication_for_a_job_that_failed_for_another_reason_queues_nothing(fleet):
    rec = make_record({"bleu": (0.25, fake_hash("refs"))}, name="cannot-run", remote_url=None)
    fleet.upload(rec)
    job = fleet.state(rec["id"])["job"]
    _fail_by_hand(fleet, job, "could not run: out of disk")
    assert _publish_late(fleet, rec)["created"] is True
    assert fleet.state(rec["id"])["state"] == "failed"
