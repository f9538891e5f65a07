"""The tolerance each result is judged with: declared by its metric, tightened by the project, widened by the reproducer.

docs/reproduce.md, "Tolerances". For one result key:

1. the metric's declared ``(rtol, atol)`` (:func:`cotk_repro.metrics.facts.tolerance_of_result_key`; the undeclared
   default for a key no registered metric reports);
2. the project's ``[reproduce] rtol`` / ``atol`` lower it where they are smaller (a project-wide value never widens);
3. the project's ``[reproduce.tolerances.KEY]`` replaces it; a value wider than the declared one is refused
   (:class:`ToleranceError`, naming the metric and both values) unless the reproducer widens;
4. ``--rtol`` / ``--atol`` lower it where they are smaller; with ``--widen-tolerance`` they replace it as given.

A result judged with more than its metric declares is marked ``widened`` in the verdict.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import CotkError

WIDEN_FLAG = "--widen-tolerance"


class ToleranceError(CotkError):
    """A tolerance that may not be used: one wider than its metric declares without the reproducer's consent, or
    one that is not a finite number >= 0."""


class Judged(NamedTuple):
    """The tolerance one result is judged with, and whether it is wider than its metric declares."""

    rtol: float
    atol: float
    widened: bool = False


def _declared(key: str) -> tuple[float, float]:
    from ..metrics.facts import tolerance_of_result_key

    return tolerance_of_result_key(key)


def _checked(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ToleranceError(f"{what} must be a finite number >= 0, not {value!r}")
    return float(value)


@dataclass
class ToleranceRules:
    """The project's tolerances and the reproducer's flags; call it with a result key for its :class:`Judged`."""

    #: the project's ``[reproduce] rtol`` / ``atol`` (a ceiling on every metric's)
    project_rtol: float | None = None
    project_atol: float | None = None
    #: the project's ``[reproduce.tolerances.KEY]`` tables: ``{key: {"rtol": .., "atol": ..}}``
    per_key: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: the reproducer's ``--rtol`` / ``--atol``
    rtol: float | None = None
    atol: float | None = None
    #: ``--widen-tolerance``: the flags replace the declared tolerance as given, and the project's per-metric
    #: values may be wider than the declared ones
    widen: bool = False
    declared: Callable[[str], tuple[float, float]] = _declared
    _memo: dict[str, Judged] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.project_rtol = _checked(self.project_rtol, "the project's reproduce.rtol")
        self.project_atol = _checked(self.project_atol, "the project's reproduce.atol")
        self.rtol = _checked(self.rtol, "--rtol")
        self.atol = _checked(self.atol, "--atol")

    @classmethod
    def of_config(
        cls, config: Any, rtol: float | None = None, atol: float | None = None, widen: bool = False
    ) -> ToleranceRules:
        """The rules of a :class:`cotk_repro.core.config.ProjectConfig` and the reproducer's flags."""
        project_rtol, project_atol, per_key = config.tolerance_settings()
        return cls(project_rtol, project_atol, per_key, rtol, atol, widen)

    def __call__(self, key: str) -> Judged:
        if key not in self._memo:
            self._memo[key] = self._judge(key)
        return self._memo[key]

    def _judge(self, key: str) -> Judged:
        declared = self.declared(key)
        got = list(declared)
        for i, (project, flag) in enumerate(((self.project_rtol, self.rtol), (self.project_atol, self.atol))):
            which = ("rtol", "atol")[i]
            if project is not None:
                got[i] = min(got[i], project)
            per = self.per_key.get(key) or {}
            own = _checked(per.get(which), f"the project's reproduce.tolerances.{key}.{which}")
            if own is not None:
                if own > declared[i] and not self.widen:
                    raise ToleranceError(
                        f"the project's config asks to judge {key} with {which} {own:g}, wider than the "
                        f"{which} {declared[i]:g} its metric declares; a project may only tighten a metric's "
                        f"tolerance",
                        hint=f"{WIDEN_FLAG} accepts the wider value (the verdict records that it was widened)",
                    )
                got[i] = own
            if flag is not None:
                got[i] = flag if self.widen else min(got[i], flag)
        return Judged(got[0], got[1], got[0] > declared[0] or got[1] > declared[1])

    def check(self, keys: Any) -> None:
        """Resolve the keys the project's config names now: a refused tolerance stops a reproduction before
        anything is built or run. (Only those can be refused; the others are resolved by :meth:`prefetch`.)"""
        for key in keys:
            if key in self.per_key:
                self(key)

    def prefetch(self, keys: Any) -> threading.Thread:
        """Resolve ``keys`` in a background thread (join it before comparing): a declared tolerance is read from
        its metric's class, whose module (and numpy, say) is imported for it, so ``reproduce`` does that while the
        entry runs. An error is left for the comparison to raise again."""
        keys = list(keys)

        def run() -> None:
            for key in keys:
                try:
                    self(key)
                except Exception:  # raised again, in the caller's thread, when compared
                    pass

        thread = threading.Thread(target=run, name="cotk-repro-tolerances", daemon=True)
        thread.start()
        return thread


def unused_flags(rows: Any, rtol: float | None, atol: float | None, widen: bool) -> str | None:
    """The warning for ``--rtol`` / ``--atol`` values that judged no result because they are wider than the
    tolerance a metric is judged with (a flag only tightens without ``--widen-tolerance``), naming those metrics;
    None when every given value was used. ``rows``: verdict rows, each with ``metric``, ``verdict``, ``rtol`` and
    ``atol`` (a result only one side has is not judged, so it is left out)."""
    if widen:
        return None
    parts = []
    for flag, value, attr in (("--rtol", rtol, "rtol"), ("--atol", atol, "atol")):
        if value is None:
            continue
        names = [r.metric for r in rows if r.verdict not in ("missing", "extra") and value > getattr(r, attr)]
        if names:
            parts.append(f"{flag} {value:g} was not used for {', '.join(names)}")
    if not parts:
        return None
    return (
        f"{'; '.join(parts)}: it is wider than the tolerance each is judged with (its metric's, or the project's), "
        f"which a flag only tightens; {WIDEN_FLAG} judges with the value given"
    )


def describe(rtol: float, atol: float) -> str:
    """``exact`` for (0, 0), else ``rtol 1e-05, atol 1e-09``."""
    if rtol == 0 and atol == 0:
        return "exact"
    return f"rtol {rtol:g}, atol {atol:g}"
