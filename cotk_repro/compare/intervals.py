"""What is significant in a compare report: intervals, tests against the baseline, the best cluster.

With ``[report] intervals = true`` (or a dataset's ``baseline``), every cell whose metric resamples
(:mod:`cotk_repro.metrics.resampling`) carries its value on the same 1,000 bootstrap resamples of the dataset's
items (sacrebleu's draws, seed 12345). Within one column of one dataset, among the cells of the main comparability
group (group A: equal hashes) only:

* each cell gets its bootstrap mean and 95% half-width (sacrebleu's ``estimate_ci``);
* with a ``baseline`` system for the dataset, each other cell gets the paired bootstrap p-value of its difference
  to the baseline, and, because many systems against one baseline are many tests, the Holm-Bonferroni adjustment
  of those p-values over the column (Holm 1979; the family-wise error stays at 5%): ``significant`` is the adjusted
  p-value below 0.05;
* the best cell (by value, in the metric's direction, pinned cells first) and every cell not significantly different
  from it (paired bootstrap against the best, Holm-Bonferroni over those comparisons) form the *best cluster*, bolded
  together as WMT's reports do, instead of a single winner.

Every number is deterministic: two copies of one system get identical intervals, p = 1 against each other, and the
same cluster membership.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..metrics.resampling import DEFAULT_SAMPLES, DEFAULT_SEED, estimate_ci
from ..metrics.significance import ALPHA, holm_bonferroni, paired_p_value
from .engine import Cell, CompareResult

#: the correction, named in every report that shows p-values
CORRECTION = "Holm-Bonferroni"


def analyze_intervals(result: CompareResult) -> None:
    """Fill ``mean``, ``ci``, ``p_value``, ``p_holm``, ``significant`` and ``best`` of every cell that has resamples
    (after :func:`cotk_repro.compare.groups.analyze`: the groups decide which cells are compared)."""
    baselines = {d.name: d.baseline for d in result.config.datasets}
    for column in result.all_columns():
        higher = result.metric_of_column(column).higher_is_better
        for dataset in result.datasets:
            cells = [
                c
                for c in (result.cell(s, dataset, column) for s in result.systems)
                if c is not None and c.value is not None and c.resampled is not None and c.group == "A"
            ]
            analyze_column(cells, higher, baselines.get(dataset))


def analyze_column(cells: list[Cell], higher_is_better: bool, baseline: str | None) -> None:
    """Intervals, baseline tests and the best cluster of one column's comparable cells."""
    for c in cells:
        c.mean, c.ci = estimate_ci(np.asarray(c.resampled, dtype=np.float64))
        c.p_value = c.p_holm = c.significant = c.best = None
    if not cells:
        return
    base = next((c for c in cells if c.system == baseline), None)
    if base is not None:
        others = [c for c in cells if c is not base]
        raw = [_p(c, base) for c in others]
        for c, p, adjusted in zip(others, raw, holm_bonferroni(raw)):
            c.p_value, c.p_holm, c.significant = p, adjusted, adjusted < ALPHA
    pool = [c for c in cells if c.pinned] or cells
    sign = 1.0 if higher_is_better else -1.0
    best = max(pool, key=lambda c: sign * float(c.value or 0.0))
    rest = [c for c in cells if c is not best]
    best.best = True
    for c, adjusted in zip(rest, holm_bonferroni([_p(c, best) for c in rest])):
        c.best = c.pinned == best.pinned and adjusted >= ALPHA


def _p(cell: Cell, other: Cell) -> float:
    return paired_p_value(cell.resampled, other.resampled, float(cell.value or 0.0), float(other.value or 0.0))


def describe(result: CompareResult) -> dict[str, Any] | None:
    """The report's ``significance`` object (None when intervals are off): the method, its settings, the correction
    and each dataset's baseline."""
    if not result.config.intervals:
        return None
    return {
        "method": "paired bootstrap resampling (Koehn 2004), sacrebleu's draws",
        "samples": DEFAULT_SAMPLES["bs"],
        "seed": DEFAULT_SEED,
        "interval": "mean +- half the width of the central 95% of the resampled values",
        "alpha": ALPHA,
        "correction": CORRECTION,
        "baselines": {d.name: d.baseline for d in result.config.datasets if d.baseline is not None},
        "best_cluster": "the best value and every system not significantly different from it "
        f"(paired bootstrap against the best, {CORRECTION} over the column)",
    }
