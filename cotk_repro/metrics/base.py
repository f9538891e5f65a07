"""The metric contract: the :class:`Metric` base class, the one way to run a metric, the result-dict helpers.

Documented in docs/metrics.md, "The metric contract". A metric is registered by name through the
``register_metrics`` hook (the class itself, or a factory ``factory(**options) -> metric`` with a
``metric_class`` attribute). The interface every consumer relies on::

    m = get_metric("bleu", ngram=4)
    for batch in batches:            # forward many times, then close
        m.forward({"hyps": [...], "refs": [[...], ...]})
    m.close()   # {"bleu": 0.27, "bleu hashvalue": "<64 hex>", "bleu signature": "bleu|n:4|..."}

    m.compute(hypotheses, references)   # the same on whole lists (the base class builds it from forward/close)

``evaluate``, ``evaluate_files`` and ``compare`` all run metrics through :func:`score` /
:func:`score_batches` below, never by calling the methods themselves.

``references`` has one layout everywhere: for each hypothesis, a list of reference strings. A count
mismatch is an error, never a silent truncation (unless the metric declares ``paired_references = False``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Literal, overload

# the metric API re-exports them (the `as` spells the re-export for mypy's no_implicit_reexport)
from ..core.results import HASH_SUFFIX as HASH_SUFFIX
from ..core.results import SIGNATURE_SUFFIX as SIGNATURE_SUFFIX
from ..core.results import result_entry as result_entry
from ..errors import CotkError


class MetricError(CotkError):
    """Bad input to a metric (one clear sentence)."""


#: the cross-machine tolerance ``(rtol, atol)`` of a metric whose value is the same to the last bit on every machine
#: (counts, ratios of counts, pure-Python arithmetic in a fixed order)
EXACT = (0.0, 0.0)
#: the tolerance of a metric that declares none (and of a result key no registered metric reports): the one
#: project-wide default every metric was judged with before metrics declared their own
UNDECLARED_TOLERANCE = (1e-6, 1e-12)


def signature(name: str, fields: Mapping[str, Any], version: str) -> str:
    """A readable signature in sacrebleu's spirit: ``bleu|n:4|smooth:m3|tok:wordpunct-u18|refs:1|v:1``."""
    parts = [name] + [f"{k}:{_fmt(v)}" for k, v in fields.items()] + [f"v:{version}"]
    return "|".join(parts)


def _fmt(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(_fmt(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    if value is None:
        return "none"
    return str(value)


@overload
def check_references(
    hypotheses: Sequence[Any],
    references: Sequence[Any] | None,
    *,
    required: Literal[True] = True,
    what: str = "references",
) -> list[list[str]]: ...
@overload
def check_references(
    hypotheses: Sequence[Any], references: Sequence[Any] | None, *, required: bool, what: str = "references"
) -> list[list[str]] | None: ...
def check_references(
    hypotheses: Sequence[Any], references: Sequence[Any] | None, *, required: bool = True, what: str = "references"
) -> list[list[str]] | None:
    """Validate the one reference layout: a list of reference lists, one per hypothesis."""
    if references is None:
        if required:
            raise MetricError(f"this metric needs {what}")
        return None
    refs = list(references)
    if len(refs) != len(hypotheses):
        raise MetricError(
            f"{len(hypotheses)} hypotheses but {len(refs)} reference lists: give exactly one list of "
            f"references per hypothesis"
        )
    if not any(issubclass(t, str) for t in set(map(type, refs))):
        return list(map(list, refs))
    out = []
    for i, r in enumerate(refs):
        if isinstance(r, str):
            raise MetricError(f"references[{i}] is a string; give a list of reference strings per hypothesis")
        out.append(list(r))
    return out


def resolve_tokenizer(tokenizer: Any) -> Any:
    """A tokenizer object from a registered name (``space``, ``nltk``, ...) or an object as is; None stays None."""
    if tokenizer is None or not isinstance(tokenizer, str):
        return tokenizer
    from ..plugins import get_plugins

    registry = get_plugins().registry("tokenizer")
    if tokenizer in registry and not tokenizer.endswith(":"):
        return registry[tokenizer].obj()
    if tokenizer.partition(":")[0] + ":" in registry:  # a parametrized name such as hf:gpt2
        from ..data.tokenizers import get_tokenizer
        from ..errors import CotkError

        try:
            return get_tokenizer(tokenizer)
        except CotkError as exc:
            raise MetricError(exc.message) from None
    refused = get_plugins().refusal("tokenizer", tokenizer)
    if refused is not None:
        raise MetricError(refused)
    known = sorted(k + "ARG" if k.endswith(":") else k for k in registry)
    raise MetricError(f"unknown tokenizer {tokenizer!r}; known tokenizers: {', '.join(known) or 'none'}")


class Metric:
    """Base class of every metric: identity, facts, and ``forward``/``close`` (docs/metrics.md).

    A subclass implements **either** :meth:`compute` (whole lists; the base ``forward`` accumulates
    ``batch["hyps"]`` / ``batch["refs"]`` and ``close`` calls ``compute`` on everything seen) **or**
    :meth:`forward` and :meth:`close` (streaming; the base ``compute`` feeds one batch and closes).
    Subclasses that define ``__init__`` call ``super().__init__(**settings)``.
    """

    name = "metric"
    version = "1"
    #: False for metrics that score the hypotheses alone (self-bleu, distinct, ...)
    needs_references = True
    #: False when the references are a set not paired with the hypotheses (fw-bw-bleu): counts may differ
    paired_references = True

    # -- the inputs beyond hypotheses and references (docs/metrics.md, "Other inputs"): ``cotk-repro evaluate``
    # reads these flags and calls the matching method, never probing for one
    #: True: :meth:`compute_groups` scores explicit groups of responses (``evaluate --groups FILE``)
    takes_groups = False
    #: True: :meth:`compute_with_queries` reads the query each hypothesis answers (``evaluate --queries FILE``)
    takes_queries = False
    #: True: it cannot score hypotheses without their queries (a metric with ``takes_groups`` still scores
    #: groups without them); implies ``takes_queries``
    needs_queries = False

    # -- facts (docs/metrics.md, "The metric contract"): every consumer (evaluate, compare, the
    # dashboard's ranking and value checks, `metrics --json`) reads these; no table elsewhere names a metric.
    #: direction of every value this metric reports (override per result key with ``key_facts``)
    higher_is_better = True
    #: closed interval of valid values; ``float("inf")`` for unbounded (perplexity: (1.0, inf))
    value_range = (0.0, 1.0)
    #: "sentence" (a mean of per-sentence scores) or "corpus" (pooled statistics)
    level = "corpus"
    #: rough relative cost per hypothesis, BLEU-4 = 1.0 (compare uses it to order work)
    cost = 1.0
    #: regular expression (full match) of the result keys this metric reports; None: its name only
    result_keys: str | None = None
    #: how far a value may move on another machine and still be the same result, ``(rtol, atol)`` as in
    #: :func:`math.isclose`: measured on other CPUs, thread counts and Pythons, with a margin (docs/metrics.md,
    #: "Tolerances"); :data:`EXACT` for a value that never moves. ``reproduce`` and ``diff`` judge with it.
    tolerance: tuple[float, float] = UNDECLARED_TOLERANCE
    #: result keys whose facts differ from the class's: ``{"rouge-l": {"higher_is_better": True, ...}}``
    key_facts: ClassVar[dict[str, dict[str, Any]]] = {}
    #: how a resample of the items is scored, for intervals and paired tests (docs/metrics.md, "Significance and
    #: intervals"): ``"statistics"`` (:meth:`resample_statistics` gives per-item sufficient statistics and the
    #: metric's formula from their sums: corpus metrics), ``"values"`` (:meth:`resample_values` gives per-item values
    #: whose mean is the value: sentence-averaged metrics) or ``"none"`` (no interval; :attr:`no_interval` says why).
    #: Checked at registration (:func:`cotk_repro.protocols.resampling_problem`); ``metrics --json`` shows it.
    resampling = "none"
    #: why a metric with ``resampling = "none"`` has no interval (one sentence, shown in ``metrics --json``)
    no_interval = "the metric declares no way to score a resample of its items"

    def __init__(self, **settings: Any) -> None:
        self.settings: dict[str, Any] = dict(settings)
        self._hyps: list[str] = []
        self._refs: list[Any] | None = None

    def forward(self, batch: Mapping[str, Any]) -> None:
        """Take one batch: ``{"hyps": [...], "refs": [[...], ...]}`` (``refs`` absent for reference-free metrics)."""
        hyps = list(batch["hyps"])
        refs = batch.get("refs")
        if refs is not None:
            if self._refs is None:
                self._refs = []
            self._refs.extend(check_references(hyps, refs) if self.paired_references else list(refs))
        self._hyps.extend(hyps)

    def close(self) -> dict[str, Any]:
        """The result dict of everything forwarded since the last ``close``; the metric is then empty again."""
        if type(self).compute is Metric.compute:
            raise MetricError(f"metric {self.name!r} implements neither compute() nor forward()/close()")
        hyps, refs = self._hyps, self._refs
        self._hyps, self._refs = [], None
        return self.compute(hyps, refs)

    def compute(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
        """The result dict of whole lists: one ``forward`` of everything, then ``close``."""
        if type(self).close is Metric.close:
            raise MetricError(f"metric {self.name!r} implements neither compute() nor forward()/close()")
        batch: dict[str, Any] = {"hyps": list(hypotheses)}
        if references is not None:
            batch["refs"] = list(references)
        self.forward(batch)
        return self.close()

    def compute_groups(
        self, groups: Sequence[Sequence[Any]], references: Sequence[Sequence[Any]] | None = None
    ) -> dict[str, Any]:
        """The result dict of explicit groups of responses (``references``: optional, one list per group).
        Only a metric with ``takes_groups = True`` implements it."""
        raise MetricError(f"metric {self.name!r} does not score groups of responses")

    def compute_with_queries(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str]] | None, queries: Sequence[str]
    ) -> dict[str, Any]:
        """:meth:`compute` of hypotheses that answer ``queries`` (one per hypothesis). Only a metric with
        ``takes_queries = True`` implements it."""
        raise MetricError(f"metric {self.name!r} takes no queries")

    def resample_statistics(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None) -> Any:
        """Per result key, the :class:`cotk_repro.metrics.resampling.ItemStatistics` of these items (a metric with
        ``resampling = "statistics"`` implements it)."""
        raise MetricError(f"metric {self.name!r} has no interval: {self.no_interval}")

    def resample_values(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
    ) -> dict[str, list[float]]:
        """Per result key, one value per item whose mean is the value (a metric with ``resampling = "values"``
        implements it)."""
        raise MetricError(f"metric {self.name!r} has no interval: {self.no_interval}")

    def __repr__(self) -> str:
        return f"<metric {self.name} v{self.version} {getattr(self, 'settings', {})}>"


def declared(metric: Any, flag: str) -> bool:
    """A contract flag (``takes_groups``, ``takes_queries``, ``needs_queries``, ...) of a metric object or class:
    its own value, or the :class:`Metric` default for one that does not derive from it (a plugin may register any
    class honouring the contract)."""
    return bool(getattr(metric, flag, getattr(Metric, flag)))


def _metric_name(metric: Any) -> str:
    return str(getattr(metric, "name", None) or type(metric).__name__)


def _checked(metric: Any, result: Any) -> dict[str, Any]:
    if not isinstance(result, Mapping):
        raise MetricError(f"metric {_metric_name(metric)!r} returned a {type(result).__name__}, not a result dict")
    return dict(result)


def score(metric: Any, hypotheses: Sequence[Any], references: Sequence[Any] | None = None) -> dict[str, Any]:
    """Run ``metric`` on whole lists: its ``compute`` when it has one, else one ``forward`` and ``close``. A U+FEFF
    at the start of the first hypothesis and the first reference is a byte-order mark and is dropped, as when a
    file is read (:func:`cotk_repro.core.textinput.drop_leading_bom`)."""
    from ..core.textinput import drop_leading_bom

    hypotheses, references = drop_leading_bom(hypotheses, references)
    if callable(getattr(metric, "compute", None)):
        return _checked(metric, metric.compute(list(hypotheses), references))
    return score_batches(
        metric, [{"hyps": list(hypotheses), **({} if references is None else {"refs": list(references)})}]
    )


def score_batches(metric: Any, batches: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Run ``metric`` on a stream of batches: ``forward`` each then ``close`` (``compute`` on them all if it
    has no ``forward``/``close``), so a streaming metric never holds the corpus."""
    if callable(getattr(metric, "forward", None)) and callable(getattr(metric, "close", None)):
        for batch in batches:
            metric.forward(batch)
        return _checked(metric, metric.close())
    if not callable(getattr(metric, "compute", None)):
        raise MetricError(
            f"metric {_metric_name(metric)!r} has neither forward()/close() nor compute() "
            f'(see docs/metrics.md, "The metric contract")'
        )
    hyps: list[Any] = []
    refs: list[Any] | None = None
    for batch in batches:
        hyps.extend(batch["hyps"])
        if batch.get("refs") is not None:
            refs = refs if refs is not None else []
            refs.extend(batch["refs"])
    return _checked(metric, metric.compute(hyps, refs))
