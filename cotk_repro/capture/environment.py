"""The environment of a run: Python, platform, installed distributions, plugins, accelerators.

Never records environment variables, tokens or home-directory paths.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.entrypoints import name_and_version, normalize_name  # noqa: F401 - normalize_name: used from here

if TYPE_CHECKING:
    import importlib.metadata as md


def _install_kind(dist: md.Distribution) -> str | None:
    """'editable', 'local' (a directory or file install), 'vcs', or None for index installs (PEP 610)."""
    try:
        text = dist.read_text("direct_url.json")
    except Exception:  # noqa: BLE001 - unreadable metadata is just "unknown"
        return None
    if not text:
        return None
    try:
        info = json.loads(text)
    except ValueError:
        return None
    if info.get("dir_info", {}).get("editable"):
        return "editable"
    if "vcs_info" in info:
        return "vcs"
    if str(info.get("url", "")).startswith("file:"):
        return "local"
    return "url"


def _name_version(dist: md.Distribution) -> tuple[str | None, str | None]:
    """Name and Version from the metadata headers only (:func:`..core.entrypoints.name_and_version`)."""
    try:
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    except Exception:  # noqa: BLE001 - unreadable metadata: skip the distribution
        return None, None
    return name_and_version(text) if text else (None, None)


def installed_distributions() -> list[dict[str, Any]]:
    """Every installed distribution (first on sys.path wins), sorted by normalized name."""
    import importlib.metadata as md  # here, not at the top: a run imports it while its entry runs

    seen: dict[str, dict[str, Any]] = {}
    for dist in md.distributions():
        name, version = _name_version(dist)
        if not name or not version:
            continue
        key = normalize_name(name)
        if key in seen:
            continue
        entry: dict[str, Any] = {"name": key, "version": version}
        kind = _install_kind(dist)
        if kind is not None:
            entry["install"] = kind
        seen[key] = entry
    return [seen[k] for k in sorted(seen)]


def lock_text(packages: list[dict[str, Any]]) -> str:
    """A pip requirements lock: ``name==version`` lines; non-index installs as comments."""
    lines = ["# cotk-repro lock: the distributions installed when the run was recorded"]
    for p in packages:
        line = f"{p['name']}=={p['version']}"
        if p.get("install") in ("editable", "local", "vcs", "url"):
            lines.append(f"# {p['install']}: {line}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def accelerators() -> list[dict[str, str]]:
    """List the NVIDIA GPUs (name, driver, memory) nvidia-smi reports; empty if none or it fails."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append({"vendor": "nvidia", "name": parts[0], "driver": parts[1], "memory": parts[2]})
    return gpus


def python_info() -> dict[str, str]:
    """Return this interpreter's version, implementation and `major.minor`."""
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "major_minor": f"{sys.version_info.major}.{sys.version_info.minor}",
    }


def capture_environment(plugins: list[dict[str, str]]) -> dict[str, Any]:
    """Return the run record's environment section: Python, platform, packages, plugins, GPUs."""
    return {
        "python": python_info(),
        "platform": {"system": platform.system(), "machine": platform.machine(), "release": platform.release()},
        "packages": installed_distributions(),
        "cotk_repro_version": __version__,
        "plugins": plugins,
        "accelerators": accelerators(),
    }
