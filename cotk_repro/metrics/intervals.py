"""Bootstrap intervals beside values: ``evaluate --ci`` (docs/metrics.md, "Significance and intervals").

``add_intervals`` puts ``"KEY ci": {"mean", "half_width", "samples", "seed"}`` beside each value of a metric that
resamples (:mod:`cotk_repro.metrics.resampling`), sacrebleu's ``corpus_score(..., n_bootstrap=N)``: the mean of the
resampled values and half the width of their central 95%; the value's signature gains ``|bs:N|seed:S`` and its hash
stays the metric's. The paired tests are :mod:`cotk_repro.metrics.significance`.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.results import CI_SUFFIX, SIGNATURE_SUFFIX
from .base import MetricError
from .resampling import (
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    METHODS,
    ItemStatistics,
    bootstrap_indices,
    draw_counts,
    estimate_ci,
    resampled_values,
)


def plain_float(value: Any) -> float | None:
    """A plain Python float (JSON always serialises it), None for None or a value that is not finite."""
    if value is None:
        return None
    out = float(value)
    return out if math.isfinite(out) else None


def check_settings(method: str, samples: int | None, seed: int | None) -> tuple[str, int, int]:
    """``(method, samples, seed)`` with the defaults filled in; a bad one refused with one sentence."""
    if method not in METHODS:
        raise MetricError(f"unknown method {method!r}: choose bs (paired bootstrap) or ar (approximate randomization)")
    n = DEFAULT_SAMPLES[method] if samples is None else samples
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1_000_000:
        raise MetricError(f"the number of samples must be a whole number from 1 to 1000000, not {samples!r}")
    s = DEFAULT_SEED if seed is None else seed
    if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**63:
        raise MetricError(f"the seed must be a whole number from 0 to 2**63 - 1, not {seed!r}")
    return method, n, s


def signature_suffix(method: str, samples: int, seed: int) -> str:
    """What a value's signature gains from its test (sacrebleu's fields): ``|bs:1000|seed:12345``."""
    return f"|{method}:{samples}|seed:{seed}"


def interval(items: ItemStatistics, samples: int = DEFAULT_SAMPLES["bs"], seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The bootstrap interval of one system's value: ``{"mean", "half_width", "samples", "seed"}`` (sacrebleu's
    ``corpus_score(..., n_bootstrap=samples)``: the mean and the 95% half-width of the resampled values)."""
    counts = draw_counts(bootstrap_indices(len(items), samples, seed), len(items))
    mean, half = estimate_ci(resampled_values(counts, items))
    return {"mean": plain_float(mean), "half_width": plain_float(half), "samples": samples, "seed": seed}


def add_intervals(
    result: dict[str, Any],
    items: dict[str, ItemStatistics],
    samples: int | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """``result`` (a metric's result dict) with ``"KEY ci": {"mean", "half_width", "samples", "seed"}`` beside each
    value ``items`` has statistics for (:func:`cotk_repro.metrics.resampling.score_with_items`), and ``|bs:N|seed:S``
    on that value's signature (``evaluate --ci``)."""
    _, n, s = check_settings("bs", samples, seed)
    out = dict(result)
    for key, stats in items.items():
        if key not in out:
            continue
        out[key + CI_SUFFIX] = interval(stats, n, s)
        sig = out.get(key + SIGNATURE_SUFFIX)
        if isinstance(sig, str):
            out[key + SIGNATURE_SUFFIX] = sig + signature_suffix("bs", n, s)
    return out
