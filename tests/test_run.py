"""`cotk-repro run` as a real subprocess: records, logs, live output, Ctrl-C, and every error of issue 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git

GOOD = (
    'import json\njson.dump({"bleu": 0.25, "bleu hashvalue": "'
    + "ab" * 32
    + '", "distinct-1": 0.5}, open("result.json", "w"))\nprint("entry says hi")\n'
)


def write_result(obj) -> str:
    return f"import json\njson.dump({obj!r}, open('result.json', 'w'))\n"


def records(root: Path) -> list[dict]:
    runs = root / ".cotk-repro" / "runs"
    return [json.loads((d / "record.json").read_text()) for d in sorted(runs.iterdir())] if runs.is_dir() else []


def assert_clean_error(res, *fragments: str, code: int = 2) -> None:
    """One clear sentence on stderr, the expected exit status, no traceback."""
    assert res.returncode == code, res
    assert "Traceback" not in res.stderr, res
    error_lines = [line for line in res.stderr.splitlines() if line.startswith("Error: ")]
    assert len(error_lines) == 1, res
    for fragment in fragments:
        assert fragment in error_lines[0], res


def assert_no_half_folders(root: Path) -> None:
    state = root / ".cotk-repro"
    if not state.exists():
        return
    for d in (state / "runs").iterdir():
        assert (d / "record.json").is_file(), f"half-written record folder {d}"
        assert d.name == json.loads((d / "record.json").read_text())["id"].removeprefix("sha256:")
    tmp = state / "tmp"
    assert not tmp.exists() or not any(tmp.iterdir()), list(tmp.iterdir())


def test_successful_run_writes_a_record(make_project, cli):
    root = make_project({"main.py": GOOD + 'import sys\nprint("to stderr", file=sys.stderr)\n'})
    res = cli("run", cwd=root)
    assert res.returncode == 0, res
    # live output echoed on the run's own stdout/stderr
    assert "entry says hi" in res.stdout and "to stderr" in res.stderr
    [rec] = records(root)
    assert rec["id"] in res.stdout
    assert rec["status"] == "ok" and rec["schema"] == "cotk-repro/record"
    assert rec["results"]["bleu"] == {
        "value": 0.25,
        "hash": "ab" * 32,
        "signature": None,
        "metric": "bleu",
        "version": None,
    }
    assert rec["results"]["distinct-1"]["hash"] is None  # unverifiable, but kept
    assert rec["code"]["commit"] == git(root, "rev-parse", "HEAD") and rec["code"]["branch"] == "main"
    assert rec["command"]["entry"] == "main.py" and rec["command"]["exit_status"] == 0
    assert rec["command"]["cwd"] == "."
    folder = root / ".cotk-repro" / "runs" / rec["id"].removeprefix("sha256:")
    assert (folder / "stdout.log").read_text() == "entry says hi\n"
    assert (folder / "stderr.log").read_text() == "to stderr\n"
    assert (folder / "Dockerfile").read_text() == rec["environment"]["dockerfile"]
    lock = (folder / "requirements.lock").read_text()
    assert "pluggy==" in lock
    # the id is the sha256 of the canonical JSON of everything else (recomputed independently)
    import hashlib

    body = {k: v for k, v in rec.items() if k != "id"}
    canon = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert rec["id"] == "sha256:" + hashlib.sha256(canon).hexdigest()
    assert_no_half_folders(root)


def test_entry_args_from_command_line_and_config(make_project, cli):
    entry = (
        'import json, sys\njson.dump({"n": len(sys.argv[1:]), "first": float(sys.argv[1])}, open("result.json", "w"))\n'
    )
    root = make_project({"main.py": entry, "cotk-repro.toml": '[run]\nargs = ["7", "x"]\n'})
    res = cli("run", "--json", cwd=root)
    assert res.returncode == 0, res
    rec = json.loads(res.stdout)  # --json: only JSON on stdout
    assert rec["command"]["args"] == ["7", "x"] and rec["results"]["n"]["value"] == 2
    res = cli("run", "--json", "--", "3", "--flag", "y", cwd=root)
    assert res.returncode == 0, res
    rec = json.loads(res.stdout)
    assert rec["command"]["args"] == ["3", "--flag", "y"] and rec["results"]["first"]["value"] == 3.0
    assert "--flag" in rec["environment"]["dockerfile"]


def test_entry_in_subfolder_and_result_option(make_project, cli):
    entry = 'import json\njson.dump({"x": 1}, open("out/r.json", "w"))\n'
    root = make_project({"exp/run_me.py": entry, "exp/out/.keep": ""})
    res = cli("run", "--entry", "run_me.py", "--result", "out/r.json", "--json", cwd=root / "exp")
    assert res.returncode == 0, res
    rec = json.loads(res.stdout)
    assert rec["command"]["cwd"] == "exp" and rec["command"]["entry"] == "run_me.py"
    assert rec["command"]["result_file"] == "out/r.json"
    assert "WORKDIR /home/runner/work/exp" in rec["environment"]["dockerfile"]


# -- errors: each one sentence, exit 2, nothing written or a record marked failed -----------------


def test_not_a_git_repo(tmp_path, cli):
    (tmp_path / "main.py").write_text(GOOD)
    res = cli("run", cwd=tmp_path)
    assert_clean_error(res, "not inside a git repository")
    assert not (tmp_path / ".cotk-repro").exists()


def test_no_commits(make_project, cli):
    root = make_project({"main.py": GOOD}, commit=False)
    res = cli("run", cwd=root)
    assert_clean_error(res, "has no commits yet")
    assert not (root / ".cotk-repro").exists()


def test_dirty_tree(make_project, cli):
    root = make_project({"main.py": GOOD})
    (root / "main.py").write_text(GOOD + "# edited\n")
    res = cli("run", cwd=root)
    assert_clean_error(res, "uncommitted changes", "main.py", "--allow-dirty")
    assert not (root / ".cotk-repro").exists()


def test_entry_missing(make_project, cli):
    root = make_project({"other.py": GOOD})
    res = cli("run", cwd=root)
    assert_clean_error(res, "entry script main.py does not exist")
    res = cli("run", "--entry", "nope.py", cwd=root)
    assert_clean_error(res, "nope.py does not exist")
    assert not (root / ".cotk-repro").exists()


@pytest.mark.parametrize(
    ("entry", "status", "fragment"),
    [
        ("import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n", "failed", "exited with status 3"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "failed", "killed by signal SIGKILL"),
        ("print('no result')\n", "failed", "did not write its result file"),
        ("open('result.json', 'w').write('{\"bleu\": 0.1,')\n", "failed", "not valid JSON"),
        ("open('result.json', 'w').write('[1, 2]')\n", "failed", "must hold a JSON object"),
        (write_result({"bleu": "high"}), "failed", "'bleu' is not a finite number"),
        (write_result({"bleu": True}), "failed", "'bleu' is not a finite number"),
        (write_result({"bleu": 0.1, "bleu hashvalue": "xyz"}), "failed", "hash of 'bleu' is malformed"),
        (write_result({"bleu": 0.1, "bleu hashvalue": "ab" * 31}), "failed", "hash of 'bleu' is malformed"),
        (write_result({}), "failed", "holds no metric values"),
    ],
    ids=[
        "exit-nonzero",
        "signal",
        "no-result",
        "invalid-json",
        "not-object",
        "non-numeric",
        "bool",
        "bad-hash",
        "short-hash",
        "empty",
    ],
)
def test_entry_and_result_failures_are_recorded_as_failed(make_project, cli, entry, status, fragment):
    root = make_project({"main.py": entry})
    res = cli("run", cwd=root)
    assert_clean_error(res, fragment)
    [rec] = records(root)
    assert rec["status"] == status and fragment in rec["error"] and rec["results"] == {}
    assert rec["id"].removeprefix("sha256:")[:12] in res.stderr
    assert_no_half_folders(root)
    # a failed run is never shown as a result
    assert cli("show", "latest", cwd=root).returncode == 2
    listed = json.loads(cli("runs", "--json", cwd=root).stdout)
    assert [r["status"] for r in listed] == [status]
    assert json.loads(cli("runs", "--json", "--ok-only", cwd=root).stdout) == []


def test_signal_exit_status_recorded(make_project, cli):
    root = make_project({"main.py": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n"})
    res = cli("run", cwd=root)
    assert_clean_error(res, "killed by signal SIGTERM")
    [rec] = records(root)
    assert rec["command"]["exit_status"] == -signal.SIGTERM


def test_stale_result_file(make_project, cli):
    root = make_project({"main.py": "print('forgot to write the result')\n"})
    old = root / "result.json"  # ignored by .gitignore: left over from an earlier run
    old.write_text(json.dumps({"bleu": 0.3}))
    past = time.time() - 3600
    os.utime(old, (past, past))
    res = cli("run", cwd=root)
    assert_clean_error(res, "stale")
    [rec] = records(root)
    assert rec["status"] == "failed" and rec["results"] == {}


def test_stale_result_file_just_written(make_project, cli):
    # even a file written a moment ago is stale when the entry does not rewrite it
    root = make_project({"main.py": "pass\n"})
    (root / "result.json").write_text(json.dumps({"bleu": 0.3}))
    res = cli("run", cwd=root)
    assert_clean_error(res, "stale")


def test_unknown_config_key(make_project, cli):
    root = make_project({"main.py": GOOD, "cotk-repro.toml": "[run]\nentry = 'main.py'\nentyr = 'x'\n"})
    res = cli("run", cwd=root)
    assert_clean_error(res, "unknown key 'run.entyr'", "cotk-repro.toml")
    assert not (root / ".cotk-repro").exists()


def test_a_module_the_config_names_that_is_not_installed_stops_the_run_before_it_starts(make_project, cli, tmp_path):
    # issue 40: a template's torch missing was a failed record holding a ModuleNotFoundError traceback
    marker = tmp_path / "entry-ran"
    entry = f"open({str(marker)!r}, 'w').close()\n" + GOOD
    config = '[run]\nentry = "main.py"\nimports = ["json", "no_such_module_cotk_canary"]\n'
    root = make_project({"main.py": entry, "cotk-repro.toml": config})
    res = cli("run", cwd=root)
    assert_clean_error(res, "no_such_module_cotk_canary", "[run] imports", "pip install no-such-module-cotk-canary")
    assert "json" not in res.stderr.split("needs", 1)[1].split("(", 1)[0]  # only the missing one is named
    assert not marker.exists() and records(root) == []
    assert_no_half_folders(root)


def test_modules_the_config_names_that_are_installed_or_beside_the_entry_let_it_run(make_project, cli):
    config = '[run]\nentry = "src/main.py"\nimports = ["json", "helper_mod"]\n'
    root = make_project(
        {"src/main.py": "import helper_mod\n" + GOOD, "src/helper_mod.py": "", "cotk-repro.toml": config}
    )
    res = cli("run", cwd=root)
    assert res.returncode == 0, res
    assert [r["status"] for r in records(root)] == ["ok"]


def test_config_imports_must_be_top_level_module_names(make_project, cli):
    root = make_project({"main.py": GOOD, "cotk-repro.toml": '[run]\nimports = ["torch.nn"]\n'})
    res = cli("run", cwd=root)
    assert_clean_error(res, "run.imports", "top-level", "cotk-repro.toml:2")
    assert records(root) == []


def test_state_folder_not_writable_file(make_project, cli):
    # root ignores permission bits, so make .cotk-repro a regular file: it cannot hold runs
    root = make_project({"main.py": GOOD})
    (root / ".cotk-repro").write_text("not a folder")
    res = cli("run", cwd=root)
    assert_clean_error(res, "cannot write to", ".cotk-repro")
    assert (root / ".cotk-repro").read_text() == "not a folder"
    assert not (root / "result.json").exists()  # the entry never ran


def test_state_folder_read_only_mount(make_project, cli, tmp_path):
    """A truly read-only .cotk-repro: a read-only bind mount (works as root); skipped where mounts are not allowed."""
    root = make_project({"main.py": GOOD})
    state = root / ".cotk-repro"
    state.mkdir()
    if os.geteuid() != 0:
        state.chmod(0o555)
        try:
            res = cli("run", cwd=root)
        finally:
            state.chmod(0o755)
    else:
        mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(state), str(state)], capture_output=True)
        if mounted.returncode != 0:
            # a bind mount then a read-only remount (older util-linux)
            subprocess.run(["umount", str(state)], capture_output=True)
            pytest.skip(f"cannot make a read-only bind mount here: {mounted.stderr.decode().strip()}")
        try:
            if os.access(state, os.W_OK) and _writable(state):
                pytest.skip("the read-only bind mount is still writable here")
            res = cli("run", cwd=root)
        finally:
            subprocess.run(["umount", str(state)], capture_output=True)
    assert_clean_error(res, "cannot write to", ".cotk-repro")
    assert not any(state.iterdir())


def _writable(folder: Path) -> bool:
    try:
        (folder / ".probe").write_text("x")
    except OSError:
        return False
    (folder / ".probe").unlink()
    return True


def test_entry_outside_repository(make_project, cli, tmp_path):
    root = make_project({"main.py": GOOD})
    outside = tmp_path / "elsewhere.py"
    outside.write_text(GOOD)
    res = cli("run", "--entry", str(outside), cwd=root)
    assert_clean_error(res, "outside the git repository")


# -- live output, interruption -------------------------------------------------------------------

LIVE = """
import json, pathlib, time
print("step one")  # no flush: cotk-repro runs the entry unbuffered
deadline = time.time() + 30
while not pathlib.Path("go").exists() and time.time() < deadline:
    time.sleep(0.02)
json.dump({"x": 1}, open("result.json", "w"))
print("step two")
"""


def _popen_run(root: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ)
    return subprocess.Popen(
        [sys.executable, "-m", "cotk_repro", "run", *args],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # a test runner started in the background may ignore SIGINT; the CLI must see a default handler
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_output_is_live(make_project):
    root = make_project({"main.py": LIVE, ".gitignore": ".cotk-repro/\nresult.json\ngo\n"})
    proc = _popen_run(root)
    try:
        first = proc.stdout.readline()  # arrives while the entry is still waiting for "go"
        assert first == "step one\n"
        assert proc.poll() is None
        (root / "go").write_text("")
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "step two" in rest


def test_ctrl_c_is_forwarded_and_recorded_as_interrupted(make_project):
    entry = """
import pathlib, sys, time
print("ready", flush=True)
try:
    time.sleep(60)
except KeyboardInterrupt:
    pathlib.Path("got-sigint").write_text("yes")
    print("cleaning up", flush=True)
    sys.exit(130)
"""
    root = make_project({"main.py": entry, ".gitignore": ".cotk-repro/\nresult.json\ngot-sigint\n"})
    proc = _popen_run(root)
    try:
        assert proc.stdout.readline() == "ready\n"
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C: the whole foreground group
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    assert (root / "got-sigint").read_text() == "yes"  # the entry saw the Ctrl-C and could clean up
    [rec] = records(root)
    assert rec["status"] == "interrupted" and rec["results"] == {}
    folder = root / ".cotk-repro" / "runs" / rec["id"].removeprefix("sha256:")
    assert "cleaning up" in (folder / "stdout.log").read_text()
    assert_no_half_folders(root)


def test_ctrl_c_to_cotk_repro_only_is_forwarded(make_project):
    """SIGINT to cotk-repro alone (not the group) still reaches the entry and is recorded."""
    entry = "import time\nprint('ready', flush=True)\ntime.sleep(60)\n"
    root = make_project({"main.py": entry})
    proc = _popen_run(root)
    try:
        assert proc.stdout.readline() == "ready\n"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < 9  # the entry stopped on the forwarded SIGINT, not by the kill timeout
    [rec] = records(root)
    assert rec["status"] == "interrupted"


#: the entry of the signal tests: it says it started (its pid, in a file outside the repository) before anything
# the marker appears whole (written beside, then renamed): a signal between its creation and its write once left
# an empty marker, read as int('')
STARTED_THEN_SLEEP = (
    "import os, sys, time\nopen(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
    "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\nprint('ready', flush=True)\ntime.sleep(60)\n"
)


def _signal_a_run(root: Path, marker: Path, sig: int, *, delay: float, after_ready: bool) -> tuple[int, str]:
    """Start `cotk-repro run` and send `sig` to it alone `delay` s after it starts (or after the entry's first line)."""
    proc = _popen_run(root, "--", str(marker))
    try:
        if after_ready:
            assert proc.stdout.readline() == "ready\n"
        time.sleep(delay)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


def _entry_is_gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_at_any_moment_after_the_entry_starts_leaves_an_interrupted_record(make_project, tmp_path, sig):
    """Issue 40: Ctrl-C (or SIGTERM) at 20 points of a run's life, from cotk-repro's start to the entry's sleep.

    Each time the entry started (it wrote its marker), exactly one record marked interrupted is written, the exit
    status is 128 + the signal's number and the entry is gone; a record is never anything but interrupted; never
    a half-written folder. 15 points are spread over the second half of the time this machine takes from the start
    to the entry's first line (measured first: checks, spawning, the entry's own start), 5 follow that line.
    A signal that stops cotk-repro while Python imports it is test_ctrl_c_in_the_first_second_is_one_sentence_...
    """
    root = make_project({"main.py": STARTED_THEN_SLEEP})
    t0 = time.monotonic()
    code, err = _signal_a_run(root, tmp_path / "calibrate", sig, delay=0, after_ready=True)
    to_ready = time.monotonic() - t0
    assert code == 128 + sig, err
    points = [(to_ready * (0.5 + 0.7 * k / 14), False) for k in range(15)] + [
        (d, True) for d in (0, 0.002, 0.01, 0.05, 0.3)
    ]
    package = os.sep + "cotk_repro" + os.sep
    started_runs = 1
    for i, (delay, after_ready) in enumerate(points):
        marker = tmp_path / f"started-{i}"
        before = len(records(root))
        code, err = _signal_a_run(root, marker, sig, delay=delay, after_ready=after_ready)
        point = f"point {i}: {delay:.3f} s after {'the first line' if after_ready else 'the start'}\n{err}"
        new = records(root)[before:]
        assert len(new) <= 1, point
        if marker.exists():  # the entry ran: its run is recorded as interrupted, and nothing of it is left running
            started_runs += 1
            assert len(new) == 1, "no record of a run whose entry had started; " + point
            assert _entry_is_gone(int(marker.read_text())), point
        if new:
            assert code == 128 + sig and package not in err, point
            assert new[0]["status"] == "interrupted" and "interrupted" in new[0]["error"], point
            assert ("Ctrl-C" if sig == signal.SIGINT else "SIGTERM") in new[0]["error"], point
        assert_no_half_folders(root)
    assert started_runs >= 6  # the points after the first line, at least: the test saw runs it must record


def test_same_run_twice_gives_two_records(make_project, cli):
    root = make_project({"main.py": GOOD})
    for _ in range(2):
        assert cli("run", "-q", cwd=root).returncode == 0
    recs = records(root)
    assert len(recs) == 2 and recs[0]["id"] != recs[1]["id"]  # start times differ
    assert recs[0]["results"] == recs[1]["results"]
    assert_no_half_folders(root)


def test_help_explains_every_option(cli, tmp_path):
    res = cli("run", "--help", cwd=tmp_path)
    assert res.returncode == 0
    for option in ("--entry", "--result", "--allow-dirty", "--quiet", "--json"):
        assert option in res.stdout
    res = cli("run", "--no-such-option", cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr and "--no-such-option" in res.stderr


def test_debug_shows_traceback(tmp_path, cli):
    res = cli("--debug", "run", cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" in res.stderr and "not inside a git repository" in res.stderr


# -- the newcomer's rough edges (issue 12) ---------------------------------------------------------------


def test_project_without_gitignore_says_to_ignore_outputs(tmp_path, cli):
    """Rough edge 6: the second run fails on the untracked result.json: the message says to ignore it."""
    root = tmp_path / "bare-project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "main.py").write_text(GOOD + "open('train.log', 'w').write('epoch 1')\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    first = cli("run", cwd=root)
    assert first.returncode == 0, first
    second = cli("run", cwd=root)
    assert_clean_error(second, "result.json", "train.log", "outputs of a run")
    assert "no .gitignore" in second.stderr and "add *.log and result.json to .gitignore" in second.stderr
    # with a .gitignore that lacks them, no "no .gitignore" but the same advice
    (root / ".gitignore").write_text(".cotk-repro/\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore state")
    third = cli("run", cwd=root)
    assert_clean_error(third, "result.json")
    assert "no .gitignore" not in third.stderr and "to .gitignore" in third.stderr
    # init's .gitignore ignores them, so a scaffolded project runs twice
    project = tmp_path / "scaffolded"
    assert cli("init", str(project)).returncode == 0
    assert {"result.json", "*.log"} <= set((project / ".gitignore").read_text().splitlines())


def test_git_repo_without_config_suggests_init(make_project, cli):
    """Rough edge 7: no cotk-repro.toml and no main.py: suggest `cotk-repro init` or --entry."""
    root = make_project({"train.py": GOOD})
    res = cli("run", cwd=root)
    assert_clean_error(res, "main.py does not exist", "cotk-repro.toml")
    assert "cotk-repro init" in res.stderr and "--entry" in res.stderr
    # with a config naming the entry, a missing entry is just that
    root = make_project({"cotk-repro.toml": '[run]\nentry = "gone.py"\n'})
    res = cli("run", cwd=root)
    assert_clean_error(res, "gone.py does not exist")
    assert "cotk-repro init" not in res.stderr


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.8])
def test_ctrl_c_in_the_first_second_is_one_sentence_and_130(make_project, delay):
    """Rough edge 12: Ctrl-C while cotk-repro starts (imports, git capture) exits 130 with one sentence."""
    root = make_project({"main.py": "import time\ntime.sleep(30)\n"})
    # a launcher file, not -c: a frame of it is told from the entry's own (site's .pth lines run as "<string>")
    launcher = root.parent / "launch_cotk_repro_main.py"
    launcher.write_text(
        "import sys; sys.argv[0] = 'cotk-repro'; sys.stdout.write('up\\n'); sys.stdout.flush()\n"
        "from cotk_repro.cli import main\nmain()\n"
    )  # the import takes about half a second
    proc = subprocess.Popen(
        [sys.executable, str(launcher), "run"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout.readline() == "up\n"  # Python is running: its SIGINT handler is in place
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err  # an exit status, not death by signal (-2)
    # cotk-repro's own output: one sentence, no frames of its code (an entry that had started may print its own
    # KeyboardInterrupt, even a fatal error from its site imports: the Ctrl-C reached the whole foreground group,
    # as in a terminal; those frames are the entry's, never cotk-repro's package or launcher)
    errors = [line for line in err.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "interrupted" in errors[0], err
    package = os.sep + "cotk_repro" + os.sep
    assert package not in err and launcher.name not in err and "Aborted" not in err, err


def test_the_callers_preparation_runs_while_the_entry_runs(make_project):
    """``execute(meanwhile=...)`` (the CLI loads Rich there) runs during the entry, not after it: this entry
    waits for the file that ``meanwhile`` writes (up to 20 s), and gives up (exit 3) if it never comes. A preparation that
    raises changes nothing about the run."""
    from cotk_repro.records.runner import execute

    waits = (
        "import json, pathlib, sys, time\n"
        "for _ in range(int(sys.argv[1])):\n"
        "    if pathlib.Path('flag').exists():\n"
        "        break\n"
        "    time.sleep(0.025)\n"
        "else:\n"
        "    raise SystemExit(3)\n"
        "json.dump({'x': 1.0}, open('result.json', 'w'))\n"
    )
    root = make_project({"main.py": waits, ".gitignore": "result.json\nflag\n.cotk-repro/\n"})
    outcome = execute(root, args=["800"], echo=False, meanwhile=lambda: (root / "flag").write_text("go"))
    assert outcome.error is None and outcome.record["results"]["x"]["value"] == 1.0

    def fails() -> None:
        raise RuntimeError("a preparation that breaks")

    (root / "flag").unlink()
    outcome = execute(root, args=["20"], echo=False, meanwhile=fails)
    assert outcome.error is not None and outcome.record["command"]["exit_status"] == 3  # no flag: waited, gave up
    assert outcome.record["status"] == "failed" and len(records(root)) == 2


SWALLOWED = """
import os, signal, sys, time, weakref
from cotk_repro.core import interrupts
from cotk_repro.records.runner import SignalLatch, forwarding_signals

if sys.argv[1] == "noted":
    interrupts.install()


class Thing:
    pass


def callback(_ref):  # Ctrl-C arrives while Python runs a weakref callback, as importlib's module-lock ones
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)  # the handler runs here: its KeyboardInterrupt is "ignored" by Python


thing = Thing()
ref = weakref.ref(thing, callback)
del thing
print("still running", flush=True)
with forwarding_signals(SignalLatch()) as latch:
    print("interrupted" if latch.interrupted else "not interrupted", flush=True)
"""


@pytest.mark.parametrize("handler", ["python's", "noted"])
def test_a_ctrl_c_python_swallowed_still_interrupts_the_run(tmp_path, handler):
    """ci6: Ctrl-C while `cotk-repro run` imported landed in importlib's weakref callback, Python printed
    "Exception ignored" and went on, and the run started its entry and waited for it (the 20-point signal test
    hung). With the command line's handler (core.interrupts, installed first by launch and main) the run's latch
    learns of it; with Python's own, it is lost (what the test proves it catches)."""
    script = tmp_path / "swallowed.py"
    script.write_text(SWALLOWED)
    res = subprocess.run([sys.executable, str(script), handler], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "KeyboardInterrupt" in res.stderr and "Exception ignored" in res.stderr  # Python swallowed it
    expected = "interrupted" if handler == "noted" else "not interrupted"
    assert res.stdout.splitlines() == ["still running", expected], res
