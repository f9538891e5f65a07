"""The hook implementations of cotk-repro-texygen (entry point group ``cotk_repro``).

Cheap to import: torch is imported only when a factory is called or a metric class is asked for.
"""

from __future__ import annotations

import re

from cotk_repro.hookspecs import hookimpl

METRICS = {"nll-oracle": "NllOracle", "nll-test": "NllTest", "embsim": "EmbSim"}


def oracle_lstm(path=None, **options):
    """``oracle-lstm``: the oracle LSTM of a seed and sizes and the sentences it generates."""
    from .data import oracle_lstm as build

    return build(path, **options)


def _lazy_metric(name: str, cls_name: str):
    def build(**options):
        from . import metrics

        return getattr(metrics, cls_name)(**options)

    def metric_class():
        from . import metrics

        return getattr(metrics, cls_name)

    build.metric_class = metric_class  # type: ignore[attr-defined]  # a function attribute: metrics/facts.py reads it
    # each metric reports its name alone (the class's result_keys; a test holds them equal): a lookup by result
    # key (the tolerance reproduce judges with) need not import torch to learn that another key is not one of these
    build.result_keys = re.escape(name)  # type: ignore[attr-defined]
    build.__name__ = f"build_{cls_name}"
    build.__doc__ = f"Build cotk_repro_texygen.metrics.{cls_name}."
    return build


@hookimpl
def register_dataloaders(register):
    register("oracle-lstm", oracle_lstm)


@hookimpl
def register_metrics(register):
    for name, cls_name in METRICS.items():
        register(name, _lazy_metric(name, cls_name))


def texygen_generator(**settings):
    """``texygen``: a Texygen model trained with a preset, sampling one sentence per input."""
    from .generate import TexygenGenerator

    return TexygenGenerator(**settings)


@hookimpl
def register_generators(register):
    register("texygen", texygen_generator)


@hookimpl
def register_templates(register):
    from .templates import TEMPLATES, template

    for name in TEMPLATES:
        register(name, template(name))
