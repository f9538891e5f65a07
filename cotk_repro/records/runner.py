"""``cotk-repro run``: capture code and environment, run the entry, write a record.

The flow is capture -> run -> validate the result file -> record. A run that
fails at any point after it started leaves a record marked ``failed`` (or
``interrupted``), never a half-written folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from .._version import __version__
from ..capture.dockerfile import render_dockerfile
from ..capture.environment import capture_environment, lock_text, requirement_closure
from ..capture.git import GitState, capture_git
from ..core import interrupts
from ..core.config import CONFIG_FILE, ProjectConfig, load_config
from ..core.results import read_result_file
from ..errors import CaptureError, CotkError, PluginError, RunError
from ..plugins import get_plugins
from .store import RECORD_SCHEMA, RECORD_SCHEMA_VERSION, RunStore


@dataclass
class RunOutcome:
    """What a run left: its record, the record's folder, and the error that failed it (if any)."""

    record: dict[str, Any]
    folder: Path
    error: CotkError | None = None
    exit_code: int = 0


class Interrupted(CotkError):
    """The run was interrupted: Ctrl-C (exit status 130) or SIGTERM (143, 128 + the signal's number)."""

    exit_code = 130

    def __init__(self, message: str, *, signum: int = signal.SIGINT) -> None:
        super().__init__(message)
        self.exit_code = 128 + int(signum)


#: what each signal that interrupts a run is called in its record's error sentence
_SIGNAL_NAMES: dict[int, str] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}
#: seconds the entry has to stop after the forwarded signal before it is killed
KILL_AFTER = 10.0


def _pump(src: IO[bytes], sinks: list[IO[bytes]]) -> None:
    for chunk in iter(lambda: src.read1(65536), b""):  # type: ignore[attr-defined]
        for sink in sinks:
            try:
                sink.write(chunk)
                sink.flush()
            except (OSError, ValueError):
                pass
    src.close()


class EntryProcess:
    """The entry script running in a subprocess, its output teed live to the terminal and to logs.

    ``start()`` returns at once so that the caller can capture the environment while
    the entry runs; ``wait()`` returns (returncode, interrupted). Ctrl-C while waiting
    is forwarded to the child (SIGINT), which gets 10 s to stop before it is killed.
    """

    def __init__(
        self,
        cmd: list[str],
        cwd: Path,
        stdout_log: Path,
        stderr_log: Path,
        *,
        echo: bool | str = True,
        env: dict[str, str] | None = None,
        log_cap: int | None = None,
    ):
        self.cmd, self.cwd, self.echo = cmd, cwd, echo
        #: keep only the last ``log_cap`` bytes of each stream in its log (somebody else's entry: reproduce)
        self.log_cap = log_cap
        self.stdout_log, self.stderr_log = stdout_log, stderr_log
        if env is None:
            env = dict(os.environ)
            env.setdefault("PYTHONUNBUFFERED", "1")  # live output without the entry flushing
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self._fhs: list[IO[bytes]] = []
        self._threads: list[threading.Thread] = []
        #: the interrupting signals received since the entry was set up (:meth:`signalled`), in order
        self.signals: list[int] = []
        self._forwarded = False
        self._kill_timer: threading.Timer | None = None

    @property
    def interrupted(self) -> bool:
        """Whether a Ctrl-C (or SIGTERM) arrived for this entry: its run is recorded as interrupted."""
        return bool(self.signals)

    def signalled(self, signum: int) -> None:
        """Ctrl-C or SIGTERM for cotk-repro: forward the first, once, to the entry's process group (it then has
        :data:`KILL_AFTER` seconds to stop before it is killed); a second one kills it at once.

        Called from a signal handler (:func:`forwarding_signals`) at any moment, also before :meth:`start` has
        spawned the entry (start then forwards it) and while :meth:`wait` waits; it never raises.
        """
        self.signals.append(signum)
        if self.proc is None:
            return
        if self._forwarded:
            self._signal_group(signal.SIGKILL)
        else:
            self._forward()

    def _forward(self) -> None:
        """Send the first interrupting signal to the entry, once, and arm the kill timer."""
        if self._forwarded or not self.signals or self.proc is None:
            return
        self._forwarded = True
        self._signal_group(self.signals[0])
        timer = threading.Timer(KILL_AFTER, self._signal_group, (signal.SIGKILL,))
        timer.daemon = True
        timer.start()
        self._kill_timer = timer

    def start(self) -> EntryProcess:
        if self.log_cap is not None:
            from ..core.tail import TailFile

            out_fh: IO[bytes] = TailFile(self.stdout_log, self.log_cap)  # type: ignore[assignment]
            err_fh: IO[bytes] = TailFile(self.stderr_log, self.log_cap)  # type: ignore[assignment]
        else:
            out_fh = self.stdout_log.open("wb")
            err_fh = self.stderr_log.open("wb")
        self._fhs = [out_fh, err_fh]
        try:
            # The entry gets its own process group, so a terminal's Ctrl-C reaches cotk-repro only
            # and is forwarded exactly once (a second SIGINT would cut the entry's clean-up short).
            # Runs are not interactive: stdin is /dev/null (a background group must not read the tty).
            group: dict[str, Any] = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
            self.proc = subprocess.Popen(  # noqa: S603 - the user's own entry script, run by `cotk-repro run` on purpose; a list, no shell
                self.cmd,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                text=False,
                **group,
            )
        except OSError as exc:
            for fh in self._fhs:
                fh.close()
            raise RunError(f"cannot start {self.cmd[0]}: {exc.strerror}") from None
        # echo="stderr" (for --json) keeps stdout for machine-readable output only
        out_echo = sys.stderr.buffer if self.echo == "stderr" else sys.stdout.buffer
        sinks_out: list[IO[bytes]] = [out_fh] + ([out_echo] if self.echo else [])
        sinks_err: list[IO[bytes]] = [err_fh] + ([sys.stderr.buffer] if self.echo else [])
        self._threads = [
            threading.Thread(target=_pump, args=(self.proc.stdout, sinks_out), daemon=True),
            threading.Thread(target=_pump, args=(self.proc.stderr, sinks_err), daemon=True),
        ]
        for t in self._threads:
            t.start()
        # a signal that arrived before the entry existed (or while it was spawned) reaches it now, once
        if self.signals:
            self._forward()
            if len(self.signals) > 1:
                self._signal_group(signal.SIGKILL)
        return self

    def kill(self) -> None:
        """Kill the entry's process group and reap it (the run cannot go on: nothing is left running)."""
        if self.proc is not None:
            self._signal_group(signal.SIGKILL)
            self.proc.wait()

    def _signal_group(self, sig: int) -> None:
        """Send ``sig`` to the entry and its children (its process group), as a terminal would."""
        assert self.proc is not None
        if self.proc.returncode is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def wait(self, timeout: float | None = None, *, interrupted: bool = False) -> tuple[int, bool]:
        """Wait for the entry; returns (returncode, interrupted). ``timeout``: kill it after that many seconds.

        ``interrupted``: the caller was interrupted already (the same as :meth:`signalled` with SIGINT). A
        KeyboardInterrupt while waiting (a caller that installed no :func:`forwarding_signals`) counts as one.
        """
        assert self.proc is not None
        if interrupted and not self.signals:
            self.signalled(signal.SIGINT)
        try:
            while True:
                try:
                    self.proc.wait(timeout=timeout)
                    break
                except KeyboardInterrupt:
                    self.signalled(signal.SIGINT)
                except subprocess.TimeoutExpired:
                    self._signal_group(signal.SIGKILL)
                    timeout = None
            for t in self._threads:
                t.join(timeout=5)
        finally:
            if self._kill_timer is not None:
                self._kill_timer.cancel()
            for fh in self._fhs:
                fh.close()
        return self.proc.returncode, self.interrupted


class SignalLatch:
    """Where a run's Ctrl-C and SIGTERM go (:func:`forwarding_signals`): noted until the entry exists, then
    handed to it (:meth:`EntryProcess.signalled`: forwarded once, the second kills)."""

    def __init__(self) -> None:
        #: the signals that came before an entry was attached
        self.signals: list[int] = []
        self.proc: EntryProcess | None = None

    def attach(self, proc: EntryProcess) -> None:
        """From now on the signals go to ``proc`` (before it is started: it forwards them once it runs)."""
        self.proc = proc

    @property
    def interrupted(self) -> bool:
        return bool(self.signals) or (self.proc is not None and self.proc.interrupted)

    @property
    def first(self) -> int:
        """The first interrupting signal (SIGINT when none came)."""
        both = self.signals + (self.proc.signals if self.proc is not None else [])
        return both[0] if both else signal.SIGINT

    def signalled(self, signum: int) -> None:
        if self.proc is not None:
            self.proc.signalled(signum)
        else:
            self.signals.append(signum)


@contextmanager
def forwarding_signals(latch: SignalLatch) -> Iterator[SignalLatch]:
    """While the block runs, Ctrl-C (SIGINT) and SIGTERM go to ``latch.signalled`` instead of raising.

    A run must not be cut off between two statements: a KeyboardInterrupt raised while the entry is spawned,
    while the environment is captured or inside the record's writer would leave no record (and the entry,
    in its own process group, running on). ``cotk-repro run`` installs the handlers before it creates anything
    and removes them after the record is written; it reads ``latch.interrupted`` to mark the record. Outside
    the main thread (where Python cannot install handlers) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield latch
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, _frame: object) -> None:
        latch.signalled(signum)

    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, handler)
        for signum in interrupts.take_swallowed():  # a Ctrl-C that Python swallowed before now (core.interrupts)
            latch.signalled(signum)
        yield latch
    finally:
        for signum, handled in previous.items():
            signal.signal(signum, signal.SIG_DFL if handled is None else handled)


def run_entry(
    cmd: list[str],
    cwd: Path,
    stdout_log: Path,
    stderr_log: Path,
    *,
    echo: bool | str = True,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> tuple[int, bool]:
    """Run ``cmd``; tee its output live to the terminal and to the logs.

    Returns (returncode, interrupted). Ctrl-C is forwarded to the child.
    """
    return EntryProcess(cmd, cwd, stdout_log, stderr_log, echo=echo, env=env).start().wait(timeout)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _capture_environment(
    config: ProjectConfig, entry_rel: str, args: list[str], rel_cwd: str, workdir: Path
) -> dict[str, Any]:
    env_info = capture_environment(get_plugins().loaded())
    requires = config.get("run", "requires")
    if requires:  # the project names what it needs: pin that, not every distribution of this environment
        env_info["packages"] = requirement_closure(list(requires), env_info["packages"])
    dockerfile, dockerfile_sha = render_dockerfile(
        python_major_minor=env_info["python"]["major_minor"],
        entry=entry_rel,
        args=args,
        cwd=rel_cwd,
        base_image=config.get("reproduce", "base_image"),
    )
    env_info["dockerfile"] = dockerfile
    env_info["dockerfile_sha256"] = dockerfile_sha
    (workdir / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    (workdir / "requirements.lock").write_text(lock_text(env_info["packages"]), encoding="utf-8")
    return env_info


def prepare(
    cwd: Path, *, entry: str | None, args: list[str] | None, result: str | None, allow_dirty: bool
) -> tuple[GitState, ProjectConfig, Path, list[str], Path]:
    """Everything checked before anything runs: repo, config, entry, store."""
    state = capture_git(cwd)
    config = load_config(state.root)
    if state.dirty and not allow_dirty:
        raise _dirty_error(state, cwd / (result or config.get("run", "result")))
    entry = entry or config.get("run", "entry")
    entry_path = (cwd / entry).resolve()
    if not entry_path.is_file():
        if config.source is None and entry == config.get("run", "entry"):
            raise RunError(
                f"the entry script {entry} does not exist in {cwd}, and the project has no "
                f"{CONFIG_FILE} naming another",
                hint="run `cotk-repro init` to scaffold one, or name the script: cotk-repro run --entry SCRIPT",
            )
        raise RunError(f"the entry script {entry} does not exist in {cwd}")
    if not entry_path.is_relative_to(state.root.resolve()):
        raise RunError(f"the entry script {entry} is outside the git repository {state.root}")
    conflicts = get_plugins().conflicts()  # two plugins, one name: refuse before anything runs
    if conflicts:
        raise PluginError(conflicts[0])
    imports = config.get("run", "imports")
    if imports:  # a template's torch that is not installed: one sentence now, not a failed record later
        from .imports import check_imports

        check_imports(list(imports), entry_path.parent, config.source.name if config.source else CONFIG_FILE)
    if not args:
        args = list(config.get("run", "args") or [])
    result_path = cwd / (result or config.get("run", "result"))
    return state, config, entry_path, args, result_path


def _dirty_error(state: GitState, result_path: Path) -> CaptureError:
    """Uncommitted changes; when they are the run's own outputs (result, logs), say to ignore them."""
    shown = ", ".join(state.dirty_files[:5]) + (" ..." if len(state.dirty_files) > 5 else "")
    message = f"the work tree has uncommitted changes ({shown}); commit them or pass --allow-dirty"
    try:
        result_rel = result_path.resolve().relative_to(state.root.resolve()).as_posix()
    except ValueError:
        result_rel = None
    outputs = [f for f in state.dirty_files if f == result_rel or f.endswith(".log")]
    if not outputs:
        return CaptureError(message)
    missing = "" if (state.root / ".gitignore").is_file() else "the project has no .gitignore; "
    return CaptureError(
        f"the work tree has uncommitted changes ({shown}): {', '.join(outputs)} "
        f"{'is an output' if len(outputs) == 1 else 'are outputs'} of a run, not code",
        hint=f"{missing}add {' and '.join(sorted({'*.log' if f.endswith('.log') else f for f in outputs}))} "
        f"to .gitignore and commit it (cotk-repro init writes such a .gitignore)",
    )


def execute(
    cwd: Path | None = None,
    *,
    entry: str | None = None,
    args: list[str] | None = None,
    result: str | None = None,
    allow_dirty: bool = False,
    echo: bool | str = True,
    on_status: Callable[[str], None] | None = None,
    meanwhile: Callable[[], object] | None = None,
) -> RunOutcome:
    """``cotk-repro run``: check, run the entry, write its record (failed or interrupted ones too).

    ``meanwhile`` is the caller's own preparation, done while the entry runs, after the environment is
    captured (the command line loads its table renderer there: ~30 ms that a short entry hides); what it
    raises is ignored, and it is not run when the entry was interrupted.
    """
    cwd = Path(cwd or os.getcwd()).resolve()
    # From here until the record is written, Ctrl-C and SIGTERM are noted (and forwarded to the entry once it
    # runs), never raised: one that comes before the entry starts stops the run with nothing written; after
    # it, the run ends with a record marked interrupted, whatever moment the signal came.
    with forwarding_signals(SignalLatch()) as latch:
        try:
            state, config, entry_path, args, result_path = prepare(
                cwd, entry=entry, args=args, result=result, allow_dirty=allow_dirty
            )
        except CotkError:
            if latch.interrupted:  # a terminal's Ctrl-C reached the git it ran too: say what happened
                raise _before_the_entry(latch) from None
            raise
        store = RunStore(state.root)
        workdir = store.new_workdir()  # fails early, clearly, when .cotk-repro is not writable
        try:
            return _execute_in(
                workdir, store, cwd, state, config, entry_path, args, result_path, echo, on_status, meanwhile, latch
            )
        except BaseException:
            # nothing half-written: a run that could not be recorded leaves no folder behind
            shutil.rmtree(workdir, ignore_errors=True)
            raise


def _before_the_entry(latch: SignalLatch) -> Interrupted:
    return Interrupted(
        f"interrupted ({_SIGNAL_NAMES.get(latch.first, 'a signal')}) before the entry started; nothing was run "
        "or recorded",
        signum=latch.first,
    )


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _execute_in(
    workdir: Path,
    store: RunStore,
    cwd: Path,
    state: GitState,
    config: ProjectConfig,
    entry_path: Path,
    args: list[str],
    result_path: Path,
    echo: bool | str,
    on_status: Callable[[str], None] | None,
    meanwhile: Callable[[], object] | None,
    latch: SignalLatch,
) -> RunOutcome:
    root = state.root.resolve()
    rel_cwd = cwd.relative_to(root).as_posix() if cwd != root else "."
    entry_rel = os.path.relpath(entry_path, cwd).replace(os.sep, "/")
    before = _stat_key(result_path)  # a result file left from an earlier run must be rewritten

    if on_status:
        on_status(f"running {entry_rel} {' '.join(args)}".strip())
    started_at = _now_iso()
    t0 = time.time()
    proc = EntryProcess(
        [sys.executable, str(entry_path), *args], cwd, workdir / "stdout.log", workdir / "stderr.log", echo=echo
    )
    latch.attach(proc)  # first: a signal from now on reaches the entry, or stops it from starting just below
    if latch.interrupted:
        raise _before_the_entry(latch)
    proc.start()
    return _record_run(
        proc,
        workdir,
        store,
        state,
        config,
        cwd,
        entry_rel,
        args,
        rel_cwd,
        result_path,
        before,
        started_at,
        t0,
        echo,
        meanwhile,
    )


def _record_run(
    proc: EntryProcess,
    workdir: Path,
    store: RunStore,
    state: GitState,
    config: ProjectConfig,
    cwd: Path,
    entry_rel: str,
    args: list[str],
    rel_cwd: str,
    result_path: Path,
    before: tuple[int, int, int] | None,
    started_at: str,
    t0: float,
    echo: bool | str,
    meanwhile: Callable[[], object] | None,
) -> RunOutcome:
    """Wait for the started entry and write its record (ok, failed or interrupted)."""
    try:
        # capture the environment while the entry runs (it does not depend on the entry)
        env_info = _capture_environment(config, entry_rel, args, rel_cwd, workdir)
        if meanwhile is not None and not proc.interrupted:
            try:
                meanwhile()
            except Exception:
                pass
    except BaseException:
        proc.kill()  # the run cannot be recorded: leave nothing of it running
        raise
    rc, _ = proc.wait()
    duration = round(time.time() - t0, 3)

    record: dict[str, Any] = {
        "schema": RECORD_SCHEMA,
        "schema_version": RECORD_SCHEMA_VERSION,
        "status": "ok",
        "code": state.as_record(),
        "environment": env_info,
        "project": config.project,
        "command": {
            "entry": entry_rel,
            "args": list(args),
            "cwd": rel_cwd,
            "result_file": os.path.relpath(result_path, cwd).replace(os.sep, "/"),
            "started_at": started_at,
            "duration_s": duration,
            "exit_status": rc,
        },
        "results": {},
        "data": None,
        "cotk_repro_version": __version__,
    }
    error: CotkError | None = None
    if rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else str(-rc)
        error = RunError(f"the entry {entry_rel} was killed by signal {name}")
        record["status"] = "failed"
    elif rc != 0:
        error = RunError(
            f"the entry {entry_rel} exited with status {rc}; see its stderr "
            + ("above" if echo else "in the run's stderr.log")
        )
        record["status"] = "failed"
    else:
        try:
            if before is not None and _stat_key(result_path) == before:
                raise RunError(f"the result file {result_path} is stale: the entry did not rewrite it during this run")
            parsed = read_result_file(result_path, not_before=t0)
            record["results"] = parsed["results"]
            record["data"] = parsed["data"]
            for part in ("system", "protocol"):  # an LLM evaluation's: what made and prompted the outputs
                if part in parsed:
                    record[part] = parsed[part]
            (workdir / "result.json").write_bytes(result_path.read_bytes())
        except CotkError as exc:
            error = exc
            record["status"] = "failed"
    if proc.interrupted:  # read last: a signal that came while the result was read interrupts the run too
        signum = proc.signals[0]
        error = Interrupted(
            f"the run was interrupted ({_SIGNAL_NAMES.get(signum, signal.Signals(signum).name)}); "
            "recorded as interrupted",
            signum=signum,
        )
        record["status"] = "interrupted"
    if error is not None:
        record["error"] = error.message
    folder = store.commit(workdir, record)
    if error is not None and not echo and rc not in (0, None) and rc > 0:
        error = RunError(f"the entry {entry_rel} exited with status {rc}; its stderr is in {folder / 'stderr.log'}")
    return RunOutcome(record=record, folder=folder, error=error, exit_code=0 if error is None else error.exit_code)
