"""Virtual environments the tests build once and share (no tests here).

A cached venv lives under the user cache dir (``$COTK_REPRO_CACHE``, else ``$XDG_CACHE_HOME/cotk-repro``, else
``~/.cache/cotk-repro``) in ``NAME/KEY``, where KEY covers everything its content depends on:

- the source state of this checkout (its ``cotk_repro/``, ``templates/`` and ``pyproject.toml``: a wheel of it is
  installed; whichever cotk-repro runs the tests, an editable one or an installed wheel);
- the Python it was made with (implementation, version and executable: a 3.12 venv is never reused by 3.11);
- the checkout's own path when the venv holds an *editable* install (its ``.pth`` points into this checkout: a
  second clone of the same source must not reuse a venv whose plugin is the first clone's, deleted with it).

Building is serialised by a lock file beside the folder (``fcntl.flock``): two pytest-xdist workers, or two test
runs, asking for the same venv build it once; the second waits and reuses it. A build that did not complete
(``.complete`` missing) is built again. Packages are installed with ``uv pip`` where uv is there (the lock has it;
an order of magnitude faster than pip on an empty cache), else pip; both read pip's ``find-links`` (the CPU torch
wheel on local disk: a plain ``torch==X`` never becomes a CUDA build from an index).

uv writes no byte code, and with ``PYTHONDONTWRITEBYTECODE`` set (as on the machines these tests run on) no run
writes it either: every process of such a venv compiled torch's modules from source again, ``import torch`` 3.5 s of CPU
instead of 1.4 (and torch.compile's configuration, which ``torch.use_deterministic_algorithms`` and transformers
import, 5.4 s instead of 1.4). tests/conftest.py therefore keeps every test process's byte code under a
``PYTHONPYCACHEPREFIX`` of the tests' own. A venv given ``warm`` code runs it once when built, with byte code written: the
modules it imports are compiled once (seconds), not at every start; compiling the whole venv instead
(``--compile-bytecode``) costs ~45 s of CPU for torch and transformers, more than the runs save.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from cotk_repro.core.filelock import locked

REPO_ROOT = Path(__file__).resolve().parents[1]


def python_tag(python: str) -> str:
    """Implementation, version and real path of ``python``, as a short digest (part of every venv's key)."""
    mm, _, identity = (
        subprocess.run(
            [
                python,
                "-c",
                (
                    "import os, platform, sys; print('%d.%d' % sys.version_info[:2], platform.python_implementation(), "
                    "sys.version, os.path.realpath(sys.executable))"
                ),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .partition(" ")
    )
    return f"py{mm}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"


def find_links() -> list[str]:
    """pip's configured find-links (PIP_FIND_LINKS or pip config), for uv too."""
    links = os.environ.get("PIP_FIND_LINKS", "")
    if not links:
        res = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.find-links"], capture_output=True, text=True
        )
        links = res.stdout.strip() if res.returncode == 0 else ""
    return links.split()


def _uv() -> list[str] | None:
    found = shutil.which("uv")
    if found:
        return [found]
    if subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True).returncode == 0:
        return [sys.executable, "-m", "uv"]
    return None


def installer(python: Path) -> list[str]:
    """The command that installs into the venv of ``python``: ``uv pip install --python ...`` or its pip."""
    uv = _uv()
    if uv is None:
        return [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    links = [arg for link in find_links() for arg in ("--find-links", link)]
    # uv takes the first index that has a name; the CPU torch on local disk wins over an index's CUDA build
    return [*uv, "pip", "install", "-q", "--python", str(python), *links]


def self_wheel(dest: Path) -> Path:
    """A wheel of this checkout in ``dest`` (built in a copy-free way: pip builds in-tree, so two builds of one
    checkout at once are serialised by a lock keyed by its path)."""
    lock = Path(cache_root()) / "locks" / f"build-{hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:16]}.lock"
    with locked(lock):
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(REPO_ROOT)], check=True
        )
    wheels = sorted(dest.glob("cotk_repro-*.whl"))
    assert wheels, f"pip wheel left no cotk-repro wheel in {dest}"
    return wheels[0]


def source_fingerprint() -> str:
    """SHA-256 (16 hex) over the paths and contents of this checkout's files that go into its wheel."""
    h = hashlib.sha256()
    for sub in ("cotk_repro", "templates"):
        for path in sorted((REPO_ROOT / sub).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                h.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update((REPO_ROOT / "pyproject.toml").read_bytes())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    from cotk_repro.core.userconfig import cache_dir

    return cache_dir()


def cached_venv(
    name: str,
    steps: Sequence[Sequence[str]],
    *,
    python: str | None = None,
    with_self: bool = True,
    self_deps: bool = False,
    warm: str = "",
    without_pip: bool = False,
) -> str:
    """The python of a venv ``name`` made with ``python`` (default: this one), holding (when ``with_self``) a wheel
    of this checkout (with its declared dependencies if ``self_deps``), then each of ``steps`` installed in order
    (install arguments), then ``warm`` (Python code importing the heavy modules its runs import) run once with byte
    code written; ``without_pip``: no pip in it where uv installs (a venv whose package list no record captures).
    Built once per key (see the module docstring); returns its ``bin/python``."""
    python = python or sys.executable
    editable = any(arg in ("-e", "--editable") for step in steps for arg in step)
    parts = [python_tag(python), source_fingerprint()]
    shape = repr([list(s) for s in steps]) + (warm and "\0" + warm) + ("\0without-pip" if without_pip else "")
    parts.append(hashlib.sha256(shape.encode()).hexdigest()[:8])
    if editable:
        parts.append("at-" + hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:8])
    root = cache_root() / name
    vdir = root / "-".join(parts)
    py = vdir / "bin" / "python"
    with locked(root / (vdir.name + ".lock")):
        if (vdir / ".complete").is_file():
            os.utime(vdir / ".complete")  # in use: see the pruning below
            return str(py)
        _prune(root, keep=vdir)
        shutil.rmtree(vdir, ignore_errors=True)  # an earlier build of this key that did not complete
        # without_pip where uv installs into it (installer): ensurepip alone costs 4 s of CPU per venv
        bare = ["--without-pip"] if without_pip and _uv() else []
        subprocess.run([python, "-m", "venv", *bare, str(vdir)], check=True)
        install = installer(py)
        if with_self:
            wheels = vdir.with_name(vdir.name + "-wheel")
            shutil.rmtree(wheels, ignore_errors=True)
            wheel = self_wheel(wheels)
            subprocess.run([*install, *([] if self_deps else ["--no-deps"]), str(wheel)], check=True)
            shutil.rmtree(wheels, ignore_errors=True)
        for step in steps:
            subprocess.run([*install, *step], check=True)
        if warm:
            # byte code where the venv's later processes read it: under the tests' PYTHONPYCACHEPREFIX where conftest
            # set one, else beside the venv's modules; no PYTHONPATH (this checkout's own files stay as they are)
            drop = ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
            env = {k: v for k, v in os.environ.items() if k not in drop}
            res = subprocess.run([str(py), "-c", warm], env=env, cwd=vdir, capture_output=True, text=True)
            assert res.returncode == 0, f"warming {vdir} failed:\n{res.stderr}"
        (vdir / ".complete").write_text("ok")
    return str(py)


def bytecode_env() -> dict[str, str]:
    """Environment for a command whose processes run in a venv that this file did not build and uv filled (the
    venv runtime of ``reproduce``: no byte code, see the module docstring): byte code is written under the cache
    dir (never beside a source file: this checkout and the temporary ones stay as they are) and read from there,
    so torch's modules are compiled by the first such process, not by each. Nothing a run computes depends on it.
    """
    if os.environ.get("PYTHONPYCACHEPREFIX"):  # tests/conftest.py set one for every test process: inherited
        return {}
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(cache_root() / "pycache")}


def _prune(root: Path, keep: Path) -> None:
    """Remove venvs of this name unused for a day (another checkout's test run may be using a recent one)."""
    stale = time.time() - 24 * 3600
    for old in root.iterdir():
        if old == keep or old.suffix == ".lock" or not old.is_dir():
            continue
        marker = old / ".complete"
        try:
            used = marker.stat().st_mtime if marker.is_file() else old.stat().st_mtime
        except OSError:  # removed meanwhile
            continue
        if used < stale:
            shutil.rmtree(old, ignore_errors=True)
