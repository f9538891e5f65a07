"""The one way JSON that somebody else wrote is parsed: bounded in bytes, depth and elements before it is parsed.

A byte cap does not bound what parsing costs: 60 MB of ``[{},{},...]`` is 20 million dicts (2 GB), and
200,000 nested brackets exhaust the interpreter's recursion. :func:`loads` first scans the bytes (:func:`scan`:
numpy over a MiB at a time, no Python loop per character), counting the values outside strings (every ``,``,
``[`` and ``{`` is at most one more) and the nesting depth. Only data within the :class:`Budget` reaches
``json.loads``. A refusal is one sentence (:class:`JSONBudgetError`, exit 2) naming what was read and the
bound it passed; an error message never quotes more than :data:`QUOTE` characters of a value (:func:`shown`).

Every stranger's JSON goes through here: a rerun's result file, the blobs of a records ref (where
:class:`Allowance` spends one budget across the ref, a blob counted once for each path that names it),
a dashboard's answers, and the payloads of the dashboard's fleet queue. docs/reproduce.md, "Budgets".
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from ..errors import CotkError

#: the most characters of somebody else's value an error message quotes
QUOTE = 200
#: a text this short with few brackets needs no scan (its values are fewer than its bytes, its depth than them)
_SMALL = 4096
#: how much of a document the scan looks at at once (its working memory is a few times this)
_CHUNK = 1024 * 1024
_QUOTE = ord('"')


@functools.cache
def _steps() -> Any:
    """Per byte: +1 an opener, -1 a closer, 2 a comma, 0 anything else (built on the scan's first use)."""
    import numpy as np

    table = np.zeros(256, dtype=np.int8)
    table[list(b"[{")], table[list(b"]}")], table[ord(",")] = 1, -1, 2
    return table


@dataclass(frozen=True)
class Budget:
    """How much of somebody else's JSON is parsed: bytes, nesting depth, values (a value per ``,``/``[``/``{``)."""

    bytes: int = 64 * 1024 * 1024
    depth: int = 64
    elements: int = 1_000_000


#: a rerun's result file, a dashboard's answer, a fleet payload
DEFAULT = Budget()
#: one record.json (or publication.json) on a records ref
RECORD = Budget(bytes=16 * 1024 * 1024, depth=64, elements=250_000)
#: all the records of one records ref together (each path counted, also when paths share a blob)
REF_TOTAL = Budget(bytes=128 * 1024 * 1024, depth=64, elements=2_000_000)


class JSONBudgetError(CotkError, ValueError):
    """Somebody else's JSON is over a budget, or not JSON: one sentence naming what it is."""


def shown(value: Any, limit: int = QUOTE) -> str:
    """``repr(value)`` cut to ``limit`` characters (with how much was left out): what an error may quote."""
    if isinstance(value, (bytes, str)) and len(value) > limit * 4:
        value = value[: limit * 4]
        text = repr(value)
    elif isinstance(value, (list, dict, tuple)) and len(value) > limit:
        text = f"<a {type(value).__name__} of {len(value):,} items>"
    else:
        try:
            text = repr(value)
        except (RecursionError, ValueError):
            text = f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Shape:
    """What the scan found: an upper bound of the values and the nesting depth (None: brackets do not pair)."""

    elements: int
    depth: int | None


def scan(data: bytes, budget: Budget = DEFAULT, *, what: str = "the JSON") -> Shape:
    """Measure ``data`` without parsing it; raise :class:`JSONBudgetError` past ``budget``'s bytes, values or depth.

    Escapes are dropped first (``\\\\`` then ``\\"``: what is left of a quote then delimits a string); then, a MiB at
    a time with numpy, a byte is inside a string when an odd number of quotes precede it, and the values
    (``,`` ``[`` ``{`` outside strings) and the depth (the running sum of openers less closers) are counted.
    Bytes that are not JSON may be counted differently from how a parser reads them, but only past the first
    place where they stop being JSON, which is where ``json.loads`` stops too."""
    import numpy as np

    table = _steps()
    if len(data) > budget.bytes:
        raise JSONBudgetError(f"{what} is {len(data):,} bytes, over the {budget.bytes:,}-byte limit")
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    view = np.frombuffer(data, dtype=np.uint8)
    elements, depth, deepest, quoted, paired = 1, 0, 0, 0, True
    for start in range(0, len(view), _CHUNK):
        if quoted and data.find(b'"', start, start + _CHUNK) < 0:
            continue  # a MiB inside one string: nothing in it counts
        chunk = view[start : start + _CHUNK]
        quotes = chunk == _QUOTE
        outside = (np.cumsum(quotes, dtype=np.uint8) & 1) == quoted
        step = np.where(outside, table[chunk], 0)  # +1 an opener, -1 a closer, 2 a comma; outside strings only
        elements += int(np.count_nonzero(step > 0))
        if elements > budget.elements:
            raise JSONBudgetError(
                f"{what} holds about {elements:,} values, over the limit of {budget.elements:,} values"
            )
        step[step == 2] = 0
        running = np.cumsum(step, dtype=np.int32)
        if len(running):
            running += depth
            deepest = max(deepest, int(running.max()))
            paired = paired and int(running.min()) >= 0
            depth = int(running[-1])
        if deepest > budget.depth:
            raise JSONBudgetError(f"{what} nests deeper than {budget.depth} levels")
        quoted = (quoted + int(np.count_nonzero(quotes))) & 1
    return Shape(elements, deepest if paired and depth == 0 else None)


def _plainly_within(data: bytes | str, budget: Budget) -> bool:
    """A short text with fewer brackets than the depth cannot pass it, nor hold more values than it has bytes:
    it needs no scan (what a line of a JSONL file usually is)."""
    if len(data) > min(_SMALL, budget.bytes) or budget.elements < _SMALL:
        return False
    if isinstance(data, str):
        return data.count("[") + data.count("{") <= budget.depth
    return data.count(b"[") + data.count(b"{") <= budget.depth


def loads(data: bytes | str, *, what: str, budget: Budget = DEFAULT) -> Any:
    """``json.loads(data)`` once ``data`` is within ``budget``; a :class:`JSONBudgetError` sentence otherwise
    (also for bytes that are not UTF-8 JSON)."""
    return measured(data, what=what, budget=budget)[1]


def measured(data: bytes | str, *, what: str, budget: Budget = DEFAULT) -> tuple[int, Any]:
    """``(values, parsed)``: :func:`loads` with the scan's count of values (an upper bound), for budgets that
    span many documents (:class:`Allowance`)."""
    if _plainly_within(data, budget):
        elements = len(data) // 2 + 1
    else:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
        elements = scan(raw, budget, what=what).elements
        del raw
    if isinstance(data, (bytes, bytearray)):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise JSONBudgetError(f"{what} is not UTF-8 text") from None
    try:
        return elements, json.loads(data)
    except json.JSONDecodeError as exc:
        raise JSONBudgetError(
            f"{what} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:  # unpaired brackets nested past the interpreter's limit
        raise JSONBudgetError(f"{what} nests deeper than {budget.depth} levels") from None


class Allowance:
    """One budget spent across many documents (a records ref's entries): each :meth:`spend` counts a document's
    bytes and values again, also when it is the same blob under another path."""

    def __init__(self, total: Budget = REF_TOTAL):
        self.total = total
        self.bytes = 0
        self.elements = 0

    def spend(self, size: int, elements: int = 0) -> bool:
        """Count one more document of ``size`` bytes and ``elements`` values; False (nothing counted) when it
        would pass the total."""
        if self.bytes + size > self.total.bytes or self.elements + elements > self.total.elements:
            return False
        self.bytes += size
        self.elements += elements
        return True
