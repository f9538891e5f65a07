"""`cotk-repro demo`: the whole loop on one machine (docs/spec.md section 8), through the real CLI.

Real parts: a real git repository and bare remote, the embedded dashboard on SQLite
over HTTP, a real venv reproduction. The demo project ships its own corpus, so the
test does not need the shared data.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # the demo's run is allowed 900 s (demo_run)


def shared_cache() -> Path:
    """The tests' own cache folder (wheelhouse, venvs: keyed by what they hold), for the demos that do not ask for an
    empty one: a demo's HOME is a machine without an SSH key, and its cache under that HOME was empty at every test
    run, so each run downloaded the demo's 61 recorded packages again and built their venv (~35 s)."""
    from cotk_repro.core.userconfig import cache_dir

    return cache_dir()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A machine with no SSH key at all (its cache: :func:`shared_cache`)."""
    return tmp_path_factory.mktemp("home-without-ssh-key")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, home):
    from conftest import run_cli

    folder = tmp_path_factory.mktemp("demo") / "loop"
    res = run_cli(
        "demo",
        "--dir",
        str(folder),
        "--runtime",
        "venv",
        "--json",
        timeout=900,
        env={
            "HOME": str(home),
            "COTK_REPRO_SIGNING_KEY": "",
            "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
            "COTK_REPRO_CACHE": str(shared_cache()),
        },
    )
    return folder, res


def test_demo_reproduces_its_own_run(demo_run):
    folder, res = demo_run
    assert res.returncode == 0, res
    summary = json.loads(res.stdout)
    results = summary["results"]
    # the sample project scores quality and diversity, each with a comparability hash
    for metric in ("perplexity", "bleu", "self-bleu", "distinct-2"):
        assert metric in results, sorted(results)
        assert len(results[metric]["hash"]) == 64
    assert results["perplexity"]["value"] > 1.0
    verdict = summary["reproduction"]
    assert verdict["verdict"] == "reproduced"
    assert verdict["record_id"] == summary["record_id"]
    assert {m["verdict"] for m in verdict["metrics"]} == {"reproduced"}
    assert summary["dashboard"].startswith("http://127.0.0.1:")


def test_demo_published_to_git_and_dashboard(demo_run):
    folder, res = demo_run
    assert res.returncode == 0, res
    summary = json.loads(res.stdout)
    bare = folder / "git" / "demo" / "sample-lm.git"
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "refs/heads/main" in refs
    assert any("cotk-repro" in r for r in refs), refs  # the records travel on their own ref
    # the kept project's origin outlives the demo's git daemon: it names the bare repository, and fetches
    project = folder / "sample-lm"
    origin = subprocess.run(["git", "remote", "get-url", "origin"], cwd=project, capture_output=True, text=True)
    assert origin.stdout.strip() == str(bare), origin
    subprocess.run(["git", "fetch", "-q", "origin"], cwd=project, check=True, timeout=60)
    with sqlite3.connect(folder / "dashboard.db") as db:
        tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
        text = " ".join(str(row) for t in tables for row in db.execute(f'select * from "{t}"'))
    hex_id = summary["record_id"].removeprefix("sha256:")
    assert hex_id in text  # the record was uploaded
    assert "reproduced" in text  # and the reproduction attached to it


def test_demo_signs_with_throwaway_keys_and_counts_an_independent_reproduction(demo_run):
    folder, res = demo_run
    assert res.returncode == 0, res
    summary = json.loads(res.stdout)
    hex_id = summary["record_id"].removeprefix("sha256:")
    bare = folder / "git" / "demo" / "sample-lm.git"
    sig = subprocess.run(
        ["git", "show", f"refs/heads/cotk-repro-records:records/{hex_id}/record.sig"],
        cwd=bare,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert sig.startswith("-----BEGIN SSH SIGNATURE-----")
    assert (folder / "keys" / "demo.pub").is_file() and (folder / "keys" / "demo-reproducer.pub").is_file()
    with sqlite3.connect(folder / "dashboard.db") as db:
        owner, fp, n = db.execute(
            "select u.name, r.key_fingerprint, r.reproduced_by from records r join users u on u.id = r.user_id"
        ).fetchone()
        repro = db.execute(
            "select u.name, p.verdict, p.by_author, p.key_fingerprint from reproductions p "
            "join users u on u.id = p.user_id"
        ).fetchall()
    keygen = subprocess.run(
        ["ssh-keygen", "-lf", str(folder / "keys" / "demo.pub")], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert owner == "demo" and fp == keygen and n == 1
    assert [(u, v, bool(a)) for u, v, a, _k in repro] == [("demo-reproducer", "reproduced", False)]
    assert repro[0][3] is not None


# -- what --no-serve leaves behind (issue 12, rough edge 10) -------------------------------------------------


def _fake_demo(folder: Path):
    """What run_demo returns, for a folder that exists: the CLI's bookkeeping around it, without the loop."""
    from types import SimpleNamespace

    from cotk_repro.demo import DemoResult

    (folder / "project").mkdir(parents=True)
    (folder / "dashboard.db").write_bytes(b"")
    outcome = SimpleNamespace(verdict={"verdict": "reproduced"}, rows=[], error=None, exit_code=0)
    return DemoResult(
        folder=folder,
        project=folder / "project",
        record={"id": "sha256:" + "ab" * 32, "results": {}},
        dashboard_url="http://127.0.0.1:1",
        record_url=None,
        reproduction=outcome,
        runtime="venv",
    )


@pytest.mark.parametrize("args, kept", [([], False), (["--keep"], True), (["--dir", "{dir}"], True)])
def test_no_serve_removes_its_temporary_folder_or_says_how_to_serve_it_again(tmp_path, monkeypatch, args, kept):
    from typer.testing import CliRunner

    import cotk_repro.demo
    from cotk_repro.cli import _load_commands, app

    folder = tmp_path / "cotk-repro-demo-x"
    monkeypatch.setattr(cotk_repro.demo, "run_demo", lambda *a, **k: _fake_demo(folder))
    _load_commands()
    res = CliRunner().invoke(app, ["demo", "--no-serve", *[a.format(dir=folder) for a in args]])
    assert res.exit_code == 0, res.output
    assert "http://127.0.0.1:1" not in res.output  # the dashboard has stopped: no URL that is already closed
    assert folder.exists() is kept
    if kept:
        assert f"cotk-repro dashboard serve --db sqlite:///{folder / 'dashboard.db'}" in res.output
    else:
        assert f"removed the demo folder {folder}" in res.output and "--keep" in res.output


# -- SIGTERM, SIGHUP, SIGKILL: nothing left behind (issues 39 and 40) ------------------------------------------------


class Demo:
    """A real ``cotk-repro demo`` process in a temporary folder of its own (TMPDIR), its output read as it comes."""

    def __init__(self, tmp: Path, home: Path, *args: str, cache: Path | None = None):
        self.tmp = tmp
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")},
            "COTK_REPRO_CACHE": str(cache if cache is not None else shared_cache()),
            "TMPDIR": str(tmp),
            "HOME": str(home),
            "COTK_REPRO_SIGNING_KEY": "",
            "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
            "COTK_REPRO_HELP_CACHE": "0",
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cotk_repro", "demo", "--runtime", "venv", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 600) -> re.Match:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.seen:
                if m := re.search(pattern, line):
                    return m
            try:
                self.seen.append(self.lines.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                pass
            if time.monotonic() > deadline or (self.proc.poll() is not None and self.lines.empty()):
                if self.lines.empty():
                    raise AssertionError(f"no line matching {pattern!r}:\n" + "\n".join(self.seen[-40:]))

    def finish(self, timeout: float = 120) -> int:
        rc = self.proc.wait(timeout=timeout)
        time.sleep(0.5)  # the pumps drain what is left
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return rc

    @property
    def folder(self) -> Path:
        return Path(self.wait_for(r"scaffolding the sample project in (\S+)/sample-lm").group(1))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def _left_behind(*places: Path) -> list[str]:
    """Processes whose command line names one of ``places`` or whose working folder is in one: the demo's git
    daemon (``--base-path=<demo folder>/git``), a reproduction's venv or entry, anything the demo started there."""
    found = []
    names = [str(p) for p in places]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if any(n in cmd or cwd.startswith(n) for n in names):
            found.append(f"{pid}: {cmd.strip()} (in {cwd})")
    return found


def _git_daemon_of(folder: Path) -> int:
    mark = f"--base-path={folder / 'git'}"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if mark in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"):
                return int(pid)
        except OSError:
            continue
    raise AssertionError(f"no git daemon serving {folder / 'git'}")


def _closed(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=5)
    except OSError:
        return True
    return False


@pytest.mark.parametrize(
    "sig, when",
    [
        (signal.SIGTERM, r"^publishing to the git remote"),  # the git daemon and the dashboard are up
        (signal.SIGHUP, r"^checking out [0-9a-f]+"),  # inside reproduce: its own handlers, its clean-up
    ],
    ids=["sigterm-while-publishing", "sighup-while-reproducing"],
)
def test_a_demo_sent_sigterm_or_sighup_cleans_up_like_ctrl_c_and_names_the_signal(
    tmp_path, tmp_path_factory, home, sig, when
):
    """SIGTERM left the temporary folder (the README says it is removed) and said "interrupted (Ctrl-C)".

    Each demo gets a cache of its own, empty: its reproduction builds its environment (many seconds) after the line
    the test waits for, so the signal comes in the state it is meant for. With a warm shared cache the whole
    reproduction took a second and could end before the signal arrived."""
    demo = Demo(tmp_path, home, "--no-serve", cache=tmp_path_factory.mktemp("cold-cache"))
    try:
        folder = demo.folder
        demo.wait_for(when)
        _git_daemon_of(folder)  # running now
        demo.proc.send_signal(sig)
        rc = demo.finish()
    finally:
        demo.kill()
    out = "\n".join(demo.seen)
    assert rc == 128 + sig, out
    assert f"Error: terminated ({sig.name})" in out and "interrupted (Ctrl-C)" not in out, out
    assert "Traceback" not in out, out
    assert f"removed the demo folder {folder}" in out
    assert not folder.exists() and list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
    assert _left_behind(tmp_path, folder) == []


def test_a_serving_demo_sent_sigterm_stops_its_dashboard_and_git_daemon_and_removes_its_folder(tmp_path, home):
    demo = Demo(tmp_path, home)
    try:
        folder = demo.folder
        url = demo.wait_for(r"^dashboard: (http://\S+)").group(1)
        demo.wait_for(r"serving the dashboard; press Ctrl-C to stop")
        assert not _closed(url + "/api/v1/health")
        daemon = _git_daemon_of(folder)
        demo.proc.send_signal(signal.SIGTERM)
        rc = demo.finish()
    finally:
        demo.kill()
    out = "\n".join(demo.seen)
    assert rc == 143 and "Error: terminated (SIGTERM)" in out and "interrupted (Ctrl-C)" not in out, out
    assert not folder.exists() and list(tmp_path.iterdir()) == []
    assert _closed(url + "/api/v1/health")  # the embedded dashboard (uvicorn) is gone with the process
    assert not Path(f"/proc/{daemon}").exists() and _left_behind(tmp_path, folder) == []


def test_a_demo_killed_with_sigkill_takes_its_git_daemon_with_it(tmp_path, home):
    """No clean-up code survives SIGKILL: the git daemon asked the kernel to be killed with its parent
    (prctl PR_SET_PDEATHSIG), so it does not outlive the demo. (The folder stays: nothing can remove it.)"""
    demo = Demo(tmp_path, home, "--no-serve")
    daemon = None
    try:
        folder = demo.folder
        demo.wait_for(r"^publishing to the git remote")
        daemon = _git_daemon_of(folder)
        assert os.getpgid(daemon) == daemon  # a process group of its own
        demo.proc.send_signal(signal.SIGKILL)
        assert demo.finish() == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while Path(f"/proc/{daemon}").exists() and Path(f"/proc/{daemon}/cmdline").read_bytes():
            assert time.monotonic() < deadline, f"the git daemon {daemon} outlived the demo"
            time.sleep(0.1)
        assert _left_behind(folder) == []
    finally:
        demo.kill()
        if daemon is not None and _left_behind(tmp_path):  # the test failed: leave no daemon of ours running
            os.killpg(daemon, signal.SIGKILL)


@pytest.mark.parametrize("command", ["demo", "gc"])
def test_help_paragraphs_have_no_stray_line_breaks(command):
    """Typer's Rich help keeps a docstring's single line breaks after its first paragraph, and the command list
    shows the first line alone: each paragraph of these docstrings is one line, so neither breaks mid-sentence."""
    import inspect

    import typer.main

    from cotk_repro.cli import _load_commands, app

    _load_commands()
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    for paragraph in inspect.cleandoc(click_command.help or "").split("\n\n"):
        assert "\n" not in paragraph.strip(), paragraph
