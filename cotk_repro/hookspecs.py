"""The plugin hooks of cotk-repro (pluggy project name ``cotk_repro``).

Every component that evaluates (tokenizers, dataloaders, metrics, generators) or
executes and publishes (runtimes, publish targets) is registered through one of
these hooks. Built-in components register through the same hooks as third-party
plugins (see :mod:`cotk_repro.plugins`). A plugin is a module or object with
functions decorated by :data:`hookimpl`, exposed through the entry-point group
``cotk_repro``::

    [project.entry-points.cotk_repro]
    my_plugin = "my_package.plugin"

Each ``register_*`` hook receives a ``register(name, component)`` callable.
``name`` is the name users type on the command line; the same name registered
twice (by any plugins) is an error naming both plugins. What each hook registers is
typed by the protocols of :mod:`cotk_repro.protocols` (the signatures below); a component
that does not honour its kind's is refused at registration with one sentence naming its
plugin. A built-in name stays the built-in's: a lookup of it never loads or consults the other plugins, and a plugin
that registers it is refused as a clash by ``cotk-repro plugins`` and ``run``.
"""

from __future__ import annotations

from typing import Any

import pluggy

from .protocols import (
    DataloaderFactory,
    GeneratorFactory,
    MetricFactory,
    PublishTargetFactory,
    Register,
    RuntimeFactory,
    Template,
    TokenizerFactory,
)

hookspec = pluggy.HookspecMarker("cotk_repro")
hookimpl = pluggy.HookimplMarker("cotk_repro")


@hookspec
def register_tokenizers(register: Register[TokenizerFactory]) -> None:
    """Register tokenizers: ``register(name, factory)``.

    ``factory(**options)`` returns an object with ``tokenize(text) -> list[str]``,
    ``detokenize(tokens) -> str`` and a ``settings`` dict that goes into the
    setting hash. A name ending in a colon (``hf:``) is parametrized: users type
    ``PREFIX:ARG`` and the factory is called as ``factory(ARG, **options)``.
    """


@hookspec
def register_dataloaders(register: Register[DataloaderFactory]) -> None:
    """Register dataloaders: ``register(name, factory)``.

    ``factory(path, **options)`` loads a dataset folder and returns a dataloader
    with ``hash_codes`` (raw data, data, vocab, setting, general).
    """


@hookspec
def register_metrics(register: Register[MetricFactory]) -> None:
    """Register metrics: ``register(name, cls)``, ``cls`` a :class:`cotk_repro.metrics.Metric` subclass.

    The interface and the facts a metric declares (direction, range, references, level, cost) are
    documented once, in docs/metrics.md "The metric contract"; every consumer reads them from the class.
    """


@hookspec
def register_runtimes(register: Register[RuntimeFactory]) -> None:
    """Register runtimes that rerun a recorded entry: ``register(name, factory)``.

    Built-ins: ``docker``, ``venv``, ``local``.
    """


@hookspec
def register_publish_targets(register: Register[PublishTargetFactory]) -> None:
    """Register publish targets: ``register(name, factory)``. Built-ins: ``git``, ``dashboard``."""


@hookspec
def register_generators(register: Register[GeneratorFactory]) -> None:
    """Register text generators for ``cotk-repro compare``: ``register(name, factory)``.

    ``factory(**settings)`` returns an object with ``name``, ``version``,
    ``settings`` and ``generate(inputs: list[str]) -> list[str]``.
    """


@hookspec
def register_templates(register: Register[Template]) -> None:
    """Register project templates for ``cotk-repro init --template``: ``register(name, template)``.

    ``template`` is a :class:`cotk_repro.scaffold.ProjectTemplate`: the folders its files come
    from, and the task, dataset layout, metrics and dependencies ``init --list-templates`` shows.
    """


@hookspec
def register_commands(cli: Any) -> None:
    """Add commands to the command line. ``cli`` is the root Typer application."""
