"""Metric-by-metric comparison of two result sets (records, result files).

Verdict per metric (docs/spec.md section 7):

* ``reproduced``: hashes equal and values within tolerance;
* ``differs``: hashes equal (or absent on both sides... see unverifiable) and values outside tolerance;
* ``not comparable``: both hashes present and different (the numbers measure different things);
* ``missing``: the metric is in the reference (A) but not in the candidate (B);
* ``unverifiable``: a hash is absent on either side, values within tolerance;
* ``extra``: only in B (informational).

``differs``, ``not comparable`` and ``missing`` make the comparison negative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

NEGATIVE = ("differs", "not comparable", "missing")

ToleranceFn = Callable[[str], tuple[float, float]]


@dataclass
class MetricVerdict:
    """One metric compared between record A and candidate B: both values and hashes, the verdict."""

    metric: str
    verdict: str
    a_value: float | None
    b_value: float | None
    a_hash: str | None
    b_hash: str | None
    abs_diff: float | None
    rtol: float
    atol: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def within(a: float, b: float, rtol: float, atol: float) -> bool:
    """Whether ``b`` is within ``rtol``/``atol`` of ``a`` (either way)."""
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol) or abs(a - b) <= atol + rtol * abs(a)


def compare_results(
    a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]], tolerance: ToleranceFn
) -> list[MetricVerdict]:
    """One verdict per metric of ``a`` and ``b`` (normalized results), with each metric's tolerance."""
    rows: list[MetricVerdict] = []
    for name in list(a) + [n for n in b if n not in a]:
        rtol, atol = tolerance(name)
        ra, rb = a.get(name), b.get(name)
        va = ra.get("value") if ra else None
        vb = rb.get("value") if rb else None
        ha = ra.get("hash") if ra else None
        hb = rb.get("hash") if rb else None
        diff = abs(va - vb) if va is not None and vb is not None else None
        if ra is None:
            verdict = "extra"
        elif rb is None:
            verdict = "missing"
        elif ha and hb and ha != hb:
            verdict = "not comparable"
        elif va is None or vb is None or not within(va, vb, rtol, atol):  # normalized results: both carry a number
            verdict = "differs"
        elif not (ha and hb):
            verdict = "unverifiable"
        else:
            verdict = "reproduced"
        rows.append(MetricVerdict(name, verdict, va, vb, ha, hb, diff, rtol, atol))
    return rows


def overall(rows: list[MetricVerdict]) -> str:
    """``reproduced`` when no metric is negative (and at least one was compared), else ``not reproduced``."""
    compared = [r for r in rows if r.verdict != "extra"]
    if not compared or any(r.verdict in NEGATIVE for r in compared):
        return "not reproduced"
    return "reproduced"


def environment_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Python and package versions that differ between two records' environments."""
    out: list[dict[str, Any]] = []
    pa = a.get("python", {}).get("version")
    pb = b.get("python", {}).get("version")
    if pa != pb:
        out.append({"what": "python", "a": pa, "b": pb})
    pkgs_a = {p["name"]: p["version"] for p in a.get("packages", [])}
    pkgs_b = {p["name"]: p["version"] for p in b.get("packages", [])}
    for name in sorted(set(pkgs_a) | set(pkgs_b)):
        if pkgs_a.get(name) != pkgs_b.get(name):
            out.append({"what": name, "a": pkgs_a.get(name), "b": pkgs_b.get(name)})
    return out
