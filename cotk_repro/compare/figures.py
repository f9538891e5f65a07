"""Grouped figures for a paper: one figure per metric family, every system, one panel per dataset.

A family is a metric's columns at several orders (``self-bleu-2`` … ``self-bleu-5``, see
:func:`cotk_repro.compare.paper.families`): the x axis is the order, one bar per system, so one
figure replaces a chart per column. Each figure is written as ``figure-<family>.svg``, ``.pdf`` and
``.png`` through matplotlib's own backends (no pyplot, no display); bar labels use the tables' rounding
(:func:`cotk_repro.compare.paper.display`). A value outside its column's main comparability group is
hatched and not labelled as comparable.

Values reported per epoch (:attr:`CompareResult.curves`) are drawn as curves, one figure per metric,
``curve-<metric>.svg/.pdf/.png``: epoch on the x axis, one line per system (its SVG group's id is
``curve-<system>``, one marker per point), one panel per dataset.
"""

from __future__ import annotations

import io
from pathlib import Path

from .charts import PALETTE
from .engine import CompareResult
from .naming import curve_stem, safe_name
from .paper import Family, display, families

FORMATS = ("svg", "pdf", "png")


def _draw(result: CompareResult, family: Family):
    from matplotlib.figure import Figure

    datasets = result.datasets
    systems = result.systems
    nd, ns, no = len(datasets), len(systems), len(family.columns)
    width = max(4.0, min(16.0, 1.2 + no * (0.35 * ns + 0.4))) * min(nd, 3)
    fig = Figure(figsize=(width, 3.6 * ((nd + 2) // 3)), dpi=100)
    direction = "higher is better" if result.metric_of_column(family.columns[0]).higher_is_better else "lower is better"
    bar_w = 0.8 / max(ns, 1)
    for k, dataset in enumerate(datasets):
        ax = fig.add_subplot((nd + 2) // 3, min(nd, 3), k + 1)
        for i, system in enumerate(systems):
            xs, ys, hatched = [], [], []
            for j, column in enumerate(family.columns):
                c = result.cell(system, dataset, column)
                if c is None or c.error is not None or c.value is None:
                    continue
                xs.append(j + (i - (ns - 1) / 2) * bar_w)
                ys.append(c.value)
                hatched.append(c.group not in (None, "A") or c.hash is None)
            bars = ax.bar(xs, ys, width=bar_w * 0.92, color=PALETTE[i % len(PALETTE)], label=system)
            for bar, value, h in zip(bars, ys, hatched):
                if h:
                    bar.set_hatch("///")
                    bar.set_edgecolor("black")
                if no * ns <= 24:  # labels only where they fit
                    ax.annotate(
                        display(value),
                        (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center",
                        va="bottom",
                        fontsize=6,
                        rotation=90 if ns > 3 else 0,
                        xytext=(0, 2),
                        textcoords="offset points",
                    )
        ax.set_xticks(range(no))
        ax.set_xticklabels(family.orders, fontsize=8)
        ax.set_title(f"{family.name} on {dataset} ({direction})", fontsize=9)
        ax.grid(axis="y", linestyle=":", linewidth=0.5)
        ax.margins(y=0.15)
        if k == 0:
            ax.legend(fontsize=7, frameon=False, ncol=min(ns, 3))
    fig.tight_layout()
    return fig


def _draw_curve(result: CompareResult, name: str):
    from matplotlib.figure import Figure

    by_run = result.curves[name]
    datasets = [d for d in result.datasets if any(ds == d for _, ds in by_run)]
    nd = len(datasets)
    fig = Figure(figsize=(5.2 * min(nd, 3), 3.6 * ((nd + 2) // 3)), dpi=100)
    direction = _direction(result, name)
    for k, dataset in enumerate(datasets):
        ax = fig.add_subplot((nd + 2) // 3, min(nd, 3), k + 1)
        for i, system in enumerate(result.systems):
            points = by_run.get((system, dataset))
            if not points:
                continue
            (line,) = ax.plot(
                [e for e, _ in points],
                [v for _, v in points],
                marker="o",
                markersize=3,
                linewidth=1.2,
                color=PALETTE[i % len(PALETTE)],
                label=system,
            )
            line.set_gid(f"curve-{safe_name(system)}")
        ax.set_xlabel("epoch", fontsize=8)
        ax.set_ylabel(name, fontsize=8)
        ax.set_title(f"{name} per epoch on {dataset}{direction}", fontsize=9)
        ax.grid(linestyle=":", linewidth=0.5)
        ax.tick_params(labelsize=7)
        if k == 0:
            ax.legend(fontsize=7, frameon=False, ncol=min(len(result.systems), 3))
    fig.tight_layout()
    return fig


def _direction(result: CompareResult, name: str) -> str:
    """`` (higher is better)`` / `` (lower is better)`` from the config's metric of that name, else from the
    registered metric that reports the key; empty when neither knows it."""
    from ..metrics.facts import facts_for_result_key

    spec = next((m for m in result.config.metrics if name in (m.label, m.name)), None)
    higher = (
        spec.higher_is_better if spec is not None else getattr(facts_for_result_key(name), "higher_is_better", None)
    )
    return "" if higher is None else " (higher is better)" if higher else " (lower is better)"


def figure_bytes(result: CompareResult, family: Family) -> dict[str, bytes]:
    """The family's figure rendered once per format: ``{"svg": ..., "pdf": ..., "png": ...}``."""
    return _render(_draw(result, family))


def curve_bytes(result: CompareResult, name: str) -> dict[str, bytes]:
    """The per-epoch figure of ``name`` (a key of ``result.curves``) in every format."""
    return _render(_draw_curve(result, name))


def _render(fig) -> dict[str, bytes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.backends.backend_pdf import FigureCanvasPdf
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    out = {}
    for fmt, canvas in (("svg", FigureCanvasSVG), ("pdf", FigureCanvasPdf), ("png", FigureCanvasAgg)):
        canvas(fig)
        buf = io.BytesIO()
        # fixed metadata: the same result gives the same bytes (no dates, no software version)
        meta = {
            "svg": {"Date": None, "Creator": None},
            "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
            "png": {"Software": None},
        }[fmt]
        fig.savefig(buf, format=fmt, metadata=meta)
        out[fmt] = buf.getvalue()
    return out


def write_figures(result: CompareResult, out: Path) -> list[Path]:
    """Write ``figure-<family>.{svg,pdf,png}`` for every metric family and ``curve-<metric>.{svg,pdf,png}``
    for every per-epoch metric into ``out``; [] without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        result.warnings.append("matplotlib is not installed: no figures (pip install 'cotk-repro[compare]')")
        return []
    import os

    from ..core.fileio import atomic_write

    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")  # reproducible SVG/PDF ids
    written = []
    for family in families(result):
        for fmt, data in figure_bytes(result, family).items():
            path = out / f"figure-{safe_name(family.name)}.{fmt}"
            atomic_write(path, data)
            written.append(path)
    for name in result.curves:
        for fmt, data in curve_bytes(result, name).items():
            path = out / f"{curve_stem(name)}.{fmt}"
            atomic_write(path, data)
            written.append(path)
    return written
