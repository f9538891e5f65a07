"""The one way JSON that somebody else wrote is parsed: bounded in bytes, depth and elements before it is parsed.

A byte cap does not bound what parsing costs: 60 MB of ``[{},{},...]`` is 20 million dicts (2 GB), and
200,000 nested brackets exhaust the interpreter's recursion. :func:`loads` first scans the bytes cheaply
(C-speed ``bytes`` operations, no Python loop per character): strings are blanked, the structural
characters counted (every ``,``, ``[`` and ``{`` is at most one more value), and the nesting depth found by
removing innermost ``[]``/``{}`` pairs once per level. Only data within the :class:`Budget` reaches
``json.loads``. A refusal is one sentence (:class:`JSONBudgetError`, exit 2) naming what was read and the
bound it passed; it never quotes more than :data:`QUOTE` characters of the data (:func:`shown`).

Every stranger's JSON goes through here: a rerun's result file, the blobs of a records ref (where
:class:`Allowance` spends one budget across the ref, a blob counted once for each path that names it),
a dashboard's answers, and the payloads of the dashboard's fleet queue. docs/reproduce.md, "Budgets".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import CotkError

#: the most characters of somebody else's value an error message quotes
QUOTE = 200
#: a text this short with few brackets needs no scan (its values are fewer than its bytes, its depth than them)
_SMALL = 4096
#: a JSON string (escapes included), for blanking: its brackets and commas are not structure
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
#: every byte but the structural ones, deleted by ``bytes.translate``
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b"[]{},")


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
    """Measure ``data`` without parsing it; raise :class:`JSONBudgetError` past ``budget``'s elements or depth."""
    if len(data) > budget.bytes:
        raise JSONBudgetError(f"{what} is {len(data):,} bytes, over the {budget.bytes:,}-byte limit")
    bare = _STRING.sub(b'""', data) if b'"' in data else data
    skeleton = bare.translate(None, _NOT_STRUCTURE)
    del bare
    elements = skeleton.count(b",") + skeleton.count(b"[") + skeleton.count(b"{") + 1
    if elements > budget.elements:
        raise JSONBudgetError(f"{what} holds about {elements:,} values, over the limit of {budget.elements:,} values")
    brackets = skeleton.translate(None, b",")
    del skeleton
    for level in range(budget.depth + 1):
        if not brackets:
            return Shape(elements, level)
        inner = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(inner) == len(brackets):  # brackets that do not pair: json.loads says where
            return Shape(elements, None)
        brackets = inner
    if not brackets:
        return Shape(elements, budget.depth + 1)
    raise JSONBudgetError(f"{what} nests deeper than {budget.depth} levels")


def _plainly_within(data: bytes | str, budget: Budget) -> bool:
    """A short text with fewer brackets than the depth cannot pass it, nor hold more values than it has bytes:
    it needs no scan (what a line of a JSONL file usually is)."""
    if len(data) > _SMALL or budget.elements < _SMALL:
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
