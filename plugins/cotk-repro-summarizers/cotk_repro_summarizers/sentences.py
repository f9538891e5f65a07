"""Sentence splitting and the tokenizer object sumy's documents are built with (no NLTK data downloads).

Three ways to split a document into sentences, picked by the ``sentence_splitter`` setting:

* a declared ``sentence_separator`` (e.g. ``"</s>"``): split on it and nothing else;
* ``punkt``: NLTK's pretrained Punkt model for the language, when its data is installed
  (``nltk.download("punkt_tab")``);
* ``rule``: a sentence ends after ``.``, ``!`` or ``?`` (and any closing quotes or brackets) followed by
  whitespace and then an uppercase letter, a digit or an opening quote or bracket, unless the word
  before the period is a single letter (an initial) or one of :data:`ABBREVIATIONS`.

``auto`` (the default) is ``punkt`` when its data is installed, else ``rule``; the resolved name goes into
the generator's settings, so outputs made with different splitters never share a cache entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: words after which a period does not end a sentence (the ``rule`` splitter), lowercase, without the period
ABBREVIATIONS = frozenset(
    """
mr mrs ms dr prof sr jr st mt ft no vs etc inc ltd co corp dept univ gen col lt sgt capt gov sen rep rev
jan feb mar apr jun jul aug sep sept oct nov dec e.g i.e al approx fig eq
""".split()
)

_BOUNDARY = re.compile(r"""([.!?]+["')\]\u201d\u2019]*)\s+(?=["'(\[\u201c\u2018]*[A-Z0-9\u00C0-\u024F])""")
_LAST_WORD = re.compile(r"(\S+)$")
_WORD = re.compile(r"[^\W\d_]", re.UNICODE)


def rule_split(text: str) -> list[str]:
    """Sentences of ``text`` by the documented ``rule`` (see the module docstring)."""
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        end = m.end(1)
        if m.group(1).startswith(".") and len(m.group(1).rstrip("\"')]\u201d\u2019")) == 1:
            word = _LAST_WORD.search(text, start, m.start(1))
            token = word.group(1).lstrip("\"'([\u201c\u2018").lower() if word else ""
            if (len(token) == 1 and token.isalpha()) or token in ABBREVIATIONS:
                continue
        sentence = text[start:end].strip()
        if sentence:
            out.append(sentence)
        start = m.end()
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


def punkt_available(language: str) -> bool:
    """True when NLTK's pretrained Punkt data for ``language`` is installed (nothing is downloaded)."""
    import nltk

    for resource in (f"tokenizers/punkt_tab/{language}/", f"tokenizers/punkt/{language}.pickle"):
        try:
            nltk.data.find(resource)
            return True
        except LookupError:
            continue
    return False


def make_splitter(splitter: str, separator: str | None, language: str) -> tuple[str, Callable[[str], list[str]]]:
    """(resolved name, split function) for the settings; the name is what the cache key records."""
    if separator:
        return "separator", lambda text: [s.strip() for s in text.split(separator) if s.strip()]
    if splitter == "auto":
        splitter = "punkt" if punkt_available(language) else "rule"
    if splitter == "rule":
        return "rule", rule_split
    if splitter == "punkt":
        if not punkt_available(language):
            raise ValueError(
                f"sentence_splitter 'punkt' needs NLTK's Punkt data for {language!r} "
                "(python -m nltk.downloader punkt_tab), or use 'rule'"
            )
        from nltk.tokenize import sent_tokenize

        return "punkt", lambda text: [s for s in sent_tokenize(text, language=language) if s.strip()]
    raise ValueError(f"sentence_splitter must be 'auto', 'punkt' or 'rule', not {splitter!r}")


class SumyTokenizer:
    """The tokenizer object sumy's sentences and documents use (``language``, ``to_sentences``,
    ``to_words``), built on a cotk-repro tokenizer instead of NLTK's downloaded data.

    Words are the tokens of the cotk-repro tokenizer (``nltk``: WordPunct, by default) that contain a
    letter, as sumy's own tokenizer keeps only words.
    """

    def __init__(self, language: str, split: Callable[[str], list[str]], word_tokenizer: Any):
        self.language = language
        self._split = split
        self._words = word_tokenizer.tokenize

    def to_sentences(self, paragraph: str) -> tuple[str, ...]:
        return tuple(self._split(paragraph))

    def to_words(self, sentence: str) -> tuple[str, ...]:
        return tuple(w for w in self._words(sentence) if _WORD.search(w))
