"""Digests of tensors and settings: what the hashes of the oracle, the loader and the metrics are built from."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical(obj: Any) -> bytes:
    """Canonical JSON bytes (sorted keys, no spaces) of plain data."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def hash_settings(label: str, settings: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a label and a settings mapping."""
    return hashlib.sha256(canonical({"hash": label, "settings": dict(settings)})).hexdigest()


def state_digest(state: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a module's ``state_dict``: every tensor's name, dtype, shape and bytes, by name.

    Tensors are moved to the CPU as contiguous float bytes, so the same weights give the same digest on
    any machine (little-endian, as every platform torch supports).
    """
    h = hashlib.sha256(b"cotk-repro-texygen/state/1")
    for name in sorted(state):
        t = state[name].detach().to("cpu").contiguous()
        h.update(canonical([name, str(t.dtype), list(t.shape)]))
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def array_digest(array: Any) -> str:
    """SHA-256 (hex) of an integer array's dtype, shape and bytes (token ids of a split)."""
    import numpy as np

    a = np.ascontiguousarray(array, dtype=np.int64)
    h = hashlib.sha256(canonical(["int64", list(a.shape)]))
    h.update(a.astype("<i8").tobytes())
    return h.hexdigest()
