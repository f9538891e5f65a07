"""sacrebleu's tokenizers (``13a``, ``intl``, ``zh``, ``char``, ``ja-mecab``, ``ko-mecab``) as cotk-repro tokenizers,
for the dataloaders and the BLEU family alike.

They are sacrebleu's own objects, called as sacrebleu's BLEU calls them (``tokenizer(line.rstrip()).split()``),
never re-written: sacrebleu is the reference. Their settings (what the data and metric hashes cover) name sacrebleu's
version and the tokenizer's own signature (for the mecab ones: MeCab's version and dictionary), and the BLEU
signature carries both (``tok:zh-sacrebleu2.6.0``). The mecab tokenizers need sacrebleu's optional dependencies
(``pip install 'sacrebleu[ja]'`` / ``'sacrebleu[ko]'``); without them the name is refused with one sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .tokenizers import Tokenizer

#: cotk-repro's names -> sacrebleu's ``tokenize=`` names (the same)
NAMES = ("13a", "intl", "zh", "char", "ja-mecab", "ko-mecab")
_EXTRAS = {"ja-mecab": "ja", "ko-mecab": "ko"}


class SacrebleuTokenizer(Tokenizer):
    """One of sacrebleu's BLEU tokenizers by its sacrebleu name; tokens are its output split on spaces."""

    def __init__(self, name: str) -> None:
        from .errors import DataError

        if name not in NAMES:
            raise DataError(f"unknown sacrebleu tokenizer {name!r}; choose one of {', '.join(NAMES)}")
        import sacrebleu
        from sacrebleu.metrics.bleu import BLEU

        try:
            self._tok = BLEU(tokenize=name).tokenizer
        except (RuntimeError, ImportError, AssertionError) as exc:  # MeCab or its dictionary missing
            extra = _EXTRAS.get(name, "")
            raise DataError(
                f"tokenizer {name!r} needs sacrebleu's optional dependencies, which are not installed "
                f"or not usable ({str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}): "
                f"pip install 'sacrebleu[{extra}]'"
            ) from None
        self.name = name
        self.sacrebleu_version = sacrebleu.__version__
        self.tokenizer_signature = self._tok.signature()
        from .sacrebleu_bulk import bulk

        #: ``intl`` and ``zh`` over many lines at once, sacrebleu's code doing the tokenizing (sacrebleu_bulk.py)
        self._bulk = bulk(self._tok)

    @property
    def version(self) -> str:  # type: ignore[override]
        return "1"

    @property
    def settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "engine": "sacrebleu",
            "sacrebleu": self.sacrebleu_version,
            "signature": self.tokenizer_signature,
            "version": self.version,
        }

    @property
    def signature(self) -> str:
        """The name in a metric signature: sacrebleu's tokenizer signature and sacrebleu's version."""
        return f"{self.tokenizer_signature}-sacrebleu{self.sacrebleu_version}"

    def tokenize(self, text: str) -> list[str]:
        return self._tok(text.rstrip()).split()

    def tokenize_many(self, texts: Sequence[str]) -> list[list[str]]:
        if self._bulk is not None:
            return self._bulk(texts)
        tok = self._tok
        return [tok(t.rstrip()).split() for t in texts]


def factory(name: str) -> Any:
    """A factory for the registry: ``factory("zh")(**options)`` builds the ``zh`` tokenizer (no options)."""

    def build(**options: Any) -> SacrebleuTokenizer:
        from .tokenizers import _no_options

        _no_options(name, options)
        return SacrebleuTokenizer(name)

    build.__name__ = build.__qualname__ = "sacrebleu_" + name.replace("-", "_")
    build.__doc__ = f"Build sacrebleu's {name!r} tokenizer (takes no options)."
    return build
