"""Volunteer leases under load (issue 47): V simulated volunteers polling ``POST /api/v1/leases`` for S
seconds against a real ``cotk-repro dashboard serve --reproduce-queue --verified-by K`` process, beside one
pool worker (``dashboard worker --db``, an empty job body: procrastinate's fetch / finish round trips) draining
the pool's queue of the same records in the same run.

    python3 benchmarks/leases.py                                 # 100 volunteers, 60 s, COTK_REPRO_TEST_PG_URL
    python3 benchmarks/leases.py --volunteers 100 --seconds 10   # a short run
    python3 benchmarks/leases.py --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

Each volunteer is a user of its own with a key of its own, in a thread with its own HTTP session: it asks for a
lease; given one, it signs the stand-in's verdict (the record's own values, no Docker) and sends it; offered
none, it waits ``--poll`` seconds (with jitter). Measured:

* the lease round trip (``POST /api/v1/leases`` to its answer, 201 or 204): p50, p99, max, and leases given;
* the database's connection count (``pg_stat_activity`` for the benchmark's database, sampled every 0.5 s):
  max and mean, with the server's and the pool worker's pools together;
* the pool worker's fetch beside it: the gaps between consecutive job starts of its one worker (fetch plus the
  previous job's finish, the body being empty), p50 and p99, and its jobs/s, from procrastinate's events.

The benchmark makes a database of its own on the server and drops it.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank), in ms."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))]


def volunteer(url: str, token: str, key, stop: threading.Event, poll: float, out: dict) -> None:
    """One simulated volunteer: lease, sign the stand-in's verdict, send it; wait ``poll`` s when none is offered."""
    import requests
    from fleet import stub_reproducer

    from cotk_repro.core.signing import sign_reproduction

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    rng = random.Random(token)
    stop.wait(rng.uniform(0, poll))  # the volunteers do not all start at once
    while not stop.is_set():
        t = time.perf_counter()
        r = session.post(url + "/api/v1/leases", json={}, timeout=60)
        out["rtt"].append(time.perf_counter() - t)
        if r.status_code == 201:
            lease = r.json()
            out["leases"] += 1
            verdict = stub_reproducer(lease["record"])
            body: dict[str, Any] = {"reproduction": verdict, "signature": sign_reproduction(verdict, key)}
            v = session.post(url + f"/api/v1/leases/{lease['lease']}/verdict", json=body, timeout=60)
            out["verdicts" if v.status_code == 201 else "refused"] += 1
        else:
            out["none" if r.status_code == 204 else "errors"] += 1
            stop.wait(poll * rng.uniform(0.5, 1.5))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--volunteers", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=60.0, help="How long the volunteers poll (default 60).")
    ap.add_argument("--records", type=int, default=500)
    ap.add_argument("--poll", type=float, default=1.0, help="Seconds a volunteer waits when offered no lease.")
    ap.add_argument("--verified-by", type=int, default=2)
    ap.add_argument("--pg-url", default=os.environ.get("COTK_REPRO_TEST_PG_URL"))
    args = ap.parse_args()
    if not args.pg_url:
        raise SystemExit("needs PostgreSQL: --pg-url URL or COTK_REPRO_TEST_PG_URL")
    from fleet import make_records
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from cotk_repro.core.signing import key_from_path
    from cotk_repro.dashboard.auth import add_user
    from cotk_repro.dashboard.db import open_database
    from cotk_repro.dashboard.identity import add_key
    from cotk_repro.dashboard.queue import start
    from cotk_repro.dashboard.standing import use_verified_by

    name = f"lease_bench_{secrets.token_hex(4)}"
    admin = create_engine(make_url(args.pg_url).set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(args.pg_url).set(database=name).render_as_string(hide_password=False)
    tmp = Path(tempfile.mkdtemp(prefix="lease-bench-"))
    procs: list[subprocess.Popen] = []
    try:
        db = open_database(url)
        start(db)
        use_verified_by(db, args.verified_by)
        author = add_user(db, "author")
        add_user(db, "verifier")
        pool_key = tmp / "pool"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(pool_key)], check=True)
        add_key(db, "verifier", pool_key.with_suffix(".pub").read_text())
        people = []
        for i in range(args.volunteers):
            key = tmp / f"v{i}"
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
            token = add_user(db, f"v{i}")[0]
            add_key(db, f"v{i}", key.with_suffix(".pub").read_text())
            people.append((token, key_from_path(key, "bench")))
        owner = int(db.read(lambda c: c.execute(text("SELECT id FROM users WHERE name = 'author'")).scalar_one()))
        del author
        make_records(db, args.records, owner_id=owner)
        server = subprocess.Popen(
            [sys.executable, "-m", "cotk_repro", "dashboard", "serve", "--db", url, "--port", "0", "--reproduce-queue",
             "--verified-by", str(args.verified_by), "--rate-limit", "off", "--no-access-log"],
            stdout=subprocess.PIPE,
            stderr=open(tmp / "server.log", "wb"),
        )  # fmt: skip
        procs.append(server)
        base = server.stdout.readline().decode().strip()  # type: ignore[union-attr]
        if not base.startswith("http"):
            raise SystemExit(f"the dashboard did not start; see {tmp / 'server.log'}")
        pool = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "fleet.py"), "--worker", url, str(pool_key), "queue", "1"],
            stdout=open(tmp / "pool.log", "wb"),
            stderr=subprocess.STDOUT,
        )
        procs.append(pool)
        stop = threading.Event()
        rtt: list[float] = []
        out: dict[str, Any] = {"rtt": rtt, "leases": 0, "verdicts": 0, "refused": 0, "none": 0, "errors": 0}
        conns: list[int] = []

        def sample() -> None:
            while not stop.is_set():
                conns.append(
                    int(
                        db.read(
                            lambda c: c.execute(
                                text("SELECT count(*) FROM pg_stat_activity WHERE datname = :n"), {"n": name}
                            ).scalar()
                        )
                        or 0
                    )
                )
                stop.wait(0.5)

        threads = [threading.Thread(target=sample, daemon=True)]
        threads += [
            threading.Thread(target=volunteer, args=(base, t, k, stop, args.poll, out), daemon=True) for t, k in people
        ]
        began = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join(timeout=120)
        wall = time.monotonic() - began
        starts = db.read(
            lambda c: (
                c.execute(
                    text(
                        "SELECT e.at FROM procrastinate_events e JOIN procrastinate_jobs j ON j.id = e.job_id "
                        "WHERE e.type = 'started' AND j.queue_name = 'cotk-repro-reproduce' ORDER BY e.at"
                    )
                )
                .scalars()
                .all()
            )
        )
        gaps = [(b - a).total_seconds() for a, b in zip(starts, starts[1:])]
        print(
            f"{args.volunteers} volunteers polling for {args.seconds:g} s ({wall:.1f} s), {args.records} records, "
            f"K = {args.verified_by}, {os.cpu_count()} CPUs"
        )
        print(
            f"lease round trip: {len(rtt)} requests, p50 {pct(rtt, 0.5):.1f} ms, p99 {pct(rtt, 0.99):.1f} ms, "
            f"max {1000 * max(rtt, default=0):.1f} ms; {out['leases']} leases, {out['verdicts']} verdicts taken, "
            f"{out['refused']} refused, {out['none']} none offered, {out['errors']} errors"
        )
        print(
            f"database connections: max {max(conns, default=0)}, mean {statistics.mean(conns) if conns else 0:.1f} "
            "(the server's and the pool worker's together)"
        )
        print(
            f"pool worker beside it: {len(starts)} jobs, {len(starts) / wall:.1f} jobs/s; fetch gap p50 "
            f"{pct(gaps, 0.5):.1f} ms, p99 {pct(gaps, 0.99):.1f} ms"
        )
        db.dispose()
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name})
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


if __name__ == "__main__":
    main()
