"""``report.html``: one self-contained page with the charts (embedded PNG) and the tables.

The page is ``templates/compare/report.html``, rendered by the project's one Jinja environment
(:mod:`cotk_repro.core.templating`, autoescaping ``.html`` templates). Every piece of user-supplied text (system, dataset and metric names, signatures,
error messages, the title) goes through Jinja2's autoescaping.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path

from .._version import __version__
from ..core.fileio import atomic_write
from ..core.templating import render
from .engine import CompareResult
from .groups import column_has_conflict
from .naming import curve_stem, safe_name


def render_html(
    result: CompareResult, charts: dict[str, Path] | None = None, *, curves: Sequence[str] = (), out: Path | None = None
) -> str:
    """Render the compare result as a self-contained HTML report (charts inlined as base64 PNG). ``curves``:
    the per-epoch metrics whose figures are in ``out`` (inlined too, with links to their SVG and PDF)."""
    import json

    cfg = result.config
    charts = charts or {}
    column_views = []
    for col in result.all_columns():
        png = charts.get(col)
        column_views.append(
            {
                "name": col,
                "id": safe_name(col),
                "chart": base64.b64encode(png.read_bytes()).decode("ascii") if png and png.is_file() else None,
                "rows": [
                    {"system": s, "cells": [result.cell(s, d, col) for d in result.datasets]} for s in result.systems
                ],
            }
        )
    # rows systems and columns metrics; transposed (rows metrics) when the metric columns outnumber the systems
    transposed = len(result.all_columns()) > len(result.systems)
    dataset_views = [
        {
            "name": d,
            "id": safe_name(d),
            "transposed": transposed,
            "rows": [
                {"column": c, "cells": [result.cell(s, d, c) for s in result.systems]} for c in result.all_columns()
            ]
            if transposed
            else [{"system": s, "cells": [result.cell(s, d, c) for c in result.all_columns()]} for s in result.systems],
        }
        for d in result.datasets
    ]
    metrics = [
        {
            "label": m.label if "{key}" not in m.label else ", ".join(result.columns.get(m.label, [])) or m.label,
            "name": m.name,
            "version": m.version,
            "options_text": json.dumps(m.options, sort_keys=True, ensure_ascii=False),
            "references": m.references,
            "higher_is_better": m.higher_is_better,
            "columns": result.columns.get(m.label, []),
        }
        for m in cfg.metrics
    ]
    conflicts = [
        {"column": c, "dataset": d}
        for c in result.all_columns()
        for d in result.datasets
        if column_has_conflict(result, c, d)
    ]
    curve_views = []
    for name in curves:
        stem = curve_stem(name)
        png = Path(out) / f"{stem}.png" if out is not None else None
        curve_views.append(
            {
                "name": name,
                "id": safe_name(name),
                "svg": f"{stem}.svg",
                "pdf": f"{stem}.pdf",
                "png": base64.b64encode(png.read_bytes()).decode("ascii")
                if png is not None and png.is_file()
                else None,
            }
        )
    return render(
        "compare/report.html",
        curve_views=curve_views,
        title=cfg.title,
        config=cfg.rel(cfg.path),
        version=__version__,
        systems=result.systems,
        datasets=result.datasets,
        columns=result.all_columns(),
        metrics=metrics,
        column_views=column_views,
        dataset_views=dataset_views,
        conflicts=conflicts,
        failures=result.failures,
    )


def write_html(
    result: CompareResult, out: Path, charts: dict[str, Path] | None = None, *, curves: Sequence[str] = ()
) -> Path:
    """Write report.html for the compare result into `out` atomically and return its path."""
    path = Path(out) / "report.html"
    atomic_write(path, render_html(result, charts, curves=curves, out=out))
    return path
