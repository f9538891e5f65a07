"""``cotk-repro run``: capture code and environment, run the entry, write a record.

The flow is capture -> run -> validate the result file -> record. A run that
fails at any point after it started leaves a record marked ``failed`` (or
``interrupted``), never a half-written folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable

from . import __version__
from .capture.dockerfile import render_dockerfile
from .capture.environment import capture_environment, lock_text
from .capture.git import GitState, capture_git
from .config import ProjectConfig, load_config
from .errors import CaptureError, CotkError, RunError
from .plugins import get_plugins
from .records import RECORD_SCHEMA, RECORD_SCHEMA_VERSION, RunStore
from .results import read_result_file


@dataclass
class RunOutcome:
    record: dict[str, Any]
    folder: Path
    error: CotkError | None = None
    exit_code: int = 0


class Interrupted(CotkError):
    exit_code = 130


def _pump(src: IO[bytes], sinks: list[IO[bytes]]) -> None:
    for chunk in iter(lambda: src.read1(65536), b""):  # type: ignore[attr-defined]
        for sink in sinks:
            try:
                sink.write(chunk)
                sink.flush()
            except (OSError, ValueError):
                pass
    src.close()


def run_entry(cmd: list[str], cwd: Path, stdout_log: Path, stderr_log: Path, *, echo: bool = True,
              env: dict[str, str] | None = None, timeout: float | None = None) -> tuple[int, bool]:
    """Run ``cmd``; tee its output live to the terminal and to the logs.

    Returns (returncode, interrupted). Ctrl-C is forwarded to the child.
    """
    with stdout_log.open("wb") as out_fh, stderr_log.open("wb") as err_fh:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        sinks_out: list[IO[bytes]] = [out_fh] + ([sys.stdout.buffer] if echo else [])
        sinks_err: list[IO[bytes]] = [err_fh] + ([sys.stderr.buffer] if echo else [])
        threads = [
            threading.Thread(target=_pump, args=(proc.stdout, sinks_out), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, sinks_err), daemon=True),
        ]
        for t in threads:
            t.start()
        interrupted = False
        try:
            proc.wait(timeout=timeout)
        except KeyboardInterrupt:
            interrupted = True
            try:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                proc.kill()
                proc.wait()
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for t in threads:
            t.join(timeout=5)
        return proc.returncode, interrupted


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def prepare(cwd: Path, *, entry: str | None, args: list[str] | None, result: str | None,
            allow_dirty: bool) -> tuple[GitState, ProjectConfig, Path, list[str], Path]:
    """Everything checked before anything runs: repo, config, entry, store."""
    state = capture_git(cwd)
    config = load_config(state.root)
    if state.dirty and not allow_dirty:
        shown = ", ".join(state.dirty_files[:5]) + (" ..." if len(state.dirty_files) > 5 else "")
        raise CaptureError(
            f"the work tree has uncommitted changes ({shown}); commit them or pass --allow-dirty",
        )
    entry = entry or config.get("run", "entry")
    entry_path = (cwd / entry).resolve()
    if not entry_path.is_file():
        raise RunError(f"the entry script {entry} does not exist in {cwd}")
    if not args:
        args = list(config.get("run", "args") or [])
    result_path = cwd / (result or config.get("run", "result"))
    return state, config, entry_path, args, result_path


def execute(cwd: Path | None = None, *, entry: str | None = None, args: list[str] | None = None,
            result: str | None = None, allow_dirty: bool = False, echo: bool = True,
            on_status: Callable[[str], None] | None = None) -> RunOutcome:
    cwd = Path(cwd or os.getcwd()).resolve()
    state, config, entry_path, args, result_path = prepare(
        cwd, entry=entry, args=args, result=result, allow_dirty=allow_dirty)
    store = RunStore(state.root)
    workdir = store.new_workdir()  # fails early, clearly, when .cotk-repro is not writable

    plugins = get_plugins()
    env_info = capture_environment(plugins.loaded())
    rel_cwd = cwd.relative_to(state.root).as_posix() if cwd != state.root else "."
    entry_rel = os.path.relpath(entry_path, cwd).replace(os.sep, "/")
    dockerfile, dockerfile_sha = render_dockerfile(
        python_major_minor=env_info["python"]["major_minor"], entry=entry_rel, args=args, cwd=rel_cwd,
        base_image=config.get("reproduce", "base_image"))
    env_info["dockerfile"] = dockerfile
    env_info["dockerfile_sha256"] = dockerfile_sha
    (workdir / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    (workdir / "requirements.lock").write_text(lock_text(env_info["packages"]), encoding="utf-8")

    if on_status:
        on_status(f"running {entry_rel} {' '.join(args)}".strip())
    started_at = _now_iso()
    t0 = time.time()
    rc, interrupted = run_entry([sys.executable, str(entry_path), *args], cwd,
                                workdir / "stdout.log", workdir / "stderr.log", echo=echo)
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
    if interrupted:
        error = Interrupted("the run was interrupted (Ctrl-C); recorded as interrupted")
        record["status"] = "interrupted"
    elif rc < 0:
        name = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else str(-rc)
        error = RunError(f"the entry {entry_rel} was killed by signal {name}")
        record["status"] = "failed"
    elif rc != 0:
        error = RunError(f"the entry {entry_rel} exited with status {rc}; see its stderr above")
        record["status"] = "failed"
    else:
        try:
            parsed = read_result_file(result_path, not_before=t0)
            record["results"] = parsed["results"]
            record["data"] = parsed["data"]
            (workdir / "result.json").write_bytes(result_path.read_bytes())
        except CotkError as exc:
            error = exc
            record["status"] = "failed"
    if error is not None:
        record["error"] = error.message
    folder = store.commit(workdir, record)
    return RunOutcome(record=record, folder=folder, error=error,
                      exit_code=0 if error is None else error.exit_code)
