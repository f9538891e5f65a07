"""The BLEU family's tokenizer, by name: option ``tokenizer`` of ``bleu``, ``self-bleu``, ``fw-bw-bleu`` and
``bleu-precision-recall`` (``-o bleu.tokenizer=zh``), and option ``normalize`` (Unicode normalisation first).

* ``nltk`` (the default; also ``wordpunct``): NLTK's WordPunct, equal to NLTK on every code point
  (:mod:`cotk_repro.core.wordpunct`), named with its engine's Unicode version (``wordpunct-u18``);
* ``13a``, ``intl``, ``zh``, ``char``, ``ja-mecab``, ``ko-mecab``: sacrebleu's own tokenizers, called through
  sacrebleu (:mod:`cotk_repro.data.sacrebleu_tokenizers`), named with sacrebleu's version;
* ``space``: whitespace;
* any other registered tokenizer (``punkt``, ``hf:PATH`` from cotk-repro-lm, a plugin's), or a tokenizer object.

Whatever the tokenizer, ``<unk>``, ``<pad>``, ``<go>`` and ``<eos>`` stay one token each (the text between them is
tokenized) and an n-gram holding ``<unk>`` never matches. The tokenizer's name goes into the signature, its
settings into the hash; a token list given as input is detokenized with the tokenizer's ``detokenize`` (WordPunct's
readable join for ``nltk``, a space for the others) and tokenized again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..text.reference_hashes import BLEU_TOKENIZER
from .base import MetricError
from .ngrams import _ATOMIC_SPLIT, has_special, tokenize_texts
from .normalization import NORMALIZATIONS, normalization, normalizer

DEFAULT_NAMES = (None, "nltk", "wordpunct", BLEU_TOKENIZER)


class BleuTokenizer:
    """A resolved BLEU tokenizer: ``name`` (signature), ``spec`` (hash: a string for the default, whose hashes equal
    the dataloaders' ``reference_hashes``, else the tokenizer's settings), ``tokenize``/``tokenize_many`` (special
    tokens kept whole) and ``detokenize``."""

    def __init__(
        self,
        name: str,
        spec: Any,
        many: Callable[[Sequence[str]], list[list[str]]],
        detokenize: Callable[[Sequence[str]], str],
        *,
        default: bool = False,
    ):
        self.name = name
        self.spec = spec
        self._many = many
        self.detokenize = detokenize
        self.default = default

    def tokenize(self, text: str) -> list[str]:
        return self.tokenize_many([text])[0]

    def tokenize_many(self, texts: Sequence[str]) -> list[list[str]]:
        return self._many(texts)


def _with_specials(many: Callable[[Sequence[str]], list[list[str]]]) -> Callable[[Sequence[str]], list[list[str]]]:
    """``many`` with each special token kept whole: a text holding one is tokenized piece by piece around it."""

    def tokenize(texts: Sequence[str]) -> list[list[str]]:
        texts = list(texts)
        special = [i for i, t in enumerate(texts) if has_special(t)]
        if not special:
            return many(texts)
        out = many(texts)
        for i in special:
            toks: list[str] = []
            for j, part in enumerate(_ATOMIC_SPLIT.split(texts[i])):
                if j % 2:
                    toks.append(part)
                elif part.strip():
                    toks.extend(many([part])[0])
            out[i] = toks
        return out

    return tokenize


def _default() -> BleuTokenizer:
    from ..data.tokenizers import wordpunct_detokenize

    return BleuTokenizer(BLEU_TOKENIZER, BLEU_TOKENIZER, tokenize_texts, wordpunct_detokenize, default=True)


def get_bleu_tokenizer(tokenizer: Any = None) -> BleuTokenizer:
    """The BLEU tokenizer named ``tokenizer`` (see the module's docstring), or a tokenizer object wrapped."""
    if isinstance(tokenizer, BleuTokenizer):
        return tokenizer
    if tokenizer in DEFAULT_NAMES:
        return _default()
    if tokenizer == "space":
        return BleuTokenizer(
            "space",
            {"name": "space", "method": "whitespace", "version": "1"},
            _with_specials(lambda texts: list(map(str.split, texts))),
            " ".join,
        )
    if isinstance(tokenizer, str):
        from ..data.tokenizers import get_tokenizer
        from ..errors import CotkError

        try:
            tok = get_tokenizer(tokenizer)
        except CotkError as exc:
            message = (
                exc.message
                if "unknown tokenizer" not in exc.message
                else (
                    f"unknown tokenizer {tokenizer!r} for the BLEU family; choose nltk (WordPunct, the default), 13a, "
                    f"intl, zh, char, ja-mecab, ko-mecab, space or a registered tokenizer "
                    f"({exc.message.partition('registered: ')[2] or 'none'})"
                )
            )
            raise MetricError(message) from None
    else:
        tok = tokenizer
    if not callable(getattr(tok, "tokenize", None)):
        raise MetricError(f"tokenizer {tok!r} has no tokenize(text) method")
    if getattr(tok, "name", None) == "nltk" and type(tok).__name__ == "WordPunctTokenizer":
        return _default()
    settings = getattr(tok, "settings", {}) or {}
    if callable(settings):
        settings = settings()
    many = getattr(tok, "tokenize_many", None)
    many = many if callable(many) else (lambda texts: list(map(tok.tokenize, texts)))
    detok = getattr(tok, "detokenize", None)
    name = str(getattr(tok, "signature", None) or getattr(tok, "name", type(tok).__name__))
    return BleuTokenizer(name, dict(settings), _with_specials(many), detok if callable(detok) else " ".join)


__all__ = ["NORMALIZATIONS", "BleuTokenizer", "get_bleu_tokenizer", "normalization", "normalizer"]
