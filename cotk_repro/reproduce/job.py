"""What a runtime gets (a :class:`Job`) and gives back (a :class:`Rerun`), and the timed steps."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core import jsonbudget
from ..core.results import normalize_results
from ..errors import CotkError
from ..records.view import RecordView
from . import ReproduceError
from .lock import Package, lock_text

#: prints the Python and the installed distributions of an interpreter as JSON (no cotk-repro needed)
ENV_SNIPPET = r"""
import json, platform, re, importlib.metadata as md
seen = {}
for d in md.distributions():
    try:
        n = d.metadata["Name"]
    except Exception:
        continue
    if n:
        seen.setdefault(re.sub(r"[-_.]+", "-", n).lower(), d.version)
print(json.dumps({"python": {"version": platform.python_version(), "implementation": platform.python_implementation()},
                  "packages": [{"name": k, "version": v} for k, v in sorted(seen.items())]}))
"""


def now_iso() -> str:
    """Return the current UTC time as ISO 8601 with milliseconds and a `Z` suffix."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Steps:
    """Timed steps (clone, wheel download, image build, run, ...) with a progress display per step."""

    def __init__(self, progress: Callable[[str], Any] | None = None, on_status: Callable[[str], None] | None = None):
        self.items: list[dict[str, Any]] = []
        self.progress = progress
        self.on_status = on_status or (lambda _m: None)

    @contextmanager
    def step(self, name: str, description: str | None = None) -> Iterator[None]:
        t0 = time.perf_counter()
        status = "ok"
        self.on_status(description or name)
        try:
            with self.progress(description or name) if self.progress else nullcontext():
                yield
        except BaseException:
            status = "failed"
            raise
        finally:
            self.items.append({"step": name, "seconds": round(time.perf_counter() - t0, 3), "status": status})

    def skip(self, name: str, why: str) -> None:
        self.items.append({"step": name, "seconds": 0.0, "status": "skipped", "reason": why})


def describe_steps(items: list[dict[str, Any]]) -> str:
    """``clone 0.4s, wheel download skipped (image cached), run 1.2s (failed)``."""
    out = []
    for s in items:
        if s["status"] == "skipped":
            out.append(f"{s['step']} skipped" + (f" ({s['reason']})" if s.get("reason") else ""))
        else:
            out.append(f"{s['step']} {s['seconds']:.1f}s" + ("" if s["status"] == "ok" else f" ({s['status']})"))
    return ", ".join(out)


@dataclass
class Job:
    """Everything a runtime needs to rerun one record: the record, checkout, packages, limits, paths."""

    record: dict[str, Any]
    workdir: Path
    code: Path
    tree: str
    #: the base image the reproducer chose (:func:`.core.choose_base_image`); None: the runtime's default
    base_image: str | None
    timeout: float
    memory: str
    cpus: float
    steps: Steps
    #: the size of each writable place of the container (its home with the work folder, and /tmp)
    disk: str = "1g"
    #: the record's packages, validated (:func:`.lock.validate_lock`)
    packages: list[Package] = field(default_factory=list)
    #: the user passed --trust-remote-code: a host runtime may build packages on this host
    trust_host_build: bool = False
    #: the project's reproduce.base_image (what the author's Dockerfile was rendered with)
    config_base_image: str | None = None
    #: --python PATH: the interpreter the venv runtime builds its environment with (of the record's Python minor)
    python: str | None = None
    on_status: Callable[[str], None] = lambda _m: None
    warnings: list[str] = field(default_factory=list)
    _wheelhouse: Any = None

    @property
    def view(self) -> RecordView:
        """The record read through its typed view."""
        return RecordView.of(self.record)

    @property
    def env(self) -> dict[str, Any]:
        return self.view.environment.recorded

    @property
    def lock(self) -> str:
        return lock_text(self.packages)

    @property
    def python_mm(self) -> str:
        env = self.view.environment  # validate_python judged it before any job was made
        return env.python_major_minor or ".".join((env.python_version or "").split(".")[:2])

    @property
    def command(self) -> dict[str, Any]:
        return self.view.command.recorded

    @property
    def run_dir(self) -> Path:
        cwd = self.command.get("cwd") or "."
        return self.code if cwd == "." else self.code / cwd

    @property
    def args(self) -> list[str]:
        return [str(a) for a in self.command.get("args") or []]

    @property
    def result_rel(self) -> str:
        return self.command.get("result_file") or "result.json"

    @property
    def logs(self) -> Path:
        p = self.workdir / "logs"
        p.mkdir(exist_ok=True)
        return p

    def wheelhouse(self, sandbox=None):
        """The recorded packages as wheels (downloaded / built once, then cached); what needs building is
        built by ``sandbox`` (a :class:`.sandbox.SandboxBuilder`), or on this host with --trust-remote-code."""
        if self._wheelhouse is None:
            from .wheelhouse import Builders, build_wheelhouse

            builders = Builders(
                self.python_mm,
                self.logs / "wheels.log",
                sandbox=sandbox,
                trust_host=self.trust_host_build,
                on_status=self.on_status,
            )
            with self.steps.step("wheel download", "fetching the recorded packages (wheelhouse)"):
                self._wheelhouse = build_wheelhouse(self.packages, self.code, self.tree, builders)
        return self._wheelhouse


@dataclass
class Rerun:
    """What a runtime's rerun produced: results, data section, Python, packages and timing."""

    results: dict[str, Any]
    data: dict[str, Any] | None
    python: str | None
    packages: list[dict[str, Any]]
    started_at: str
    duration_s: float


def parse_result(raw: bytes | None, job: Job, where: str) -> dict[str, Any]:
    """Read and normalize the rerun's result file; raise ReproduceError if missing or unusable."""
    if raw is None:
        raise ReproduceError(
            f"the entry {job.command.get('entry')} finished but did not write its result file "
            f"{job.result_rel} in the rerun",
            step="run",
        )
    try:
        data = jsonbudget.loads(raw, what=f"the rerun's result file {job.result_rel}")
    except jsonbudget.JSONBudgetError as exc:
        raise ReproduceError(exc.message, step="run") from None
    try:
        return normalize_results(data, where)
    except CotkError as exc:
        raise ReproduceError(f"the rerun's result file is unusable: {exc.message}", step="run") from None


def describe_exit(rc: int) -> str:
    """Describe a process exit status in words (`exited with status N` or `was killed by signal X`)."""
    if rc < 0:
        try:
            return f"was killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    if rc > 128 and rc - 128 in (9, 15):
        return f"was killed by signal {signal.Signals(rc - 128).name}"
    return f"exited with status {rc}"


def log_tail(path: Path, lines: int = 20) -> str | None:
    """Return the last `lines` lines of a log file, or None if it is empty or unreadable."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return "\n".join(text.splitlines()[-lines:]) or None
