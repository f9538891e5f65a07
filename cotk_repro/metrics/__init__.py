"""Metrics with comparability hashes (SPEC section 5).

``get_metric(name, **options)`` builds any registered metric (built-in or from a
plugin); ``evaluate(metrics, hypotheses, references)`` runs several and merges their
CoTK-style result dicts, ready for :func:`cotk_repro.save_result`.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from .base import Metric, MetricError, check_references, result_entry, signature

__all__ = ["Metric", "MetricError", "get_metric", "evaluate", "metric_names", "check_references",
           "result_entry", "signature"]


def metric_names() -> list[str]:
    from ..plugins import get_plugins

    return sorted(get_plugins().registry("metric"))


def get_metric(name: str, **options: Any) -> Metric:
    """Build the metric registered as ``name`` with ``options``."""
    from ..plugins import get_plugins

    registry = get_plugins().registry("metric")
    if name not in registry:
        raise MetricError(f"unknown metric {name!r}; registered metrics: {', '.join(sorted(registry)) or 'none'}")
    try:
        return registry[name].obj(**options)
    except TypeError as exc:
        raise MetricError(f"bad options for metric {name!r}: {exc}") from None


def evaluate(metrics: Iterable[str | tuple[str, dict[str, Any]]], hypotheses: Sequence[str],
             references: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
    """Run several metrics on the same hypotheses/references and merge their results."""
    merged: dict[str, Any] = {}
    for spec in metrics:
        name, options = (spec, {}) if isinstance(spec, str) else (spec[0], dict(spec[1]))
        merged.update(get_metric(name, **options).compute(list(hypotheses), references))
    return merged
