"""What names a record: its schema strings, its verdicts and its content id (docs/spec.md section 4).

Below both :mod:`.store` (which writes and reads records) and :mod:`.model` (which checks their shape), so
that neither imports the other at import time. ``compute_id`` stays importable from :mod:`.store` too.
"""

from __future__ import annotations

from typing import Any

from ..core.canonical import record_content, sha256_hex

RECORD_SCHEMA = "cotk-repro/record"
RECORD_SCHEMA_VERSION = 1
ID_PREFIX = "sha256:"
REPRODUCTION_SCHEMA = "cotk-repro/reproduction"
#: a reproduction's verdict, as ``reproduce --json`` writes it and the dashboard recomputes it
VERDICTS = ("reproduced", "not reproduced", "could not run")


def compute_id(record: dict[str, Any]) -> str:
    """``sha256:`` + the hex SHA-256 of :func:`~cotk_repro.core.canonical.record_content` (the record without
    its ``id``: exactly the bytes its signature signs)."""
    return ID_PREFIX + sha256_hex(record_content(record))
