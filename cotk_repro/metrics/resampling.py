"""Resampling a metric's items, vectorised: sacrebleu's draws, one matrix against per-item statistics.

A metric that has intervals declares how a resample of its items is scored (``Metric.resampling``, checked at
registration): ``"statistics"`` gives, per result key, an :class:`ItemStatistics` (one row of sufficient statistics
per item and the metric's own formula from their column sums: BLEU's matches and lengths, chrF's n-gram counts,
TER's edits and reference lengths); ``"values"`` gives one value per item whose mean is the value (ROUGE, METEOR,
accuracy), which is the one-column case of the same thing.

The draws are sacrebleu's (``sacrebleu/significance.py``), the same numbers from the same seed:

* paired bootstrap (Koehn 2004): ``numpy.random.default_rng(seed).choice(n, size=(samples, n), replace=True)``;
* approximate randomization (Riezler & Maxwell 2005): ``default_rng(seed).integers(2, size=(trials, n),
  dtype=bool)``, True taking the baseline's item into the first pseudo-system.

A resample is never scored in a Python loop: the draws become one ``(resamples, items)`` matrix of how often each
item is drawn (or whether it is swapped), its product with the ``(items, statistics)`` matrix is every resample's
summed statistics at once, and the metric's formula is applied to all the rows as arrays
(:attr:`ItemStatistics.finish`). Documented in docs/metrics.md, "Significance and intervals".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import MetricError, declared

#: sacrebleu's defaults: the seed (``SACREBLEU_SEED``), bootstrap resamples and randomization trials
DEFAULT_SEED = 12345
DEFAULT_SAMPLES = {"bs": 1000, "ar": 10000}
METHODS = ("bs", "ar")
#: why a set-level metric has no interval (``Metric.no_interval``)
SET_LEVEL = (
    "a set-level value: a bootstrap resample repeats sentences, and a repeated sentence matches or duplicates "
    "itself, so resampled values would not show the value's spread"
)
#: why a metric weighting n-grams by the whole reference set (NIST's information, CIDEr-D's IDF) has no interval
REFERENCE_WEIGHTED = (
    "its n-gram weights (NIST's information, CIDEr-D's document frequencies) come from the whole reference set, "
    "which a resample changes, so summed per-item statistics would not be the metric on the resample"
)
#: why a corpus metric whose per-item statistics are not exposed yet has no interval
NOT_YET = "its per-item statistics are not exposed yet, so a resample cannot be scored without rerunning it"
#: rows of a draw matrix turned into float64 at once (a block of 1,000 x 3,000 items is 24 MB)
_BLOCK = 1000


@dataclass(frozen=True)
class ItemStatistics:
    """One system's items for one result key: ``stats`` (items x statistics, float64) and ``finish``, the metric's
    formula from summed statistics, row-wise: ``finish(sums)`` with ``sums`` (rows x statistics) gives one value a
    row, on the metric's own scale; ``finish(stats.sum(0)[None])[0]`` is the metric's value."""

    stats: np.ndarray
    finish: Callable[[np.ndarray], np.ndarray]

    @classmethod
    def of_values(cls, values: Sequence[float]) -> ItemStatistics:
        """Per-item values whose mean is the value (a sentence-averaged metric): one column, finished by the
        mean over the items (a resample has as many items as the whole)."""
        column = np.asarray(values, dtype=np.float64).reshape(-1, 1)
        n = len(column)
        return cls(column, lambda sums: sums[:, 0] / n)

    def __len__(self) -> int:
        return len(self.stats)

    def value(self) -> float:
        """The value of all the items, by ``finish``."""
        return float(self.finish(self.stats.sum(axis=0, keepdims=True))[0])


def item_statistics(
    metric: Any, hypotheses: Sequence[Any], references: Sequence[Any] | None, queries: Sequence[str] | None = None
) -> dict[str, ItemStatistics]:
    """Per result key, the :class:`ItemStatistics` of ``metric`` on these items, by its declared resampling; a
    metric without intervals is refused with its reason (:class:`MetricError`). ``queries``: for a metric that reads
    them (a judge), one per hypothesis."""
    kind = getattr(metric, "resampling", "none")
    name = getattr(metric, "name", type(metric).__name__)
    if kind != "none" and queries is None and declared(metric, "needs_queries"):
        raise MetricError(f"metric {name!r} needs the queries the hypotheses answer: give --queries FILE")
    if kind == "statistics" and queries is not None and declared(metric, "takes_queries"):
        out = dict(metric.resample_statistics(list(hypotheses), references, queries=list(queries)))
    elif kind == "statistics":
        out = dict(metric.resample_statistics(list(hypotheses), references))
    elif kind == "values":
        out = {k: ItemStatistics.of_values(v) for k, v in metric.resample_values(list(hypotheses), references).items()}
    else:
        reason = getattr(metric, "no_interval", None) or "it declares no resampling"
        raise MetricError(f"metric {name!r} has no interval: {reason}")
    for key, items in out.items():
        if len(items) != len(hypotheses):
            raise MetricError(f"metric {name!r} gave {len(items)} items for {key!r} but was given {len(hypotheses)}")
    return out


def score_with_items(
    metric: Any, hypotheses: Sequence[Any], references: Sequence[Any] | None, queries: Sequence[str] | None = None
) -> tuple[dict[str, Any], dict[str, ItemStatistics]]:
    """The metric's result dict (as :func:`cotk_repro.metrics.base.score` gives it) and, per result key that has an
    interval, its :class:`ItemStatistics`: in one pass where the metric offers one (``compute_with_statistics`` /
    ``compute_with_values``: one tokenization, one alignment), else the two one after the other. A metric without
    intervals (or whose settings have none) gives no statistics, never an error."""
    from ..core.textinput import drop_leading_bom
    from .base import score

    kind = getattr(metric, "resampling", "none")
    hyps, refs = drop_leading_bom(list(hypotheses), references)
    if queries is not None and declared(metric, "takes_queries"):  # a judge: its answers, once
        if kind == "statistics" and callable(getattr(metric, "compute_with_statistics", None)):
            result, items = metric.compute_with_statistics(hyps, refs, queries=list(queries))
            return dict(result), dict(items)
        return dict(metric.compute_with_queries(hyps, refs, list(queries))), {}
    if kind == "statistics" and callable(getattr(metric, "compute_with_statistics", None)):
        result, items = metric.compute_with_statistics(hyps, refs)
        return dict(result), dict(items)
    if kind == "values" and callable(getattr(metric, "compute_with_values", None)):
        result, values = metric.compute_with_values(hyps, refs)
        return dict(result), {k: ItemStatistics.of_values(v) for k, v in values.items()}
    result = score(metric, hyps, refs)
    if kind == "none":
        return result, {}
    try:
        return result, item_statistics(metric, hyps, refs)
    except MetricError:  # e.g. bleu's smoothing method4: the value stands, without an interval
        return result, {}


def bootstrap_indices(n_items: int, samples: int, seed: int | None) -> np.ndarray:
    """sacrebleu's bootstrap draw: ``(samples, n_items)`` item indices, with replacement."""
    rng = np.random.default_rng(seed)
    idx: np.ndarray = rng.choice(n_items, size=(samples, n_items), replace=True)
    return idx


def randomization_masks(n_items: int, trials: int, seed: int | None) -> np.ndarray:
    """sacrebleu's randomization draw: ``(trials, n_items)`` bools, True where the baseline's item goes to the
    first pseudo-system."""
    rng = np.random.default_rng(seed)
    mask: np.ndarray = rng.integers(2, size=(trials, n_items), dtype=bool)
    return mask


def draw_counts(idx: np.ndarray, n_items: int) -> np.ndarray:
    """How often each item is drawn in each resample: ``(resamples, n_items)`` int32 from a matrix of indices."""
    rows = idx.shape[0]
    flat = (idx + (np.arange(rows, dtype=np.int64) * n_items)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n_items).reshape(rows, n_items).astype(np.int32)


def exact_product(weights: np.ndarray, stats: np.ndarray, largest: int, row_total: int) -> np.ndarray:
    """``weights @ stats`` in float64, for ``weights`` of whole numbers in [0, ``largest``] whose rows sum to at most
    ``row_total`` (draw counts: n and n; swap masks: 1 and n): in float32 where that is exact (whole-number
    statistics and no partial sum reaching 2**24: half the memory to stream and the faster product), else in
    float64."""
    whole = bool(np.all(stats == np.rint(stats)))
    magnitude = np.abs(stats)
    bound = min(largest * float(magnitude.sum(axis=0).max(initial=0.0)), row_total * float(magnitude.max(initial=0.0)))
    if whole and bound < 2**24:
        return (weights.astype(np.float32) @ stats.astype(np.float32)).astype(np.float64)
    return np.asarray(weights.astype(np.float64) @ stats, dtype=np.float64)


def resampled_values(counts: np.ndarray, items: ItemStatistics) -> np.ndarray:
    """The value of every resample: ``finish(counts @ stats)``."""
    n = len(items)
    return np.asarray(items.finish(exact_product(counts, items.stats, n, n)), dtype=np.float64)


def randomized_values(
    masks: np.ndarray, first: ItemStatistics, second: ItemStatistics
) -> tuple[np.ndarray, np.ndarray]:
    """The values of the two pseudo-systems of every trial: the first takes ``first``'s item where the mask is
    True and ``second``'s elsewhere, the second the other way round (sacrebleu's ``shuf_a``, ``shuf_b``).

    One matrix product a block of trials: with ``d = first - second`` per item, the first pseudo-system's sums are
    ``sum(second) + mask @ d`` and the second's ``sum(first) - mask @ d`` (sacrebleu's four products, rearranged;
    equal to them exactly for integer statistics). For a system against a copy of itself ``d`` is 0 and both
    pseudo-systems are the two real ones to the last bit."""
    d = first.stats - second.stats
    first_sum, second_sum = first.stats.sum(axis=0), second.stats.sum(axis=0)
    moved = np.empty((len(masks), d.shape[1]), dtype=np.float64)
    for start in range(0, len(masks), _BLOCK):  # blocks of trials: a float copy of a block, not of all of them
        block = masks[start : start + _BLOCK]
        moved[start : start + len(block)] = exact_product(block, d, 1, len(d))
    return (
        np.asarray(first.finish(second_sum + moved), np.float64),
        np.asarray(first.finish(first_sum - moved), np.float64),
    )


def estimate_ci(values: np.ndarray) -> tuple[float, float]:
    """sacrebleu's ``estimate_ci``: the mean of the resampled values and half the width of their central 95%
    (the values at ``n // 40`` and ``n - n // 40 - 1`` after sorting)."""
    ordered = np.sort(values)
    n = len(ordered)
    low = n // 40
    return float(ordered.mean()), float(0.5 * (ordered[n - low - 1] - ordered[low]))


def p_value(statistics: np.ndarray, observed: float) -> float:
    """sacrebleu's (after multeval): ``(#{statistic > observed} + 1) / (#statistics + 1)``; strictly greater, so a
    system against itself gets 1."""
    return (int(np.count_nonzero(statistics > observed)) + 1) / (len(statistics) + 1)
