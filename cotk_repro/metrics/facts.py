"""What a metric declares about itself (direction, range, references, level, cost), read by every consumer.

Facts live on the metric class (:class:`cotk_repro.metrics.base.Metric` attributes). ``evaluate``,
``compare``, the dashboard's ranking and value checks and ``cotk-repro metrics --json`` ask this module;
no other module keeps a table of metric names.

A registered factory is either the metric class itself or a callable with a ``metric_class`` attribute
(the built-ins register lazy factories that carry it).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any


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
        """JSON-ready (infinite bounds as null)."""
        d = asdict(self)
        d["value_range"] = [None if math.isinf(v) else v for v in self.value_range]
        return d


def metric_class(name: str) -> type | None:
    """The class behind the metric registered as ``name`` (None when unknown or not declared)."""
    from ..plugins import get_plugins

    registry = get_plugins().registry("metric")
    if name not in registry:
        return None
    factory = registry[name].obj
    if isinstance(factory, type):
        return factory
    cls = getattr(factory, "metric_class", None)
    if callable(cls) and not isinstance(cls, type):  # a lazy resolver
        cls = cls()
    return cls if isinstance(cls, type) else None


def _facts(cls: type, name: str, override: dict[str, Any] | None = None) -> MetricFacts:
    o = dict(override or {})
    lo, hi = o.get("value_range", getattr(cls, "value_range", (0.0, 1.0)))
    return MetricFacts(
        name=name,
        higher_is_better=bool(o.get("higher_is_better", getattr(cls, "higher_is_better", True))),
        value_range=(float(lo), float(hi)),
        needs_references=bool(o.get("needs_references", getattr(cls, "needs_references", True))),
        paired_references=bool(o.get("paired_references", getattr(cls, "paired_references", True))),
        level=str(o.get("level", getattr(cls, "level", "corpus"))),
        cost=float(o.get("cost", getattr(cls, "cost", 1.0))),
    )


def metric_facts(name: str) -> MetricFacts | None:
    """The facts of the metric registered as ``name`` (None when it is unknown)."""
    cls = metric_class(name)
    return None if cls is None else _facts(cls, name)


def _result_keys(cls: type, name: str) -> str:
    return getattr(cls, "result_keys", None) or re.escape(name)


def facts_for_result_key(key: str) -> MetricFacts | None:
    """The facts of a result key (``bleu``, ``fw-bleu``, ``distinct-2``, ...) from the metric that reports it.

    A metric class declares the keys it reports with ``result_keys`` (a regular expression matched in
    full; default: its registered name) and per-key differences with ``key_facts``.
    """
    from ..plugins import get_plugins

    for name in sorted(get_plugins().registry("metric")):
        cls = metric_class(name)
        if cls is None:
            continue
        if re.fullmatch(_result_keys(cls, name), key):
            return _facts(cls, key, (getattr(cls, "key_facts", None) or {}).get(key))
    return None
