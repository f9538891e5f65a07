"""Built-in publish targets (filled in by their issue)."""

from ..hookspecs import hookimpl


@hookimpl
def register_publish_targets(register):
    pass
