"""Metrics with comparability hashes (docs/spec.md section 5).

``get_metric(name, **options)`` builds any registered metric (built-in or from a
plugin); ``evaluate(metrics, hypotheses, references)`` runs several and merges their
CoTK-style result dicts, ready for :func:`cotk_repro.save_result`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .base import (
    Metric,
    MetricError,
    check_references,
    resolve_tokenizer,
    result_entry,
    score,
    score_batches,
    signature,
)

__all__ = [
    "Metric",
    "MetricError",
    "MetricInputError",
    "get_metric",
    "evaluate",
    "metric_names",
    "check_references",
    "result_entry",
    "signature",
    "resolve_tokenizer",
    "accepts_option",
    "takes_shared_tokenizer",
    "score",
    "score_batches",
]


def metric_names() -> list[str]:
    """Return the sorted names of all registered metrics (built-in and plugins)."""
    from ..plugins import get_plugins

    return sorted(get_plugins().registry("metric"))


def get_metric(name: str, **options: Any) -> Metric:
    """Build the metric registered as ``name`` with ``options``."""
    from ..plugins import get_plugins

    registry = get_plugins().registry("metric")
    if name not in registry:
        refused = get_plugins().refusal("metric", name)
        if refused is not None:
            raise MetricError(refused)
        from ..first_party import missing_sentence

        known = ", ".join(sorted(registry)) or "none"
        missing = missing_sentence("metric", name)  # a first-party plugin's metric: say which one to install
        raise MetricError(
            f"{missing}; registered: {known}" if missing else f"unknown metric {name!r}; registered metrics: {known}"
        )
    check_option_names(name, options)
    try:
        metric: Metric = registry[name].obj(**options)  # a registered factory builds a metric
        return metric
    except TypeError as exc:
        raise MetricError(f"bad options for metric {name!r}: {exc}") from None
    except MetricError as exc:
        if repr(name) in exc.message or exc.message.startswith(f"{name}:"):
            raise
        # "ngram must be a whole number" alone does not say which of several -m metrics refused it
        raise MetricError(f"metric {name!r}: {exc.message}", hint=exc.hint, log=exc.log) from None


def check_option_names(name: str, options: dict[str, Any]) -> None:
    """Refuse an option the metric ``name`` does not take with one sentence: the closest valid one, all of them."""
    import difflib
    import inspect

    from ..plugins import get_plugins
    from .facts import class_of_factory, metric_options

    factory = get_plugins().registry("metric")[name].obj
    cls = class_of_factory(factory) or factory
    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return
    takes_none = getattr(cls, "__init__", None) is Metric.__init__  # the base's **settings: no option of its own
    if not takes_none and any(p.kind is p.VAR_KEYWORD for p in params):
        return  # takes anything: the metric itself judges
    valid = [] if takes_none else [o["name"] for o in metric_options(cls)]
    unknown = [k for k in options if k not in valid and not k.startswith("_")]
    if not unknown:
        return
    close = difflib.get_close_matches(unknown[0], valid, n=1)
    suggestion = f" (did you mean {close[0]!r}?)" if close else ""
    raise MetricError(
        f"metric {name!r} has no option {unknown[0]!r}{suggestion}; its options: {', '.join(valid) or 'none'}"
    )


def accepts_option(name: str, option: str) -> bool:
    """Whether the metric registered as ``name`` takes the keyword option ``option`` (e.g. ``tokenizer``)."""
    from ..plugins import get_plugins
    from .facts import accepts_option as _accepts
    from .facts import class_of_factory

    registry = get_plugins().registry("metric")
    if name not in registry:
        return False
    factory = registry[name].obj
    return _accepts(class_of_factory(factory) or factory, option)


def takes_shared_tokenizer(name: str) -> bool:
    """Whether the shared ``tokenizer`` of :func:`evaluate` (and ``cotk-repro evaluate --tokenizer``) goes to the
    metric ``name``: to every metric with a ``tokenizer`` option but the BLEU family, whose tokenizer (WordPunct
    unless its own ``tokenizer`` option names another) is part of what its value means."""
    from ..plugins import get_plugins
    from .facts import class_of_factory

    if not accepts_option(name, "tokenizer"):
        return False
    factory = get_plugins().registry("metric")[name].obj
    return getattr(class_of_factory(factory) or factory, "takes_shared_tokenizer", True)


def _spec(spec: str | tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    return (spec, {}) if isinstance(spec, str) else (spec[0], dict(spec[1]))


def evaluate(
    metrics: Iterable[str | tuple[str, dict[str, Any]]],
    hypotheses: Sequence[Any],
    references: Sequence[Sequence[Any]] | None = None,
    tokenizer: Any = None,
) -> dict[str, Any]:
    """Run several metrics on the same hypotheses/references and merge their results.

    ``metrics``: names or ``(name, options)`` pairs. ``tokenizer`` (a registered name or a tokenizer object)
    is given as the ``tokenizer`` option to every metric that takes one and was not given one: the tokenizer
    of token-list inputs, or the one a metric such as ``distinct`` splits text with. The BLEU family is left out
    (:func:`takes_shared_tokenizer`): it tokenizes with WordPunct unless its own option says otherwise,
    ``evaluate([("bleu", {"tokenizer": "zh"})], ...)``.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    specs = [_spec(s) for s in metrics]
    for name, _ in specs:
        if name not in metric_names():
            get_metric(name)  # raises the "unknown metric" error listing the registered ones
    hyps = _as_text_list(hypotheses, "hypotheses", "a list of strings, one per sample (or of token lists)")
    if references is not None:
        _as_text_list(references, "references", "a list with one list of reference strings per hypothesis")
    merged: dict[str, Any] = {}
    for name, options in specs:
        if tokenizer is not None and "tokenizer" not in options and takes_shared_tokenizer(name):
            options["tokenizer"] = tokenizer
        metric = get_metric(name, **options)
        if references is None and getattr(metric, "needs_references", False):
            raise MetricError(f"{name} needs references: give one list of reference strings per hypothesis")
        merged.update(score(metric, hyps, references))
    return merged


class MetricInputError(MetricError, TypeError):
    """Hypotheses or references of the wrong type (a bare string, bytes, a number): one sentence, also a TypeError."""


def _as_text_list(value: Any, what: str, wanted: str) -> list[Any]:
    """``value`` as a list, refusing what ``list()`` would take apart: a string (scored character by character),
    bytes, a mapping, or no sequence at all."""
    if isinstance(value, (str, bytes, bytearray)):
        raise MetricInputError(f"{what} is a single {type(value).__name__}, not {wanted}")
    if isinstance(value, dict) or not isinstance(value, Iterable):
        raise MetricInputError(f"{what} is a {type(value).__name__}, not {wanted}")
    return list(value)
