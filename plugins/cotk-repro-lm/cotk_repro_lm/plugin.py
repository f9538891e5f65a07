"""The hook implementations of cotk-repro-lm (entry point group ``cotk_repro``).

Cheap to import: every factory imports its implementation (and torch) only when it is called, so
``cotk-repro --help`` never imports torch.
"""

from __future__ import annotations

from cotk_repro.hookspecs import hookimpl


def hf_tokenizer(name_or_path, **options):
    """``hf:NAME_OR_PATH``: a Hugging Face tokenizer (a tokenizer.json, a folder, or a hub name)."""
    from .hf_tokenizer import hf_factory

    return hf_factory(name_or_path, **options)


def _lazy_metric(target: str, result_keys: str):
    """A factory for ``"Class"`` (in :mod:`cotk_repro_lm.metrics`) or ``"module:Class"`` of this package."""
    import importlib

    module, _, cls_name = target.rpartition(":")
    module = module or "metrics"

    def metric_class():
        return getattr(importlib.import_module(f"cotk_repro_lm.{module}"), cls_name)

    def build(**options):
        return metric_class()(**options)

    build.metric_class = metric_class  # type: ignore[attr-defined]  # a function attribute: metrics/facts.py reads it
    # the class's result_keys (a test holds them equal): a lookup by result key imports only the metric reporting it
    build.result_keys = result_keys  # type: ignore[attr-defined]
    build.__name__ = f"build_{cls_name}"
    build.__doc__ = f"Build cotk_repro_lm.{module}.{cls_name}."
    return build


METRICS = {
    "coherence": "CoherenceMetric",
    "fluency": "FluencyMetric",
    "group-entropy": "GroupEntropyMetric",
    "bertscore": "bertscore:BertScoreMetric",
    "mauve": "mauve_metric:MauveMetric",
    "llm-judge": "judges:JudgeMetric",
    "llm-pairwise": "judges:PairwiseMetric",
}
RESULT_KEYS = {
    "coherence": r"coherence(-raw)?",
    "fluency": r"fluency(-raw)?",
    "group-entropy": r"group-entropy-\d+",
    "bertscore": r"bertscore(-precision|-recall)?",
    "mauve": "mauve",
    "llm-judge": r"llm-judge( parse-failures| suspected-injections)?",
    "llm-pairwise": r"llm-pairwise( position-bias| parse-failures)?",
}


def _lazy_generator(target: str):
    """A factory for ``"module:Class"`` of :mod:`cotk_repro_lm.generation`, importing it (and torch) when called."""

    def build(**settings):
        import importlib

        module, _, cls_name = target.partition(":")
        return getattr(importlib.import_module(f"cotk_repro_lm.generation.{module}"), cls_name)(**settings)

    build.__name__ = f"build_{target.partition(':')[2]}"
    build.__doc__ = f"Build cotk_repro_lm.generation.{target.replace(':', '.')}."
    return build


#: language models as systems: local weights (``hf``) and any OpenAI-compatible server (``openai``)
GENERATORS = {
    "hf": "hf:HFGenerator",
    "openai": "endpoint:OpenAIGenerator",
}


@hookimpl
def register_tokenizers(register):
    register("hf:", hf_tokenizer)


@hookimpl
def register_metrics(register):
    for name, cls_name in METRICS.items():
        register(name, _lazy_metric(cls_name, RESULT_KEYS[name]))


@hookimpl
def register_generators(register):
    for name, target in GENERATORS.items():
        register(name, _lazy_generator(target))


@hookimpl
def register_commands(cli):
    from .cli import register

    register(cli)
