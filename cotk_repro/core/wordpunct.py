"""NLTK's WordPunct tokenization (``\\w+|[^\\w\\s]+``) of many texts at once: the one bulk implementation, used by
the ``nltk`` tokenizer of the dataloaders and by BLEU's fixed tokenizer.

Equal to NLTK's ``WordPunctTokenizer`` on every code point (tested over all of them): NLTK (3.10.3 and later)
compiles the pattern with the third-party ``regex`` module, whose ``\\w`` includes combining marks (Mn/Mc/Me), join
controls and Other_Alphabetic symbols and excludes No (superscripts, fractions), whose ``\\s`` excludes
``\\x1c``-``\\x1f``, and which carries its own Unicode data. So does this module: non-ASCII text goes through
``regex`` with NLTK's pattern and flags, and the tokens do not depend on the Python version (``re`` would use the
interpreter's Unicode data). :data:`ENGINE` and :func:`unicode_version` name what the tokens depend on; they go
into the signatures and hashes (:func:`tokenizer_id`).

A token is a maximal run of word characters or of characters that are neither word nor space. Splitting the
punctuation runs off and then splitting on whitespace gives the regex's tokens (``str.split`` and ``regex``'s
``\\s`` agree on every code point but ``\\x1c``-``\\x1f``, which ``str.split`` splits on and NLTK keeps as
punctuation: text holding them takes the per-text path). Three paths, every one equal to NLTK text by text:

* :func:`spaced_ascii`, ASCII without control characters other than ``"\\n"``: a space is inserted wherever a
  word byte touches a punctuation byte, found with numpy over the byte classes (several times faster than a
  regular expression, which stops at each of the block's bytes); the result, the *spaced form*, also gives the
  canonical JSON of the token lists in bulk (:func:`cotk_repro.core.canonical.spaced_token_list_items`);
* other ASCII: the punctuation runs are split off by a bytes regex (``\\w`` is ``[A-Za-z0-9_]``, whitespace is
  ``\\t\\n\\v\\f\\r`` and space; ``\\x1c``-``\\x1f`` are punctuation, as in NLTK) and the bytes split on
  whitespace (``bytes.split`` does not split on ``\\x1c``-``\\x1f``);
* anything else: many texts (4,096 characters and more) through a table of each code point's class (word, space,
  punctuation) that ``regex`` itself fills, a space inserted with numpy wherever a word character touches a
  punctuation character, one split of the whole block and the tokens dealt out to the texts by the line each starts
  on (:func:`_tokenize_block`, tested on every code point); fewer, the same with a ``regex`` str pattern.

The bulk function runs with the cyclic garbage collector paused (the token lists form no cycles).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from .gcpause import without_gc

PATTERN = r"\w+|[^\w\s]+"
#: NLTK's flags (``RegexpTokenizer``'s default, given to ``regex``); they do not change this pattern's matches
FLAGS = re.UNICODE | re.MULTILINE | re.DOTALL
#: the engine NLTK's tokens depend on, named in signatures and hashes
ENGINE = "regex"
_ascii_findall = re.compile(PATTERN).findall  # equal to NLTK on ASCII without \x1c-\x1f (re calls them spaces)
_SEPARATORS = "\x1c\x1d\x1e\x1f"  # whitespace for re and str.split, punctuation for regex (and NLTK)


def _has_separator(text: str) -> bool:
    return "\x1c" in text or "\x1d" in text or "\x1e" in text or "\x1f" in text


_PUNCT_RUNS_ASCII = re.compile(rb"([^A-Za-z0-9_\t\n\x0b\x0c\r ]+)")


@functools.cache
def compiled(pattern: str) -> Any:
    """``pattern`` compiled with ``regex`` and NLTK's flags, imported on first use (ASCII text never needs it)."""
    import regex

    return regex.compile(pattern, FLAGS)


def _regex_findall(text: str) -> list[str]:
    found: list[str] = compiled(PATTERN).findall(text)
    return found


def findall(text: str) -> list[str]:
    """Exactly ``nltk.tokenize.WordPunctTokenizer().tokenize(text)``: ``re`` on ASCII text without
    ``\\x1c``-``\\x1f`` (the same matches there, quicker), ``regex`` with NLTK's pattern and flags otherwise."""
    if text.isascii() and not _has_separator(text):
        return _ascii_findall(text)
    return _regex_findall(text)


@functools.cache
def unicode_version() -> str:
    """The Unicode version of the installed ``regex`` module's character data (``"18.0.0"``), from its own
    description ("This module supports Unicode 18.0.0"); ``"regex-<version>"`` where the description does not say
    (the module's version then names the data)."""
    import glob
    import importlib.util
    import os

    text, version = "", "unknown"
    spec = importlib.util.find_spec("regex")  # located, not imported: ASCII data loading never imports it
    folder = os.path.dirname(os.path.dirname(spec.origin)) if spec and spec.origin else ""
    for meta in sorted(glob.glob(os.path.join(glob.escape(folder), "regex-*.dist-info", "METADATA")))[-1:]:
        version = os.path.basename(os.path.dirname(meta))[len("regex-") : -len(".dist-info")]
        try:  # the file beside the module: a fraction of importlib.metadata's search of the path
            with open(meta, encoding="utf-8") as f:
                text = f.read(65536)
        except OSError:
            pass
    found = re.search(r"supports Unicode (\d+(?:\.\d+)*)", text)
    if found:
        return found.group(1)
    if version == "unknown":  # no metadata beside it (a vendored copy): the module's own version names the data
        import regex

        version = regex.__version__
    return f"regex-{version}"


def tokenizer_id() -> str:
    """The name of these tokens in signatures and hashes: ``wordpunct-u18`` (engine ``regex``, Unicode 18.0), the
    Unicode version shortened by its trailing ``.0`` parts."""
    version = unicode_version()
    if version.startswith("regex-"):
        return f"wordpunct-{version}"
    parts = version.split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return "wordpunct-u" + ".".join(parts)


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
        return b"\n".join([b" ".join(b" ".join(_PUNCT_RUNS_ASCII.split(line)).split()) for line in block.split(b"\n")])
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
    return bytes(out.tobytes())


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


@without_gc
def tokenize_many(texts: Sequence[str]) -> list[list[str]]:
    """``[findall(t) for t in texts]`` (NLTK's WordPunct tokens), in bulk (the cyclic garbage collector paused: the
    token lists form no cycles)."""
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
        # bytes.split splits on \t\n\v\f\r and space only: \x1c-\x1f stay inside the punctuation runs
        return [
            [t.decode("ascii") for t in line.split()] for line in b" ".join(_PUNCT_RUNS_ASCII.split(raw)).split(b"\n")
        ]
    if _has_separator(block):  # str.split would split on \x1c-\x1f
        return list(map(compiled(PATTERN).findall, texts))
    if len(block) >= _NUMPY_FROM:
        return _tokenize_block(block)
    spaced = compiled(r"[^\w\s]+").sub(r" \g<0> ", block)  # quicker than split + join in the regex module
    return list(map(str.split, spaced.split("\n")))


# Non-ASCII text in bulk: each code point's class (space, word, punctuation) looked up in a table that ``regex``
# itself fills (a token is a maximal run of one class, so the classes decide the tokens), a space inserted where a
# word character touches a punctuation character, the whole block split once and the tokens dealt out to the texts
# by the line each token starts on. About twice as quick as the regular expression on the block.
_CLASS_SPACE, _CLASS_WORD, _CLASS_PUNCT = 0, 1, 2
_TABLE_STEP = 0x10000  # the table grows by whole planes, up to the highest code point seen
_class_table: Any = None


def _classes_upto(top: int) -> Any:
    """The class of every code point below ``top`` (at least), as a numpy array indexed by code point: what
    ``regex`` with NLTK's flags says of ``\\w`` and ``\\s`` for each, filled a plane at a time on first use."""
    global _class_table
    import numpy as np

    table = _class_table if _class_table is not None else np.zeros(0, np.uint8)
    if top <= len(table):
        return table
    lo, hi = len(table), min(0x110000, -(-top // _TABLE_STEP) * _TABLE_STEP)
    chars = np.arange(lo, hi, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    marked = compiled(r"\s").sub("\x02", compiled(r"\w").sub("\x01", chars))  # one code point for one
    codes = np.frombuffer(marked.encode("utf-32-le", "surrogatepass"), np.uint32)
    part = np.full(hi - lo, _CLASS_PUNCT, np.uint8)
    part[codes == 1] = _CLASS_WORD
    part[codes == 2] = _CLASS_SPACE
    if lo == 0:  # \x01 and \x02 themselves, read back as the marks: asked one by one
        for cp in (1, 2):
            char = chr(cp)
            part[cp] = (
                _CLASS_WORD
                if compiled(r"\w").match(char)
                else _CLASS_SPACE
                if compiled(r"\s").match(char)
                else _CLASS_PUNCT
            )
    _class_table = np.concatenate([table, part])
    return _class_table


def _tokenize_block(block: str) -> list[list[str]]:
    """The tokens of each line of ``block`` (texts joined by ``"\\n"``; none holds ``\\x1c``-``\\x1f``, which
    ``str.split`` would split on)."""
    import numpy as np

    codes = np.frombuffer(block.encode("utf-32-le", "surrogatepass"), np.uint32)
    classes = _classes_upto(int(codes.max()) + 1)[codes]
    cuts = np.flatnonzero(classes[1:] + classes[:-1] == _CLASS_WORD + _CLASS_PUNCT)  # a word/punctuation edge
    spaced = np.insert(codes, cuts + 1, ord(" ")) if len(cuts) else codes
    flat = spaced.tobytes().decode("utf-32-le", "surrogatepass").split()  # whitespace: regex's but \x1c-\x1f
    starts = classes != _CLASS_SPACE  # a token starts where a non-space follows another class
    starts[1:] &= classes[1:] != classes[:-1]
    before = np.cumsum(starts, dtype=np.int64)  # tokens started up to each position; a line break starts none
    ends = before[codes == ord("\n")].tolist() + [len(flat)]
    return [flat[a:b] for a, b in zip([0] + ends, ends)]
