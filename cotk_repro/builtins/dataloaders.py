"""Built-in dataloaders (filled in by their issue)."""

from ..hookspecs import hookimpl


@hookimpl
def register_dataloaders(register):
    pass
