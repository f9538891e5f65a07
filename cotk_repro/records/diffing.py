"""Metric-by-metric comparison of two result sets (records, result files).

Verdict per metric (docs/spec.md section 7):

* ``reproduced``: hashes equal and values within tolerance;
* ``differs``: hashes equal (or absent on both sides... see unverifiable) and values outside tolerance;
* ``not comparable``: both hashes present and different (the numbers measure different things);
* ``missing``: the metric is in the reference (A) but not in the candidate (B);
* ``unverifiable``: a hash is absent on either side, values within tolerance;
* ``extra``: only in B (informational).

``differs``, ``not comparable`` and ``missing`` make the comparison negative.

Each row also says whether the value is ``identical`` (the same number to the last bit) and the ``rtol``/``atol``
it was judged with: by default its metric's declared tolerance (:mod:`.tolerances`), ``widened`` when the
reproducer judged it with more. :meth:`MetricVerdict.describe` words it for people: ``identical``, ``within
tolerance (moved by X)``, ``differs (moved by X)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

NEGATIVE = ("differs", "not comparable", "missing")

#: a result key -> its ``(rtol, atol)``, or a :class:`.tolerances.Judged` (which also says whether it was widened)
ToleranceFn = Callable[[str], tuple[float, ...]]


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
    #: the same value to the last bit on both sides (and no hash that says they measure different things)
    identical: bool = False
    #: judged with a wider tolerance than its metric declares (the reproducer's --widen-tolerance)
    widened: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """The verdict in words (:func:`describe_row`)."""
        return describe_row(self.as_dict())


def describe_row(row: Mapping[str, Any]) -> str:
    """A verdict row (a :class:`MetricVerdict` or its JSON, perhaps a stranger's) in words: ``identical``,
    ``within tolerance (moved by 3.1e-07)``, ``differs (moved by 0.02)``, or the verdict word itself
    (``not comparable``, ``missing``, ``extra``; and ``reproduced`` for a row from before rows said ``identical``)."""
    verdict = str(row.get("verdict") or "")
    diff = row.get("abs_diff")
    number = isinstance(diff, (int, float)) and not isinstance(diff, bool)
    moved = f"moved by {diff:.2g}" if number else "moved"
    identical = row.get("identical")
    if verdict in ("reproduced", "unverifiable") and isinstance(identical, bool):
        widened = ", widened" if row.get("widened") is True else ""
        how = "identical" if identical else f"within tolerance ({moved}{widened})"
        return how if verdict == "reproduced" else f"unverifiable, {how}"
    if verdict == "differs" and number:
        return f"differs ({moved})"
    return verdict


def summarize(rows: Sequence[Mapping[str, Any]], limit: int = 6) -> str:
    """One line of verdict rows (dicts) in words, differing ones first: ``differs: nist (moved by 0.01); within
    tolerance: coherence (moved by 3e-07); identical: bleu, rouge-l`` (at most ``limit`` names a group)."""
    groups: dict[str, list[str]] = {}
    for row in rows:
        words = describe_row(row)
        head, _, detail = words.partition(" (")
        name = str(row.get("metric"))[:60]
        groups.setdefault(head, []).append(f"{name} ({detail}" if detail else name)
    order = sorted(groups, key=lambda h: (h not in NEGATIVE and not h.startswith("differs"), h == "identical", h))
    parts = []
    for head in order:
        names = groups[head]
        more = f", ... ({len(names)} in all)" if len(names) > limit else ""
        parts.append(f"{head}: {', '.join(names[:limit])}{more}")
    return "; ".join(parts)


def within(a: float, b: float, rtol: float, atol: float) -> bool:
    """Whether ``b`` is within ``rtol``/``atol`` of ``a`` (either way)."""
    return math.isclose(a, b, rel_tol=rtol, abs_tol=atol) or abs(a - b) <= atol + rtol * abs(a)


def compare_results(
    a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]], tolerance: ToleranceFn
) -> list[MetricVerdict]:
    """One verdict per metric of ``a`` and ``b`` (normalized results), with each metric's tolerance."""
    rows: list[MetricVerdict] = []
    for name in list(a) + [n for n in b if n not in a]:
        judged = tolerance(name)
        rtol, atol = float(judged[0]), float(judged[1])
        widened = bool(getattr(judged, "widened", False))
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
        identical = verdict in ("reproduced", "unverifiable") and va == vb
        rows.append(MetricVerdict(name, verdict, va, vb, ha, hb, diff, rtol, atol, identical, widened))
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
