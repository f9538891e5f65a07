"""Helpers for the dashboard tests: valid records built the way ``cotk-repro run`` builds them,
reproduction verdicts, and a fresh PostgreSQL schema per test module."""

from __future__ import annotations

import copy
import hashlib
import os
import secrets
from functools import lru_cache
from typing import Any

import pytest

from cotk_repro import __version__
from cotk_repro.capture.dockerfile import render_dockerfile
from cotk_repro.capture.environment import capture_environment
from cotk_repro.records import RECORD_SCHEMA, RECORD_SCHEMA_VERSION, finalize


@lru_cache(maxsize=1)
def _environment() -> dict[str, Any]:
    env = capture_environment([{"name": "cotk_repro.builtins", "version": __version__}])
    dockerfile, sha = render_dockerfile(
        python_major_minor=env["python"]["major_minor"], entry="main.py", args=[], cwd="."
    )
    env["dockerfile"], env["dockerfile_sha256"] = dockerfile, sha
    return env


def fake_hash(label: str) -> str:
    """A 64-hex comparability hash standing for "references/settings named ``label``"."""
    return hashlib.sha256(label.encode()).hexdigest()


def make_record(
    results: dict[str, tuple[float, str | None]],
    *,
    name: str = "proj",
    task: str = "lm",
    dataset: str = "coco",
    status: str = "ok",
    nonce: str | None = None,
    remote_url: str | None = "https://github.com/example/proj.git",
    dirty: bool = False,
) -> dict[str, Any]:
    """A finalized record (valid id) whose results are ``{metric: (value, hash or None)}``; ``dirty``: run
    from a work tree with uncommitted changes (``run --allow-dirty``)."""
    commit = hashlib.sha1((nonce or secrets.token_hex(8)).encode()).hexdigest()
    record: dict[str, Any] = {
        "schema": RECORD_SCHEMA,
        "schema_version": RECORD_SCHEMA_VERSION,
        "status": status,
        "code": {
            "commit": commit,
            "branch": "main",
            "detached": False,
            "remote": "origin",
            "remote_url": remote_url,
            "dirty": dirty,
        },
        "environment": copy.deepcopy(_environment()),
        "project": {"name": name, "task": task, "dataset": dataset},
        "command": {
            "entry": "main.py",
            "args": [],
            "cwd": ".",
            "result_file": "result.json",
            "started_at": "2026-01-01T00:00:00.000Z",
            "duration_s": 1.5,
            "exit_status": 0,
        },
        "results": {
            m: {"value": v, "hash": h, "signature": None, "metric": m, "version": "1"} for m, (v, h) in results.items()
        },
        "data": None,
        "cotk_repro_version": __version__,
    }
    return finalize(record)


def make_verdict(
    record_id: str, verdict: str = "reproduced", metric: str = "bleu", value: float = 0.25, h: str | None = None
) -> dict[str, Any]:
    """A verdict whose rerun results agree with it (the dashboard recomputes it from them)."""
    rerun_value = value if verdict == "reproduced" else value / 2
    results = (
        {}
        if verdict == "could not run"
        else {metric: {"value": rerun_value, "hash": h, "signature": None, "metric": metric, "version": "1"}}
    )
    return {
        "schema": "cotk-repro/reproduction",
        "schema_version": 1,
        "record_id": record_id,
        "verdict": verdict,
        "runtime": "venv",
        "metrics": [
            {
                "metric": metric,
                "verdict": "reproduced" if verdict == "reproduced" else "differs",
                "a_value": value,
                "b_value": value,
                "a_hash": h,
                "b_hash": h,
                "abs_diff": 0.0,
                "rtol": 1e-6,
                "atol": 1e-12,
            }
        ],
        "environment_differences": [{"what": "numpy", "a": "1.26.0", "b": "2.0.0"}],
        "rerun": {"results": results, "python": "3.11.2", "started_at": "2026-01-01T00:00:00Z", "duration_s": 1.2},
        "error": None,
        "cotk_repro_version": __version__,
    }


def pg_schema_url(tag: str):
    """Generator for a module fixture: a fresh schema on the test PostgreSQL server, dropped afterwards."""
    url = os.environ.get("COTK_REPRO_TEST_PG_URL")
    if not url:
        pytest.skip("no PostgreSQL server: COTK_REPRO_TEST_PG_URL is unset (scripts/test.sh starts one)")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    schema = f"dash_{tag}_{secrets.token_hex(4)}"
    admin = create_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def db_url_for(request, tmp_path_factory, tag: str):
    """Generator for a module fixture parametrized sqlite / postgresql: a fresh database of that kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp(tag) / 'dash.sqlite3'}"
    else:
        yield from pg_schema_url(tag)


def signed_dashboard(tmp_path, user: str = "alice"):
    """Generator for a fixture: a real dashboard (SQLite, uvicorn in a thread) requiring signatures, with
    ``user`` and a registered SSH key: yields (url, the user's token, the environment that makes the CLI sign
    with that key)."""
    from signing_support import key_env, make_key

    from cotk_repro.dashboard.auth import add_user
    from cotk_repro.dashboard.db import open_database
    from cotk_repro.dashboard.identity import add_key
    from cotk_repro.dashboard.server import start_in_thread

    db_url = f"sqlite:///{tmp_path / 'dash.sqlite3'}"
    url, stop = start_in_thread(db_url)
    key = make_key(tmp_path / f"{user}-keys")
    db = open_database(db_url)
    token = add_user(db, user)[0]
    add_key(db, user, key.with_suffix(".pub").read_text())
    db.dispose()
    try:
        yield url, token, key_env(key, tmp_path / f"{user}-home")
    finally:
        stop()


def challenge_for(server: str, token: str) -> dict[str, Any]:
    """A key registration challenge from the dashboard at ``server`` for the holder of ``token``."""
    import requests

    r = requests.post(
        server + "/api/v1/keys/challenge", json={}, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )
    assert r.status_code == 201, r.text
    return r.json()


def prove_key(
    server: str,
    token: str,
    key_path,
    *,
    text: str | None = None,
    nonce: str | None = None,
    public_key: str | None = None,
):
    """``POST /api/v1/keys`` registering the key at ``key_path`` (private key; ``.pub`` beside it) with a
    signature by it (ssh-keygen -Y sign) over a fresh challenge, or over ``text`` with ``nonce`` when given;
    ``public_key`` replaces the key line sent (an attacker naming someone else's key)."""
    import requests

    from cotk_repro.core.keyproof import NS_KEY_REGISTRATION
    from cotk_repro.core.signing import key_from_path, sign_bytes

    if text is None:
        issued = challenge_for(server, token)
        text, nonce = issued["challenge"], issued["nonce"]
    key = key_from_path(key_path, "test")
    sig = sign_bytes(text.encode(), NS_KEY_REGISTRATION, key)
    body = {"public_key": public_key or key_path.with_suffix(".pub").read_text(), "challenge": nonce, "signature": sig}
    return requests.post(server + "/api/v1/keys", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=10)


def write_old_records(conn, pending) -> None:
    """Store uploads (:class:`PendingRecord`) in the columns of the 0004 to 0006 schemas, as the code of those
    revisions wrote them (today's writer fills columns that later migrations add)."""
    from sqlalchemy import text

    for p in pending:
        pk = conn.execute(
            text(
                "INSERT INTO records (record_id, user_id, task, dataset, project_name, status, submitted_at, body, "
                "signature, key_fingerprint) VALUES (:rid, :uid, :task, :dataset, :project, :status, "
                "'2026-01-02T00:00:00.000Z', :body, :sig, :fp) RETURNING id"
            ),
            {
                "rid": p.record_id,
                "uid": p.owner_id,
                "task": p.task,
                "dataset": p.dataset,
                "project": p.project_name,
                "status": p.status,
                "body": p.body,
                "sig": p.signature,
                "fp": p.fingerprint,
            },
        ).scalar_one()
        for metric, value, h in p.results:
            conn.execute(
                text(
                    "INSERT INTO results (record_pk, task, dataset, metric, hash, value) "
                    "VALUES (:pk, :task, :dataset, :metric, :h, :v)"
                ),
                {"pk": pk, "task": p.task, "dataset": p.dataset, "metric": metric, "h": h, "v": value},
            )
            conn.execute(
                text(
                    "INSERT INTO board_groups (task, dataset, metric, hash, n) "
                    "VALUES (:task, :dataset, :metric, :h, 1) ON CONFLICT (task, dataset, metric, hash) "
                    "DO UPDATE SET n = board_groups.n + 1"
                ),
                {"task": p.task, "dataset": p.dataset, "metric": metric, "h": h or ""},
            )
