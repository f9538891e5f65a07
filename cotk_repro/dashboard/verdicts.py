"""The server's own verdict of a reproduction, and the metric-fact checks of uploaded values.

A reproduction upload carries the rerun's results (``rerun.results``: values and hashes) and the
tolerances it used (``tolerances``, else each metric row's ``rtol``/``atol``), each at most
:data:`MAX_TOLERANCE` (a larger one is refused, naming the metric). The dashboard compares
them with the record's results using :func:`cotk_repro.records.diffing.compare_results`, the code behind
``cotk-repro diff`` and ``reproduce``, and stores that verdict; the one the client claimed is kept
beside it only for display.
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
DEFAULT_TOLERANCE = (1e-6, 1e-12)
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
            v = tol.get(which, default)
            v = default if v is None else v
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
    tolerances = _tolerances(reproduction)
    rows = compare_results(
        RecordView.of(record).recorded_results(), normalized, lambda m: tolerances.get(m, DEFAULT_TOLERANCE)
    )
    return overall(rows), [r.as_dict() for r in rows]
