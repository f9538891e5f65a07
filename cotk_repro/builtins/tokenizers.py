"""Built-in tokenizers: ``space``, ``nltk`` (NLTK's WordPunct, as CoTK), ``punkt`` and sacrebleu's ``13a``, ``intl``,
``zh``, ``char``, ``ja-mecab`` and ``ko-mecab`` (through sacrebleu).

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


def _sacrebleu(name):
    def build(**options):
        from ..data.sacrebleu_tokenizers import factory

        return factory(name)(**options)

    build.__name__ = build.__qualname__ = "sacrebleu_" + name.replace("-", "_")
    build.__doc__ = f"Build sacrebleu's {name!r} tokenizer (takes no options)."
    return build


#: sacrebleu's BLEU tokenizers, by sacrebleu's names (cotk_repro.data.sacrebleu_tokenizers.NAMES)
SACREBLEU_NAMES = ("13a", "intl", "zh", "char", "ja-mecab", "ko-mecab")


@hookimpl
def register_tokenizers(register):
    """Register the built-in `space`, `nltk` and `punkt` tokenizers and sacrebleu's BLEU tokenizers."""
    register("space", space)
    register("nltk", nltk)
    register("punkt", punkt)
    for name in SACREBLEU_NAMES:
        register(name, _sacrebleu(name))
