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
from typing import Any

_ENCODER = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
)


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
        if all(type(value) is str for value in obj):  # fast path (token lists in reference hashes); same result
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

    def update_bytes(self, data: bytes) -> None:
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


def is_sha256_hex(value: Any) -> bool:
    """Whether ``value`` is 64 lower-case hex digits."""
    return (
        isinstance(value, str)
        and len(value) == 64
        and all(c in "0123456789abcdef" for c in value)
    )
