"""The environment of a run: Python, platform, installed distributions, plugins, accelerators.

Never records environment variables, tokens or home-directory paths.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..core.entrypoints import metadata_folders, name_and_version, normalize_name, read_metadata, read_text

if TYPE_CHECKING:
    import importlib.metadata as md


def install_kind(direct_url: str | None) -> str | None:
    """'editable', 'local' (a directory or file install), 'vcs', 'url', or None for index installs, from the
    text of a distribution's ``direct_url.json`` (PEP 610; None when it has none)."""
    if not direct_url:
        return None
    try:
        info = json.loads(direct_url)
    except ValueError:
        return None
    if not isinstance(info, dict):
        return None
    if (info.get("dir_info") or {}).get("editable"):
        return "editable"
    if "vcs_info" in info:
        return "vcs"
    if str(info.get("url", "")).startswith("file:"):
        return "local"
    return "url"


def _install_kind(dist: md.Distribution) -> str | None:
    """:func:`install_kind` of an importlib.metadata distribution."""
    try:
        text = dist.read_text("direct_url.json")
    except Exception:
        return None
    return install_kind(text)


def _distributions(path: list[str] | None) -> Iterator[tuple[str | None, str | None, str | None]]:
    """(name, version, kind) of every distribution on ``path`` (default sys.path), in import order.

    Read from the ``*.dist-info`` / ``*.egg-info`` folders themselves (:func:`..core.entrypoints.metadata_folders`):
    importing importlib.metadata and walking its distributions costs ~25 ms, a tenth of ``cotk-repro run``'s
    overhead. Where that cannot tell (a zip archive or an egg on the path), importlib.metadata reads them.
    """
    folders = metadata_folders(path)
    if folders is not None:
        for folder in folders:
            name, version = name_and_version(read_metadata(folder, headers_only=True))
            kind = install_kind(read_text(os.path.join(folder, "direct_url.json"))) if name and version else None
            yield name, version, kind
        return
    import importlib.metadata as md  # here, not at the top: a run imports it while its entry runs

    for dist in md.distributions() if path is None else md.distributions(path=path):
        try:
            text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
        except Exception:
            continue
        name, version = name_and_version(text) if text else (None, None)
        yield name, version, (_install_kind(dist) if name and version else None)


def installed_distributions(path: list[str] | None = None) -> list[dict[str, Any]]:
    """Every installed distribution on ``path`` (default sys.path; the first of a name wins), sorted by
    normalized name."""
    seen: dict[str, dict[str, Any]] = {}
    for name, version, kind in _distributions(path):
        if not name or not version:
            continue
        key = normalize_name(name)
        if key in seen:
            continue
        entry: dict[str, Any] = {"name": key, "version": version}
        if kind is not None:
            entry["install"] = kind
        seen[key] = entry
    return [seen[k] for k in sorted(seen)]


def requirement_closure(names: list[str], packages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of ``packages`` (:func:`installed_distributions`) that ``names`` need: those distributions and,
    transitively, the requirements their installed metadata declares (markers evaluated for this interpreter,
    extras left out). A name that is not installed is refused in one sentence.
    """
    import importlib.metadata as md

    from packaging.requirements import InvalidRequirement, Requirement

    from ..errors import ConfigError

    by_name = {p["name"]: p for p in packages}
    todo, seen = [normalize_name(n) for n in names], set()
    for n in todo:
        if n not in by_name:
            raise ConfigError(
                f"[run] requires names {n}, which is not installed here",
                hint=f"install it (pip install {n}) or remove it from [run] requires",
            )
    while todo:
        name = todo.pop()
        if name in seen or name not in by_name:
            continue  # a requirement that is not installed: its distribution never needed it here
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            requires = []
        for line in requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            todo.append(normalize_name(req.name))
    return [p for p in packages if p["name"] in seen]


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
        out = subprocess.run(  # noqa: S603 - nvidia-smi found by shutil.which, fixed arguments
            [exe, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
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
