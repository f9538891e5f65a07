"""Built-in text generators for `cotk-repro compare` (filled in by their issue)."""

from ..hookspecs import hookimpl


@hookimpl
def register_generators(register):
    pass
