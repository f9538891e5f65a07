"""Built-in tokenizers: ``space``, ``nltk`` (NLTK's WordPunct, as CoTK) and ``punkt``.

Factories import :mod:`cotk_repro.data.tokenizers` when called, so that loading the
plugins stays cheap.
"""

from ..hookspecs import hookimpl


def space(**options):
    """Build the whitespace tokenizer (takes no options)."""
    from ..data.tokenizers import space_factory

    return space_factory(**options)


def nltk(**options):
    """Build the NLTK WordPunct tokenizer (takes no options)."""
    from ..data.tokenizers import nltk_factory

    return nltk_factory(**options)


def punkt(**options):
    """Build the NLTK Punkt tokenizer (takes no options)."""
    from ..data.tokenizers import punkt_factory

    return punkt_factory(**options)


@hookimpl
def register_tokenizers(register):
    """Register the built-in `space`, `nltk` and `punkt` tokenizers."""
    register("space", space)
    register("nltk", nltk)
    register("punkt", punkt)
