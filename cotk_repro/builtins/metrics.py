"""Built-in metrics (filled in by their issue)."""

from ..hookspecs import hookimpl


@hookimpl
def register_metrics(register):
    pass
