"""Comparability groups, rankings and the report files (CSV, JSON; charts and HTML elsewhere).

Within one column of a table (one metric column on one dataset) values are
comparable only when their hashes are equal. The largest group of equal hashes
is group ``A`` (ties: the group of the first system in config order); other
hashes get ``B``, ``C``... and their cells a flag. Ranks are computed inside a
group only, so values of different groups are never ranked together. A value
without a hash is *unverifiable*: flagged and not ranked. A value of an
*unpinned* system (a generator such as ``openai`` whose model id pins no
weights) ranks below every pinned value of its group and is flagged
``unpinned`` (its cell in ``results.json`` also says ``"pinned": false``).

Files written to the report folder:

* ``metric-<column>.csv``: rows systems, columns datasets (values);
  ``metric-<column>-hashes.csv``: the same shape, each cell's hash;
* ``corpus-<dataset>.csv``: rows systems, columns metric columns;
  ``corpus-<dataset>-hashes.csv``: the same shape, hashes;
* ``results.csv``: one row per cell with value, hash, signature, group, rank,
  flag and error (with intervals on, also ci_mean, ci_half_width, p_value, p_holm, significant, best:
  :mod:`cotk_repro.compare.intervals`); ``results.json``: everything, machine-readable (with intervals on, a
  ``significance`` object naming the test, its correction and the baselines);
* ``curves.csv`` (when a metric or a generator reported values per epoch, ``NAME@epoch-N``): one row per
  point (metric, system, dataset, epoch, value); with charts on, ``curve-<metric>.svg/.pdf/.png``;
* ``report.tex``: the paper's tables (:mod:`cotk_repro.compare.latex`); with charts on,
  ``figure-<family>.svg/.pdf/.png`` (:mod:`cotk_repro.compare.figures`).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from ..core.fileio import atomic_write
from .engine import Cell, CompareResult
from .groups import analyze, column_has_conflict
from .intervals import analyze_intervals, describe
from .naming import curve_stem, safe_name

UNVERIFIABLE = "unverifiable"


def fmt_number(v: float | None) -> str:
    """Values in CSVs: shortest round-trip form (exact), empty for missing."""
    return "" if v is None else repr(float(v))


def _hash_text(c: Cell | None) -> str:
    if c is None:
        return ""
    if c.error is not None:
        return "error"
    return c.hash or UNVERIFIABLE


def tables(result: CompareResult) -> dict[str, Any]:
    """The wide tables as plain data: ``{"metric": {column: rows}, "corpus": {dataset: rows}}``."""
    out: dict[str, Any] = {"metric": {}, "corpus": {}}
    for column in result.all_columns():
        out["metric"][column] = [[s] + [result.cell(s, d, column) for d in result.datasets] for s in result.systems]
    for d in result.datasets:
        out["corpus"][d] = [[s] + [result.cell(s, d, c) for c in result.all_columns()] for s in result.systems]
    return out


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A cell a spreadsheet shows as text, never runs: a string that starts like a formula (``=``, ``+``, ``-``,
    ``@``, tab, carriage return) and is not a number gets a leading ``'`` (OWASP's CSV-injection advice)."""
    if not isinstance(value, str) or not value.startswith(_FORMULA_START):
        return value
    try:
        float(value)
        return value  # -0.5, +1e3: a number, as written
    except ValueError:
        return "'" + value


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([csv_cell(h) for h in header])
    writer.writerows([csv_cell(c) for c in row] for row in rows)
    atomic_write(path, buf.getvalue())


def write_csvs(result: CompareResult, out: Path) -> list[Path]:
    """Write the per-metric and per-dataset CSV tables (values and hashes) into `out`; return their paths."""
    written: list[Path] = []
    t = tables(result)
    for column, rows in t["metric"].items():
        header = ["system"] + result.datasets
        base = out / f"metric-{safe_name(column)}"
        _write_csv(
            base.with_name(base.name + ".csv"),
            header,
            [[r[0]] + [fmt_number(c.value if c else None) for c in r[1:]] for r in rows],
        )
        _write_csv(
            base.with_name(base.name + "-hashes.csv"), header, [[r[0]] + [_hash_text(c) for c in r[1:]] for r in rows]
        )
        written += [base.with_name(base.name + ".csv"), base.with_name(base.name + "-hashes.csv")]
    for dataset, rows in t["corpus"].items():
        header = ["system"] + result.all_columns()
        base = out / f"corpus-{safe_name(dataset)}"
        _write_csv(
            base.with_name(base.name + ".csv"),
            header,
            [[r[0]] + [fmt_number(c.value if c else None) for c in r[1:]] for r in rows],
        )
        _write_csv(
            base.with_name(base.name + "-hashes.csv"), header, [[r[0]] + [_hash_text(c) for c in r[1:]] for r in rows]
        )
        written += [base.with_name(base.name + ".csv"), base.with_name(base.name + "-hashes.csv")]
    long_header = [
        "system",
        "dataset",
        "metric",
        "column",
        "value",
        "hash",
        "signature",
        "group",
        "rank",
        "flag",
        "error",
    ]
    long_rows = []
    for c in result.cells:
        long_rows.append(
            [
                c.system,
                c.dataset,
                c.metric,
                c.column,
                fmt_number(c.value),
                c.hash or "",
                c.signature or "",
                c.group or "",
                "" if c.rank is None else str(c.rank),
                c.flag or "",
                c.error or "",
            ]
        )
    if result.config.intervals:  # the intervals, p-values and best cluster, when on (the header is otherwise as it was)
        long_header += ["ci_mean", "ci_half_width", "p_value", "p_holm", "significant", "best"]
        for row, c in zip(long_rows, result.cells):
            row += [
                fmt_number(c.mean),
                fmt_number(c.ci),
                fmt_number(c.p_value),
                fmt_number(c.p_holm),
                "" if c.significant is None else str(c.significant).lower(),
                "" if c.best is None else str(c.best).lower(),
            ]
    _write_csv(out / "results.csv", long_header, long_rows)
    written.append(out / "results.csv")
    return written


def write_curves_csv(result: CompareResult, out: Path) -> Path:
    """``curves.csv``: every per-epoch point, one row each (exact values)."""
    rows = [
        [name, s, d, str(e), fmt_number(v)]
        for name, runs in result.curves.items()
        for (s, d), points in runs.items()
        for e, v in points
    ]
    _write_csv(out / "curves.csv", ["metric", "system", "dataset", "epoch", "value"], rows)
    return out / "curves.csv"


def as_json(result: CompareResult, files: list[Path] | None = None) -> dict[str, Any]:
    """Return the whole compare result (config, cells, groups, ranks, failures, files) as a JSON-able dict."""
    cfg = result.config
    return {
        "schema": "cotk-repro/compare-report",
        "schema_version": 1,
        "title": cfg.title,
        "config": cfg.rel(cfg.path),
        "datasets": [
            {"name": d.name, "gold": cfg.rel(d.gold), "gold_lines": d.gold_lines, "format": d.sample_format.as_dict()}
            for d in cfg.datasets
        ],
        "systems": [
            {
                "name": s.name,
                "generator": s.generator,
                "settings": s.settings if s.generator else None,
                "samples": {d: cfg.rel(p) for d, p in s.samples.items()},
                "pinned": not any((s.name, d) in result.unpinned for d in s.datasets),
            }
            for s in cfg.systems
        ],
        "metrics": [
            {
                "label": m.label,
                "name": m.name,
                "version": m.version,
                "options": m.options,
                "settings": m.settings,
                "references": m.references,
                "higher_is_better": m.higher_is_better,
                "columns": result.columns.get(m.label, []),
            }
            for m in cfg.metrics
        ],
        **({"significance": describe(result)} if result.config.intervals else {}),
        "cells": [c.as_dict() for c in result.cells],
        "conflicts": [
            {"column": col, "dataset": d}
            for col in result.all_columns()
            for d in result.datasets
            if column_has_conflict(result, col, d)
        ],
        "failures": [f.as_dict() for f in result.failures],
        "generated": [{"system": s, "dataset": d, "outputs": how} for (s, d), how in sorted(result.generated.items())],
        "curves": [
            {"metric": name, "system": s, "dataset": d, "points": [[e, v] for e, v in points]}
            for name, runs in result.curves.items()
            for (s, d), points in runs.items()
        ],
        "files": [Path(os.path.relpath(f, cfg.out)).as_posix() for f in (files or [])],
    }


def write_report(
    result: CompareResult, out: Path | None = None, *, charts: bool | None = None, html: bool | None = None
) -> list[Path]:
    """Write every report file into ``out`` (default: the config's). Returns the files written."""
    cfg = result.config
    out = Path(out or cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    previous = _previous_files(out)
    analyze(result)
    analyze_intervals(result)
    files = write_csvs(result, out)
    if result.curves:
        files.append(write_curves_csv(result, out))
    chart_files: dict[str, Path] = {}
    drawn: list[str] = []  # the per-epoch metrics whose figures were written
    charts = cfg.charts if charts is None else charts
    if charts:
        from .charts import write_charts
        from .figures import write_figures

        chart_files = write_charts(result, out)
        files += list(chart_files.values())
        figure_files = write_figures(result, out)
        files += figure_files
        drawn = [n for n in result.curves if out / f"{curve_stem(n)}.pdf" in figure_files]
    if cfg.html if html is None else html:
        from .html import write_html

        files.append(write_html(result, out, chart_files, curves=drawn))
    from .latex import write_latex

    files.append(write_latex(result, out, curves=drawn))
    data = as_json(result, files + [out / "results.json"])
    atomic_write(out / "results.json", json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n")
    files.append(out / "results.json")
    for name in previous - {f.name for f in files}:  # a column or dataset that is gone: its old files too
        try:
            (out / name).unlink()
        except OSError:
            pass
    return files


def _previous_files(out: Path) -> set[str]:
    """Files an earlier report in ``out`` listed in its results.json (plain names inside ``out`` only)."""
    try:
        data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    if not isinstance(data, dict) or data.get("schema") != "cotk-repro/compare-report":
        return set()
    names = data.get("files")
    if not isinstance(names, list):
        return set()
    return {n for n in names if isinstance(n, str) and n == Path(n).name and not n.startswith(".")}
