"""Horizontal bar charts, one PNG per metric column: systems, bars grouped by dataset.

Systems are sorted by their mean score over the datasets, best first, pinned systems before unpinned ones
(an endpoint's model, labelled "unpinned"; the one ranking rule, :mod:`cotk_repro.core.ranking`). A system
with a value outside a dataset's main comparability group (or a failure) is not
ranked: it is drawn below the ranked ones, marked "not ranked", and its
incomparable bars are hatched and labelled with their group letter. Rendering
uses matplotlib's Agg canvas directly (no pyplot, no display needed).
"""

from __future__ import annotations

import io
from pathlib import Path

from .engine import CompareResult
from .naming import safe_name
from .paper import display

PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"]


def ranked_systems(result: CompareResult, column: str) -> tuple[list[str], list[str]]:
    """(ranked systems best first by mean over datasets, systems not ranked)."""
    metric = result.metric_of_column(column)
    ranked, other = [], []
    means = {}
    for s in result.systems:
        cells = [result.cell(s, d, column) for d in result.datasets]
        present = [c for c in cells if c is not None]
        if present and all(c.error is None and c.group == "A" for c in present):
            # group A holds only cells with a value (compare/groups.py), so the filter drops none
            means[s] = sum(c.value for c in present if c.value is not None) / len(present)
            ranked.append(s)
        elif present:
            other.append(s)
    unpinned = {s for s in ranked for d in result.datasets if (s, d) in result.unpinned}
    ranked.sort(key=lambda s: (s in unpinned, -means[s] if metric.higher_is_better else means[s]))
    return ranked, other


def chart_png(result: CompareResult, column: str) -> bytes:
    """Draw one report column as a horizontal bar chart (systems x datasets) and return it as PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    metric = result.metric_of_column(column)
    ranked, other = ranked_systems(result, column)
    systems = ranked + other
    datasets = result.datasets
    nd = len(datasets)
    bar_h = 0.8 / nd
    height = 1.4 + len(systems) * (0.28 * nd + 0.25)
    fig = Figure(figsize=(8.0, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    values = [c.value for c in result.cells if c.column == column and c.value is not None]
    vmax = max([abs(v) for v in values] + [1e-12])
    labelled: set[str] = set()
    for j, d in enumerate(datasets):
        for i, s in enumerate(systems):
            c = result.cell(s, d, column)
            if c is None:
                continue
            y = i + (j - (nd - 1) / 2) * bar_h
            if c.error is not None or c.value is None:
                ax.text(0, y, " failed", va="center", ha="left", fontsize=8, color="#C44E52")
                continue
            label = None if d in labelled else d
            labelled.add(d)
            incomparable = c.group not in (None, "A") or c.hash is None
            ax.barh(
                y,
                c.value,
                height=bar_h * 0.9,
                color=PALETTE[j % len(PALETTE)],
                label=label,
                hatch="///" if incomparable else None,
                edgecolor="black" if incomparable else None,
                linewidth=0.5 if incomparable else 0,
            )
            note = display(c.value)
            if c.hash is None:
                note += " (no hash)"
            elif c.group != "A":
                note += f" [group {c.group}]"
            ax.text(c.value + vmax * 0.01, y, note, va="center", ha="left", fontsize=7)
    ax.set_yticks(range(len(systems)))
    unpinned = {s for s, _d in result.unpinned}
    ax.set_yticklabels(
        [(s if s in ranked else f"{s} (not ranked)") + (" (unpinned)" if s in unpinned else "") for s in systems],
        fontsize=9,
    )
    ax.invert_yaxis()
    if other and ranked:
        ax.axhline(len(ranked) - 0.5, color="#888888", linewidth=0.8, linestyle="--")
    ax.set_xlim(min(0.0, min(values, default=0.0) * 1.1), vmax * 1.3)
    direction = "higher is better" if metric.higher_is_better else "lower is better"
    ax.set_title(f"{column} ({direction}); sorted by mean over datasets", fontsize=10)
    ax.set_xlabel(column, fontsize=9)
    if labelled:
        ax.legend(
            fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="dataset", title_fontsize=8, frameon=False
        )
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return _small_png(buf.getvalue())


def _small_png(png: bytes) -> bytes:
    """The chart as a 128-colour palette PNG (about a quarter of the size; charts are flat colours and text)."""
    try:
        from PIL import Image  # Pillow: a dependency of matplotlib
    except ImportError:
        return png
    img = Image.open(io.BytesIO(png)).convert("RGB")
    small = img.quantize(colors=128, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    buf = io.BytesIO()
    small.save(buf, format="PNG", optimize=True)
    return buf.getvalue() if buf.tell() < len(png) else png


def _chart_job(args: tuple[CompareResult, list[str]]) -> list[bytes]:
    result, columns = args
    return [chart_png(result, c) for c in columns]


def write_charts(result: CompareResult, out: Path, jobs: int | None = None) -> dict[str, Path]:
    """One ``chart-<column>.png`` per metric column; {} and a note in ``result.warnings`` without matplotlib.

    Many charts are drawn by ``jobs`` worker processes (default: the config's jobs, else the CPUs).
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        result.warnings.append("matplotlib is not installed: no charts (pip install 'cotk-repro[compare]')")
        return {}
    import os

    from ..core.fileio import atomic_write

    columns = result.all_columns()
    jobs = min(jobs or result.config.jobs or os.cpu_count() or 1, max(1, len(columns) // 4))
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        from .engine import _mp_context

        chunks = [columns[i::jobs] for i in range(jobs)]
        with ProcessPoolExecutor(max_workers=jobs, mp_context=_mp_context()) as pool:
            pngs = dict(
                zip(
                    [c for chunk in chunks for c in chunk],
                    [png for part in pool.map(_chart_job, [(result, ch) for ch in chunks]) for png in part],
                )
            )
    else:
        pngs = {c: chart_png(result, c) for c in columns}
    files = {}
    for column in columns:
        path = out / f"chart-{safe_name(column)}.png"
        atomic_write(path, pngs[column])
        files[column] = path
    return files
