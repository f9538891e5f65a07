"""Comparability groups and ranks of compare's cells: each column's cells grouped by metric hash, ranked within
their group (competition ranking, :func:`cotk_repro.core.ranking.rank`), cells outside the main group flagged.
A cell of an unpinned system (an endpoint's model, :mod:`cotk_repro.llm.system`) is tier 2: it ranks below every
pinned cell of its group, whatever its value, and is flagged ``unpinned``."""

from __future__ import annotations

from typing import cast

from ..core.ranking import rank, tier
from .engine import Cell, CompareResult


def analyze(result: CompareResult) -> None:
    """Assign each cell its comparability group, rank within the group and flag."""
    for column in result.all_columns():
        metric = result.metric_of_column(column)
        for dataset in result.datasets:
            cells = [c for c in (result.cell(s, dataset, column) for s in result.systems) if c is not None]
            analyze_column(cells, metric.higher_is_better)


#: the flag of a cell whose system is not pinned to its weights (it starts every such cell's flag)
UNPINNED_FLAG = (
    "unpinned: the system is not pinned to its weights (an endpoint's model id), so it ranks below every pinned one"
)


def analyze_column(cells: list[Cell], higher_is_better: bool) -> None:
    """Group a column's cells by metric hash and rank each group (pinned cells first, :func:`tier`), flagging
    cells outside the main group and cells of unpinned systems."""
    ok = [c for c in cells if c.error is None and c.value is not None]
    groups: dict[str, list[Cell]] = {}
    for c in ok:
        c.group = c.rank = c.flag = None
        if c.hash is None:
            c.flag = "unverifiable: the metric gave no hash, so this value is not ranked"
            continue
        groups.setdefault(c.hash, []).append(c)
    order = sorted(groups, key=lambda h: (-len(groups[h]), ok.index(groups[h][0])))
    main = order[0] if order else None
    for i, h in enumerate(order):
        letter = _letter(i)
        members = groups[h]
        for c in members:
            c.group = letter
            if h != main:
                c.flag = (
                    f"not comparable with group A: hash {h[:12]} differs from {order[0][:12]}; "
                    f"ranked only within group {letter}"
                )
        # members come from `ok`: every value is a float; a cell has no signature or work tree of its own, so
        # only its system's pinning sets its tier
        tiers = [tier(signed=True, dirty=False, pinned=c.pinned) for c in members]
        values = [cast(float, c.value) for c in members]
        for c, r in zip(members, rank(values, higher_is_better=higher_is_better, tiers=tiers)):
            c.rank = r
    for c in ok:
        if not c.pinned:
            c.flag = UNPINNED_FLAG + (f"; {c.flag}" if c.flag else "")


def _letter(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def column_has_conflict(result: CompareResult, column: str, dataset: str) -> bool:
    """Return whether the systems' cells of `column` on `dataset` fall into more than one hash group."""
    groups = {c.group for c in (result.cell(s, dataset, column) for s in result.systems) if c and c.group}
    return len(groups) > 1
