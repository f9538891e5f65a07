"""The plugin's hook: registers the summarizers as ``cotk-repro compare`` generators.

Cheap to import (every cotk-repro command loads the plugins): sumy is imported only when a
generator is built.
"""

from __future__ import annotations

from cotk_repro.hookspecs import hookimpl


def _factory(name: str):
    def build(**settings):
        from .generators import GENERATORS

        return GENERATORS[name](**settings)

    build.__name__ = f"build_{name}"
    build.__doc__ = f"Build the {name!r} extractive summarizer."
    return build


#: the registered generator names
NAMES = ("lexrank", "textrank", "lsa", "luhn", "random", "lead", "smmry")


@hookimpl
def register_generators(register):
    for name in NAMES:
        register(name, _factory(name))
