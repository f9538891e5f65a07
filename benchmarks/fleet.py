"""Reproduction fleet dispatch (issue 28): N queued records drained by 1, 2 and 4 ``dashboard worker``
processes whose reproducer is a stub that returns at once (so what is measured is the fleet's own cost).

    python3 benchmarks/fleet.py                                  # COTK_REPRO_TEST_PG_URL's server, 2000 records
    python3 benchmarks/fleet.py --records 10000 --workers 1,2,4 --modes queue,full
    python3 benchmarks/fleet.py --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

Two modes, each on the same queued records (reset between runs):

* ``queue``: the job body returns at once: procrastinate's fetch / start / finish round trips and the
  worker's task wrapper, nothing else (the dispatch cost, target >= 200 jobs/s with 4 workers);
* ``full``: everything a job does but Docker: read the record, note the attempt, the stub's verdict,
  ``ssh-keygen -Y sign`` with the pool's key, the server's verdict code and signature check, and the
  attach transaction.

Measured from the database's own clock (procrastinate's ``procrastinate_events``): from the first job
started to the last job finished; jobs/s = N / that, and per-job overhead = workers x that / N (the
worker-seconds one job costs). The benchmark makes a database of its own on the server and drops it.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def stub_reproducer(record: dict) -> dict:
    """A verdict that agrees with the record, without running anything."""
    from cotk_repro import __version__

    return {
        "schema": "cotk-repro/reproduction",
        "schema_version": 1,
        "record_id": record["id"],
        "verdict": "reproduced",
        "runtime": "docker",
        "metrics": [],
        "environment_differences": [],
        "rerun": {
            "results": record["results"],
            "python": "3.11.7",
            "started_at": "2026-01-01T00:00:00Z",
            "duration_s": 0.0,
        },
        "error": None,
        "record_signature": None,
        "cotk_repro_version": __version__,
    }


def worker_main(db_url: str, key: str, mode: str, concurrency: int) -> None:
    """One benchmark worker process: ``run_worker`` with the stub (``full``) or an empty job body (``queue``)."""
    from cotk_repro.dashboard import worker

    if mode == "queue":
        worker.Pool.run_job = lambda self, record_id, attempt: "skipped"  # the job body returns at once
    worker.run_worker(db_url, key, concurrency=concurrency, reproducer=stub_reproducer, max_attempts=1)


def make_records(db, n: int, owner_id: int) -> None:
    """``n`` valid records (ids computed as `cotk-repro run` does), written with their jobs, 500 a transaction."""
    sys.path.insert(0, str(ROOT / "tests"))
    from dashboard_support import fake_hash, make_record

    from cotk_repro.dashboard.queue import write_records_and_enqueue
    from cotk_repro.dashboard.record_writes import PendingRecord
    from cotk_repro.dashboard.store import dumps

    template = make_record({"bleu": (0.25, fake_hash("refs"))}, name="bench")
    from cotk_repro.records import finalize

    batch = []
    for i in range(n):
        rec = json.loads(json.dumps(template))
        rec["results"]["bleu"]["value"] = 0.25 + i * 1e-6
        rec["code"]["commit"] = secrets.token_hex(20)
        finalize(rec)
        batch.append(
            PendingRecord(
                record_id=rec["id"],
                task="lm",
                dataset="coco",
                project_name="bench",
                status="ok",
                body=dumps(rec),
                results=(("bleu", rec["results"]["bleu"]["value"], fake_hash("refs")),),
                owner_id=owner_id,
                uploader_id=owner_id,
                signature=None,
                fingerprint=None,
            )
        )
        if len(batch) == 500 or i == n - 1:
            db.write(lambda conn, b=batch: write_records_and_enqueue(conn, b))
            batch = []


def reset(db) -> None:
    """Every job back to waiting, no pool reproductions: the same queue for the next run."""
    from sqlalchemy import text

    def tx(conn):
        conn.execute(text("DELETE FROM procrastinate_events"))
        conn.execute(
            text(
                "UPDATE cotk_repro_reproduce_jobs SET reproduction_pk = NULL, pool_user = NULL, "
                "attempts = 0, reason = NULL"
            )
        )
        conn.execute(text("DELETE FROM reproductions"))
        conn.execute(text("UPDATE records SET reproduced_by = 0"))
        conn.execute(text("UPDATE procrastinate_jobs SET status = 'todo', attempts = 0, worker_id = NULL"))
        conn.execute(text("DELETE FROM procrastinate_workers"))

    db.write(tx)
    db.read(lambda c: c.execute(text("SELECT 1")).all())
    with db.write_engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE procrastinate_jobs"))


def run_once(db, url: str, key: Path, mode: str, workers: int, n: int, logdir: Path) -> dict:
    from sqlalchemy import text

    from cotk_repro.dashboard.queue import counts

    reset(db)
    procs = []
    for i in range(workers):
        log = open(logdir / f"{mode}-{workers}-{i}.log", "wb")
        procs.append(
            subprocess.Popen(
                [sys.executable, __file__, "--worker", url, str(key), mode, "1"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ},
            )
        )
    try:
        deadline = time.monotonic() + 3600
        while True:
            c = counts(db)
            if c["done"] + c["failed"] >= n:
                break
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise SystemExit(f"the run did not finish: {c}; see {logdir}")
            time.sleep(0.5)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait(timeout=60)
    first, last = db.read(
        lambda conn: conn.execute(
            text(
                "SELECT min(at) FILTER (WHERE type = 'started'), max(at) FILTER (WHERE type IN ('succeeded', 'failed')) "
                "FROM procrastinate_events"
            )
        ).one()
    )
    wall = (last - first).total_seconds()
    c = counts(db)
    return {
        "mode": mode,
        "workers": workers,
        "jobs": n,
        "failed": c["failed"],
        "wall_s": round(wall, 2),
        "jobs_per_s": round(n / wall, 1),
        "worker_ms_per_job": round(1000 * workers * wall / n, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--modes", default="queue,full")
    ap.add_argument("--pg-url", default=os.environ.get("COTK_REPRO_TEST_PG_URL"))
    ap.add_argument("--worker", nargs=4, metavar=("DB", "KEY", "MODE", "CONCURRENCY"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        db_url, key, mode, concurrency = args.worker
        return worker_main(db_url, key, mode, int(concurrency))
    if not args.pg_url:
        raise SystemExit("needs PostgreSQL: --pg-url URL or COTK_REPRO_TEST_PG_URL")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from cotk_repro.dashboard.auth import add_user
    from cotk_repro.dashboard.db import open_database
    from cotk_repro.dashboard.identity import add_key
    from cotk_repro.dashboard.queue import start

    name = f"fleet_bench_{secrets.token_hex(4)}"
    admin = create_engine(make_url(args.pg_url).set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(args.pg_url).set(database=name).render_as_string(hide_password=False)
    tmp = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    try:
        db = open_database(url)
        start(db)
        add_user(db, "author")
        add_user(db, "verifier")
        key = tmp / "pool_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        add_key(db, "verifier", key.with_suffix(".pub").read_text())
        t = time.monotonic()
        make_records(db, args.records, owner_id=1)
        print(
            f"{args.records} records and their jobs written in {time.monotonic() - t:.1f} s ({os.cpu_count()} CPUs)",
            flush=True,
        )
        rows = []
        for mode in args.modes.split(","):
            for w in (int(x) for x in args.workers.split(",")):
                row = run_once(db, url, key, mode, w, args.records, tmp)
                rows.append(row)
                print(json.dumps(row), flush=True)
        print("\nmode   workers   jobs/s   worker-ms per job   wall s")
        for r in rows:
            print(
                f"{r['mode']:<6} {r['workers']:>7} {r['jobs_per_s']:>8} {r['worker_ms_per_job']:>19} {r['wall_s']:>8}"
            )
        db.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name})
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


if __name__ == "__main__":
    main()
