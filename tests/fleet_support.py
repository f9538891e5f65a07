"""Helpers for the reproduction-fleet tests: a database of our own on the test PostgreSQL server, real
worker processes, and a stand-in reproducer for the queue-mechanics tests.

The stand-in (``python tests/fleet_support.py worker ...``) is a real ``dashboard worker`` process (the same
:func:`cotk_repro.dashboard.worker.run_worker`: procrastinate, heartbeats, the stalled-job sweep, signing with
the pool's key, the server's verdict code) whose reproducer returns at once instead of running Docker: a
test double for the queue mechanics only, chosen by the record's project name:

* ``sleep-N``: sleeps N seconds, then agrees with the record;
* ``cannot-run``: a ``could not run`` verdict;
* ``differs``: rerun values half the record's;
* ``kill-worker``: kills its own worker process with SIGKILL, as the kernel's OOM killer does to a worker
  whose job takes all the memory (what a supervisor then restarts);
* ``deep``: reads a result 200,000 lists deep with the standard library's JSON parser (RecursionError);
* a record that names no fetchable remote and comes without its publication: the worker's rule
  (:data:`cotk_repro.dashboard.queue.AWAITING_PUBLICATION`, retried);
* anything else: agrees with the record at once.

Every call appends ``<pid> <record id> start|end`` to ``$FLEET_TRACE`` (what ran where, for the assertions).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def own_database(tag: str):
    """A fresh database ``fleet_<tag>_<hex>`` on the test PostgreSQL server (procrastinate's LISTEN/NOTIFY
    channels are per database: nothing crosses between tests); dropped afterwards. Yields its URL."""
    import pytest
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    url = os.environ.get("COTK_REPRO_TEST_PG_URL")
    if not url:
        pytest.skip("no PostgreSQL server: COTK_REPRO_TEST_PG_URL is unset (scripts/test.sh starts one)")
    name = f"fleet_{tag}_{secrets.token_hex(4)}"
    admin = create_engine(make_url(url).set(database="postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"), {"n": name})
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        admin.dispose()


def stub_reproducer(
    record: dict[str, Any], publication: Any = None, record_signature: str | None = None
) -> dict[str, Any]:
    """The test double: a reproduction verdict without running anything (see the module docstring)."""
    import json

    from cotk_repro import __version__
    from cotk_repro.dashboard.queue import AWAITING_PUBLICATION
    from cotk_repro.dashboard.worker import Retryable
    from cotk_repro.records.view import RecordView
    from cotk_repro.remote.publication import takes_publication

    name = record["project"]["name"]
    trace = os.environ.get("FLEET_TRACE")

    def note(what: str) -> None:
        if trace:
            with open(trace, "a", encoding="utf-8") as f:
                f.write(f"{os.getpid()} {record['id']} {what}\n")

    note("start")
    if publication is None and takes_publication(RecordView.of(record).code.remote_url):
        raise Retryable(AWAITING_PUBLICATION)
    if name == "kill-worker":
        os.kill(os.getpid(), signal.SIGKILL)
    if name == "deep":
        json.loads("[" * 200_000 + "]" * 200_000)
    if name.startswith("sleep-"):
        time.sleep(float(name.split("-", 1)[1]))
    verdict = {
        "schema": "cotk-repro/reproduction",
        "schema_version": 1,
        "record_id": record["id"],
        "verdict": "reproduced",
        "runtime": "docker",
        "metrics": [],
        "environment_differences": [],
        "rerun": {"results": {}, "python": "3.11.7", "started_at": "2026-01-01T00:00:00Z", "duration_s": 0.0},
        "error": None,
        "record_signature": None,
        "cotk_repro_version": __version__,
    }
    if name == "cannot-run":
        verdict.update(verdict="could not run", error="the entry main.py exited with status 1 (stand-in)")
    else:
        factor = 0.5 if name == "differs" else 1.0
        verdict["rerun"]["results"] = {k: {**v, "value": v["value"] * factor} for k, v in record["results"].items()}
    note("end")
    return verdict


def start_worker(
    db_url: str,
    key: Path,
    *,
    trace: Path,
    concurrency: int = 1,
    max_attempts: int = 3,
    stalled_after: float = 30.0,
    retry_wait: float = 0.0,
    log: Path | None = None,
) -> subprocess.Popen:
    """A real worker process with the stand-in reproducer."""
    env = {**os.environ, "FLEET_TRACE": str(trace)}
    out = open(log, "ab") if log else subprocess.DEVNULL
    return subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__)),
            "worker",
            db_url,
            str(key),
            str(concurrency),
            str(max_attempts),
            str(stalled_after),
            str(retry_wait),
        ],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30) -> int | None:
    """Signal our own worker process and wait for it (SIGKILL if it does not stop)."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode


def wait_for(predicate, timeout: float = 60.0, every: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def start_volunteer(url: str, token: str, key: Path, *, trace: Path, log: Path | None = None) -> subprocess.Popen:
    """A real volunteer process (``run_volunteer(once=True)``, HTTP only) with the stand-in reproducer."""
    env = {**os.environ, "FLEET_TRACE": str(trace)}
    out = open(log, "ab") if log else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, str(Path(__file__)), "volunteer", url, token, str(key)],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _main(argv: list[str]) -> None:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(name)s %(message)s")
    sys.path.insert(0, str(REPO_ROOT))
    from cotk_repro.dashboard.worker import run_worker

    if argv[0] == "volunteer":  # a volunteer leasing over HTTP: one lease, the stand-in reproducer
        from cotk_repro.dashboard.volunteer import run_volunteer

        _cmd, url, token, key = argv
        run_volunteer(url, token, key, once=True, reproducer=stub_reproducer)
        return

    _cmd, db_url, key, concurrency, max_attempts, stalled_after, retry_wait = argv
    run_worker(
        db_url,
        key,
        concurrency=int(concurrency),
        reproducer=stub_reproducer,
        max_attempts=int(max_attempts),
        stalled_after=float(stalled_after),
        retry_wait=float(retry_wait),
        on_ready=lambda line: print("ready:", line, flush=True),
    )


if __name__ == "__main__":
    _main(sys.argv[1:])


@contextmanager
def private_postgresql():
    """A PostgreSQL server of this test's own (initdb in a new folder under the temp dir, as the ``postgres``
    user when run as root), so that it can be restarted under load; yields ``(url, restart)``."""
    import glob
    import shutil
    import socket
    import tempfile

    import pytest

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        pytest.skip("no PostgreSQL server binaries (initdb) on this machine")
    pgbin = Path(bins[-1]).parent
    folder = Path(tempfile.mkdtemp(prefix="cotk-fleet-pg-"))  # pytest's folders are the root user's alone
    runas: list[str] = []
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", "postgres", str(folder)], check=True)
        runas = ["runuser", "-u", "postgres", "--"]
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    data = folder / "data"
    subprocess.run(
        [*runas, str(pgbin / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"],
        check=True,
        capture_output=True,
    )
    ctl = [
        *runas,
        str(pgbin / "pg_ctl"),
        "-D",
        str(data),
        "-l",
        str(folder / "server.log"),
        "-w",
        "-o",
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1",
    ]
    subprocess.run([*ctl, "start"], check=True, capture_output=True)

    def restart() -> None:
        subprocess.run([*ctl, "-m", "fast", "restart"], check=True, capture_output=True)

    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", restart
    finally:
        subprocess.run([*ctl, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
