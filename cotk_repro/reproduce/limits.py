"""The limits of a reproduction, chosen by the reproducer: the reproduced project may only lower them.

Each limit (``timeout``, ``memory``, ``cpus``, ``disk``) comes from, in order: the command's flag
(``--timeout`` ...), the ``reproduce`` table of the reproducer's own user config
(:func:`cotk_repro.core.userconfig.reproduce_settings`), else the built-in default
(:data:`DEFAULTS`). The reproduced project's ``[reproduce]`` values are somebody else's: a lower value
is used (the project knows it needs less), a higher one stops the reproduction before anything of the
record is built or run, with one sentence naming what the project asks for and the flag that grants it.
:meth:`Limits.as_dict` is what the verdict records: each value and where it came from.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import ReproduceError

NAMES = ("timeout", "memory", "cpus", "disk")
#: built-in defaults (docs/reproduce.md, "Limits")
DEFAULTS: dict[str, Any] = {"timeout": 3600.0, "memory": "4g", "cpus": 2.0, "disk": "1g"}
FLAGS = {"timeout": "--timeout", "memory": "--memory", "cpus": "--cpus", "disk": "--disk"}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([bkmgt]?)i?b?", re.I)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
#: the least of each limit (docs/reproduce.md, "Limits"): below it a limit stops limiting or nothing can run.
#: Docker reads ``NanoCpus=0`` (what 1e-10 CPUs rounds to) as no CPU limit at all, and refuses a memory
#: limit under 6 MiB; a disk under 1 MiB holds no checkout; a time limit under a second is no time to start.
FLOORS: dict[str, float] = {"timeout": 1.0, "memory": 6 * 1024**2, "cpus": 0.01, "disk": 1024**2}
#: the most of each limit a value may say: more is not a limit a machine has (and overflows the engine's fields)
CEILINGS: dict[str, float] = {"timeout": 1e10, "memory": 1024.0**5, "cpus": 4096.0, "disk": 1024.0**5}
#: processes and threads a confined container may hold at once (fixed: not the project's to set)
PIDS = 512


def size_bytes(text: Any) -> int | None:
    """``"4g"`` -> 4294967296 (k, m, g, t are powers of 1024, as Docker reads them); None when not a size."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return int(text) if math.isfinite(text) and text > 0 else None
    if not isinstance(text, str):
        return None
    m = _SIZE.fullmatch(text.strip())
    if not m:
        return None
    n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    return n if n > 0 else None


def docker_size(n: int) -> str:
    """Bytes as Docker's shortest exact size text (``4294967296`` -> ``4g``)."""
    for unit in ("t", "g", "m", "k"):
        if n % _UNITS[unit] == 0:
            return f"{n // _UNITS[unit]}{unit}"
    return str(n)


def _amount(name: str, value: Any) -> float | None:
    """The comparable amount of a limit value (seconds, bytes, CPUs), or None when it is not a number or size
    (see :func:`_refusal` for a number outside the floor and ceiling)."""
    if name in ("memory", "disk"):
        n = size_bytes(value)
        return float(n) if n is not None else None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) and x > 0 else None


def _refusal(name: str, value: Any) -> tuple[float | None, str | None]:
    """``(amount, None)`` for a usable limit value, else ``(None, why it is not one)``."""
    amount = _amount(name, value)
    if amount is None:
        unit = "a size such as 4g or 512m" if name in ("memory", "disk") else "a positive number"
        return None, f"is not {_what(name)} ({unit})"
    if amount < FLOORS[name]:
        return None, f"is below the least {_what(name)} of {_shown(name, FLOORS[name])}"
    if amount > CEILINGS[name]:
        return None, f"is above the most {_what(name)} of {_shown(name, CEILINGS[name])}"
    return amount, None


def _shown(name: str, amount: float) -> str:
    if name == "timeout":
        return f"{amount:g} s"
    if name == "cpus":
        return f"{amount:g} CPUs"
    return docker_size(int(amount)) if amount < 1024**5 else f"{amount / 1024**5:g}p"


def _flag_value(name: str, amount: float) -> str:
    if name in ("memory", "disk"):
        return docker_size(int(amount))
    return f"{amount:.0f}" if name == "timeout" and amount == int(amount) else f"{amount:g}"


def _what(name: str) -> str:
    return {"timeout": "a time limit", "memory": "a memory limit", "cpus": "a CPU limit", "disk": "a disk limit"}[name]


@dataclass
class Limits:
    """The limits that apply, each with where it came from (flag, user config, default, project)."""

    amounts: dict[str, float]
    sources: dict[str, str]
    #: what the project's config asked for (only the keys it set)
    asked: dict[str, float] = field(default_factory=dict)

    @property
    def timeout(self) -> float:
        return self.amounts["timeout"]

    @property
    def memory(self) -> str:
        return docker_size(int(self.amounts["memory"]))

    @property
    def cpus(self) -> float:
        return self.amounts["cpus"]

    @property
    def disk(self) -> str:
        return docker_size(int(self.amounts["disk"]))

    @property
    def memory_bytes(self) -> int:
        return int(self.amounts["memory"])

    @property
    def disk_bytes(self) -> int:
        return int(self.amounts["disk"])

    def value(self, name: str) -> Any:
        return getattr(self, name)

    def as_dict(self) -> dict[str, Any]:
        """``{"timeout": {"value": 3600.0, "from": "default"}, ...}`` (+ ``"project asked"`` where it did)."""
        out: dict[str, Any] = {}
        for name in NAMES:
            row: dict[str, Any] = {"value": self.value(name), "from": self.sources[name]}
            if name in self.asked:
                row["project_asked"] = (
                    docker_size(int(self.asked[name])) if name in ("memory", "disk") else self.asked[name]
                )
            out[name] = row
        return out

    def describe(self, name: str) -> str:
        """``4g (default)``: the value and its source, for sentences."""
        return f"{_shown(name, self.amounts[name])} ({self.sources[name]})"


def reproducer_limits(
    flags: Mapping[str, Any], user: Mapping[str, Any], user_where: str = "your user config"
) -> Limits:
    """The reproducer's limits: each flag, else the user config's ``reproduce`` value, else the default.
    A value that is not a limit is an error naming where it came from (ReproduceError, exit 2)."""
    amounts: dict[str, float] = {}
    sources: dict[str, str] = {}
    for name in NAMES:
        if flags.get(name) is not None:
            value, source, where = flags[name], "flag", FLAGS[name]
        elif user.get(name) is not None:
            value, source, where = user[name], "user config", f"reproduce.{name} in {user_where}"
        else:
            value, source, where = DEFAULTS[name], "default", "the default"
        amount, why = _refusal(name, value)
        if amount is None:
            raise ReproduceError(f"{where} {str(value)[:40]!r} {why}", step="limits")
        amounts[name], sources[name] = amount, source
    return Limits(amounts, sources)


def apply_project(limits: Limits, project: Mapping[str, Any]) -> Limits:
    """``limits`` lowered to what the project's ``[reproduce]`` table asks for; a ReproduceError naming each
    limit the project asks to raise and the flag that grants it (nothing is raised for it)."""
    amounts, sources, asked = dict(limits.amounts), dict(limits.sources), {}
    more: list[str] = []
    grants: list[str] = []
    for name in NAMES:
        value = project.get(name)
        if value is None:
            continue
        amount, why = _refusal(name, value)
        if amount is None:
            raise ReproduceError(f"the project's reproduce.{name} {str(value)[:40]!r} {why}", step="limits")
        asked[name] = amount
        if amount > limits.amounts[name]:
            more.append(f"{name} {_shown(name, amount)} (this reproduction allows {limits.describe(name)})")
            grants.append(f"{FLAGS[name]} {_flag_value(name, amount)}")
        elif amount < limits.amounts[name]:
            amounts[name], sources[name] = amount, "project"
    if more:
        raise ReproduceError(
            f"the project's config asks for more than this reproduction grants: {'; '.join(more)}; "
            f"nothing was built or run ({' '.join(grants)} grants it)",
            step="limits",
            hint=f"rerun with {' '.join(grants)} if you accept that",
        )
    return Limits(amounts, sources, asked)


#: the most reproduction images a cache may keep (``--image-cache``, ``reproduce.image_cache``)
MAX_IMAGE_CACHE = 1000


def image_cache(flag: Any, user: Mapping[str, Any]) -> int:
    """How many reproduction images are kept after a verdict: the flag, else the user config's
    ``reproduce.image_cache``, else 0; a value that is not a whole number from 0 to :data:`MAX_IMAGE_CACHE` is 0
    (checked where it is given: the flag by the command line, the user config when it is read)."""
    value = flag if flag is not None else user.get("image_cache")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_IMAGE_CACHE:
        return 0
    return value
