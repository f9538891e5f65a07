"""Is the difference real? Confidence intervals and paired significance tests for every metric that resamples.

The library behind ``cotk-repro significance`` and ``evaluate --ci`` (docs/metrics.md, "Significance and
intervals"). Both tests are sacrebleu's (``sacrebleu/significance.py``), on the metric's own scale:

* **paired bootstrap resampling** (Koehn 2004; ``bs``, 1,000 resamples): the same resamples of the items for the
  baseline and each system; the interval is the mean of the system's resampled values and half the width of
  their central 95%; the p-value compares the observed difference with the resampled differences centred on their
  mean;
* **approximate randomization** (Riezler & Maxwell 2005; ``ar``, 10,000 trials): each trial swaps each item's
  two outputs with probability 1/2; the p-value is the share of trials (plus one) whose two pseudo-systems differ
  more than the two systems do. It gives no interval.

Seed 12345 and ``numpy.random.default_rng`` as sacrebleu draws them: with the same inputs the values, means,
half-widths and p-values are sacrebleu's (divided by 100 where sacrebleu's scale is 0-100). Every number is
deterministic given the seed: two copies of one system get identical intervals and p = 1 (the one difference from
sacrebleu, whose strict count gives a system against itself ``1 / (samples + 1)``: see :func:`_p_value`). The method, resamples
and seed are written into the value's signature (``|bs:1000|seed:12345``), never into its hash: the value is the
same metric's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.results import SIGNATURE_SUFFIX
from .base import MetricError
from .intervals import add_intervals as add_intervals  # the API of both, from one module
from .intervals import check_settings, plain_float, signature_suffix
from .intervals import interval as interval
from .resampling import (
    ItemStatistics,
    bootstrap_indices,
    draw_counts,
    estimate_ci,
    item_statistics,
    p_value,
    randomization_masks,
    randomized_values,
    resampled_values,
)

#: the threshold below which a p-value is marked (``*``) in tables
ALPHA = 0.05

EXPLANATIONS = {
    "bs": (
        "Paired bootstrap resampling (Koehn 2004): {samples} resamples of the {items} items, drawn with "
        "replacement by numpy's default_rng({seed}) as sacrebleu draws them, scored for the baseline and every "
        "system alike. 'mean ± CI' is the mean of a system's resampled values and half the width of their central "
        "95%. The p-value is the share of resamples (plus one, over their number plus one) whose difference to the "
        "baseline, centred on the mean difference, exceeds the observed one: the chance of a difference this large "
        "if the two systems were equally good. '*' marks p < {alpha}; with many systems against one baseline, some "
        "small p-values are expected by chance (compare's reports correct for it with Holm-Bonferroni)."
    ),
    "ar": (
        "Approximate randomization (Riezler & Maxwell 2005): {samples} trials, each swapping every item's two "
        "outputs (the system's and the baseline's) with probability 1/2, drawn by numpy's default_rng({seed}) as "
        "sacrebleu draws them. The p-value is the share of trials (plus one, over their number plus one) whose two "
        "shuffled systems differ by more than the two real ones: the chance of a difference this large if the "
        "outputs were exchangeable. '*' marks p < {alpha}. Randomization gives no interval (use --method bs); "
        "with many systems against one baseline, some small p-values are expected by chance."
    ),
}


@dataclass(frozen=True)
class SystemResult:
    """One system's value of one result key, with its interval (bootstrap) and p-value against the baseline."""

    system: str
    metric: str
    score: float
    mean: float | None
    ci: float | None
    p_value: float | None

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < ALPHA

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of ``significance --json`` (shared/SPEC.md section 14): plain floats, never numpy's."""
        return {
            "system": self.system,
            "metric": self.metric,
            "score": plain_float(self.score),
            "mean": plain_float(self.mean),
            "ci": plain_float(self.ci),
            "p_value": plain_float(self.p_value),
        }


def paired_bootstrap(
    baseline: ItemStatistics, systems: Sequence[ItemStatistics], samples: int, seed: int
) -> list[tuple[float, float, float, float | None]]:
    """``(score, mean, half_width, p_value)`` of the baseline (p None) and each system: sacrebleu's ``bs`` test,
    every system on the same resamples (the same seed)."""
    n = len(baseline)
    counts = draw_counts(bootstrap_indices(n, samples, seed), n)
    base_values = resampled_values(counts, baseline)
    base_score = baseline.value()
    mean, half = estimate_ci(base_values)
    out: list[tuple[float, float, float, float | None]] = [(base_score, mean, half, None)]
    for items in systems:
        values = resampled_values(counts, items)
        score = items.value()
        diffs = np.abs(values - base_values)
        m, h = estimate_ci(values)
        out.append((score, m, h, _p_value(diffs, diffs - diffs.mean(), abs(base_score - score))))
    return out


def approximate_randomization(
    baseline: ItemStatistics, systems: Sequence[ItemStatistics], trials: int, seed: int
) -> list[tuple[float, float | None]]:
    """``(score, p_value)`` of the baseline (p None) and each system: sacrebleu's ``ar`` test, every system on the
    same swaps (the same seed)."""
    masks = randomization_masks(len(baseline), trials, seed)
    base_score = baseline.value()
    out: list[tuple[float, float | None]] = [(base_score, None)]
    for items in systems:
        a, b = randomized_values(masks, baseline, items)
        score = items.value()
        diffs = np.abs(a - b)
        out.append((score, _p_value(diffs, diffs, abs(base_score - score))))
    return out


def _p_value(diffs: np.ndarray, statistics: np.ndarray, observed: float) -> float:
    """sacrebleu's p-value, but 1 where nothing differs: no observed difference and none in any resample (two
    systems the metric cannot tell apart on any item). sacrebleu counts only statistics *above* the observed one,
    so it gives such a pair ``1 / (samples + 1)``, a system significantly different from itself."""
    if observed == 0 and not diffs.any():
        return 1.0
    return p_value(statistics, observed)


def paired_p_value(values: np.ndarray, baseline_values: np.ndarray, score: float, baseline_score: float) -> float:
    """The paired bootstrap p-value of a system against a baseline from their values on the same resamples
    (sacrebleu's ``bs`` test; 1 where nothing differs)."""
    diffs = np.abs(np.asarray(values, np.float64) - np.asarray(baseline_values, np.float64))
    return _p_value(diffs, diffs - diffs.mean(), abs(baseline_score - score))


def holm_bonferroni(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the order given: the k-th smallest of m is multiplied by
    m - k + 1, made monotone and capped at 1; a hypothesis is rejected at level alpha when its adjusted p-value is
    below alpha. Controls the chance of any false "significant" among the m tests (family-wise error)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * float(p_values[i])))
        adjusted[i] = running
    return adjusted


def paired_test(
    metric: Any,
    references: Sequence[Sequence[str]] | None,
    baseline: tuple[str, Sequence[str]],
    systems: Sequence[tuple[str, Sequence[str]]],
    *,
    method: str = "bs",
    samples: int | None = None,
    seed: int | None = None,
    baseline_items: dict[str, ItemStatistics] | None = None,
    queries: Sequence[str] | None = None,
) -> list[SystemResult]:
    """Every result key of ``metric`` that resamples, for the baseline and each system (named ``(name,
    hypotheses)`` pairs, each with one hypothesis per reference list): the baseline's rows first, then each
    system's, key by key as the metric reports them. ``queries``: for a metric that reads them (a judge), one per
    item. ``baseline_items``: the baseline's statistics when they are
    already in hand (:func:`cotk_repro.metrics.resampling.score_with_items`)."""
    method, n, s = check_settings(method, samples, seed)
    base_name, base_hyps = baseline
    for name, hyps in systems:
        if len(hyps) != len(base_hyps):
            raise MetricError(
                f"{name} has {len(hyps)} lines but the baseline {base_name} has {len(base_hyps)}: a paired test "
                f"needs one output per item from every system"
            )
    base_items = baseline_items or item_statistics(metric, base_hyps, references, queries)
    sys_items = [item_statistics(metric, hyps, references, queries) for _, hyps in systems]
    names = [base_name] + [name for name, _ in systems]
    rows: list[SystemResult] = []
    for key, items in base_items.items():
        others = [stats[key] for stats in sys_items]
        if method == "bs":
            for name, (score, mean, half, p) in zip(names, paired_bootstrap(items, others, n, s)):
                rows.append(SystemResult(name, key, score, mean, half, p))
        else:
            for name, (score, p) in zip(names, approximate_randomization(items, others, n, s)):
                rows.append(SystemResult(name, key, score, None, None, p))
    return rows


def explanation(method: str, samples: int, seed: int, items: int) -> str:
    """The one paragraph a table of results ends with: what the test did and how to read it."""
    return EXPLANATIONS[method].format(samples=samples, seed=seed, items=items, alpha=ALPHA)


@dataclass(frozen=True)
class SignificanceReport:
    """What ``cotk-repro significance`` shows: the rows, each result key's signature with the test's fields, and
    the test's settings."""

    rows: list[SystemResult]
    signatures: dict[str, str]
    method: str
    samples: int
    seed: int
    items: int

    def explanation(self) -> str:
        return explanation(self.method, self.samples, self.seed, self.items)

    def as_json(self) -> list[dict[str, Any]]:
        """``significance --json`` (shared/SPEC.md section 14): one object per system and result key."""
        return [row.as_dict() for row in self.rows]


def significance_files(
    refs_path: Any,
    baseline_path: Any,
    system_paths: Sequence[Any],
    metric_name: str,
    options: dict[str, Any] | None = None,
    *,
    method: str = "bs",
    samples: int | None = None,
    seed: int | None = None,
    queries_path: Any = None,
) -> SignificanceReport:
    """The paired test of each system file against the baseline file on a references file (one reference a line,
    or JSONL ``{"references": [...]}`` lines, as ``evaluate`` reads them), every system named as its path was
    given."""
    from . import get_metric
    from .files import read_hypotheses, read_queries, read_references
    from .resampling import score_with_items

    method, n, s = check_settings(method, samples, seed)
    if not system_paths:
        raise MetricError("give at least one system to compare with the baseline: --systems FILE [FILE ...]")
    metric = get_metric(metric_name, **(options or {}))
    if getattr(metric, "resampling", "none") == "none":
        reason = getattr(metric, "no_interval", None) or "it declares no resampling"
        raise MetricError(f"metric {metric_name!r} has no interval and no paired test: {reason}")
    refs = read_references(refs_path) if refs_path is not None else None
    if refs is None and getattr(metric, "needs_references", True):
        raise MetricError(f"metric {metric_name!r} needs references: give --refs FILE")
    systems = [(str(p), read_hypotheses(p)) for p in [baseline_path, *system_paths]]
    if refs is not None:
        for name, hyps in systems:
            if len(hyps) != len(refs):
                raise MetricError(
                    f"{name} has {len(hyps)} lines but {refs_path} has {len(refs)}: give exactly one line of "
                    f"references per hypothesis"
                )
    queries = read_queries(queries_path) if queries_path is not None else None
    if queries is not None and len(queries) != len(systems[0][1]):
        raise MetricError(
            f"{queries_path} has {len(queries)} lines but {systems[0][0]} has {len(systems[0][1])}: give exactly one "
            f"query per hypothesis"
        )
    result, items = score_with_items(metric, systems[0][1], refs, queries)
    if not items:  # its settings have no interval: the metric's own sentence
        item_statistics(metric, systems[0][1], refs, queries)
    rows = paired_test(
        metric, refs, systems[0], systems[1:], method=method, samples=n, seed=s, baseline_items=items, queries=queries
    )
    suffix = signature_suffix(method, n, s)
    signatures = {
        row.metric: str(result.get(row.metric + SIGNATURE_SUFFIX) or row.metric) + suffix
        for row in rows
        if row.system == systems[0][0]
    }
    return SignificanceReport(rows, signatures, method, n, s, len(systems[0][1]))
