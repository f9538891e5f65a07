"""Canonical JSON and SHA-256: the one place hashes are computed.

Records, dataloader hash codes and metric hashes all go through here, so that the
same inputs give the same hex digest on any machine, OS and Python version:

* UTF-8, keys sorted, no insignificant whitespace (``","`` and ``":"``);
* floats in shortest round-trip form (Python's ``repr``), NaN and infinities refused;
* tuples serialize as lists; only str keys are allowed.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from json.encoder import encode_basestring  # C-accelerated; the string part of canonical JSON
from typing import Any

_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


_STR_ONLY = {str}


def _check(obj: Any, path: str = "$") -> None:
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"{path}: {obj!r} has no canonical JSON form")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(f"{path}: key {key!r} is not a string")
            _check(value, f"{path}.{key}")
    elif isinstance(obj, (list, tuple)):
        if set(map(type, obj)) <= _STR_ONLY:  # fast path (token lists, vocabularies); same result
            return
        for i, value in enumerate(obj):
            _check(value, f"{path}[{i}]")
    elif obj is not None and not isinstance(obj, (str, int, bool)):
        raise TypeError(f"{path}: {type(obj).__name__} is not JSON-serializable")


def canonical_json(obj: Any) -> bytes:
    """Serialize ``obj`` canonically (see module docstring) as UTF-8 bytes."""
    _check(obj)
    return _ENCODER.encode(obj).encode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    """Hex SHA-256 of bytes, or of text as UTF-8."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def hash_object(obj: Any) -> str:
    """Hex SHA-256 of the canonical JSON of ``obj``."""
    return sha256_hex(canonical_json(obj))


def record_content(record: dict[str, Any]) -> bytes:
    """The bytes a record's id is the SHA-256 of *and* its signature signs: the canonical JSON of every
    key of the record but ``id``. The one definition of both scopes (``compute_id``, ``record_bytes``):
    no key of a stored record is outside what its signature covers."""
    return canonical_json({k: v for k, v in record.items() if k != "id"})


class StreamHasher:
    """Hash a sequence of canonical JSON items without holding them all in memory.

    Items are framed by their byte length so that no two different sequences
    serialize to the same byte stream.
    """

    def __init__(self, label: str):
        self._h = hashlib.sha256()
        self.update(label)

    def update(self, item: Any) -> None:
        data = canonical_json(item)
        self._h.update(len(data).to_bytes(8, "big"))
        self._h.update(data)

    def update_bytes(self, data: bytes | memoryview) -> None:
        self._h.update(len(data).to_bytes(8, "big"))
        self._h.update(data)

    def update_framed(self, blob: bytes) -> None:
        """Feed ``frame_bytes(items)``: the same stream as ``update_bytes`` of each item, in one call."""
        self._h.update(blob)

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def frame_bytes(items: list[bytes]) -> bytes:
    """Items framed as :meth:`StreamHasher.update_bytes` frames them, concatenated (for ``update_framed``)."""
    return b"".join([len(x).to_bytes(8, "big") + x for x in items])


# Bulk canonical JSON of many small items, on UTF-8 bytes (a multi-byte character never holds an ASCII byte). The
# JSON string encoder (ensure_ascii=False) escapes only the quote, the backslash and the control characters; text
# without control characters is escaped for all its strings at once with two replaces. Separators: "\n" between
# items, "\x1f" between the tokens of a list; a part holding them inside a string, or another control character,
# goes through the string encoder item by item.
_CONTROL_BUT_NL = bytes(range(32)).replace(b"\n", b"")
_CONTROL_BUT_NL_US = _CONTROL_BUT_NL.replace(b"\x1f", b"")
#: items per bulk part
TOKEN_PART = 1024


def _escaped(block: bytes) -> bytes:
    """What the JSON string encoder does to text without control characters."""
    if b"\\" in block:
        block = block.replace(b"\\", b"\\\\")
    return block.replace(b'"', b'\\"') if b'"' in block else block


def _no_bytes(block: bytes, forbidden: bytes) -> bool:
    return len(block.translate(None, forbidden)) == len(block)


def string_items(texts: Sequence[str]) -> list[bytes]:
    """``canonical_json([text])`` of each text (``["a b"]``), in bulk."""
    out: list[bytes] = []
    for i in range(0, len(texts), TOKEN_PART):
        part = texts[i : i + TOKEN_PART]
        block = "\n".join(part).encode("utf-8")
        if block.count(b"\n") == len(part) - 1 and _no_bytes(block, _CONTROL_BUT_NL):
            out.extend((b'["' + _escaped(block).replace(b"\n", b'"]\n["') + b'"]').split(b"\n"))
        else:
            out.extend([("[" + encode_basestring(t) + "]").encode("utf-8") for t in part])
    return out


def token_list_items(token_lists: Sequence[Sequence[str]]) -> list[bytes]:
    """``canonical_json([list(tokens)])`` of each token list (``[["a","b"]]``), in bulk."""
    out: list[bytes] = []
    for i in range(0, len(token_lists), TOKEN_PART):
        part = token_lists[i : i + TOKEN_PART]
        block = "\n".join(["\x1f".join(t) for t in part]).encode("utf-8")
        lens = list(map(len, part))
        # no empty list, so exactly one "\x1f" between two tokens: a separator inside a token breaks the counts
        if (
            0 not in lens
            and block.count(b"\x1f") == sum(lens) - len(part)
            and block.count(b"\n") == len(part) - 1
            and _no_bytes(block, _CONTROL_BUT_NL_US)
        ):
            body = _escaped(block).replace(b"\x1f", b'","').replace(b"\n", b'"]]\n[["')
            out.extend((b'[["' + body + b'"]]').split(b"\n"))
        else:
            eb = encode_basestring
            out.extend([("[[" + ",".join(map(eb, t)) + "]]").encode("utf-8") for t in part])
    return out


def spaced_token_list_items(spaced: bytes) -> list[bytes]:
    """``canonical_json([tokens])`` of each line of a block in spaced form (ASCII without control characters but
    ``"\\n"`` between lines, one space between two tokens, none at a line's start or end:
    :func:`cotk_repro.core.wordpunct.spaced_ascii`), without building the token lists. The caller vouches for the
    form (a built-in tokenizer's ``tokenize_spaced``); checking it would cost as much as the work."""
    items = (b'[["' + _escaped(spaced).replace(b" ", b'","').replace(b"\n", b'"]]\n[["') + b'"]]').split(b"\n")
    if b'[[""]]' in items:  # an empty line: a text without tokens
        items = [b"[[]]" if item == b'[[""]]' else item for item in items]
    return items


def is_sha256_hex(value: Any) -> bool:
    """Whether ``value`` is 64 lower-case hex digits."""
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
