"""The pinned test environment: requirements/test.lock covers every requirement, is hashed, leaves torch to
requirements/torch.txt, and is what the test command installed (issue 12)."""

from __future__ import annotations

import importlib.metadata
import os
import re

import pytest
import tomllib
from conftest import REPO_ROOT
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LOCK = REPO_ROOT / "requirements" / "test.lock"
OURS = {"cotk-repro"} | {
    canonicalize_name(p.name) for p in (REPO_ROOT / "plugins").glob("*/pyproject.toml") for p in [p.parent]
}


def _pins() -> dict[str, str]:
    pins = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text(encoding="utf-8")):
        m = re.match(r"([A-Za-z0-9_.\-]+)==([^\s;\\]+)", block)
        if m:
            assert "--hash=sha256:" in block, f"{m.group(1)} is pinned without a hash"
            pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def _requirements() -> list[tuple[str, Requirement]]:
    """Every requirement of the core (with its test extras) and of each first-party plugin (all extras)."""
    out = []
    files = [REPO_ROOT / "pyproject.toml", *sorted((REPO_ROOT / "plugins").glob("*/pyproject.toml"))]
    for path in files:
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
        extras = project.get("optional-dependencies", {})
        for req in project.get("dependencies", []) + [r for reqs in extras.values() for r in reqs]:
            out.append((str(path.relative_to(REPO_ROOT)), Requirement(req)))
    return out


def test_lock_pins_every_requirement_with_hashes_and_leaves_torch_out():
    pins = _pins()
    assert "torch" not in pins and not any(n.startswith("nvidia-") for n in pins)
    env = {
        **default_environment(),
        "python_version": "3.11",
        "python_full_version": "3.11.2",
        "sys_platform": "linux",
        "platform_machine": "x86_64",
    }
    missing, outside = [], []
    for where, req in _requirements():
        name = canonicalize_name(req.name)
        if name in OURS or name == "torch" or (req.marker and not req.marker.evaluate({**env, "extra": ""})):
            continue
        if name not in pins:
            missing.append(f"{req} ({where})")
        elif not req.specifier.contains(pins[name], prereleases=True):
            outside.append(f"{req} ({where}) but the lock has {pins[name]}")
    assert not missing and not outside, f"run bash scripts/lock.sh: missing {missing}, outside the range {outside}"
    torch = (REPO_ROOT / "requirements" / "torch.txt").read_text(encoding="utf-8")
    assert re.search(r"^torch==\d+\.\d+\.\d+$", torch, re.M)


@pytest.mark.skipif(
    os.environ.get("COTK_REPRO_LOCKED") != "1",
    reason="not installed by scripts/setup.sh from the lock (COTK_REPRO_LOCKED is unset)",
)
def test_installed_versions_are_the_locked_ones():
    wrong = {}
    for name, version in _pins().items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            wrong[name] = f"{version} locked, not installed"
            continue
        if installed != version:
            wrong[name] = f"{version} locked, {installed} installed"
    assert not wrong, wrong


def test_setup_installs_plugins_but_not_the_example():
    setup = (REPO_ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "*/cotk-repro-example/) continue" in setup and "plugins/*/" in setup
    assert "--require-hashes" in setup and "requirements/torch.txt" in setup
    assert (REPO_ROOT / "plugins" / "cotk-repro-example" / "pyproject.toml").is_file()
