"""What a paper prints from a compare result: the display rounding, metric families, and best cells.

One place decides how a number is printed in a paper's table and on its figures (four decimals, or
fewer significant digits for large values), which report columns form a *family* drawn in one figure
(``fw-bleu-2`` … ``fw-bleu-5`` are ``fw-bleu`` at orders 2–5), and which cell of a column is the best:
only cells of the column's main comparability group (``A``) compete, and unpinned cells only when no pinned one
does, the same rule as the ranks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .engine import Cell, CompareResult

_ORDER = re.compile(r"^(?P<base>.+?)[-_:](?P<order>\d+)$")


def display(value: float | None) -> str:
    """A value as tables and figure labels print it: 4 decimals below 1,000, else 4 significant digits."""
    if value is None:
        return "--"
    v = float(value)
    if v != v:
        return "nan"
    if abs(v) >= 1000:
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:.3e}"
    return f"{v:.4f}"


@dataclass
class Family:
    """Report columns drawn in one figure: one base name at several orders (or a single column)."""

    name: str
    columns: list[str]
    orders: list[str]  # the x-axis labels ("2", "3", ...) or the column names for a single-column family


def families(result: CompareResult) -> list[Family]:
    """The result's columns grouped by base name (``distinct-1``/``distinct-2`` -> ``distinct``), in report order."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for column in result.all_columns():
        m = _ORDER.match(column)
        base, order = (m.group("base"), m.group("order")) if m else (column, column)
        groups.setdefault(base, []).append((column, order))
    out = []
    for base, members in groups.items():
        if len(members) == 1 and members[0][1] != members[0][0]:
            # a lone ordered column is its own family under its full name
            out.append(Family(members[0][0], [members[0][0]], [members[0][0]]))
        else:
            out.append(Family(base, [c for c, _ in members], [o for _, o in members]))
    return out


def best_cells(result: CompareResult, dataset: str, column: str) -> set[str]:
    """Systems holding the best value of ``column`` on ``dataset`` within its main comparability group (among its
    pinned cells when it has any: an unpinned cell never ranks above a pinned one)."""
    metric = result.metric_of_column(column)
    cells: list[Cell] = [
        c
        for c in (result.cell(s, dataset, column) for s in result.systems)
        if c is not None and c.error is None and c.value is not None and c.group == "A"
    ]
    if any(c.pinned for c in cells):
        cells = [c for c in cells if c.pinned]
    if not cells:
        return set()
    key = max if metric.higher_is_better else min
    best = key(c.value for c in cells if c.value is not None)  # every one (the filter above)
    return {c.system for c in cells if c.value == best}
