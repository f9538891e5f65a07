"""Built-in runtimes (filled in by their issue)."""

from ..hookspecs import hookimpl


@hookimpl
def register_runtimes(register):
    pass
