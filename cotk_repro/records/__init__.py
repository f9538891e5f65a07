"""Run -> record -> diff: capture and run an entry (:mod:`.runner`), store its record (:mod:`.store`), read
result files and records back (:mod:`.locate`) and compare two of them (:mod:`.diffing`). The shape of a
record and of a reproduction verdict is :mod:`.model` (pydantic; imported lazily, only where one is read); readers
read a record through its typed view, :class:`.view.RecordView` (no pydantic).

The record store's API is importable from here (``from cotk_repro.records import RunStore``).
"""

from .store import (
    ID_PREFIX,
    RECORD_SCHEMA,
    RECORD_SCHEMA_VERSION,
    REPRODUCTION_SCHEMA,
    STATE_DIR,
    VERDICTS,
    RunStore,
    compute_id,
    finalize,
    short_id,
    validate_record,
    write_json_atomic,
)
from .view import RecordView

__all__ = [
    "ID_PREFIX",
    "RECORD_SCHEMA",
    "RECORD_SCHEMA_VERSION",
    "REPRODUCTION_SCHEMA",
    "STATE_DIR",
    "VERDICTS",
    "RecordView",
    "RunStore",
    "compute_id",
    "finalize",
    "short_id",
    "validate_record",
    "write_json_atomic",
]
