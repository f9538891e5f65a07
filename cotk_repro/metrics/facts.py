"""What a metric declares about itself (direction, range, references, level, cost, tolerance), read by every consumer.

Facts live on the metric class (:class:`cotk_repro.metrics.base.Metric` attributes). ``evaluate``,
``compare``, the dashboard's ranking and value checks and ``cotk-repro metrics --json`` ask this module;
no other module keeps a table of metric names.

A registered factory is either the metric class itself or a callable with a ``metric_class`` attribute
(the built-ins register lazy factories that carry it).
"""

from __future__ import annotations

import inspect
import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from ..protocols import resampling_problem
from .base import UNDECLARED_TOLERANCE

#: how a metric uses the gold references: one list per hypothesis, the whole set unpaired, or none at all
REFERENCE_MODES = ("aligned", "set", "none")
LEVELS = ("sentence", "corpus")


@dataclass(frozen=True)
class MetricFacts:
    """The facts of one metric, or of one result key a metric reports."""

    name: str
    higher_is_better: bool
    value_range: tuple[float, float]
    needs_references: bool
    paired_references: bool
    level: str
    cost: float
    #: ``(rtol, atol)``: how far a value may move on another machine (docs/metrics.md, "Tolerances")
    tolerance: tuple[float, float] = UNDECLARED_TOLERANCE

    @property
    def references(self) -> str:
        """``aligned`` (one reference list per hypothesis), ``set`` (the whole set, unpaired) or ``none``."""
        if not self.needs_references:
            return "none"
        return "aligned" if self.paired_references else "set"

    def check_value(self, value: Any) -> str | None:
        """None when ``value`` is a valid value of this metric, else one sentence saying why not."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{self.name} must be a number, not {type(value).__name__}"
        if math.isnan(value) or math.isinf(value):
            return f"{self.name} is {value}; a score must be a finite number"
        lo, hi = self.value_range
        if not lo <= value <= hi:
            return f"{self.name} = {value!r} is outside its range [{lo}, {hi}]"
        return None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (infinite bounds as null), with the derived reference mode as ``references``."""
        d = asdict(self)
        d["value_range"] = [None if math.isinf(v) else v for v in self.value_range]
        d["references"] = self.references
        d["tolerance"] = {"rtol": self.tolerance[0], "atol": self.tolerance[1]}
        return d


def metric_class(name: str) -> type | None:
    """The class behind the metric registered as ``name`` (None when unknown or not declared)."""
    from ..plugins import get_plugins

    registry = get_plugins().registry("metric")
    if name not in registry:
        return None
    return class_of_factory(registry[name].obj)


def class_of_factory(factory: Any) -> type | None:
    """The metric class a registered factory builds: the factory itself, or its ``metric_class`` attribute."""
    if isinstance(factory, type):
        return factory
    cls = getattr(factory, "metric_class", None)
    if callable(cls) and not isinstance(cls, type):  # a lazy resolver
        cls = cls()
    return cls if isinstance(cls, type) else None


def facts_of(obj: Any, name: str | None = None, override: dict[str, Any] | None = None) -> MetricFacts:
    """The facts a metric class or object declares (the base class's defaults where it declares none).

    Raises :class:`ValueError` with one sentence when a declared fact has the wrong type or value.
    """
    o = dict(override or {})
    name = name or str(getattr(obj, "name", None) or getattr(obj, "__name__", "metric"))

    def get(key: str, default: Any) -> Any:
        return o[key] if key in o else getattr(obj, key, default)

    try:
        lo, hi = get("value_range", (0.0, 1.0))
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise ValueError(f"metric {name!r}: value_range must be a pair of numbers (low, high)") from None
    if not lo <= hi:
        raise ValueError(f"metric {name!r}: value_range {(lo, hi)} has its low end above its high end")
    level = str(get("level", "corpus"))
    if level not in LEVELS:
        raise ValueError(f"metric {name!r}: level must be one of {', '.join(LEVELS)}, not {level!r}")
    try:
        cost = float(get("cost", 1.0))
    except (TypeError, ValueError):
        raise ValueError(f"metric {name!r}: cost must be a number") from None
    tolerance = _tolerance(get("tolerance", UNDECLARED_TOLERANCE), name)
    problem = resampling_problem(obj) if isinstance(obj, type) else None
    if problem is not None:
        raise ValueError(f"metric {name!r}: {problem}")
    return MetricFacts(
        name=name,
        higher_is_better=bool(get("higher_is_better", True)),
        value_range=(lo, hi),
        needs_references=bool(get("needs_references", True)),
        paired_references=bool(get("paired_references", True)),
        level=level,
        cost=cost,
        tolerance=tolerance,
    )


def _tolerance(value: Any, name: str) -> tuple[float, float]:
    """A declared ``(rtol, atol)``: two finite numbers >= 0; ValueError with one sentence otherwise."""
    try:
        rtol, atol = value
        pair = (float(rtol), float(atol))
        ok = not any(isinstance(v, bool) for v in (rtol, atol))
    except (TypeError, ValueError):
        ok = False
    if not ok or not all(math.isfinite(v) and v >= 0 for v in pair):
        raise ValueError(f"metric {name!r}: tolerance must be a pair of finite numbers >= 0 (rtol, atol)")
    return pair


def metric_facts(name: str) -> MetricFacts | None:
    """The facts of the metric registered as ``name`` (None when it is unknown)."""
    cls = metric_class(name)
    return None if cls is None else facts_of(cls, name)


def _result_keys(cls: type, name: str) -> str:
    return getattr(cls, "result_keys", None) or re.escape(name)


def facts_for_result_key(key: str) -> MetricFacts | None:
    """The facts of a result key (``bleu``, ``fw-bleu``, ``distinct-2``, ...) from the metric that reports it.

    A metric class declares the keys it reports with ``result_keys`` (a regular expression matched in
    full; default: its registered name) and per-key differences with ``key_facts``. None when no registered
    metric reports ``key``.
    """
    from ..plugins import get_plugins

    plugins = get_plugins()
    # remembered per plugin manager (a new one after reset_plugins starts empty); the dashboard asks for
    # every leaderboard it serves, with keys from requests, so the memory is bounded
    memo: dict[str, MetricFacts | None] = plugins.__dict__.setdefault("_facts_by_result_key", {})
    if key not in memo:
        if len(memo) >= 1024:
            memo.clear()
        memo[key] = _lookup_key(plugins, key)
    return memo[key]


def tolerance_of_result_key(key: str) -> tuple[float, float]:
    """The ``(rtol, atol)`` a result key is judged with by default: its metric's declared tolerance (per key where
    ``key_facts`` says so), :data:`~cotk_repro.metrics.base.UNDECLARED_TOLERANCE` for a key no metric reports."""
    facts = facts_for_result_key(key)
    return UNDECLARED_TOLERANCE if facts is None else facts.tolerance


def _likely_first(names: list[str], key: str) -> list[str]:
    """The registered names in the order to try for ``key``: the metric named ``key``, then those whose name begins
    it (``bleu`` for ``bleu-4``, ``rouge`` for ``rouge-1 precision``), longest first, then the rest. A metric class is
    imported to read its ``result_keys``, so the likely reporters go first; the answer is the same in any order
    but for keys two metrics claim, where the name that begins the key is the better owner anyway."""
    prefixes = sorted((n for n in names if n != key and key.startswith(n)), key=len, reverse=True)
    first = ([key] if key in names else []) + prefixes
    return first + [n for n in names if n not in first]


def _lookup_key(plugins: Any, key: str) -> MetricFacts | None:
    registry = plugins.registry("metric")
    for name in _likely_first(sorted(registry), key):
        hint = getattr(registry[name].obj, "result_keys", None)  # a lazy factory's copy of its class's
        if isinstance(hint, str) and not re.fullmatch(hint, key):
            continue  # not this metric's key: its class (and what it imports) stays unloaded
        try:
            cls = metric_class(name)
        except Exception:
            continue
        if cls is None:
            continue
        if re.fullmatch(_result_keys(cls, name), key):
            try:
                return facts_of(cls, key, (getattr(cls, "key_facts", None) or {}).get(key))
            except ValueError:
                return None
    return None


def metric_options(cls: Any) -> list[dict[str, Any]]:
    """The keyword options a metric class takes: ``[{"name", "default", "required"}]`` from its constructor."""
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return []
    out = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name.startswith("_"):
            continue
        required = p.default is p.empty
        out.append({"name": p.name, "default": None if required else _jsonable(p.default), "required": required})
    return out


def accepts_option(cls: Any, option: str) -> bool:
    """Whether a metric class (or factory) names the keyword option ``option`` (``**kwargs`` does not count)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return False
    return option in params


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        value = list(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return None if isinstance(value, float) and not math.isfinite(value) else value
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return repr(value)


def interval_declaration(cls: Any) -> dict[str, Any]:
    """How the metric scores a resample (``metrics --json``): ``{"resampling": "statistics"|"values"|"none",
    "no_interval": REASON|None}`` (docs/metrics.md, "Significance and intervals")."""
    kind = str(getattr(cls, "resampling", "none"))
    return {"resampling": kind, "no_interval": str(getattr(cls, "no_interval", "")) if kind == "none" else None}


def describe_metrics() -> list[dict[str, Any]]:
    """Every registered metric with its facts, result keys, options and plugin (``cotk-repro metrics --json``).

    A metric whose class cannot be read still has a ``tolerance``: the one its results are judged with, the
    undeclared default."""
    from ..plugins import get_plugins

    out = []
    for name, entry in sorted(get_plugins().registry("metric").items()):
        item: dict[str, Any] = {"name": name, "plugin": getattr(entry, "plugin", None)}
        try:
            cls = class_of_factory(entry.obj)
            if cls is None:
                raise ValueError(
                    f"metric {name!r}: its factory does not say which class it builds "
                    f"(register the class, or give the factory a metric_class attribute)"
                )
            facts = facts_of(cls, name)
        except Exception as exc:
            rtol, atol = UNDECLARED_TOLERANCE
            item.update({"error": str(exc), "options": [], "tolerance": {"rtol": rtol, "atol": atol}})
            out.append(item)
            continue
        d = facts.as_dict()
        d.pop("name")
        item.update(d)
        item["version"] = str(getattr(cls, "version", "")) or None
        if scale := getattr(cls, "scale", None):  # what the value's numbers mean, where a peer reports another scale
            item["scale"] = str(scale)
        item["result_keys"] = _result_keys(cls, name)
        item["key_facts"] = {
            k: facts_of(cls, k, v).as_dict() for k, v in (getattr(cls, "key_facts", None) or {}).items()
        }
        item["options"] = metric_options(cls)
        item.update(interval_declaration(cls))
        item["doc"] = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        out.append(item)
    return out
