"""Volunteer reproducers over HTTP (issue 47): leases of procrastinate jobs on a real loopback dashboard with
its own PostgreSQL database, ``--verified-by 2``.

The verdicts here are made without Docker: each volunteer runs the real lease protocol
(:func:`cotk_repro.dashboard.volunteer.run_volunteer`: lease, heartbeats, the shared
:func:`~cotk_repro.dashboard.worker.reproduce_one`, signing with the volunteer's key, the verdict for its
lease) with a *test double* reproducer injected in-process (``reproducer=``: fleet_support's stand-in, which
answers at once from the record's own values, or a liar halving them). The Docker reproduction every volunteer
makes by default is the pool's own :func:`~cotk_repro.dashboard.worker.docker_reproducer`: a volunteer doing it
for real, with the CLI, is in tests/test_fleet_docker.py. The killed volunteer is a real process (``kill -9``)."""

from __future__ import annotations

import copy
import signal
import subprocess
import sys
import time

import pytest
import requests
from dashboard_support import fake_hash, make_record
from fleet_support import own_database, start_volunteer, stub_reproducer, wait_for
from signing_support import make_key
from sqlalchemy import text

from cotk_repro.core.signing import key_from_path, sign_record, sign_reproduction
from cotk_repro.dashboard import leases
from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.identity import add_key
from cotk_repro.dashboard.queue import retry_stalled
from cotk_repro.dashboard.server import start_in_thread
from cotk_repro.dashboard.volunteer import run_volunteer

# one module's tests share a dashboard (they run in order on one xdist worker: each settles its own records)
pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("volunteers")]
API = "/api/v1"
H = fake_hash("volunteers")
LEASE_SECONDS = 2.0


def honest(record, publication=None, record_signature=None):
    """The test double of an honest volunteer: the record's own values, at once (whatever its project name)."""
    return stub_reproducer({**copy.deepcopy(record), "project": {**record["project"], "name": "agree"}})


def liar(record, publication=None, record_signature=None):
    """The test double of a lying volunteer: every rerun value halved ("differs")."""
    return stub_reproducer({**copy.deepcopy(record), "project": {**record["project"], "name": "differs"}})


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with own_database("vol") as db_url:
        url, stop = start_in_thread(
            db_url, reproduce_queue=True, verified_by=2, lease_seconds=LEASE_SECONDS, rate_limit=None
        )
        db = open_database(db_url, migrate=False)
        keys = tmp_path_factory.mktemp("vol-keys")
        users = {}
        for name in ("sam", "v1", "v2", "v3", "liar", "liar2", "pool", "w1", "w2", "dead", "greedy"):
            token = add_user(db, name)[0]
            key = make_key(keys / name)
            add_key(db, name, key.with_suffix(".pub").read_text())
            users[name] = {"token": token, "key": key}
        try:
            yield {"url": url, "db": db, "users": users, "tmp": keys}
        finally:
            stop()
            db.dispose()


def publish(site, name: str, value: float = 0.4) -> dict:
    rec = make_record({"bleu": (value, H)}, name=name, task="vol", dataset=name)
    sam = site["users"]["sam"]
    r = requests.post(
        site["url"] + API + "/records",
        json={"record": rec, "signature": sign_record(rec, key_from_path(sam["key"], "t"))},
        headers={"Authorization": f"Bearer {sam['token']}"},
        timeout=30,
    )
    assert r.status_code == 201, r.text
    return rec


def lend(site, user: str, reproducer=honest) -> int:
    """One volunteer's ``--once`` run, in-process: 1 when it sent a verdict, 0 when no lease was offered."""
    u = site["users"][user]
    return run_volunteer(site["url"], u["token"], u["key"], once=True, reproducer=reproducer)


def entry(site, rec: dict) -> dict:
    board = requests.get(
        site["url"] + API + "/leaderboard",
        params={"task": "vol", "dataset": rec["project"]["dataset"], "metric": "bleu"},
        timeout=30,
    ).json()
    [e] = board["groups"][0]["entries"]
    return e


def test_two_volunteers_verify_a_record_the_signer_is_never_leased(site):
    rec = publish(site, "two")
    assert (entry(site, rec)["tier"], entry(site, rec)["verified"]) == (1, False)
    assert lend(site, "sam") == 0  # the signer is offered nothing: the only record is its own
    assert lend(site, "v1") == 1
    assert (entry(site, rec)["tier"], entry(site, rec)["standing"]) == (1, "unverified")  # one of K = 2
    assert lend(site, "v1") == 0  # never the same volunteer twice
    assert lend(site, "v2") == 1
    e = entry(site, rec)
    assert (e["tier"], e["verified"], e["standing"]) == (0, True, "verified")
    assert lend(site, "v3") == 0  # settled: its waiting jobs were cancelled
    table = requests.get(site["url"] + API + "/table", params={"task": "vol", "dataset": "two"}, timeout=30).json()
    assert table["rows"][0]["cells"]["bleu"]["verified"] is True
    got = requests.get(site["url"] + API + "/records/" + rec["id"], timeout=30).json()
    assert sorted(r["user"] for r in got["reproductions"]) == ["v1", "v2"] and got["verified"] is True


def test_a_liar_makes_the_record_disputed_and_is_outvoted(site):
    rec = publish(site, "liar")
    assert lend(site, "v1") == 1
    assert lend(site, "liar", reproducer=liar) == 1
    e = entry(site, rec)
    assert (e["tier"], e["standing"], e["verified"]) == (2, "disputed", False)  # disputed ranks with the rest
    page = requests.get(site["url"] + "/records/" + rec["id"], timeout=30).text
    assert 'id="tier-badge"' in page and ">disputed<" in page
    assert lend(site, "v2") == 1  # 2 against 1: still no majority of K + 1 = 3
    assert entry(site, rec)["standing"] == "disputed"
    assert lend(site, "v3") == 1  # more leases were given while disputed
    e = entry(site, rec)
    assert (e["tier"], e["standing"]) == (0, "verified")
    got = requests.get(site["url"] + API + "/records/" + rec["id"], timeout=30).json()
    verdicts = sorted((r["user"], r["verdict"]["verdict"]) for r in got["reproductions"])
    assert verdicts == [("liar", "not reproduced"), ("v1", "reproduced"), ("v2", "reproduced"), ("v3", "reproduced")]


def test_one_strangers_differs_never_removes_the_pools_mark(site):
    from cotk_repro.dashboard import store
    from cotk_repro.dashboard.auth import Principal

    rec = publish(site, "pooled")
    pool = site["users"]["pool"]
    verdict = honest(rec)
    uid = site["db"].read(lambda c: c.execute(text("SELECT id FROM users WHERE name = 'pool'")).scalar())
    # what the pool's worker attaches (dashboard.worker.Pool: the same call, pool=True)
    store.add_reproduction(
        site["db"],
        rec["id"],
        Principal(user_id=uid, name="pool"),
        {"reproduction": verdict, "signature": sign_reproduction(verdict, key_from_path(pool["key"], "t"))},
        pool=True,
    )
    assert (entry(site, rec)["tier"], entry(site, rec)["standing"]) == (0, "verified")
    assert lend(site, "liar", reproducer=liar) == 0  # settled: no job is offered for it
    # a stranger who sends a "differs" anyway (the reproductions endpoint takes anyone's signed verdict)
    lie = liar(rec)
    r = _post(site, f"/records/{rec['id']}/reproductions", "liar", _signed(site, "liar", lie))
    assert r.status_code == 201 and r.json()["verdict"] == "not reproduced" and r.json()["standing"] == "verified"
    assert entry(site, rec)["tier"] == 0  # one stranger alone never removes the pool's mark
    r = _post(site, f"/records/{rec['id']}/reproductions", "liar2", _signed(site, "liar2", lie))
    assert r.json()["standing"] == "disputed" and entry(site, rec)["tier"] == 2  # two do: more evidence is asked
    assert lend(site, "v1") == 1 and lend(site, "v2") == 1  # leased again while disputed
    assert entry(site, rec)["standing"] == "verified"  # pool + 2 against 2: a majority of K + 1 = 3


def _post(site, path: str, user: str, body=None):
    return requests.post(
        site["url"] + API + path,
        json=body if body is not None else {},
        headers={"Authorization": f"Bearer {site['users'][user]['token']}"},
        timeout=30,
    )


def _signed(site, user: str, verdict: dict) -> dict:
    return {
        "reproduction": verdict,
        "signature": sign_reproduction(verdict, key_from_path(site["users"][user]["key"], "t")),
    }


def test_a_killed_volunteers_lease_expires_another_finishes_and_stale_verdicts_are_refused(site, tmp_path):
    rec = publish(site, "sleep-60")  # the stand-in sleeps a minute on it: the volunteer is killed mid-job
    proc = start_volunteer(
        site["url"], site["users"]["dead"]["token"], site["users"]["dead"]["key"], trace=tmp_path / "t"
    )
    try:
        lease_id = wait_for(
            lambda: site["db"].read(
                lambda c: c.execute(
                    text("SELECT l.id FROM cotk_repro_leases l JOIN users u ON u.id = l.user_id WHERE u.name = 'dead'")
                ).scalar()
            ),
            timeout=60,
            what="the volunteer's lease",
        )
        wait_for(lambda: (tmp_path / "t").exists(), timeout=30, what="the reproduction to start")
        time.sleep(LEASE_SECONDS + 1)  # longer than a lease lives: the volunteer's heartbeats keep it, so the
        assert retry_stalled(site["db"], LEASE_SECONDS, queue=leases.QUEUE) == []  # sweep puts nothing back
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    time.sleep(LEASE_SECONDS + 0.5)  # no heartbeat: the lease expires
    # the dead volunteer's verdict, arriving late, is refused and stores nothing
    stale = honest(rec)
    r = _post(site, f"/leases/{lease_id}/verdict", "dead", _signed(site, "dead", stale))
    assert r.status_code == 409 and "expired" in r.json()["detail"], r.text
    # another volunteer gets the job back and finishes it; a second one verifies
    taken = _post(site, "/leases", "w1")
    assert taken.status_code == 201, taken.text
    lease = taken.json()
    assert lease["record_id"] == rec["id"]
    # what a verdict must be: for this lease's record, from its holder, signed by them, once
    other = honest(rec) | {"record_id": "sha256:" + "0" * 64}
    r = _post(site, f"/leases/{lease['lease']}/verdict", "w1", _signed(site, "w1", other))
    assert r.status_code == 422 and "lease" in r.json()["detail"]
    r = _post(site, f"/leases/{lease['lease']}/verdict", "w2", _signed(site, "w2", honest(rec)))
    assert r.status_code == 403 and "not w2's" in r.json()["detail"]
    r = _post(site, f"/leases/{lease['lease']}/verdict", "w1", honest(rec))
    assert r.status_code == 403 and "signed" in r.json()["detail"]
    r = _post(site, f"/leases/{lease['lease']}/verdict", "w1", _signed(site, "w2", honest(rec)))
    assert r.status_code == 403, r.text  # signed by another user's key
    assert _post(site, f"/leases/{lease['lease']}/heartbeat", "w1").status_code == 200
    good = _signed(site, "w1", honest(rec))
    r = _post(site, f"/leases/{lease['lease']}/verdict", "w1", good)
    assert r.status_code == 201 and r.json()["standing"] == "unverified", r.text
    r = _post(site, f"/leases/{lease['lease']}/verdict", "w1", good)  # a replay
    assert r.status_code == 409 and "ended" in r.json()["detail"]
    assert lend(site, "w2") == 1
    assert entry(site, rec)["tier"] == 0
    got = requests.get(site["url"] + API + "/records/" + rec["id"], timeout=30).json()
    assert sorted(r["user"] for r in got["reproductions"]) == ["w1", "w2"]  # nothing of the dead one's


def test_the_cli_volunteer_once_exits_0_when_no_lease_is_offered_and_refuses_a_bad_token(site):
    u = site["users"]["sam"]
    base = [sys.executable, "-m", "cotk_repro", "dashboard", "worker", "--url", site["url"], "--key", str(u["key"])]
    bad = subprocess.run([*base, "--token", "nope", "--once"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "token" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    both = subprocess.run([*base, "--db", "postgresql+psycopg://x@h/d"], capture_output=True, text=True, timeout=120)
    assert both.returncode == 2 and "one of them" in both.stderr, both.stderr
    from cotk_repro.reproduce import ReproduceError
    from cotk_repro.reproduce.engine import connect

    try:  # the volunteer asks the Docker engine before it takes a lease (it reproduces nothing here)
        connect(timeout=10)
    except ReproduceError as exc:
        pytest.skip(f"no Docker engine: {exc.message}")
    none = subprocess.run([*base, "--token", u["token"], "--once"], capture_output=True, text=True, timeout=120)
    assert none.returncode == 0, none.stderr


def test_a_verdict_that_could_not_run_gives_the_job_back(site):
    rec = publish(site, "cannot-run")  # the stand-in answers "could not run" for it
    assert lend(site, "w1", reproducer=stub_reproducer) == 1
    jobs = site["db"].read(
        lambda c: c.execute(
            text(
                "SELECT l.outcome, j.status::text FROM cotk_repro_leases l JOIN procrastinate_jobs j ON j.id = l.job_id "
                "JOIN users u ON u.id = l.user_id WHERE u.name = 'w1' AND l.record_id = :r"
            ),
            {"r": rec["id"]},
        ).all()
    )
    assert jobs == [("could not run", "todo")]  # back on the queue for another volunteer
    assert entry(site, rec)["standing"] == "unverified"
    assert lend(site, "w1", reproducer=honest) == 0  # never to the same volunteer again


def test_a_volunteer_holds_at_most_four_leases(site):  # last: its leases are left to expire
    for i in range(5):
        publish(site, f"cap{i}")
    for _ in range(4):
        assert _post(site, "/leases", "greedy").status_code == 201
    r = _post(site, "/leases", "greedy")
    assert r.status_code == 429 and "4 leases" in r.json()["detail"], r.text
