"""Helpers shared by the publish/reproduce tests (no tests here).

Records for Docker/venv reproductions are made with a *small* virtual environment
(cotk-repro from a wheel of this checkout plus the few packages `cotk-repro run`
imports), so that the recorded lock has ~20 packages: the wheelhouse download and
the image build stay short, and they are cached under the user cache dir
(``~/.cache/cotk-repro``), reused across tests and runs.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from conftest import git, run_cli

SMALL_DEPS = ["typer", "rich", "GitPython", "jinja2", "pluggy", "platformdirs"]


def small_venv_python(extra: tuple[tuple[str, ...], ...] = (), name: str = "test-venvs", warm: str = "") -> str:
    """A venv with cotk-repro (wheel of this checkout, no heavy deps) and the few packages `cotk-repro run`
    imports; built once per source state and Python (tests/venv_cache.py: locked, so xdist workers share it).

    ``extra``: further install argument groups, installed in order after the small set;
    give such a venv its own ``name`` (its folder in the user cache dir). ``warm``: code importing the heavy
    modules of ``extra`` (torch), run once at the build so that they are byte-compiled once (tests/venv_cache.py).
    """
    from venv_cache import cached_venv

    return cached_venv(name, ((*SMALL_DEPS,), *extra), warm=warm)


def record_in(project: Path, python: str | None = None, env: dict | None = None, *args: str) -> dict:
    """``cotk-repro run --json`` in ``project`` (with ``python``); returns the record."""
    res = run_cli("run", "-q", "--json", *args, cwd=project, env=env, python=python)
    assert res.returncode == 0, res
    return json.loads(res.stdout)


def add_bare_remote(project: Path, bare_root: Path, user_repo: str) -> Path:
    bare = bare_root / (user_repo + ".git")
    bare.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    git(project, "remote", "add", "origin", str(bare))
    return bare


def publish(project: Path, *args: str):
    return run_cli("publish", "--no-dashboard", *args, cwd=project)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextmanager
def http_double(handler_fn):
    """A local HTTP server answering with ``handler_fn(method, path, headers, body) -> (status, json)``."""
    calls = []

    class H(BaseHTTPRequestHandler):
        def _do(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            calls.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "headers": dict(self.headers),
                    "body": json.loads(body) if body else None,
                }
            )
            status, payload = handler_fn(self.command, self.path, self.headers, body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _do

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", calls
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def dashboard_server(tmp_path: Path):
    """The real dashboard (`cotk-repro dashboard serve`) on 127.0.0.1 with a temporary SQLite db.

    Yields (url, token) or None when the dashboard command is not available.
    """
    import urllib.request

    db = f"sqlite:///{tmp_path / 'dash.db'}"
    probe = run_cli("dashboard", "--help")
    if probe.returncode != 0:
        yield None
        return
    add = run_cli("dashboard", "add-user", "alice", "--db", db)
    if add.returncode != 0:
        yield None
        return
    token = add.stdout.strip().split()[-1]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "dashboard",
            "serve",
            "--db",
            db,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--allow-unsigned",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/api/v1/health", timeout=1)
                break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
        else:
            yield None
            return
        if proc.poll() is not None:
            yield None
            return
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# -- a published project for the reproduce tests ----------------------------------------------

#: The entry of the test project. ``author.txt`` is git-ignored: it exists on the author's machine
#: only, so an entry can behave differently in a rerun (a different seed, a crash, a runaway loop).
REPRO_ENTRY = r"""import hashlib, json, os, random, socket, sys
author = open("author.txt").read().strip() if os.path.exists("author.txt") else None
rerun = author is None
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
if rerun and mode == "crash":
    sys.stderr.write("boom: the entry fails on purpose\n")
    raise SystemExit(3)
if rerun and mode == "noresult":
    raise SystemExit(0)
if rerun and mode == "spin":
    while True:
        pass
print("uid=%d" % os.getuid())
print("interfaces=%s" % ",".join(sorted(os.listdir("/sys/class/net"))))
if rerun and os.path.exists("/.dockerenv"):
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=3).close()
        print("network=reachable")
    except OSError as exc:
        print("network=unreachable (%s)" % exc)
seed = int(author) if (mode == "seeded" and author) else 0
text = open("refs.txt", encoding="utf-8").read()
words = text.split()
json.dump({"tokens": float(len(words)), "tokens hashvalue": hashlib.sha256(text.encode()).hexdigest(),
           "score": random.Random(seed).random(), "score hashvalue": hashlib.sha256(b"score").hexdigest()},
          open("result.json", "w"))
"""
REPRO_REFS = "the cat sat on the mat\n"
#: record name -> entry arguments
REPRO_MODES = {"ok": [], "seeded": ["seeded"], "crash": ["crash"], "noresult": ["noresult"], "spin": ["spin"]}


def reproduce_project(root: Path) -> Path:
    """The test project (REPRO_ENTRY over REPRO_REFS) committed in a new git repository at ``root``."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in {
        ".gitignore": ".cotk-repro/\nresult.json\n__pycache__/\nauthor.txt\n",
        "main.py": REPRO_ENTRY,
        "refs.txt": REPRO_REFS,
    }.items():
        (root / name).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    (root / "author.txt").write_text("7\n")
    return root


def build_published_project(base: Path, user_repo: str = "alice/proj", modes=REPRO_MODES) -> dict:
    """A git project with one record per mode, published (code + records ref) to a bare remote.

    Records are made with :func:`small_venv_python` so that every runtime can rebuild their
    environment. Returns {"root", "bare", "bare_root", "records": {mode: record}}.
    """
    py = small_venv_python()
    root = reproduce_project(base / "work" / user_repo.split("/")[-1])
    bare_root = base / "remotes"
    bare = add_bare_remote(root, bare_root, user_repo)
    records = {}
    for mode, args in modes.items():
        records[mode] = record_in(root, py, None, *(["--", *args] if args else []))
    for i, record in enumerate(records.values()):  # publish takes one record at a time
        res = publish(root, record["id"], *(["--push"] if i == 0 else []))
        assert res.returncode == 0, res
    return {"root": root, "bare": bare, "bare_root": bare_root, "records": records}


def edited_project(base: Path, name: str, files: dict, edit=None, links=None, user: str = "alice") -> dict:
    """A git project with ``files`` (and symbolic ``links``), a genuine record of it (``cotk-repro run`` with
    :func:`small_venv_python`), the record JSON edited by ``edit(record)`` and its id recomputed with the
    project's own function, published (code and records ref) to a bare remote ``<base>/remotes/<user>/<name>.git``.
    This is what anybody can publish: the id proves the content, not the intent.

    Returns {"root", "bare", "record"}. ``author.txt`` (git-ignored) exists on the author's machine only.
    """
    from cotk_repro.records import finalize, write_json_atomic

    py = small_venv_python()
    root = base / "work" / name
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in {".gitignore": ".cotk-repro/\nresult.json\n__pycache__/\nauthor.txt\n", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    for rel, target in (links or {}).items():
        os.symlink(target, root / rel)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    (root / "author.txt").write_text("me\n")
    bare = add_bare_remote(root, base / "remotes", f"{user}/{name}")
    record = record_in(root, py)
    if edit is not None:
        runs = root / ".cotk-repro" / "runs"
        folder = runs / record["id"].removeprefix("sha256:")
        edit(record)
        finalize(record)
        new = runs / record["id"].removeprefix("sha256:")
        shutil.move(str(folder), str(new))
        write_json_atomic(new / "record.json", record)
        # the attacker's own installation marks its edited record as its own, as `run` would
        from cotk_repro.records.provenance import mark

        mark(new, (new / "record.json").read_bytes(), root)
    res = publish(root, record["id"], "--push")
    assert res.returncode == 0, res
    return {"root": root, "bare": bare, "record": record}


def seeded_cache(cache: Path) -> Path:
    """A cache folder of the test's own (what the reproduction builds into it is the test's to see) that starts
    with the wheels the user cache already holds: the downloaded ones (each pool read under its lock, as the
    reproducer writes it), the complete sets of build requirements, the wheel of this cotk-repro (hard links, else
    copies). Without them every run downloads the whole environment again and builds cotk-repro's wheel on the
    host, which is not what the test is about; an empty user cache seeds nothing."""
    from cotk_repro.core.filelock import locked
    from cotk_repro.core.userconfig import cache_dir

    def link(path: Path, dst: Path) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, dst)
        except OSError:
            shutil.copy2(path, dst)

    shared = cache_dir()
    for pool in sorted(p for p in (shared / "wheelhouse").glob("*") if p.is_dir()):
        if pool.name.endswith("-build"):  # a folder per set, written whole before its .complete
            for done in pool.glob("*/.complete"):
                for path in done.parent.glob("*.whl"):
                    link(path, cache / "wheelhouse" / pool.name / done.parent.name / path.name)
                link(done, cache / "wheelhouse" / pool.name / done.parent.name / done.name)
            continue
        with locked(pool.with_name(pool.name + ".lock")):
            for path in pool.glob("*.whl"):
                link(path, cache / "wheelhouse" / pool.name / path.name)
    for path in (shared / "local-wheels").glob("cotk-repro-*/*.whl"):
        link(path, cache / "local-wheels" / path.parent.name / path.name)
    return cache


def expected_values(mode: str = "ok", author_seed: int | None = None) -> dict:
    """The entry's results computed here, independently of cotk-repro."""
    import random

    seed = author_seed if (mode == "seeded" and author_seed is not None) else 0
    return {"tokens": float(len(REPRO_REFS.split())), "score": random.Random(seed).random()}


@contextmanager
def remote_served_by_git_daemon(project: Path, bare: Path, bare_root: Path):
    """The project's ``origin`` fetched through ``git daemon`` (a URL a dashboard reader can use; a path
    remote is published only as ``local:NAME``), pushed to the bare repository's path; yields the URL."""
    with git_daemon(bare_root) as base:
        url = base + bare.relative_to(bare_root).as_posix()
        git(project, "remote", "set-url", "origin", url)
        git(project, "remote", "set-url", "--push", "origin", str(bare))
        yield url


@contextmanager
def git_daemon(base_path: Path):
    """``git daemon`` serving ``base_path`` on 127.0.0.1; yields ``git://127.0.0.1:PORT/``."""

    port = free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            f"--base-path={base_path}",
            "--listen=127.0.0.1",
            f"--port={port}",
            "--informative-errors",
            str(base_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("git daemon did not start: " + proc.stderr.read().decode()) from None
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
