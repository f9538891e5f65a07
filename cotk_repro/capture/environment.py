"""The environment of a run: Python, platform, installed distributions, plugins, accelerators.

Never records environment variables, tokens or home-directory paths.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import platform
import re
import shutil
import subprocess
import sys
from typing import Any

from .. import __version__

_NORMALIZE = re.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return _NORMALIZE.sub("-", name).lower()


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
    """Name and Version from the metadata headers only.

    ``dist.metadata`` parses the whole file (long descriptions included) with the
    email parser, which costs ~0.1 s over a few hundred distributions; the two
    headers we need come before the first blank line.
    """
    try:
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    except Exception:  # noqa: BLE001 - unreadable metadata: skip the distribution
        return None, None
    if not text:
        return None, None
    name = version = None
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "name" and name is None:
            name = value.strip()
        elif key == "version" and version is None:
            version = value.strip()
        if name and version:
            break
    return name, version


def installed_distributions() -> list[dict[str, Any]]:
    """Every installed distribution (first on sys.path wins), sorted by normalized name."""
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
