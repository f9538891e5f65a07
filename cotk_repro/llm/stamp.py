"""The protocol in a metric's result: every hash joins the protocol's hash, every signature names it.

Two results are comparable only when everything that changes the score is the same; for outputs of a
language model that includes how it was prompted. :func:`stamp_protocol` folds the protocol's
:attr:`~cotk_repro.llm.protocol.Protocol.sha256` into each ``KEY hashvalue`` of a flat result dict (as metrics
return it) and appends ``|protocol:<12 hex>`` to each ``KEY signature``.
"""

from __future__ import annotations

from typing import Any

from ..core.canonical import hash_object
from ..core.results import HASH_SUFFIX, SIGNATURE_SUFFIX
from .protocol import Protocol


def stamped_hash(metric_hash: str, protocol_sha256: str) -> str:
    """A metric's hash with the protocol's folded in."""
    return hash_object({"metric": metric_hash, "protocol": protocol_sha256})


def stamp_protocol(result: dict[str, Any], protocol: Protocol | str) -> dict[str, Any]:
    """A copy of ``result`` whose hashes and signatures carry ``protocol`` (a :class:`Protocol` or its sha256)."""
    sha = protocol if isinstance(protocol, str) else protocol.sha256
    out: dict[str, Any] = {}
    for key, value in result.items():
        if key.endswith(HASH_SUFFIX) and isinstance(value, str):
            value = stamped_hash(value, sha)
        elif key.endswith(SIGNATURE_SUFFIX) and isinstance(value, str):
            value = f"{value}|protocol:{sha[:12]}"
        out[key] = value
    return out
