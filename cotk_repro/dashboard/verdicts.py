"""The server's own verdict of a reproduction, and the metric-fact checks of uploaded values.

A reproduction upload carries the rerun's results (``rerun.results``: values and hashes) and the
tolerances it used (``tolerances``, else each metric row's ``rtol``/``atol``), each at most
:data:`MAX_TOLERANCE` (a larger one is refused, naming the metric). The dashboard compares
them with the record's results using :func:`cotk_repro.records.diffing.compare_results`, the code behind
``cotk-repro diff`` and ``reproduce``, and stores that verdict; the one the client claimed is kept
beside it only for display.

Each metric is judged with the smaller of the tolerance the reproduction used and the one the metric declares
here (:func:`cotk_repro.metrics.facts.tolerance_of_result_key`; the undeclared default for a key no installed
metric reports): a reproducer may widen a tolerance on their own machine (``--widen-tolerance``), never on the
dashboard. A row judged tighter than the upload asked keeps what it asked as ``claimed_rtol``/``claimed_atol``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from ..core.results import RESULT_SCHEMA, normalize_results
from ..errors import CotkError
from ..records.diffing import compare_results, overall
from ..records.view import RecordView

COULD_NOT_RUN = "could not run"
#: what an upload that names no tolerance for a metric asks for: its metric's declared tolerance
DEFAULT_TOLERANCE = (math.inf, math.inf)
#: the largest tolerances a reproduction may bring (docs/dashboard.md, "Tolerances"): above them any rerun
#: could be called "reproduced", so the upload is refused (422) rather than judged with them
MAX_TOLERANCE = {"rtol": 1e-2, "atol": 1e-3}


class VerdictError(CotkError):
    """A reproduction whose results or tolerances cannot be compared (HTTP 422)."""


@lru_cache(maxsize=4096)
def _facts(key: str):
    """The facts the metric reporting ``key`` declares (None for a key no registered metric reports)."""
    from ..metrics.facts import facts_for_result_key

    return facts_for_result_key(key)


def declared_tolerance(key: str) -> tuple[float, float]:
    """The ``(rtol, atol)`` the metric reporting ``key`` declares here; the undeclared default otherwise."""
    from ..metrics.base import UNDECLARED_TOLERANCE

    facts = _facts(key)
    return UNDECLARED_TOLERANCE if facts is None else facts.tolerance


def check_values(results: dict[str, tuple[float, str | None]], where: str) -> None:
    """Every value within what its metric declares (range, finite); raises :class:`VerdictError` naming it."""
    for name, (value, _h) in results.items():
        facts = _facts(name)
        problem = (
            facts.check_value(value)
            if facts is not None
            else (
                None if isinstance(value, (int, float)) and math.isfinite(value) else f"{name} must be a finite number"
            )
        )
        if problem:
            raise VerdictError(f"{where}: {problem}")


def _tolerances(reproduction: dict[str, Any]) -> dict[str, tuple[float, float]]:
    raw = reproduction.get("tolerances")
    if raw is None:
        raw = {
            m.get("metric"): {"rtol": m.get("rtol"), "atol": m.get("atol")}
            for m in reproduction.get("metrics") or []
            if isinstance(m, dict)
        }
    if not isinstance(raw, dict):
        raise VerdictError("the reproduction's 'tolerances' must map metric names to {rtol, atol}")
    out = {}
    for name, tol in raw.items():
        if not isinstance(name, str) or not isinstance(tol, dict):
            raise VerdictError("the reproduction's 'tolerances' must map metric names to {rtol, atol}")
        pair = []
        for which, default in zip(("rtol", "atol"), DEFAULT_TOLERANCE):
            v = tol.get(which)
            if v is None:
                pair.append(default)
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise VerdictError(f"the reproduction's {which} for {name[:60]!r} must be a finite number >= 0")
            if v > MAX_TOLERANCE[which]:
                raise VerdictError(
                    f"the reproduction's {which} for {name[:60]!r} is {v:g}, above this dashboard's "
                    f"cap of {MAX_TOLERANCE[which]:g} (with it almost any rerun would count as "
                    "reproduced): rerun the comparison with a smaller tolerance"
                )
            pair.append(float(v))
        out[name] = (pair[0], pair[1])
    return out


def server_verdict(record: dict[str, Any], reproduction: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """``(verdict, metric rows)`` computed from the record and the reproduction's own rerun results."""
    if reproduction.get("verdict") == COULD_NOT_RUN:
        return COULD_NOT_RUN, []
    rerun = reproduction.get("rerun")
    results = rerun.get("results") if isinstance(rerun, dict) else None
    if not isinstance(results, dict):
        raise VerdictError("the reproduction carries no rerun results ('rerun.results') to compute its verdict from")
    if results:
        try:
            normalized = normalize_results(
                {"schema": RESULT_SCHEMA, "results": results}, where="the reproduction's rerun"
            )["results"]
        except CotkError as exc:
            raise VerdictError(exc.message) from None
        check_values({k: (v["value"], v["hash"]) for k, v in normalized.items()}, "the reproduction's rerun")
    else:
        normalized = {}
    asked = _tolerances(reproduction)

    def judged(key: str) -> tuple[float, float]:  # never wider than the metric declares here
        declared = declared_tolerance(key)
        claimed = asked.get(key, DEFAULT_TOLERANCE)
        return min(claimed[0], declared[0]), min(claimed[1], declared[1])

    rows = compare_results(RecordView.of(record).recorded_results(), normalized, judged)
    out = []
    for row in rows:
        d = row.as_dict()
        claimed = asked.get(row.metric)
        if claimed is not None and (claimed[0] > row.rtol or claimed[1] > row.atol):  # the upload asked for more
            d["claimed_rtol"], d["claimed_atol"] = (None if math.isinf(v) else v for v in claimed)
        out.append(d)
    return overall(rows), out
