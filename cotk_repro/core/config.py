"""Project configuration: ``cotk-repro.toml`` or ``[tool.cotk-repro]`` in ``pyproject.toml``, read and defaulted.

The shape is strict (:mod:`.config_model`, pydantic): an unknown key or a wrong type is an error naming the
key, the file and the line. A file whose bytes passed once is remembered under the cache folder
(``validated/``), so that a run does not import pydantic again until the file (or cotk-repro) changes.
User-level settings (dashboard tokens) are *not* here: see :mod:`cotk_repro.core.userconfig`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

from ..errors import ConfigError

CONFIG_FILE = "cotk-repro.toml"

DEFAULTS: dict[str, dict[str, Any]] = {
    "project": {"name": "", "task": "", "dataset": ""},
    "run": {"entry": "main.py", "args": [], "result": "result.json"},
    "reproduce": {
        "runtime": "docker",
        "timeout": 3600,
        "memory": "4g",
        "cpus": 2,
        "network": False,
        "tolerances": {},
    },
    "publish": {
        "remote": "origin",
        "records_ref": "refs/heads/cotk-repro-records",
        "push": False,
        "targets": ["git", "dashboard"],
        "logs": False,
    },
    "dashboard": {},
}


@dataclass
class ProjectConfig:
    """A project's validated configuration; :meth:`get` falls back to the defaults."""

    root: Path
    source: Path | None
    data: dict[str, dict[str, Any]] = field(default_factory=dict)

    def get(self, section: str, key: str, default: Any = None) -> Any:
        value = self.data.get(section, {}).get(key)
        if value is None:
            value = DEFAULTS.get(section, {}).get(key, default)
        return value

    def tolerance_settings(self) -> tuple[float | None, float | None, dict[str, dict[str, Any]]]:
        """The project's tolerances as written: ``[reproduce] rtol``, ``atol`` (None when unset) and the
        ``[reproduce.tolerances.KEY]`` tables. They may only tighten what each metric declares
        (:class:`cotk_repro.records.tolerances.ToleranceRules` applies them)."""
        section = self.data.get("reproduce", {}) or {}
        per = section.get("tolerances") or {}
        return section.get("rtol"), section.get("atol"), {k: dict(v or {}) for k, v in per.items()}

    @property
    def project(self) -> dict[str, str]:
        name = self.get("project", "name") or self.root.name
        return {"name": name, "task": self.get("project", "task"), "dataset": self.get("project", "dataset")}


def _read_toml(path: Path) -> tuple[bytes, dict[str, Any]]:
    """The file's bytes and its TOML, bounded: a regular file of at most :data:`MAX_CONFIG_BYTES`, nested at most
    as deep as the parser manages (a project's config may be a stranger's). A UTF-8 byte order mark is skipped."""
    from .safe_read import UnsafeFileError, read_regular

    try:
        raw = read_regular(path, MAX_CONFIG_BYTES, str(path), follow_links=True)
        return raw, tomllib.loads(raw.decode("utf-8").removeprefix("\ufeff"))
    except UnsafeFileError as exc:
        raise ConfigError(exc.message) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: its tables or arrays are nested too deeply") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def _validated_marker(raw: bytes, where: str) -> Path | None:
    """Where the fact "these bytes passed" is remembered: keyed by them, the file's name and the rules' source."""
    import hashlib

    from .._version import __version__
    from .userconfig import cache_dir

    here = Path(__file__).parent
    try:  # the rules: the models, the table they build on (tomlmodel), this module, git.py (RECORDS_REF_SUFFIX)
        rules = b"".join(
            (here / name).read_bytes() for name in ("config_model.py", "tomlmodel.py", "config.py", "git.py")
        )
    except OSError:
        return None
    digest = hashlib.sha256(b"\0".join([__version__.encode(), where.encode(), rules, raw])).hexdigest()
    return cache_dir() / "validated" / digest


def _check(raw: bytes, data: dict[str, Any], where: str, prefix: tuple[str | int, ...]) -> None:
    marker = _validated_marker(raw, where)
    if marker is not None and marker.is_file():
        return
    from .config_model import check

    check(data, where, raw.decode("utf-8"), prefix)
    if marker is not None:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:
            pass  # a cache that cannot be written only costs the check next time


#: a project config (cotk-repro.toml, pyproject.toml) larger than this is refused unread
MAX_CONFIG_BYTES = 1024 * 1024


def load_config(root: Path) -> ProjectConfig:
    """Load and validate the project config found at ``root`` (defaults when none)."""
    root = Path(root)
    path = root / CONFIG_FILE
    prefix: tuple[str | int, ...]
    if path.is_file():
        raw, data = _read_toml(path)
        source, prefix = path, ()
    else:
        pyproject = root / "pyproject.toml"
        data = {}
        source = None
        if pyproject.is_file():
            raw, parsed = _read_toml(pyproject)
            tool = parsed.get("tool", {})
            if "cotk-repro" in tool:
                data = tool["cotk-repro"]
                source, prefix = pyproject, ("tool", "cotk-repro")
    if source is not None:
        where = str(source.name if source.parent == root else source)
        if not isinstance(data, dict):
            raise ConfigError(f"{where}: [tool.cotk-repro] must be a table")
        try:
            _check(raw, data, where, prefix)
        except RecursionError:
            raise ConfigError(f"{where}: its tables or arrays are nested too deeply") from None
    return ProjectConfig(root=root, source=source, data=data)
