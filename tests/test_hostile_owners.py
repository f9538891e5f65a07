"""Whose is it (issue 39, third attack round): a stranger must not become the owner of what is someone else's.

* a key: a real second HTTP server relaying ``keys add`` to the dashboard (its own ``Host``, the attacker's
  token) gets no key registered to anybody but its holder; proofs made under the old rule are re-checked;
* a publication: an unsigned one never replaces one stored, and only the record's owner attaches one;
* a rate-limit bucket: ``X-Forwarded-For`` is believed only from ``--trusted-proxy`` addresses;
* a record folder: a ``.cotk-repro`` that is a symbolic link to another project's is refused, and a copy of
  another project's marks does not pass for this project's;
* a container: ``gc`` leaves alone a container whose owner runs in another PID namespace (same host name,
  same pid numbers), and removes one whose owner is dead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from conftest import run_cli
from dashboard_support import make_record, prove_key
from signing_support import fingerprint_of, key_env, make_key
from sqlalchemy import insert, select

from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import Database, open_database
from cotk_repro.dashboard.models import KeyAudit, SshKey, User
from cotk_repro.dashboard.server import start_in_thread

API = "/api/v1"

# A relaying site: a real HTTP server (its own process) that forwards every request to TARGET under its own
# Host header with the attacker's token. With "rewrite" it also rewrites the challenge to name itself.
RELAY = r"""
import sys, urllib.request, urllib.error
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TARGET, TOKEN, MODE = sys.argv[1], sys.argv[2], sys.argv[3]

class Relay(BaseHTTPRequestHandler):
    def _forward(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        me = "http://" + self.headers["Host"]
        headers = {"Host": self.headers["Host"], "Authorization": "Bearer " + TOKEN}
        if self.headers.get("Content-Type"):
            headers["Content-Type"] = self.headers["Content-Type"]
        req = urllib.request.Request(TARGET + self.path, data=body, headers=headers, method=self.command)
        try:
            with urllib.request.urlopen(req, timeout=20) as resp:
                status, data = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, data = exc.code, exc.read()
        if MODE == "rewrite" and self.path.endswith("/keys/challenge"):
            data = data.replace(TARGET.encode(), me.encode())
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _forward

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Relay)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@pytest.fixture
def relay(tmp_path):
    """Start relays: ``start(target, token, mode) -> relay URL``; each is stopped (by its pid) at the end."""
    script = tmp_path / "relay.py"
    script.write_text(RELAY)
    procs: list[subprocess.Popen] = []

    def start(target: str, token: str, mode: str = "plain") -> str:
        proc = subprocess.Popen([sys.executable, str(script), target, token, mode], stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        return f"http://127.0.0.1:{proc.stdout.readline().strip()}"

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def keyed_dashboard(tmp_path):
    """A real dashboard (SQLite, uvicorn in a thread, no --public-url: loopback) with alice and mallory, each
    with a token and a key pair, no key registered: ``(url, db_url, people)``."""
    db_url = f"sqlite:///{tmp_path / 'dash.sqlite3'}"
    url, stop = start_in_thread(db_url, rate_limit=None)
    db = open_database(db_url)
    people = {}
    for name in ("alice", "mallory"):
        path = make_key(tmp_path / f"{name}-keys")
        people[name] = {
            "token": add_user(db, name)[0],
            "path": path,
            "fp": fingerprint_of(path.with_suffix(".pub")),
        }
    db.dispose()
    try:
        yield url, db_url, people
    finally:
        stop()


def _owners(db_url: str) -> dict[str, tuple[str, str | None, str | None]]:
    """fingerprint -> (user, proof, proof origin) of every key stored."""
    db = open_database(db_url, migrate=False)
    try:
        rows = db.read(
            lambda c: c.execute(
                select(SshKey.fingerprint, User.name, SshKey.proof, SshKey.proof_origin).join(
                    User, User.id == SshKey.user_id
                )
            ).all()
        )
        return {fp: (name, proof, origin) for fp, name, proof, origin in rows}
    finally:
        db.dispose()


def _keys_add(url: str, person: dict, tmp_path: Path, token: str):
    home = tmp_path / f"home-{time.monotonic_ns()}"
    env = {
        **key_env(person["path"], home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "COTK_REPRO_DASHBOARD_TOKEN": token,
    }
    return run_cli("keys", "add", "--dashboard", url, "--json", env=env, timeout=120)


def test_a_relaying_server_gets_no_key_registered_to_anybody_but_its_holder(keyed_dashboard, relay, tmp_path):
    url, db_url, people = keyed_dashboard
    alice, mallory = people["alice"], people["mallory"]
    # the challenge names the dashboard's own origin, whatever Host the request says
    r = requests.post(
        url + API + "/keys/challenge",
        json={},
        headers={"Authorization": f"Bearer {mallory['token']}", "Host": "evil.example"},
        timeout=10,
    )
    assert r.status_code == 201 and r.json()["dashboard"] == url and "evil" not in r.json()["challenge"]

    # alice's client, pointed at mallory's site, which relays to the dashboard with mallory's token
    plain = relay(url, mallory["token"])
    res = _keys_add(plain, alice, tmp_path, "alices-token-the-relay-drops")
    assert res.returncode == 2, res
    assert f"names the dashboard {url}, not {plain}" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert alice["fp"] not in _owners(db_url)

    # a relay that also rewrites the challenge to name itself: alice's client signs, the dashboard rebuilds
    # the text from the origin it stored and the proof does not hold
    rewriting = relay(url, mallory["token"], "rewrite")
    res = _keys_add(rewriting, alice, tmp_path, "alices-token-the-relay-drops")
    assert res.returncode != 0 and "403" in res.stderr and "the proof does not hold" in res.stderr, res
    assert alice["fp"] not in _owners(db_url)

    # alice, at the dashboard itself, registers her key: hers, bound to the dashboard's origin
    res = _keys_add(url, alice, tmp_path, alice["token"])
    assert res.returncode == 0 and json.loads(res.stdout)["user"] == "alice", res
    assert _owners(db_url)[alice["fp"]] == ("alice", "possession", url)


def test_serving_beyond_loopback_needs_a_public_url(tmp_path):
    db = f"sqlite:///{tmp_path / 'd.sqlite3'}"
    res = run_cli("dashboard", "serve", "--db", db, "--host", "0.0.0.0", "--port", "0", timeout=60)
    assert res.returncode == 2 and "needs --public-url" in res.stderr and "Traceback" not in res.stderr, res
    assert not (tmp_path / "d.sqlite3").exists()  # refused before anything was written
    res = run_cli("dashboard", "serve", "--db", db, "--public-url", "javascript:alert(1)", timeout=60)
    assert res.returncode == 2 and "is not an http(s) URL" in res.stderr, res
    # an app that knows no origin of its own takes no key proofs (it cannot say which dashboard it is)
    from fastapi.testclient import TestClient

    from cotk_repro.dashboard.app import create_app

    app = create_app(f"sqlite:///{tmp_path / 'e.sqlite3'}", rate_limit=None)
    token = add_user(app.state.dashboard.db, "alice")[0]
    with TestClient(app) as client:
        r = client.post(API + "/keys/challenge", json={}, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 503 and "--public-url" in r.json()["detail"]


def test_proofs_made_under_the_old_rule_are_rechecked_by_migration_0009(tmp_path):
    """A database at 0008 holding a key mallory registered "with proof" through a relay (the challenge named
    the relay's origin): after 0009 it signs nothing until its holder proves it again, and then moves to her."""
    db_url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    db = Database(db_url)
    db.upgrade("0008")
    alice_key, vouched_key = make_key(tmp_path / "a"), make_key(tmp_path / "v")
    afp, vfp = fingerprint_of(alice_key.with_suffix(".pub")), fingerprint_of(vouched_key.with_suffix(".pub"))
    tokens = {n: add_user(db, n)[0] for n in ("alice", "mallory")}

    def seed(conn):
        mallory = conn.execute(select(User.id).where(User.name == "mallory")).scalar()
        for path, fp, proof in ((alice_key, afp, "possession"), (vouched_key, vfp, "operator")):
            conn.execute(
                insert(SshKey.__table__).values(
                    user_id=mallory,
                    fingerprint=fp,
                    key_type="ssh-ed25519",
                    public_key=path.with_suffix(".pub").read_text().strip(),
                    comment="",
                    created_at="2026-01-01T00:00:00.000Z",
                    proof=proof,
                    proven_at="2026-01-01T00:00:00.000Z",
                )
            )

    db.write(seed)  # the 0008 columns only (the model's proof_origin comes with 0009)
    db.upgrade()
    assert db.current_revision() == "0011_verified"
    assert _owners(db_url) == {afp: ("mallory", None, None), vfp: ("mallory", "operator", None)}
    audit = db.read(lambda c: c.execute(select(KeyAudit.fingerprint, KeyAudit.action, KeyAudit.detail)).all())
    assert [(fp, action) for fp, action, _ in audit] == [(afp, "recheck")] and "keys add" in audit[0][2]
    db.dispose()
    url, stop = start_in_thread(db_url, rate_limit=None)
    try:
        r = prove_key(url, tokens["alice"], alice_key)
        assert r.status_code == 201 and r.json()["moved_from"] == "mallory", r.text
        assert _owners(db_url)[afp] == ("alice", "possession", url)
    finally:
        stop()


def test_an_unsigned_publication_never_replaces_one(tmp_path):
    from cotk_repro.remote.dashboard import DashboardClient, DashboardError
    from cotk_repro.remote.publication import make

    db_url = f"sqlite:///{tmp_path / 'pub.sqlite3'}"
    url, stop = start_in_thread(db_url, allow_unsigned=True, rate_limit=None)
    db = open_database(db_url)
    tokens = {n: add_user(db, n)[0] for n in ("alice", "mallory")}
    db.dispose()
    try:
        record = make_record({"bleu": (0.3, "0" * 64)}, task="pub", dataset="d", remote_url=None)
        alice, mallory = DashboardClient(url, tokens["alice"]), DashboardClient(url, tokens["mallory"])
        alice.upload_record(record)
        canary = make(record, "https://example.com/mallory/canary.git", None)
        # mallory's unsigned publication of alice's unsigned record: not his record
        with pytest.raises(DashboardError, match=r"403.*another user.s"):
            mallory.upload_publication(record["id"], canary)
        good = make(record, "git://127.0.0.1:9418/alice/proj.git", None)
        assert alice.upload_publication(record["id"], good)["created"] is True
        # once stored, no unsigned publication replaces it, not even the owner's
        for client in (mallory, alice):
            with pytest.raises(DashboardError, match="403"):
                client.upload_publication(record["id"], canary)
        served = requests.get(f"{url}{API}/records/{record['id']}", timeout=10).json()["publication"]
        assert served == good and "canary" not in json.dumps(served)
    finally:
        stop()


def _serve(tmp_path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "dashboard",
            "serve",
            "--db",
            f"sqlite:///{tmp_path / 'rl.sqlite3'}",
            "--port",
            "0",
            "--rate-limit",
            "2/600",
            "--no-access-log",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return proc, proc.stdout.readline().strip()


@pytest.mark.parametrize("trusted", [False, True])
def test_x_forwarded_for_picks_the_bucket_only_from_a_trusted_proxy(tmp_path, trusted):
    proc, url = _serve(tmp_path, *(["--trusted-proxy", "127.0.0.1"] if trusted else []))
    try:
        assert url.startswith("http://127.0.0.1:"), url
        statuses = [
            requests.post(
                url + API + "/records", json={}, headers={"X-Forwarded-For": f"203.0.113.{i}"}, timeout=10
            ).status_code
            for i in range(4)
        ]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    if trusted:  # each forwarded address its own bucket of 2
        assert 429 not in statuses, statuses
    else:  # one bucket, the connection's: a header does not buy a new one
        assert statuses[:2] == [401, 401] and statuses[2:] == [429, 429], statuses


def test_serve_refuses_a_trusted_proxy_that_is_no_address(tmp_path):
    res = run_cli(
        "dashboard", "serve", "--db", f"sqlite:///{tmp_path / 'x.sqlite3'}", "--trusted-proxy", "me", timeout=60
    )
    assert res.returncode == 2 and "--trusted-proxy 'me' is not an IP address" in res.stderr, res


# -- marks bind the project --------------------------------------------------------------------------------
def _project_with_record(root: Path, task: str) -> dict:
    from cotk_repro.records.store import RunStore

    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    store = RunStore(root)
    record = make_record({"bleu": (0.5, "1" * 64)}, task=task, dataset="d")
    store.commit(store.new_workdir(), record)
    return record


def test_a_symlinked_or_copied_cotk_repro_lends_no_marks(tmp_path):
    from cotk_repro.errors import RecordError
    from cotk_repro.records.provenance import MARK, _digest, _key
    from cotk_repro.records.store import RunStore

    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    saved = {k: os.environ.get(k) for k in env}  # the session's own (conftest), put back after
    os.environ.update(env)  # the provenance key of this test's user, in and out of process
    try:
        victim = _project_with_record(tmp_path / "victim", "victim-canary")
        assert [r["id"] for r in RunStore(tmp_path / "victim").all()] == [victim["id"]]
        # 1. the attacker's project commits .cotk-repro as a link to the victim's
        attacker = tmp_path / "attacker"
        attacker.mkdir()
        subprocess.run(["git", "init", "-q", str(attacker)], check=True)
        (attacker / ".cotk-repro").symlink_to(tmp_path / "victim" / ".cotk-repro")
        with pytest.raises(RecordError, match="is a symbolic link, so cotk-repro neither reads nor writes"):
            RunStore(attacker).all()
        res = run_cli("runs", "--json", cwd=attacker, env=env, timeout=120)
        assert res.returncode == 2 and "symbolic link" in res.stderr and "victim-canary" not in res.stdout, res
        assert "Traceback" not in res.stderr
        # 2. a copy of the victim's folder: genuine marks, but of the victim's project
        (attacker / ".cotk-repro").unlink()
        shutil.copytree(tmp_path / "victim" / ".cotk-repro", attacker / ".cotk-repro", symlinks=True)
        store = RunStore(attacker)
        assert store.all() == [] and len(store.ignored) == 1
        # 3. a mark of the earlier kind (record only), in the project that wrote it: accepted and re-made
        folder = next((tmp_path / "victim" / ".cotk-repro" / "runs").iterdir())
        raw = (folder / "record.json").read_bytes()
        (folder / MARK).write_text(_digest(_key(create=False), raw) + "\n")
        assert [r["id"] for r in RunStore(tmp_path / "victim").all()] == [victim["id"]]
        assert (folder / MARK).read_text().startswith("2:")
    finally:  # popping it instead left every later test of the session without its data folder (and key)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# -- gc and PID namespaces -----------------------------------------------------------------------------------
OWNER_SCRIPT = r"""
import sys, docker
from cotk_repro.reproduce.gc import labels
client = docker.from_env()
c = client.containers.run(sys.argv[1], ["sleep", "300"], labels=labels("run", 300), detach=True, network_mode="none")
print(c.name, flush=True)
if sys.argv[2] == "stay":
    sys.stdin.read()  # alive until the test closes stdin
"""


@pytest.mark.docker
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare(1)")
def test_gc_leaves_a_container_whose_owner_lives_in_another_pid_namespace(tmp_path):
    import docker

    from cotk_repro.reproduce.gc import OWNER, collect

    image = os.environ.get("COTK_REPRO_TEST_BASE_IMAGE") or pytest.skip("COTK_REPRO_TEST_BASE_IMAGE is not set")
    client = docker.from_env()
    script = tmp_path / "owner.py"
    script.write_text(OWNER_SCRIPT)
    # a reproducer in its own PID namespace (as in a container), sharing this host's name: pid 1 there
    other = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, str(script), image, "stay"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    names = []
    try:
        names.append(other.stdout.readline().strip())
        assert names[0], "the owner in the other PID namespace made no container"
        theirs = client.containers.get(names[0])
        assert theirs.labels[OWNER].split(":")[-2] in ("1", "2")  # a pid that is alive here too (init)
        # and one whose owner, in this namespace, has exited
        dead = subprocess.run(
            [sys.executable, str(script), image, "exit"],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ),
        )
        names.append(dead.stdout.strip())
        report = collect(client, tmp=tmp_path)
        assert names[1] in report.containers and names[0] not in report.containers, report.as_dict()
        assert client.containers.get(names[0]).status == "running"
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(names[1])
        # asked again, it says it removed nothing (the dead owner's container is gone already)
        assert names[1] not in collect(client, tmp=tmp_path).containers
    finally:
        other.stdin.close()
        other.wait(timeout=30)
        for name in names:
            try:
                client.containers.get(name).remove(force=True)
            except docker.errors.NotFound:
                pass
