"""Comparison reports over many systems x datasets x metrics (``cotk-repro compare``).

Library API::

    from cotk_repro.compare import compare
    result, files = compare("benchmark.toml", out="reports", jobs=2)

or step by step: :func:`load_config` (strict validation, errors naming file and
line), :func:`evaluate_config` (parallel, failures collected, never fatal) and
:func:`write_report` (CSV, charts, HTML, JSON). See ``docs/compare.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .config import CompareConfig, load_config
from .engine import Cell, CompareResult, Failure, evaluate_config
from .groups import analyze
from .report import as_json, write_report

__all__ = [
    "Cell",
    "CompareConfig",
    "CompareResult",
    "Failure",
    "analyze",
    "as_json",
    "compare",
    "evaluate_config",
    "load_config",
    "write_report",
]


def compare(
    config: str | Path,
    *,
    out: str | Path | None = None,
    jobs: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[CompareResult, list[Path]]:
    """Load ``config``, evaluate everything and write the report; returns the result and the files."""
    cfg = load_config(config, out=out, jobs=jobs)
    result = evaluate_config(cfg, jobs=jobs, on_progress=on_progress)
    files = write_report(result)
    return result, files
