"""The documentation harness: every shell and Python block of the docs runs, in order, as a reader would run it.

A Markdown file is one *session*: a temporary folder (the reader's working directory, holding copies of the
repository's ``examples/`` and ``tests/fixtures/`` and links to ``benchmarks/``, ``plugins/`` and ``scripts/``)
with its own HOME and user directories, in which the file's blocks run top to bottom, so a later block sees
what an earlier one made (files, ``cd``, ``export``).

What runs and how it is checked:

- ``console`` blocks: each ``$ `` line is a command (a line ending in ``\\`` continues on the next); the lines
  after it, up to the next command, are what it prints (stdout and stderr together). A command with no such
  lines is checked by its exit status alone. A command must exit 0, unless what it prints holds an ``Error:``
  line: then it must fail (exit not 0), unless it prints its status itself (``...; echo "exit $?"``).
- ``bash`` / ``sh`` / ``shell`` blocks run as one script under ``set -e``: every command must succeed.
- ``python`` blocks run in the session's one interpreter, in order, so names persist from block to block; a
  block of ``>>>`` lines is a doctest (ELLIPSIS and NORMALIZE_WHITESPACE on).
- Other languages (``toml``, ``json``, ``text``, ...) are data, not run; a fence without a language is an error,
  so that a shell block can never pass for text by accident.

A ``<name>`` in a command (``cotk-repro diff <id1> <id2>``) is a placeholder: it stands for the session
variable ``DOCS_name`` (``-`` read as ``_``), which a hidden setup exports.

Expected output: a line that is only ``...`` stands for any number of lines, ``...`` within a line for any text,
``<64 hex>`` for a SHA-256 in hex and ``<hex>`` for any hex digits; runs of spaces are compared as one.

Markers, an HTML comment on the line before a block (invisible on GitHub):

- ``<!-- docs: skip reason="needs a GPU" -->``: not run here; the reason is required.
- ``<!-- docs: exit=1 -->``: the block's last command must exit with this status.
- ``<!-- docs: timeout=300 -->``: seconds each command may take (default 120).
- ``<!-- docs: expect -->``: this block is the output of the block before it (e.g. a ``text`` block after a
  ``bash`` one).
- ``<!-- docs: file=PATH -->``: this block's text is written to PATH in the session before anything else runs
  further down (a ``toml`` config the next command reads).
- ``<!-- docs: setup`` ... ``-->``: shell lines, run in the session where the comment stands, unseen by readers
  (make the files an example command reads, start a service).
- ``<!-- docs: pysetup`` ... ``-->``: Python run in the session's interpreter where the comment stands.

Markers combine: ``<!-- docs: exit=2 timeout=60 -->``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py", "pycon"}
DEFAULT_TIMEOUT = 120.0

_FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)")
_MARKER = re.compile(r"^<!--\s*docs:\s*(.*?)\s*-->\s*$")
_OPEN_MULTI = re.compile(r"^<!--\s*docs:\s*(setup|pysetup)\s*$")
_ATTR = re.compile(r'(\w[\w-]*)(?:=("[^"]*"|\S+))?')


class DocError(Exception):
    """A doc that the harness cannot read: an unknown marker, a skip without reason, a fence without language."""


@dataclass
class Step:
    """One thing a session does, in file order: a fenced block, or a hidden setup."""

    kind: str  # "block", "setup", "pysetup"
    line: int
    text: str
    lang: str = ""
    attrs: dict[str, str] = field(default_factory=dict)
    expect: str | None = None  # the output block marked `expect` that follows it

    @property
    def where(self) -> str:
        return f"line {self.line}"


def _parse_attrs(text: str, path: str, line: int) -> dict[str, str]:
    attrs = {}
    for m in _ATTR.finditer(text):
        key, value = m.group(1), m.group(2)
        if value is None:
            value = ""
        elif value.startswith('"'):
            value = value[1:-1]
        if key not in {"skip", "reason", "exit", "timeout", "expect", "file"}:
            raise DocError(f"{path}:{line}: unknown docs marker {key!r}")
        attrs[key] = value
    if "skip" in attrs and not attrs.get("reason"):
        raise DocError(f'{path}:{line}: a skipped block says why: <!-- docs: skip reason="..." -->')
    return attrs


def parse(text: str, path: str = "<doc>") -> list[Step]:
    """The steps of one Markdown file, in order."""
    lines = text.splitlines()
    steps: list[Step] = []
    pending: dict[str, str] = {}
    pending_line = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        multi = _OPEN_MULTI.match(line)
        if multi:
            start = i
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "-->":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise DocError(f"{path}:{start + 1}: <!-- docs: {multi.group(1)} is never closed by a '-->' line")
            steps.append(Step(multi.group(1), start + 1, "\n".join(body) + "\n"))
            i += 1
            continue
        marker = _MARKER.match(line)
        if marker:
            pending = _parse_attrs(marker.group(1), path, i + 1)
            pending_line = i + 1
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            indent, ticks, lang = fence.groups()
            start = i
            body = []
            i += 1
            while i < len(lines) and not (lines[i].startswith(indent + ticks) and lines[i].strip() == ticks):
                body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
                i += 1
            if not lang:
                raise DocError(f"{path}:{start + 1}: a fenced block names its language (```bash, ```text, ...)")
            attrs = pending if pending_line == start else {}
            block_text = "\n".join(body) + "\n"
            if "expect" in attrs:
                if not steps or steps[-1].kind != "block" or steps[-1].lang not in SHELL | PYTHON:
                    raise DocError(f"{path}:{start + 1}: an `expect` block follows the block it is the output of")
                steps[-1].expect = block_text
            else:
                steps.append(Step("block", start + 1, block_text, lang.lower(), attrs))
            pending = {}
            i += 1
            continue
        if line.strip() and pending and pending_line != i + 1:
            pending = {}
        i += 1
    return steps


# -- matching ------------------------------------------------------------------------------------------------


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip()


_WILDCARDS = {"...": ".*", "<64 hex>": "[0-9a-f]{64}", "<hex>": "[0-9a-f]+"}
_WILDCARD = re.compile("|".join(re.escape(w) for w in _WILDCARDS))


def _line_matches(pattern: str, actual: str) -> bool:
    pattern, actual = _norm(pattern), _norm(actual)
    if not _WILDCARD.search(pattern):
        return pattern == actual
    parts = _WILDCARD.split(pattern)
    wilds = [_WILDCARDS[w] for w in _WILDCARD.findall(pattern)]
    regex = re.escape(parts[0]) + "".join(w + re.escape(p) for w, p in zip(wilds, parts[1:]))
    return re.fullmatch(regex, actual) is not None


def output_matches(expected: str, actual: str) -> bool:
    """Whether ACTUAL is what EXPECTED describes (``...`` lines and in-line ``...`` as wildcards)."""
    want = [ln for ln in expected.splitlines() if ln.strip()]
    got = [ln for ln in actual.splitlines() if ln.strip()]

    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[i, j]
        if i == len(want):
            ok = j == len(got)
        elif want[i].strip() == "...":
            ok = any(match(i + 1, k) for k in range(j, len(got) + 1))
        else:
            ok = j < len(got) and _line_matches(want[i], got[j]) and match(i + 1, j + 1)
        memo[i, j] = ok
        return ok

    return match(0, 0)


_PLACEHOLDER = re.compile(r"<([a-z][a-z0-9_-]*)>")


def fill_placeholders(script: str) -> str:
    """``<id1>`` in a command stands for the session variable ``DOCS_id1`` (a hidden setup exports it)."""
    return _PLACEHOLDER.sub(lambda m: '"${DOCS_' + m.group(1).replace("-", "_") + '}"', script)


# -- console blocks ------------------------------------------------------------------------------------------


@dataclass
class Command:
    line: int
    command: str
    output: str


def console_commands(step: Step) -> list[Command]:
    commands: list[Command] = []
    lines = step.text.splitlines()
    i = 0
    while i < len(lines):
        text = lines[i]
        if text.startswith("$ ") or text == "$":
            start = i
            cmd = text[2:]
            while cmd.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd.rstrip()[:-1] + "\n" + lines[i]
            commands.append(Command(step.line + 1 + start, cmd, ""))
        elif commands:
            commands[-1].output += text + "\n"
        elif text.strip():
            raise DocError(f"line {step.line + 1 + i}: a console block starts with a `$ ` command")
        i += 1
    return commands


# -- the session ---------------------------------------------------------------------------------------------


@dataclass
class Failure:
    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass
class Report:
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


class Session:
    """A temporary reader's folder in which one file's steps run in order."""

    def __init__(self, root: Path, name: str, env: dict[str, str] | None = None):
        self.name = name
        self.root = root
        self.work = root / "work"
        self.state = root / "state"
        self.work.mkdir(parents=True)
        self.state.mkdir()
        for folder in ("examples", "tests/fixtures"):
            shutil.copytree(REPO_ROOT / folder, self.work / folder, symlinks=True)
        for folder in ("benchmarks", "plugins", "scripts", "templates", "requirements"):
            (self.work / folder).symlink_to(REPO_ROOT / folder)
        home = root / "home"
        (home / ".ssh").mkdir(parents=True)
        base_env = dict(os.environ)
        base_env.update(
            {
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_DATA_HOME": str(home / ".local/share"),
                "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                "COLUMNS": "160",
                "TERM": "dumb",
                "NO_COLOR": "1",
                "BROWSER": "true",  # `--open` opens nothing
                "PYTHONUNBUFFERED": "1",
                "DOCS_REPO": str(REPO_ROOT),
                "DOCS_SESSION": str(root),
                "GIT_AUTHOR_NAME": "Docs Reader",
                "GIT_AUTHOR_EMAIL": "reader@example.invalid",
                "GIT_COMMITTER_NAME": "Docs Reader",
                "GIT_COMMITTER_EMAIL": "reader@example.invalid",
            }
        )
        base_env.pop("COTK_REPRO_DEBUG", None)
        base_env.update(env or {})
        self.env = base_env
        (self.state / "cwd").write_text(str(self.work))
        (self.state / "env.sh").write_text("")
        self._python: subprocess.Popen[str] | None = None
        self._groups: list[int] = []

    def shell(self, script: str, timeout: float, errexit: bool = True) -> tuple[int, str]:
        """Run SCRIPT in the session's current folder and environment; keep its folder and exports."""
        chunk = self.state / "chunk.sh"
        chunk.write_text(fill_placeholders(script))
        state = shlex.quote(str(self.state))
        wrapper = (
            f'. {state}/env.sh 2>/dev/null; cd "$(cat {state}/cwd)" || exit 97\n'
            f"trap 'pwd > {state}/cwd; export -p | grep -v \"^declare -[a-z]*r\" > {state}/env.sh' EXIT\n"
            + ("set -eo pipefail\n" if errexit else "set -o pipefail\n")
            + f". {state}/chunk.sh\n"
        )
        proc = subprocess.Popen(
            ["bash", "-c", wrapper],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._groups.append(proc.pid)  # what it leaves running in the background is stopped at close()
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            return 124, (out or "") + f"\n[timed out after {timeout:.0f} s]"
        return proc.returncode, out

    def python(self, code: str, timeout: float, *, doctest: bool = False, line: int = 0) -> tuple[int, str]:
        """Run CODE in the session's one interpreter (names persist from block to block) in its current folder."""
        if self._python is None:
            self._python = subprocess.Popen(
                [sys.executable, "-c", _PYTHON_WORKER],
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                start_new_session=True,
            )
        proc = self._python
        cwd = (self.state / "cwd").read_text().strip()
        request = {"code": code, "cwd": cwd, "doctest": doctest, "path": self.name, "line": line}
        assert proc.stdin is not None and proc.stdout is not None
        stdout = proc.stdout
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        answer: list[str] = []
        reader = threading.Thread(target=lambda: answer.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not answer or not answer[0]:
            self.close()
            return 124, f"[the Python block did not finish in {timeout:.0f} s, or its interpreter died]"
        reply = json.loads(answer[0])
        return reply["rc"], reply["out"]

    def close(self) -> None:
        for group in self._groups:
            try:
                os.killpg(group, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        if self._python is not None:
            self._python.kill()
            self._python.wait()
            self._python = None


# The session's Python interpreter: one JSON request a line on stdin, one JSON answer a line on the original
# stdout (file descriptor 1 itself goes to stderr, so nothing a block prints can break the protocol).
_PYTHON_WORKER = """
import contextlib, doctest, io, json, os, sys, traceback
proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
globs = {"__name__": "__docs__"}
for request in sys.stdin:
    req = json.loads(request)
    buf = io.StringIO()
    rc = 0
    os.chdir(req["cwd"])
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            if req["doctest"]:
                flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
                test = doctest.DocTestParser().get_doctest(req["code"], globs, "block", req["path"], req["line"])
                runner = doctest.DocTestRunner(optionflags=flags)
                runner.run(test, out=buf.write, clear_globs=False)
                globs.update(test.globs)
                rc = 1 if runner.failures else 0
            else:
                exec(compile(req["code"], "%s:%d" % (req["path"], req["line"]), "exec"), globs)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            rc = 1
    proto.write(json.dumps({"rc": rc, "out": buf.getvalue()}) + "\\n")
    proto.flush()
"""


def run_steps(steps: list[Step], session: Session, path: str) -> Report:
    report = Report()
    for step in steps:
        started = time.monotonic()
        try:
            _run_step(step, session, path, report)
        finally:
            report.seconds[f"{path}:{step.line}"] = time.monotonic() - started
    return report


def _run_step(step: Step, session: Session, path: str, report: Report) -> None:
    where = f"{path}:{step.line}"
    timeout = float(step.attrs.get("timeout") or DEFAULT_TIMEOUT)
    if step.kind == "setup":
        rc, out = session.shell(step.text, timeout)
        if rc:
            report.failures.append(Failure(where, f"hidden setup failed (exit {rc}):\n{out}"))
        return
    if step.kind == "pysetup":
        rc, out = session.python(step.text, timeout, line=step.line)
        if rc:
            report.failures.append(Failure(where, f"hidden Python setup failed:\n{out}"))
        return
    if "file" in step.attrs:
        cwd = Path((session.state / "cwd").read_text().strip())
        target = cwd / step.attrs["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(step.text, encoding="utf-8")
        return
    if step.lang not in SHELL | PYTHON:
        return
    if "skip" in step.attrs:
        report.skipped.append(f"{where}: {step.attrs['reason']}")
        return
    report.ran.append(where)
    if step.lang == "console":
        _run_console(step, session, where, timeout, report)
    elif step.lang in SHELL:
        rc, out = session.shell(step.text, timeout)
        _check(report, where, step.text, rc, out, step.expect, step.attrs.get("exit"))
    elif ">>>" in step.text:
        rc, out = session.python(step.text, timeout, doctest=True, line=step.line)
        if rc:
            report.failures.append(Failure(where, f"doctest failed:\n{out}"))
    else:
        rc, out = session.python(step.text, timeout, line=step.line)
        _check(report, where, "python block", rc, out, step.expect, step.attrs.get("exit"))


def _run_console(step: Step, session: Session, where: str, timeout: float, report: Report) -> None:
    commands = console_commands(step)
    for n, cmd in enumerate(commands):
        want_exit = step.attrs.get("exit") if n == len(commands) - 1 else None
        shows_error = any(ln.startswith("Error:") for ln in cmd.output.splitlines())
        if want_exit is None and shows_error and "$?" not in cmd.command:  # `...; echo "exit $?"` shows its own
            want_exit = "nonzero"
        rc, out = session.shell(cmd.command + "\n", timeout, errexit=False)
        expected = cmd.output if cmd.output.strip() else None
        _check(report, f"{where} (line {cmd.line})", cmd.command, rc, out, expected, want_exit)


def _check(
    report: Report, where: str, command: str, rc: int, out: str, expected: str | None, want_exit: str | None
) -> None:
    if want_exit is None:
        ok = rc == 0
    elif want_exit == "nonzero":
        ok = rc not in (0, 124)
    else:
        ok = rc == int(want_exit)
    if not ok:
        want = "0" if want_exit is None else want_exit
        report.failures.append(Failure(where, f"`{command.strip()}` exited {rc} (expected {want}):\n{out}"))
        return
    if expected is not None and not output_matches(expected, out):
        report.failures.append(Failure(where, f"`{command.strip()}` printed\n{out}\nbut the doc shows\n{expected}"))


def run_doc(text: str, path: str, env: dict[str, str] | None = None, keep: Path | None = None) -> Report:
    """Parse and run one Markdown file in a fresh session."""
    steps = parse(text, path)
    if not any(s.kind == "block" and s.lang in SHELL | PYTHON and "skip" not in s.attrs for s in steps) and not any(
        s.kind in ("setup",) for s in steps
    ):
        report = Report()
        report.skipped = [f"{path}:{s.line}: {s.attrs['reason']}" for s in steps if "skip" in s.attrs]
        return report
    root = Path(tempfile.mkdtemp(prefix="docs-session-", dir=keep))
    try:
        session = Session(root, path, env)
        try:
            return run_steps(steps, session, path)
        finally:
            session.close()
    finally:
        if keep is None:
            _rmtree(root)


def _rmtree(root: Path) -> None:
    def onerror(func, path, exc_info):  # a read-only folder made by a command (pip caches, git objects)
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(root, onerror=onerror)


def doc_files() -> list[Path]:
    return [
        REPO_ROOT / "README.md",
        *sorted((REPO_ROOT / "docs").glob("*.md")),
        *sorted((REPO_ROOT / "plugins").glob("*/README.md")),
    ]


if __name__ == "__main__":  # python tests/docs_harness.py FILE...: run docs by hand, keeping nothing
    failed = 0
    for name in sys.argv[1:] or [str(p) for p in doc_files()]:
        rel = os.path.relpath(name, REPO_ROOT)
        result = run_doc(Path(name).read_text(encoding="utf-8"), rel)
        for f in result.failures:
            print(f"FAIL {f}\n")
        for where, secs in result.seconds.items():
            if secs > 2:
                print(f"  {where}: {secs:.1f} s")
        print(f"{rel}: {len(result.ran)} ran, {len(result.skipped)} skipped, {len(result.failures)} failed")
        failed += bool(result.failures)
    sys.exit(1 if failed else 0)
