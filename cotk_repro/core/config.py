"""Project configuration: ``cotk-repro.toml`` or ``[tool.cotk-repro]`` in ``pyproject.toml``.

The schema is strict: an unknown key is an error naming the key and the file.
User-level settings (dashboard tokens) are *not* here: see :mod:`cotk_repro.core.userconfig`.
"""

from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

CONFIG_FILE = "cotk-repro.toml"

_NUM = (int, float)
_TOL = {"rtol": _NUM, "atol": _NUM}

#: key -> type, or a nested schema dict. "*" matches any key (per-metric tables).
SCHEMA: dict[str, Any] = {
    "project": {"name": str, "task": str, "dataset": str},
    "run": {"entry": str, "args": list, "result": str, "python": str},
    "reproduce": {
        "runtime": str,
        "base_image": str,
        "rtol": _NUM,
        "atol": _NUM,
        "timeout": _NUM,
        "memory": str,
        "cpus": _NUM,
        "network": bool,
        "tolerances": {"*": _TOL},
    },
    "publish": {"remote": str, "records_ref": str, "push": bool, "github_api": str, "github_private": bool,
                "targets": list, "logs": bool},
    "dashboard": {"url": str},
}

#: what a records ref's name ends in: how `reproduce` finds a custom one on somebody's remote
RECORDS_REF_SUFFIX = "cotk-repro-records"

DEFAULTS: dict[str, dict[str, Any]] = {
    "project": {"name": "", "task": "", "dataset": ""},
    "run": {"entry": "main.py", "args": [], "result": "result.json"},
    "reproduce": {"runtime": "docker", "rtol": 1e-6, "atol": 1e-12, "timeout": 3600,
                  "memory": "4g", "cpus": 2, "network": False, "tolerances": {}},
    "publish": {"remote": "origin", "records_ref": "refs/heads/cotk-repro-records", "push": False,
                "targets": ["git", "dashboard"], "logs": False},
    "dashboard": {},
}


def _type_name(t: Any) -> str:
    if isinstance(t, tuple):
        return "a number"
    return {str: "a string", list: "a list", bool: "true or false", dict: "a table"}.get(t, str(t))


def validate(data: dict[str, Any], source: str, schema: dict[str, Any] = SCHEMA, prefix: str = "") -> None:
    """Check ``data`` against ``schema``: an unknown key or a wrong type is a ConfigError naming it and ``source``."""
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        expected = schema.get(key, schema.get("*"))
        if expected is None:
            known = ", ".join(sorted(k for k in schema if k != "*"))
            raise ConfigError(f"{source}: unknown key '{dotted}' (known here: {known})")
        if isinstance(expected, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: '{dotted}' must be a table")
            validate(value, source, expected, dotted + ".")
        else:
            ok = isinstance(value, expected) and not (
                isinstance(value, bool) and expected is not bool
            )
            if not ok:
                raise ConfigError(f"{source}: '{dotted}' must be {_type_name(expected)}, got {value!r}")
            if expected is list and not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{source}: '{dotted}' must be a list of strings")


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

    def tolerance(self, metric: str, rtol: float | None = None, atol: float | None = None) -> tuple[float, float]:
        """Tolerance for one metric: command line > per-metric config > section default."""
        per = self.get("reproduce", "tolerances", {}).get(metric, {})
        r = rtol if rtol is not None else per.get("rtol", self.get("reproduce", "rtol"))
        a = atol if atol is not None else per.get("atol", self.get("reproduce", "atol"))
        return float(r), float(a)

    @property
    def project(self) -> dict[str, str]:
        name = self.get("project", "name") or self.root.name
        return {"name": name, "task": self.get("project", "task"), "dataset": self.get("project", "dataset")}


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def load_config(root: Path) -> ProjectConfig:
    """Load and validate the project config found at ``root`` (defaults when none)."""
    root = Path(root)
    path = root / CONFIG_FILE
    if path.is_file():
        data = _read_toml(path)
        source = path
    else:
        pyproject = root / "pyproject.toml"
        data = {}
        source = None
        if pyproject.is_file():
            tool = _read_toml(pyproject).get("tool", {})
            if "cotk-repro" in tool:
                data = tool["cotk-repro"]
                source = pyproject
    if source is not None:
        where = str(source.name if source.parent == root else source)
        validate(data, where)
        ref = data.get("publish", {}).get("records_ref")
        if ref is not None and not (ref.startswith("refs/") and ref.endswith(RECORDS_REF_SUFFIX)):
            raise ConfigError(f"{where}: 'publish.records_ref' must be a full ref ending in {RECORDS_REF_SUFFIX!r} "
                              f"(e.g. refs/heads/team-{RECORDS_REF_SUFFIX}), so that `cotk-repro reproduce` finds "
                              f"it; got {ref!r}")
    return ProjectConfig(root=root, source=source, data=data)
