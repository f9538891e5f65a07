"""How every text input is read: one set of rules for ``evaluate``, the Python API, the dataloaders and ``compare``
(docs/inputs.md).

Files:

* UTF-8, decoded strictly (a bad byte: its line and column); a file in UTF-16 (its byte-order mark, or the NUL
  bytes of ASCII text in UTF-16) is refused with a sentence naming UTF-16;
* a byte-order mark (U+FEFF) at the very start of a file is dropped; anywhere else U+FEFF is text (ZWNBSP);
* lines end at ``\\n`` or ``\\r\\n``; a lone CR (U+000D) inside a line is text, but a file that ends its lines with
  CR only (classic Mac OS: CRs and no ``\\n`` at all) is refused with a sentence that says so;
* NUL (U+0000) is refused with its line and column (it is never text: binary data or a wrong encoding); the
  other control characters (tab, FF, VT, FS/GS/RS/US, ...) are text, tokenized as NLTK tokenizes them.

The Python API (:func:`cotk_repro.metrics.evaluate`, :func:`cotk_repro.metrics.score`) applies the same start rule
to the texts it is given: a U+FEFF at the start of the first hypothesis, and of the first reference, is the file's
byte-order mark that a plain ``open(...).read()`` kept, and is dropped; so ``evaluate`` on a file and the API on
the file's lines give the same values and hashes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

BOM = "\ufeff"
BOM_BYTES = b"\xef\xbb\xbf"


def encoding_problem(raw: bytes) -> str | None:
    """Why ``raw`` (a file's first bytes) is not UTF-8 text as read here, or None: UTF-16 is named."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return (
            "is UTF-16 text (it starts with a UTF-16 byte-order mark); convert it to UTF-8, e.g. iconv -f UTF-16 "
            "-t UTF-8"
        )
    if _looks_like_utf16(raw[:4096]):
        return (
            "looks like UTF-16 text (NUL bytes between the characters); convert it to UTF-8, e.g. iconv -f "
            "UTF-16 -t UTF-8"
        )
    return None


def _looks_like_utf16(sample: bytes) -> bool:
    """ASCII in UTF-16 without a byte-order mark: NUL in (nearly) every other byte, on one side only (odd bytes
    in little-endian, even ones in big-endian). A binary file with many NULs (an ELF executable, a database) has
    them on both sides and is not called UTF-16."""
    half = len(sample) // 2
    if half < 2:
        return False
    even, odd = sample[0 : 2 * half : 2].count(0), sample[1 : 2 * half : 2].count(0)
    return (odd >= 0.9 * half and even <= 0.1 * half) or (even >= 0.9 * half and odd <= 0.1 * half)


def nul_position(text: str, first_line: int = 1) -> tuple[int, int] | None:
    """``(line, column)`` (1-based) of the first NUL in ``text`` (lines from ``first_line``), None if none."""
    at = text.find("\x00")
    if at < 0:
        return None
    return first_line + text.count("\n", 0, at), at - (text.rfind("\n", 0, at) + 1) + 1


def nul_message(where: str, line: int, column: int) -> str:
    """The one sentence refusing a NUL at ``line``, ``column`` of ``where`` (a file's description)."""
    return (
        f"{where} line {line} holds a NUL character at column {column}; NUL is never text (binary data, or a "
        f"file in another encoding such as UTF-16): remove it or convert the file to UTF-8"
    )


def cr_only_message(where: str) -> str:
    """The one sentence refusing ``where`` (a file's description) for its CR-only line ends."""
    return (
        f"{where} ends its lines with a carriage return (CR) only, not \\n or \\r\\n: convert its line ends "
        f"(e.g. tr '\\r' '\\n') so that each line is one text"
    )


def is_cr_only(text: str) -> bool:
    """Whether ``text`` (a whole file) uses CR alone as its line end: CRs, no ``\\n`` at all."""
    return "\r" in text and "\n" not in text


def check_text(text: str, where: str) -> str | None:
    """The refusal for a whole decoded file's text (see the module's docstring), or None."""
    if is_cr_only(text):
        return cr_only_message(where)
    pos = nul_position(text)
    if pos is not None:
        return nul_message(where, *pos)
    return None


def drop_leading_bom(hypotheses: Sequence[Any], references: Sequence[Any] | None = None) -> tuple[list[Any], Any]:
    """The API's start rule: a U+FEFF at the start of the first hypothesis and of the first reference (of the first
    sample, or the first string of a flat list) dropped; everything else as given."""
    hyps = list(hypotheses)
    if hyps and isinstance(hyps[0], str) and hyps[0].startswith(BOM):
        hyps[0] = hyps[0][1:]
    if references is None or isinstance(references, str):
        return hyps, references
    refs = list(references)
    if refs and isinstance(refs[0], str):
        if refs[0].startswith(BOM):
            refs[0] = refs[0][1:]
    elif (
        refs
        and isinstance(refs[0], (list, tuple))
        and refs[0]
        and isinstance(refs[0][0], str)
        and refs[0][0].startswith(BOM)
    ):
        refs[0] = [refs[0][0][1:], *list(refs[0])[1:]]
    return hyps, refs
