"""The smallest complete cotk-repro plugin: a metric (``toy-metric``) and a tokenizer (``toy-tokenizer``),
registered through the pluggy hooks, each honouring its contract (docs/metrics.md, "The metric contract";
docs/core.md, "Writing a plugin"). Copy it to start a plugin.

    cotk-repro evaluate -m toy-metric --hyps hyps.txt
    cotk-repro evaluate -m distinct -t toy-tokenizer --hyps hyps.txt
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cotk_repro.hookspecs import hookimpl


def _metric_class() -> type:
    """The metric class, imported when first used: registering it stays cheap for the CLI's start-up."""
    from cotk_repro.core.canonical import hash_object
    from cotk_repro.metrics import Metric, MetricError
    from cotk_repro.metrics.declaration import FIXED_BY_VERSION, HASH_ONLY_AS_PUBLISHED, Declaration, Setting

    class ToyMetric(Metric):
        """The mean number of whitespace-separated tokens per hypothesis (reference-free)."""

        name = "toy-metric"
        version = "1"
        needs_references = False
        higher_is_better = True
        value_range = (0.0, float("inf"))
        level = "sentence"
        tolerance = (0.0, 0.0)  # a mean of token counts: the same on every machine (docs/metrics.md, "Tolerances")

        def compute(
            self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None
        ) -> dict[str, Any]:
            hyps = [h if isinstance(h, str) else " ".join(h) for h in hypotheses]
            if not hyps:
                raise MetricError("toy-metric needs at least one hypothesis")
            value = sum(len(h.split()) for h in hyps) / len(hyps)
            # the hash settings and the signature, declared once (docs/metrics.md, "Hash and signature: one
            # declaration"); a setting on one side only says why
            decl = Declaration(
                self.name,
                self.version,
                [
                    Setting.signature_only("tok", "whitespace", why=FIXED_BY_VERSION),
                    Setting.hash_only("hypotheses", len(hyps), why=HASH_ONLY_AS_PUBLISHED),
                ],
            )
            return decl.entry(
                self.name,
                value,
                lambda settings: hash_object(
                    {"cotk-repro-example/toy-metric": settings["version"], "hypotheses": settings["hypotheses"]}
                ),
            )

    return ToyMetric


def toy_metric(**options: Any) -> Any:
    """Build the toy metric (takes no options)."""
    return _metric_class()(**options)


toy_metric.metric_class = _metric_class  # type: ignore[attr-defined]  # a function attribute: `metrics --json`, compare and the dashboard read its facts


def toy_tokenizer(**options: Any) -> Any:
    """Build the toy tokenizer: lower-cased whitespace tokens (takes no options)."""
    from cotk_repro.data.tokenizers import Tokenizer

    if options:
        raise ValueError(f"toy-tokenizer takes no options, got: {', '.join(sorted(options))}")

    class ToyTokenizer(Tokenizer):
        name = "toy-tokenizer"
        version = "1"

        @property
        def settings(self) -> dict[str, Any]:
            return {"name": self.name, "method": "lowercase-whitespace", "version": self.version}

        def tokenize(self, text: str) -> list[str]:
            return text.lower().split()

    return ToyTokenizer()


@hookimpl
def register_metrics(register):
    """Register the toy metric's factory."""
    register("toy-metric", toy_metric)


@hookimpl
def register_tokenizers(register):
    """Register the toy tokenizer's factory."""
    register("toy-tokenizer", toy_tokenizer)
