"""NLTK's WordPunct tokenization (``\\w+|[^\\w\\s]+``) of many texts at once: the one bulk implementation, used by
the ``nltk`` tokenizer of the dataloaders and by BLEU's fixed tokenizer.

A token is a maximal run of word characters or of characters that are neither word nor space. Splitting the
punctuation runs off and then splitting on whitespace gives the regex's tokens (``str.split`` and ``re``'s ``\\s``
agree on what is whitespace). Three paths, every one equal to the regex text by text (tested):

* :func:`spaced_ascii`, ASCII without control characters other than ``"\\n"``: a space is inserted wherever a
  word byte touches a punctuation byte, found with numpy over the byte classes (several times faster than a
  regular expression, which stops at each of the block's bytes); the result, the *spaced form*, also gives the
  canonical JSON of the token lists in bulk (:func:`cotk_repro.core.canonical.spaced_token_list_items`);
* other ASCII: the punctuation runs are split off by a bytes regex (``\\w`` is ``[A-Za-z0-9_]``, whitespace is
  ``\\t\\n\\v\\f\\r``, ``\\x1c``-``\\x1f`` and space);
* anything else: the same with a str regex.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

PATTERN = r"\w+|[^\w\s]+"
findall = re.compile(PATTERN).findall

_PUNCT_RUNS = re.compile(r"([^\w\s]+)")
_PUNCT_RUNS_ASCII = re.compile(rb"([^A-Za-z0-9_\t\n\x0b\x0c\r\x1c-\x1f ]+)")
_CONTROL_BUT_NL = bytes(range(32)).replace(b"\n", b"")
_SPACE, _LINE_END, _WORD, _PUNCT, _CONTROL = range(5)


def _byte_class(byte: int) -> int:
    ch = chr(byte)
    if ch in " \n":
        return _SPACE if ch == " " else _LINE_END
    if byte < 32 or byte > 127:  # control characters (tabs included); no byte > 127 in ASCII text
        return _CONTROL
    return _WORD if ch.isalnum() or ch == "_" else _PUNCT


#: each byte's class for :func:`spaced_ascii`: only a word byte beside a punctuation byte sums to 5
_CLASSES = bytes(map(_byte_class, range(256)))
#: below this many bytes the regular expression is quicker than numpy's fixed costs
_NUMPY_FROM = 4096


def spaced_ascii(block: bytes) -> bytes | None:
    """The WordPunct tokens of ``block`` (ASCII text; ``"\\n"`` ends a text) in *spaced form*: the same lines, each
    token separated from the next by exactly one space, no space at a line's start or end. ``None`` where the block
    holds a control character other than ``"\\n"`` (tabs included): the other paths handle those.

    A space goes between every word byte and punctuation byte that touch (a token ends exactly there), found with
    numpy over the byte classes; then the spaces that the text had are made single. Several times quicker than the
    regular expression, which stops at each of the block's bytes."""
    if len(block) < _NUMPY_FROM:
        if len(block.translate(None, _CONTROL_BUT_NL)) != len(block):
            return None
        return b"\n".join([b" ".join(b" ".join(_PUNCT_RUNS_ASCII.split(line)).split())
                           for line in block.split(b"\n")])
    import numpy as np

    raw = np.frombuffer(block, np.uint8)
    classes = np.frombuffer(_CLASSES, np.uint8)[raw]
    if classes.max() == _CONTROL:
        return None
    cuts = np.flatnonzero(classes[1:] + classes[:-1] == _WORD + _PUNCT)
    return _single_spaces(block, np.insert(raw, cuts + 1, ord(" ")) if len(cuts) else raw)


def _single_spaces(block: bytes, out: Any) -> bytes:
    """``out`` (``block`` with spaces inserted between tokens, as a numpy byte array) with every run of spaces made
    one space and the spaces at a line's start or end removed. The inserted spaces never touch another space, so
    only a block whose own spaces are not single needs the work."""
    if b"  " in block or b" \n" in block or b"\n " in block or block[:1] == b" " or block[-1:] == b" ":
        space = out == ord(" ")
        drop = space.copy()
        drop[1:] &= space[:-1] | (out[:-1] == ord("\n"))  # a space after a space or a line end, or first
        out = out[~drop]
        drop = out == ord(" ")
        drop[:-1] &= out[1:] == ord("\n")  # a space before a line end, or last
        out = out[~drop]
    return out.tobytes()


def normalize_spaces(block: bytes) -> bytes | None:
    """The whitespace tokens (``str.split``) of ``block`` (ASCII; ``"\\n"`` ends a text) in spaced form, ``None``
    where it holds a control character other than ``"\\n"``."""
    if len(block.translate(None, _CONTROL_BUT_NL)) != len(block):
        return None
    if len(block) < _NUMPY_FROM:
        return b"\n".join([b" ".join(line.split()) for line in block.split(b"\n")])
    import numpy as np

    return _single_spaces(block, np.frombuffer(block, np.uint8))


def ascii_block(texts: Sequence[str]) -> bytes | None:
    """``texts`` joined by ``"\\n"`` as ASCII bytes, ``None`` where a text is not ASCII or holds a line break."""
    block = "\n".join(texts)
    if not block.isascii() or block.count("\n") != len(texts) - 1:
        return None
    return block.encode("ascii")


def tokenize_spaced(texts: Sequence[str]) -> bytes | None:
    """The tokens of ``texts`` as one block in :func:`spaced_ascii`'s form (line ``i``: text ``i``'s tokens), or
    ``None`` where a text is not ASCII, holds a line break or another control character."""
    block = ascii_block(texts)
    return None if block is None else spaced_ascii(block)


def split_spaced(spaced: bytes) -> list[list[str]]:
    """The token lists of a block in spaced form."""
    return list(map(str.split, spaced.decode("ascii").split("\n")))


def tokenize_many(texts: Sequence[str]) -> list[list[str]]:
    """``[re.findall(PATTERN, t) for t in texts]``, in bulk."""
    if not texts:
        return []
    block = "\n".join(texts)
    if block.count("\n") != len(texts) - 1:  # a text holds a line break: one at a time
        return list(map(findall, texts))
    if block.isascii():
        raw = block.encode("ascii")
        spaced = spaced_ascii(raw)
        if spaced is not None:
            return split_spaced(spaced)
        block = b" ".join(_PUNCT_RUNS_ASCII.split(raw)).decode("ascii")
    else:
        block = " ".join(_PUNCT_RUNS.split(block))
    return list(map(str.split, block.split("\n")))
