"""Built-in tokenizers (filled in by their issue)."""

from ..hookspecs import hookimpl


@hookimpl
def register_tokenizers(register):
    pass
