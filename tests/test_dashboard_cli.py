"""``cotk-repro dashboard`` commands as real subprocesses: serve prints its URL, add-user prints a
working token once, revoke-token stops it; the default database honours XDG_DATA_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import requests
from dashboard_support import fake_hash, make_record

pytestmark = pytest.mark.slow


def test_add_user_token_works_and_revoke_token_stops_it(cli, tmp_path):
    db = f"sqlite:///{tmp_path / 'd.sqlite3'}"
    added = cli("dashboard", "add-user", "alice", "--db", db)
    assert added.returncode == 0, added
    token = added.stdout.strip()
    assert token.startswith("cotk_") and len(token) > 40 and "\n" not in token
    assert "shown only once" in added.stderr
    assert token not in (tmp_path / "d.sqlite3").read_bytes().decode("latin-1")  # stored hashed

    from cotk_repro.dashboard.server import start_in_thread

    url, stop = start_in_thread(db, allow_unsigned=True)
    try:
        rec = make_record({"bleu": (0.3, fake_hash("r"))})
        headers = {"Authorization": f"Bearer {token}"}
        assert requests.post(url + "/api/v1/records", json=rec, headers=headers, timeout=10).status_code == 201
        revoked = cli("dashboard", "revoke-token", "alice", "--db", db)
        assert revoked.returncode == 0 and "revoked 1 token" in revoked.stderr
        rec2 = make_record({"bleu": (0.4, fake_hash("r"))})
        assert requests.post(url + "/api/v1/records", json=rec2, headers=headers, timeout=10).status_code == 401
    finally:
        stop()
    users = cli("dashboard", "users", "--db", db, "--json")
    assert users.returncode == 0 and '"active_tokens": 0' in users.stdout


def test_admin_errors_are_one_sentence(cli, tmp_path):
    db = f"sqlite:///{tmp_path / 'd.sqlite3'}"
    bad = cli("dashboard", "add-user", "no spaces allowed", "--db", db)
    assert bad.returncode == 2 and "is not a valid user name" in bad.stderr and "Traceback" not in bad.stderr
    missing = cli("dashboard", "revoke-token", "ghost", "--db", db)
    assert missing.returncode == 2 and "there is no user 'ghost'" in missing.stderr
    wrong = cli("dashboard", "add-user", "x", "--db", "mysql://nope/db")
    assert wrong.returncode == 2 and "SQLite and PostgreSQL" in wrong.stderr
    garbage = cli("dashboard", "add-user", "x", "--db", "::not a url::")
    assert garbage.returncode == 2 and "is not a database URL" in garbage.stderr
    down = cli("dashboard", "add-user", "x", "--db", "postgresql+psycopg://postgres@127.0.0.1:1/nothing")
    assert down.returncode == 2 and "cannot open the dashboard database" in down.stderr
    assert "Traceback" not in down.stderr


def test_default_database_lives_in_xdg_data_home(cli, tmp_path):
    data_home = tmp_path / "xdg-data"
    env = {"XDG_DATA_HOME": str(data_home), "COTK_REPRO_DASHBOARD_DB": ""}
    r = cli("dashboard", "add-user", "bob", env=env)
    assert r.returncode == 0, r
    assert (data_home / "cotk-repro" / "dashboard.sqlite3").is_file()


def _start_serve(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "dashboard",
            "serve",
            *args,
            "--port",
            "0",
            "--no-access-log",
            "--allow-unsigned",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:"), (line, proc.stderr.read() if proc.poll() is not None else "")
        deadline = time.time() + 30
        while True:
            try:
                if requests.get(line + "/api/v1/health", timeout=2).json() == {"status": "ok"}:
                    return proc, line
            except (requests.RequestException, ValueError):  # not listening yet, or workers still starting
                pass
            assert time.time() < deadline, "the server never answered"
            time.sleep(0.2)
    except BaseException:  # never leave a server behind
        proc.kill()
        proc.wait(timeout=30)
        raise


def test_serve_prints_the_url_and_serves(tmp_path):
    proc, url = _start_serve("--db", f"sqlite:///{tmp_path / 's.sqlite3'}", "--verified-by", "3")
    try:
        assert "tasks and datasets" in requests.get(url + "/", timeout=5).text.lower()
        from cotk_repro.dashboard.db import open_database
        from cotk_repro.dashboard.standing import verified_by

        db = open_database(f"sqlite:///{tmp_path / 's.sqlite3'}", migrate=False)
        assert db.read(verified_by) == 3  # the dashboard's K, which every tier is derived with (issue 47)
        db.dispose()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_with_several_workers_shares_one_database(cli, tmp_path):
    db = f"sqlite:///{tmp_path / 'w.sqlite3'}"
    token = cli("dashboard", "add-user", "w", "--db", db).stdout.strip()
    proc, url = _start_serve("--db", db, "--workers", "2")
    try:
        params = {"task": "workers", "dataset": "d", "metric": "bleu"}
        for _ in range(6):  # warm both workers' caches with the empty board
            assert requests.get(url + "/api/v1/leaderboard", params=params, timeout=5).json()["groups"] == []
        rec = make_record({"bleu": (0.3, fake_hash("w"))}, task="workers", dataset="d")
        r = requests.post(url + "/api/v1/records", json=rec, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert r.status_code == 201
        time.sleep(0.3)  # other workers re-read the database generation within 0.1 s
        for _ in range(10):
            groups = requests.get(url + "/api/v1/leaderboard", params=params, timeout=5).json()["groups"]
            assert [e["id"] for e in groups[0]["entries"]] == [rec["id"]]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serve_refuses_a_port_in_use(cli, tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        r = cli("dashboard", "serve", "--db", f"sqlite:///{tmp_path / 'p.sqlite3'}", "--port", str(port), timeout=60)
        assert r.returncode == 2 and "already in use" in r.stderr
    finally:
        s.close()
