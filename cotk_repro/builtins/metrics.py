"""Built-in metrics, registered through the same hook as third-party metric plugins.

Each factory imports its implementation only when the metric is built, so loading
the plugin (every command does) stays cheap.
"""

from __future__ import annotations

import importlib

from ..hookspecs import hookimpl

#: metric name -> "module:class" under cotk_repro.metrics
BUILTIN_METRICS = {
    "bleu": "bleu:BleuMetric",
    "self-bleu": "bleu:SelfBleuMetric",
    "fw-bw-bleu": "bleu:FwBwBleuMetric",
    "perplexity": "perplexity:PerplexityMetric",
    "distinct": "diversity:DistinctMetric",
    "ngram-entropy": "diversity:NgramEntropyMetric",
    "fw-rv-ppl": "kn_lm:FwRvPplMetric",
    "rouge": "rouge:RougeMetric",
    "nist": "nist:NistMetric",
    "meteor": "meteor:MeteorMetric",
    "multi-turn-perplexity": "perplexity:MultiTurnPerplexityMetric",
    "bleu-precision-recall": "precision_recall:BleuPrecisionRecallMetric",
    "embedding-precision-recall": "precision_recall:EmbSimilarityPrecisionRecallMetric",
    "accuracy": "accuracy:AccuracyMetric",
    "cider": "cider:CiderMetric",
    "chrf": "chrf:ChrfMetric",
    "ter": "ter:TerMetric",
    "gleu": "gleu:GleuMetric",
}


def _factory(target: str):
    module, cls = target.split(":")

    def build(**options):
        return getattr(importlib.import_module(f"cotk_repro.metrics.{module}"), cls)(**options)

    def metric_class():
        return getattr(importlib.import_module(f"cotk_repro.metrics.{module}"), cls)

    build.metric_class = metric_class  # type: ignore[attr-defined]  # a function attribute: metrics/facts.py reads it
    build.__name__ = f"build_{cls}"
    build.__doc__ = f"Build cotk_repro.metrics.{module}.{cls}."
    return build


@hookimpl
def register_metrics(register):
    """Register a factory for every built-in metric in BUILTIN_METRICS."""
    for name, target in BUILTIN_METRICS.items():
        register(name, _factory(target))
