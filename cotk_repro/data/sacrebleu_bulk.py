"""sacrebleu's ``intl`` and ``zh`` tokenizers over many lines at once, with sacrebleu's own code doing the
tokenizing: the same tokens as calling sacrebleu's tokenizer line by line (tested on corpora of every script and
random Unicode), in a fraction of the calls.

* ``intl`` is three ``regex`` substitutions whose every match is one character or two adjacent ones (a punctuation
  mark beside a non-digit, a symbol). The lines are joined with :data:`INTL_SEPARATOR` (``"0 <mark> 0"``): a digit
  next to a line's first or last character matches neither two-character rule (a digit is ``\\p{N}``, not
  ``\\p{P}``), just as the string's start and end do not, and no separator character starts, ends or is a match
  (none is punctuation or a symbol), so every substitution of the joined text is the substitutions of the lines
  with the separators between them. sacrebleu's function is called once on the joined text (past its line cache)
  and its output split on the separator, which its final whitespace normalisation leaves as it is.
* ``zh`` puts a space on either side of each Chinese character (sacrebleu's ``_is_chinese_char``: its ranges) and
  runs the ``13a`` regular expressions over the result, whose every match is one or two adjacent ASCII characters:
  a Chinese character, with its spaces, never takes part in one. So the tokens of a line are its Chinese characters
  (but those that are whitespace, ``U+3000`` and others, which the final split drops) and, between them, sacrebleu's own post-tokenizer's tokens of each run of other characters with the spaces the
  line gives it (one before unless the run starts the line, one after unless it ends it). The post-tokenizer is
  sacrebleu's object, called (through its line cache) on the runs only: the runs repeat, and the per-character
  work on the Chinese characters, most of sacrebleu's time, is not repeated.

Each path is taken only where sacrebleu's tokenizer is the one described (its regular expressions and ranges are
checked on first use); anything else (another sacrebleu version's rules, a line holding a line break) goes through
sacrebleu line by line.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

#: between two lines for ``intl``: digits beside the lines (no rule matches a digit), a mark between them
INTL_MARKS = ("\ue000", "\ue001", "\ue002", "\uf8ff")  # private-use characters: not punctuation, symbol or digit
_INTL_RULES = ((r"(\P{N})(\p{P})", r"\1 \2 "), (r"(\p{P})(\P{N})", r" \1 \2"), (r"(\p{S})", r" \1 "))
_RE_RULES = (
    (r"([\{-\~\[-\` -\&\(-\+\:-\@\/])", r" \1 "),
    (r"([^0-9])([\.,])", r"\1 \2 "),
    (r"([\.,])([^0-9])", r" \1 \2"),
    (r"([0-9])(-)", r"\1 \2 "),
)


def _rules(tok: Any) -> tuple:
    return tuple((pattern.pattern, repl) for pattern, repl in getattr(tok, "_re", ()))


def intl_many(tok: Any) -> Callable[[Sequence[str]], list[list[str]]] | None:
    """A bulk ``intl`` for sacrebleu's tokenizer object ``tok``; None where its rules are not the known ones."""
    if type(tok).__name__ != "TokenizerV14International" or _rules(tok) != _INTL_RULES:
        return None
    call = getattr(type(tok).__call__, "__wrapped__", None)  # past the line cache: the joined text is not a line
    if call is None:
        return None

    def many(lines: Sequence[str]) -> list[list[str]]:
        lines = [line.rstrip() for line in lines]  # sacrebleu's BLEU tokenizes line.rstrip()
        block = "\n".join(lines)
        mark = next((m for m in INTL_MARKS if m not in block), None)
        if mark is None or block.count("\n") != len(lines) - 1:
            return [tok(line).split() for line in lines]
        separator = f"0 {mark} 0"
        out = call(tok, separator.join(lines)).split(separator)
        if len(out) != len(lines):  # cannot happen (the mark is in no line); sacrebleu line by line if it did
            return [tok(line).split() for line in lines]
        return [part.split() for part in out]

    return many


@functools.cache
def _chinese_class(ranges: tuple) -> Any:
    """A character class of the characters sacrebleu's ``_is_chinese_char`` accepts, from its own ranges: it compares
    a character with each range's ends as strings (``start <= char <= end``), and some ends are two characters long
    (``"\\u20000"`` is ``"\\u2000"`` then ``"0"``), so a character is in the range from the first character of
    ``start`` (after it, when ``start`` is longer) to the first character of ``end``."""
    parts = []
    for start, end in ranges:
        lo, hi = ord(start[0]) + (len(start) > 1), ord(end[0])
        if lo <= hi:
            parts.append(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}")
    return re.compile("([" + "".join(parts) + "])")


def zh_many(tok: Any) -> Callable[[Sequence[str]], list[list[str]]] | None:
    """A bulk ``zh`` for sacrebleu's tokenizer object ``tok``; None where it is not the one described."""
    try:
        from sacrebleu.tokenizers import tokenizer_zh
    except ImportError:  # pragma: no cover - sacrebleu moved it
        return None
    post = getattr(tok, "_post_tokenizer", None)
    ranges = getattr(tokenizer_zh, "_UCODE_RANGES", None)
    if type(tok).__name__ != "TokenizerZh" or post is None or _rules(post) != _RE_RULES or not ranges:
        return None
    split = _chinese_class(tuple(ranges)).split

    def tokens(line: str) -> list[str]:
        parts = split(line.strip())  # other characters, a Chinese one, other characters, ...
        out: list[str] = []
        last = len(parts) - 1
        for i in range(0, last + 1, 2):
            run = parts[i]
            if run:
                out.extend(post((" " if i else "") + run + (" " if i < last else "")).split())
            if i < last and not parts[i + 1].isspace():  # some of the ranges hold spaces (U+3000): split away
                out.append(parts[i + 1])
        return out

    def many(lines: Sequence[str]) -> list[list[str]]:
        return [tokens(line.rstrip()) for line in lines]

    return many


def bulk(tok: Any) -> Callable[[Sequence[str]], list[list[str]]] | None:
    """The bulk path for sacrebleu's tokenizer object ``tok``, None where it has none."""
    return intl_many(tok) or zh_many(tok)
