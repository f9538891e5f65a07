"""Tokenizers: ``space``, ``nltk`` (NLTK's WordPunct) and ``punkt`` (Punkt sentences, then WordPunct).

Every tokenizer has ``name``, ``settings`` (a dict that goes into the setting hash),
``tokenize(text) -> list[str]``, ``detokenize(tokens) -> str`` and
``tokenize_many(texts) -> list[list[str]]`` (the same, faster in bulk). ``space`` and ``nltk``
also have ``tokenize_spaced(texts) -> bytes | None``: the tokens of plain ASCII texts as one
block, a line per text, one space between two tokens (``None`` for other text), from which the
dataloaders take the tokens and their data digests in bulk (only these two classes: the digests
trust the form). A tokenizer
that learns from the training split (``punkt``) also has ``fit(texts)``; the
dataloaders call it with the training texts before tokenizing anything.

Detokenization is *stable*: ``tokenize(detokenize(tokenize(text))) == tokenize(text)``
for every text (property-tested), so hashes computed on detokenized references
(BLEU) do not drift.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..core import wordpunct

#: NLTK's WordPunctTokenizer pattern (``nltk.tokenize.WordPunctTokenizer``), compiled with ``regex`` as NLTK does.
WORDPUNCT_PATTERN = wordpunct.PATTERN
_wordpunct_findall = wordpunct.findall


def _wordpunct_finditer(text: str) -> Any:
    return wordpunct.compiled(WORDPUNCT_PATTERN).finditer(text)


def _is_word(text: str) -> Any:
    """A match where ``text`` is all word characters (NLTK's ``regex`` ``\\w``), else None."""
    return _ascii_word(text) if text.isascii() else wordpunct.compiled(r"\w+").fullmatch(text)


def _is_space(char: str) -> Any:
    return wordpunct.compiled(r"\s").fullmatch(char)


_ascii_word = re.compile(r"\w+").fullmatch  # the same as regex's on ASCII


def _wordpunct_settings() -> dict[str, Any]:
    """What WordPunct's tokens depend on, for the setting hashes: the pattern, the engine and its Unicode data."""
    return {"pattern": WORDPUNCT_PATTERN, "engine": wordpunct.ENGINE, "unicode": wordpunct.unicode_version()}


_CLOSING = frozenset(".,!?;:%)]}")
_OPENING = frozenset("([{$#")
_CONTRACTIONS = frozenset({"s", "t", "re", "ve", "ll", "d", "m"})


class Tokenizer:
    """Base class. Subclasses set ``name`` and ``version`` and implement :meth:`tokenize`."""

    name = "tokenizer"
    version = "1"

    @property
    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version}

    def tokenize(self, text: str) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def tokenize_many(self, texts: Sequence[str]) -> list[list[str]]:
        return list(map(self.tokenize, texts))

    def detokenize(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)

    # CoTK's name for detokenize
    def convert_tokens_to_sentence(self, tokens: Sequence[str]) -> str:
        return self.detokenize(tokens)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class SpaceTokenizer(Tokenizer):
    """Split on whitespace (``str.split()``); detokenize by joining with one space."""

    name = "space"

    @property
    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "method": "whitespace", "version": self.version}

    def tokenize(self, text: str) -> list[str]:
        return text.split()

    def tokenize_many(self, texts: Sequence[str]) -> list[list[str]]:
        return list(map(str.split, texts))

    def tokenize_spaced(self, texts: Sequence[str]) -> bytes | None:
        block = wordpunct.ascii_block(texts)
        return None if block is None else wordpunct.normalize_spaces(block)


def wordpunct_tokenize(text: str) -> list[str]:
    """Exactly ``nltk.tokenize.WordPunctTokenizer().tokenize(text)``."""
    return _wordpunct_findall(text)


def wordpunct_tokenize_many(texts: Sequence[str]) -> list[list[str]]:
    """WordPunct for many texts at once (:func:`cotk_repro.core.wordpunct.tokenize_many`; equal to the regex per
    text)."""
    return wordpunct.tokenize_many(texts)


def wordpunct_detokenize(tokens: Sequence[str]) -> str:
    """Join WordPunct tokens readably (``wheel.``, ``(a)``, ``don't``), never merging two
    tokens of the same class, so that WordPunct gives the same tokens back."""
    out: list[str] = []
    prev_word: bool | None = None
    prev = ""
    n = len(tokens)
    for i, tok in enumerate(tokens):
        word = _is_word(tok) is not None
        if i == 0:
            out.append(tok)
        else:
            attach = False
            if prev_word is not None and prev_word != word and tok and prev:
                if not word and prev_word and tok[0] in _CLOSING:
                    attach = True  # word .  -> word.
                elif word and not prev_word and prev[-1] in _OPENING:
                    attach = True  # ( word  -> (word
                elif (
                    word
                    and not prev_word
                    and prev == "'"
                    and i >= 2
                    and tok.lower() in _CONTRACTIONS
                    and _is_word(tokens[i - 2]) is not None
                ):
                    attach = True  # don ' t -> don't
                elif not word and prev_word and tok == "'" and i + 1 < n and tokens[i + 1].lower() in _CONTRACTIONS:
                    attach = True
            out.append(tok if attach else " " + tok)
        prev_word, prev = word, tok
    return "".join(out)


class WordPunctTokenizer(Tokenizer):
    """NLTK's ``WordPunctTokenizer`` (``\\w+|[^\\w\\s]+`` through ``regex``, as NLTK compiles it), as CoTK's ``nltk``
    tokenizer, equal to NLTK on every code point. No NLTK data needed."""

    name = "nltk"

    @property
    def settings(self) -> dict[str, Any]:
        return {"name": self.name, "method": "wordpunct", **_wordpunct_settings(), "version": self.version}

    def tokenize(self, text: str) -> list[str]:
        return _wordpunct_findall(text)

    def tokenize_many(self, texts: Sequence[str]) -> list[list[str]]:
        return wordpunct_tokenize_many(texts)

    def tokenize_spaced(self, texts: Sequence[str]) -> bytes | None:
        return wordpunct.tokenize_spaced(texts)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return wordpunct_detokenize(tokens)


class PunktTokenizer(Tokenizer):
    """Sentences with NLTK's Punkt algorithm trained on the training split (no downloaded
    model), then WordPunct words in each sentence. A period directly after a word that
    Punkt learned as an abbreviation (``mr.``, ``st.``) stays attached to it.

    Training is order-independent: Punkt sees the training texts sorted.
    """

    name = "punkt"

    def __init__(self) -> None:
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

        self._sent = PunktSentenceTokenizer(PunktParameters())
        self._abbrevs: frozenset[str] = frozenset()
        self.fitted = False

    @property
    def settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sentences": "punkt",
            "trained_on": "train split, sorted",
            "words": "wordpunct",
            **_wordpunct_settings(),
            "abbreviations": "attached",
            "version": self.version,
        }

    @property
    def abbreviations(self) -> list[str]:
        return sorted(self._abbrevs)

    def fit(self, texts: Iterable[str]) -> PunktTokenizer:
        from nltk.tokenize.punkt import PunktSentenceTokenizer, PunktTrainer

        trainer = PunktTrainer()
        trainer.train("\n".join(sorted(texts)), finalize=True)
        params = trainer.get_params()
        self._sent = PunktSentenceTokenizer(params)
        self._abbrevs = frozenset(params.abbrev_types)
        self.fitted = True
        return self

    def sentences(self, text: str) -> list[str]:
        return self._sent.tokenize(text)

    def _words(self, sentence: str) -> list[str]:
        if not self._abbrevs or "." not in sentence:
            return _wordpunct_findall(sentence)
        out: list[str] = []
        prev_end = -1
        for m in _wordpunct_finditer(sentence):
            tok = m.group()
            if (
                tok == "."
                and out
                and m.start() == prev_end
                and out[-1].lower() in self._abbrevs
                and _is_word(out[-1]) is not None
            ):
                out[-1] = out[-1] + "."
            else:
                out.append(tok)
            prev_end = m.end()
        return out

    def sentence_spans(self, text: str) -> list[tuple[int, int]]:
        """Punkt's sentence spans, merged where a boundary would cut a WordPunct token in two
        (``only!".`` stays one run), so that words never depend on where sentences end."""
        spans: list[tuple[int, int]] = []
        for s, e in self._sent.span_tokenize(text):
            if spans and spans[-1][1] == s and s > 0 and _same_class(text[s - 1], text[s]):
                spans[-1] = (spans[-1][0], e)
            else:
                spans.append((s, e))
        return spans

    def tokenize(self, text: str) -> list[str]:
        tokens: list[str] = []
        for s, e in self.sentence_spans(text):
            tokens.extend(self._words(text[s:e]))
        return tokens

    def detokenize(self, tokens: Sequence[str]) -> str:
        return " ".join(tokens)


def _same_class(a: str, b: str) -> bool:
    """Whether two adjacent characters belong to one WordPunct token."""
    if _is_space(a) or _is_space(b):
        return False
    return (_is_word(a) is not None) == (_is_word(b) is not None)


def space_factory(**options: Any) -> SpaceTokenizer:
    """Return a SpaceTokenizer; reject any option."""
    _no_options("space", options)
    return SpaceTokenizer()


def nltk_factory(**options: Any) -> WordPunctTokenizer:
    """Return an NLTK WordPunct tokenizer; reject any option."""
    _no_options("nltk", options)
    return WordPunctTokenizer()


def punkt_factory(**options: Any) -> PunktTokenizer:
    """Return an NLTK Punkt tokenizer; reject any option."""
    _no_options("punkt", options)
    return PunktTokenizer()


def _no_options(name: str, options: dict[str, Any]) -> None:
    if options:
        from .errors import DataError

        raise DataError(f"tokenizer {name!r} takes no options, got: {', '.join(sorted(options))}")


def tokenizer_factory(name: str) -> tuple[Any, tuple[str, ...]]:
    """``(factory, args)`` for a tokenizer name: a registered name (``nltk``) gives ``(factory, ())``; a
    parametrized name ``PREFIX:ARG`` (``hf:gpt2``) whose ``PREFIX:`` is registered gives ``(factory, (ARG,))``."""
    from ..errors import PluginError
    from ..plugins import builtin_component, get_plugins

    builtin = builtin_component("tokenizer", name) if not name.endswith(":") else None
    if builtin is not None:  # the registry's answer too (no plugin can take a built-in name)
        return builtin, ()
    registry = get_plugins().registry("tokenizer")
    if name in registry and not name.endswith(":"):
        return registry[name].obj, ()
    prefix, sep, arg = name.partition(":")
    if sep and prefix + sep in registry:
        if not arg:
            raise PluginError(f"tokenizer {name!r} needs an argument after {prefix + sep!r}, e.g. {prefix}:NAME")
        return registry[prefix + sep].obj, (arg,)
    refused = get_plugins().refusal("tokenizer", name)
    if refused is not None:
        raise PluginError(refused)
    known = ", ".join(sorted(k + "ARG" if k.endswith(":") else k for k in registry)) or "none"
    raise PluginError(f"unknown tokenizer {name!r}; registered: {known}")


def get_tokenizer(tokenizer: Any, **options: Any) -> Tokenizer:
    """A tokenizer by registered name (through the plugin hooks; ``PREFIX:ARG`` names a parametrized one),
    or a tokenizer object as is."""
    if isinstance(tokenizer, str):
        factory, args = tokenizer_factory(tokenizer)
        return factory(*args, **options)
    for attr in ("tokenize", "detokenize", "settings"):
        if not hasattr(tokenizer, attr):
            from .errors import DataError

            raise DataError(f"tokenizer object {tokenizer!r} has no {attr!r}; pass a registered name or a Tokenizer")
    return tokenizer
