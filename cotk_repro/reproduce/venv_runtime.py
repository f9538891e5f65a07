"""The host runtimes: ``venv`` (a virtual environment built from the wheelhouse) and ``local``.

Both run the entry **on this host**, without isolation (network, your files): the
command line only uses them when ``--runtime`` names them, and :mod:`.core` runs nothing
of the record before the user consented (``--trust-remote-code`` or the prompt). What
needs a build (an sdist-only or local package) is built on this host only with
``--trust-remote-code``; otherwise the error says to use docker.

``venv``: the environment is built offline from the same wheelhouse as the Docker
image, with ``uv`` when it is on PATH, else pip, for the recorded Python minor
version: ``--python PATH`` (refused, in one sentence, when it is another minor version: the
wheels are for the record's), else this Python when it is that version, else ``pythonX.Y`` on
PATH. Like the image, it is cached by a key of the
lock, the interpreter and the local wheels, so a second reproduce reuses it.

``local``: the current Python environment as it is, for quick checks; the package
versions that differ from the record are reported beside the verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..core import jsonbudget
from ..core.filelock import locked
from ..core.tail import TAIL
from ..core.userconfig import cache_dir
from . import ReproduceError
from .container import RESULT_CAP, too_big
from .job import ENV_SNIPPET, Job, Rerun, describe_exit, log_tail, now_iso, parse_result

MARKER = ".cotk-repro-complete"


def python_minor(exe: str) -> str | None:
    """The ``X.Y`` of the Python interpreter ``exe``, asked of it; None when it does not run as one."""
    try:
        probe = subprocess.run(  # noqa: S603 - an interpreter the user named or found on PATH, fixed -c code
            [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = probe.stdout.strip()
    return out if probe.returncode == 0 and out.count(".") == 1 else None


def check_python(exe: str, mm: str) -> str:
    """``--python PATH``: PATH when it is a Python of the record's minor version ``mm``; else one sentence."""
    path = shutil.which(exe) if os.sep not in exe else exe
    if path is None or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise ReproduceError(f"--python {exe} is not an executable file", step="venv build")
    has = python_minor(path)
    if has is None:
        raise ReproduceError(f"--python {exe} does not run as a Python interpreter", step="venv build")
    if has != mm:
        raise ReproduceError(
            f"--python {exe} is Python {has} and the record needs Python {mm}; "
            f"pass --python with a Python {mm} interpreter (its wheels are for {mm})",
            step="venv build",
        )
    return os.path.abspath(path)


def find_python(mm: str) -> str:
    """Return a Python executable of version `mm` (X.Y) on this host; raise ReproduceError if none."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == mm:
        return sys.executable
    for name in (f"python{mm}", f"python{mm.split('.')[0]}"):
        exe = shutil.which(name)
        if exe and python_minor(exe) == mm:
            return exe
    raise ReproduceError(
        f"the record needs Python {mm}, which is not on this host (no python{mm} on PATH)",
        step="venv build",
        hint=f"pass --python PATH with a Python {mm} interpreter, or use --runtime docker (an image with Python {mm})",
    )


def _entry_env(bin_dir: Path | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")
    }
    if bin_dir is not None:
        env["PATH"] = str(bin_dir) + os.pathsep + env.get("PATH", "")
        env["VIRTUAL_ENV"] = str(bin_dir.parent)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    return env


def run_on_host(job: Job, python: str, bin_dir: Path | None, env_info: dict[str, Any]) -> Rerun:
    """Run the record's entry on this host with `python` and the job's timeout; return the Rerun."""
    from ..records.runner import EntryProcess
    from .paths import inside_checkout

    result = job.run_dir / job.result_rel
    result.unlink(missing_ok=True)  # the checkout does not hold one, but never read a stale file
    entry = job.command["entry"]
    cmd = [python, entry, *job.args]
    started_at = now_iso()
    t0 = time.time()
    proc = EntryProcess(
        cmd,
        job.run_dir,
        job.logs / "stdout.log",
        job.logs / "stderr.log",
        echo=False,
        env=_entry_env(bin_dir),
        log_cap=TAIL,
    ).start()
    rc, interrupted = proc.wait(timeout=job.timeout)
    duration = round(time.time() - t0, 3)
    if interrupted:
        raise KeyboardInterrupt
    err_tail = log_tail(job.logs / "stderr.log")
    if rc < 0 and duration >= job.timeout - 0.5:
        raise ReproduceError(
            f"the entry ran past the time limit of {job.timeout:g} s and was killed",
            log=err_tail,
            step="run",
            hint="raise it with --timeout SECONDS",
        )
    if rc != 0:
        raise ReproduceError(f"the entry {entry} {describe_exit(rc)} in the rerun", log=err_tail, step="run")
    inside_checkout(job.code, result, "the result file")  # the entry may have made it a link out of the checkout
    raw = read_capped(result, RESULT_CAP, f"the rerun's result file {job.result_rel}")
    parsed = parse_result(raw, job, f"the rerun's {job.result_rel}")
    return Rerun(
        results=parsed["results"],
        data=parsed["data"],
        python=(env_info.get("python") or {}).get("version"),
        packages=env_info.get("packages", []),
        started_at=started_at,
        duration_s=duration,
    )


def read_capped(path: Path, cap: int, what: str) -> bytes | None:
    """The bytes of the regular file ``path`` (None when there is none); one over ``cap`` bytes is refused by
    its size before it is read, and never more than ``cap`` bytes are read (it may grow meanwhile)."""
    import stat as stat_

    try:  # non-blocking open: the entry may have left a FIFO there
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat_.S_ISREG(st.st_mode):
                return None
            if st.st_size > cap:
                raise too_big(what, st.st_size, cap)
            data = fh.read(cap + 1)
    except (FileNotFoundError, IsADirectoryError):
        return None
    except OSError as exc:
        raise ReproduceError(f"cannot read {what}: {exc.strerror}", step="run") from None
    if len(data) > cap:
        raise too_big(what, len(data), cap)
    return data


def find_uv() -> str | None:
    """The ``uv`` executable: on PATH, else the one the ``uv`` distribution installed beside this Python."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        from uv import find_uv_bin
    except ImportError:
        return None
    try:
        return find_uv_bin()
    except FileNotFoundError:
        return None


class VenvRuntime:
    """Reruns a record in a cached virtual environment on this host, built from the wheelhouse."""

    name = "venv"
    on_host = True
    description = (
        "a virtual environment on THIS HOST, built from the wheelhouse (no isolation: network and files are reachable)"
    )

    def prepare(self, job: Job) -> dict[str, Any]:
        from .wheelhouse import local_identity, pool_dir, split_packages

        python = check_python(job.python, job.python_mm) if job.python else find_python(job.python_mm)
        version = subprocess.run(  # noqa: S603 - the python find_python chose, fixed -c code
            [python, "-c", "import sys; print(sys.version)"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        _index, local = split_packages(job.packages)
        key = hashlib.sha256(
            json.dumps(
                {"lock": job.lock, "python": [python, version], "local": local_identity(local, job.tree)}
            ).encode()
        ).hexdigest()[:24]
        vdir = cache_dir() / "venvs" / key
        vdir.parent.mkdir(parents=True, exist_ok=True)
        with locked(vdir.parent / f"{key}.lock"):
            if (vdir / MARKER).is_file():
                job.steps.skip("wheel download", "environment cached")
                job.steps.skip("venv build", "cached")
            else:
                wheelhouse = job.wheelhouse()  # no sandbox: builds only with --trust-remote-code
                with job.steps.step("venv build", f"building a virtual environment in {vdir}"):
                    self._build(job, python, vdir, pool_dir(job.python_mm), wheelhouse.local)
        self.vdir = vdir
        bin_dir = vdir / ("Scripts" if os.name == "nt" else "bin")
        self.python = str(bin_dir / ("python.exe" if os.name == "nt" else "python"))
        env_file = vdir / "env.json"
        if env_file.is_file():
            self.env_info = json.loads(env_file.read_text())
        else:
            probe = subprocess.run(  # noqa: S603 - the venv's own python, fixed -c code
                [self.python, "-c", ENV_SNIPPET],
                capture_output=True,
                text=True,
                env=_entry_env(bin_dir),
                check=False,
            )
            try:  # the environment's Python is built from somebody else's lock: its answer is a stranger's JSON
                self.env_info = jsonbudget.loads(probe.stdout, what="the environment") if probe.returncode == 0 else {}
            except jsonbudget.JSONBudgetError:
                self.env_info = {}
            if not isinstance(self.env_info, dict) or not self.env_info:
                self.env_info = {"python": {}, "packages": []}
            env_file.write_text(json.dumps(self.env_info))
        return self.env_info

    def _build(self, job: Job, python: str, vdir: Path, pool: Path, local_wheels: list[Path]) -> None:
        shutil.rmtree(vdir, ignore_errors=True)
        log = job.logs / "venv.log"
        lock_file = job.workdir / "requirements.lock"
        lock_file.write_text(job.lock, encoding="utf-8")
        vpy = str(vdir / "bin" / "python")
        uv = find_uv()
        if uv:
            cmds = [
                [uv, "venv", "--python", python, str(vdir)],
                [
                    uv,
                    "pip",
                    "install",
                    "--python",
                    vpy,
                    "--offline",
                    "--no-index",
                    "--no-deps",
                    "--find-links",
                    str(pool),
                    "-r",
                    str(lock_file),
                ],
            ]
            if local_wheels:
                cmds.append(
                    [
                        uv,
                        "pip",
                        "install",
                        "--python",
                        vpy,
                        "--offline",
                        "--no-index",
                        "--no-deps",
                        *map(str, local_wheels),
                    ]
                )
        else:
            cmds = [
                [python, "-m", "venv", "--without-pip", str(vdir)],
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "--disable-pip-version-check",
                    "--python",
                    vpy,
                    "install",
                    "--no-index",
                    "--no-deps",
                    "--find-links",
                    str(pool),
                    "-r",
                    str(lock_file),
                ],
            ]
            if local_wheels:
                cmds.append(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "--disable-pip-version-check",
                        "--python",
                        vpy,
                        "install",
                        "--no-index",
                        "--no-deps",
                        *map(str, local_wheels),
                    ]
                )
        with log.open("ab") as fh:
            for cmd in cmds:
                fh.write(("$ " + " ".join(cmd) + "\n").encode())
                fh.flush()
                proc = subprocess.run(  # noqa: S603 - venv/pip commands built here; package specs passed validate_lock (canonical name==version)
                    cmd,
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    env={**_entry_env(None), "PIP_NO_INPUT": "1"},
                    check=False,
                )
                if proc.returncode != 0:
                    shutil.rmtree(vdir, ignore_errors=True)
                    raise ReproduceError(
                        f"building the virtual environment failed at `{' '.join(cmd[:4])} ...`",
                        log=log_tail(log, 25),
                        step="venv build",
                        hint=f"full log: {log}",
                    )
        (vdir / MARKER).write_text(now_iso())

    def run(self, job: Job) -> Rerun:
        return run_on_host(job, self.python, Path(self.python).parent, self.env_info)


class LocalRuntime:
    """Reruns a record in the current Python environment (a quick check; versions may differ)."""

    name = "local"
    on_host = True
    description = "the CURRENT Python environment on this host (quick check; versions may differ from the record)"

    def prepare(self, job: Job) -> dict[str, Any]:
        from ..capture.environment import installed_distributions, python_info

        if f"{sys.version_info.major}.{sys.version_info.minor}" != job.python_mm:
            job.warnings.append(
                f"the record used Python {job.python_mm}; this is Python "
                f"{sys.version_info.major}.{sys.version_info.minor}"
            )
        self.env_info = {"python": python_info(), "packages": installed_distributions()}
        return self.env_info

    def run(self, job: Job) -> Rerun:
        return run_on_host(job, sys.executable, None, self.env_info)
