"""The metric base class and the result-dict helpers every metric uses.

A metric is registered by name through the ``register_metrics`` hook as a factory
``factory(**options) -> Metric``. Two ways to use it, CoTK style and list style::

    m = get_metric("bleu", ngram=4)
    for batch in batches:            # CoTK style: forward many times, then close
        m.forward({"hyps": [...], "refs": [[...], ...]})
    m.close()   # {"bleu": 0.27, "bleu hashvalue": "<64 hex>", "bleu signature": "bleu|n:4|..."}

    m.compute(hypotheses, references)   # the same on whole lists of strings

``references`` has one layout everywhere: for each hypothesis, a list of reference
strings. A count mismatch is an error, never a silent truncation.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..errors import CotkError

HASH_SUFFIX = " hashvalue"
SIGNATURE_SUFFIX = " signature"


class MetricError(CotkError):
    """Bad input to a metric (one clear sentence)."""


def signature(name: str, fields: Mapping[str, Any], version: str) -> str:
    """A readable signature in sacrebleu's spirit: ``bleu|n:4|smooth:m3|tok:wordpunct|refs:1|v:1``."""
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


def result_entry(key: str, value: float, hash_: str | None, sig: str | None) -> dict[str, Any]:
    """``{key: value, key+" hashvalue": hash, key+" signature": sig}`` (None parts left out)."""
    out: dict[str, Any] = {key: float(value)}
    if hash_ is not None:
        out[key + HASH_SUFFIX] = hash_
    if sig is not None:
        out[key + SIGNATURE_SUFFIX] = sig
    return out


def check_references(hypotheses: Sequence[Any], references: Sequence[Any] | None, *, required: bool = True,
                     what: str = "references") -> list[list[str]] | None:
    """Validate the one reference layout: a list of reference lists, one per hypothesis."""
    if references is None:
        if required:
            raise MetricError(f"this metric needs {what}")
        return None
    refs = list(references)
    if len(refs) != len(hypotheses):
        raise MetricError(
            f"{len(hypotheses)} hypotheses but {len(refs)} reference lists: give exactly one list of "
            f"references per hypothesis")
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
    try:  # the data package's own tokenizers, when no plugin registered them
        from ..data import tokenizers as _tok
    except ImportError:  # pragma: no cover - data package missing
        _tok = None
    builtin = {"space": "SpaceTokenizer", "nltk": "WordPunctTokenizer", "wordpunct": "WordPunctTokenizer",
               "punkt": "PunktTokenizer"}
    if _tok is not None and tokenizer in builtin and hasattr(_tok, builtin[tokenizer]):
        return getattr(_tok, builtin[tokenizer])()
    known = sorted(set(registry) | (set(builtin) if _tok is not None else set()))
    raise MetricError(f"unknown tokenizer {tokenizer!r}; known tokenizers: {', '.join(known) or 'none'}")


class Metric:
    """Base class: subclasses set ``name``/``version`` and implement :meth:`compute`.

    The default :meth:`forward` accumulates ``batch["hyps"]`` (strings) and
    ``batch.get("refs")`` (reference lists) and :meth:`close` calls :meth:`compute`
    on everything seen. Metrics that stream (perplexity) override both.
    """

    name = "metric"
    version = "1"
    #: False for metrics that score the hypotheses alone (self-bleu, distinct, ...)
    needs_references = True
    #: False when the references are a set not paired with the hypotheses (fw-bw-bleu): counts may differ
    paired_references = True

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
    result_keys = None
    #: result keys whose facts differ from the class's: ``{"rouge-l": {"higher_is_better": True, ...}}``
    key_facts: dict = {}

    def __init__(self, **settings: Any) -> None:
        self.settings: dict[str, Any] = dict(settings)
        self._hyps: list[str] = []
        self._refs: list[list[str]] | None = None

    def forward(self, batch: Mapping[str, Any]) -> None:
        hyps = list(batch["hyps"])
        refs = batch.get("refs")
        if refs is not None:
            refs = check_references(hyps, refs)
            self._refs = (self._refs or []) + refs
        self._hyps.extend(hyps)

    def close(self) -> dict[str, Any]:
        hyps, refs = self._hyps, self._refs
        self._hyps, self._refs = [], None
        return self.compute(hyps, refs)

    def compute(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<metric {self.name} v{self.version} {self.settings}>"
