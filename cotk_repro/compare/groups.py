"""Comparability groups and ranks of compare's cells: each column's cells grouped by metric hash, ranked within
their group (competition ranking, :func:`cotk_repro.core.ranking.rank`), cells outside the main group flagged."""

from __future__ import annotations

from typing import cast

from ..core.ranking import rank
from .engine import Cell, CompareResult


def analyze(result: CompareResult) -> None:
    """Assign each cell its comparability group, rank within the group and flag."""
    for column in result.all_columns():
        metric = result.metric_of_column(column)
        for dataset in result.datasets:
            cells = [c for c in (result.cell(s, dataset, column) for s in result.systems) if c is not None]
            analyze_column(cells, metric.higher_is_better)


def analyze_column(cells: list[Cell], higher_is_better: bool) -> None:
    """Group a column's cells by metric hash and rank each group, flagging cells outside the main group."""
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
        # members come from `ok`: every value is a float
        for c, r in zip(members, rank([cast(float, c.value) for c in members], higher_is_better=higher_is_better)):
            c.rank = r


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
