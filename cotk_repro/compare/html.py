"""``report.html``: one self-contained page with the charts (embedded PNG) and the tables.

Every piece of user-supplied text (system, dataset and metric names, signatures,
error messages, the title) goes through Jinja2's autoescaping.
"""

from __future__ import annotations

import base64
from pathlib import Path

from .. import __version__
from .engine import CompareResult
from ..core.fileio import atomic_write
from .report import column_has_conflict, safe_name

TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{ title }} - cotk-repro compare</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
.corpus-table { font-size: 0.85em; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.flag { background: #fff1e6; }
td.error { background: #fde8e8; color: #9b1c1c; }
.hash { font-family: monospace; font-size: 0.8em; color: #666; }
.rank { font-size: 0.8em; color: #2a6; }
.grp { font-weight: bold; color: #b45309; }
.note { background: #fff8e1; border-left: 4px solid #f0b400; padding: 0.5em 1em; }
.fail { background: #fde8e8; border-left: 4px solid #c44e52; padding: 0.5em 1em; }
img { max-width: 100%; }
code { font-size: 0.9em; }
</style>
</head>
<body>
<h1>{{ title }}</h1>
<p>Config <code>{{ config }}</code>; {{ systems|length }} systems, {{ datasets|length }} datasets,
{{ columns|length }} metric columns. Values in one column are ranked together only when their hashes are equal
(group A is a column's largest group of equal hashes). Made by cotk-repro {{ version }}.</p>
{% if conflicts %}
<div class="note" id="conflicts"><strong>Not comparable:</strong> these columns hold values with different hashes;
the flagged values are ranked only within their own group.
<ul>{% for c in conflicts %}<li>{{ c.column }} on {{ c.dataset }}</li>{% endfor %}</ul></div>
{% endif %}
{% if failures %}
<div class="fail" id="failures"><strong>Failures</strong> (the other systems and metrics ran):
<ul>{% for f in failures %}<li>system <code>{{ f.system }}</code> on <code>{{ f.dataset }}</code>{% if f.metric %},
metric <code>{{ f.metric }}</code>{% endif %}: {{ f.message }}</li>{% endfor %}</ul></div>
{% endif %}
{% for dv in dataset_views %}
<h2 class="corpus" id="corpus-{{ dv.id }}">Dataset {{ dv.name }}</h2>
{% if dv.transposed %}<table class="corpus-table"><tr><th>metric</th>{% for s in systems %}<th>{{ s }}</th>{% endfor %}</tr>
{% for row in dv.rows %}<tr><td>{{ row.column }}</td>{% for c in row.cells %}{{ cell(c) }}{% endfor %}</tr>
{% endfor %}</table>
{% else %}<table class="corpus-table"><tr><th>system</th>{% for c in columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in dv.rows %}<tr><td>{{ row.system }}</td>{% for c in row.cells %}{{ cell(c) }}{% endfor %}</tr>
{% endfor %}</table>{% endif %}
{% endfor %}
<h2>Metrics</h2>
<table id="metrics"><tr><th>label</th><th>metric</th><th>version</th><th>options</th><th>references</th><th>better</th><th>columns</th></tr>
{% for m in metrics %}<tr><td>{{ m.label }}</td><td>{{ m.name }}</td><td>{{ m.version or "" }}</td>
<td><code>{{ m.options_text }}</code></td><td>{{ m.references }}</td><td>{{ "higher" if m.higher_is_better else "lower" }}</td>
<td>{{ m.columns|join(", ") }}</td></tr>
{% endfor %}</table>
{% for col in column_views %}
<h2 id="metric-{{ col.id }}">{{ col.name }}</h2>
{% if col.chart %}<img alt="bar chart of {{ col.name }}" src="data:image/png;base64,{{ col.chart }}">{% endif %}
<table class="metric-table"><tr><th>system</th>{% for d in datasets %}<th>{{ d }}</th>{% endfor %}</tr>
{% for row in col.rows %}<tr><td>{{ row.system }}</td>{% for c in row.cells %}{{ cell(c) }}{% endfor %}</tr>
{% endfor %}</table>
{% endfor %}
</body>
</html>
"""

CELL = """{% if c is none %}<td></td>{% elif c.error %}<td class="error" title="{{ c.error }}">failed: {{ c.error }}</td>
{%- else %}<td class="{{ 'flag' if c.flag else '' }}" title="{{ c.flag or '' }}{{ ' | ' if c.flag else '' }}{{ c.signature or '' }}">{{ '%.4f'|format(c.value) }}
{%- if c.rank is not none %} <span class="rank">#{{ c.rank }}</span>{% endif %}
{%- if c.group and c.group != 'A' %} <span class="grp">[{{ c.group }}]</span>{% endif %}
<br><span class="hash" title="{{ c.hash or 'no hash' }}">{{ (c.hash or 'unverifiable')[:12] }}</span></td>{% endif %}"""


def render_html(result: CompareResult, charts: dict[str, Path] | None = None) -> str:
    import json

    from jinja2 import Environment

    env = Environment(autoescape=True, trim_blocks=False)
    cell_tpl = env.from_string(CELL)
    from markupsafe import Markup

    def cell(c):
        return Markup(cell_tpl.render(c=c))

    cfg = result.config
    charts = charts or {}
    column_views = []
    for col in result.all_columns():
        png = charts.get(col)
        column_views.append({
            "name": col, "id": safe_name(col),
            "chart": base64.b64encode(png.read_bytes()).decode("ascii") if png and png.is_file() else None,
            "rows": [{"system": s, "cells": [result.cell(s, d, col) for d in result.datasets]}
                     for s in result.systems],
        })
    # rows systems and columns metrics; transposed (rows metrics) when the metric columns outnumber the systems
    transposed = len(result.all_columns()) > len(result.systems)
    dataset_views = [{"name": d, "id": safe_name(d), "transposed": transposed,
                      "rows": [{"column": c, "cells": [result.cell(s, d, c) for s in result.systems]}
                               for c in result.all_columns()] if transposed else
                      [{"system": s, "cells": [result.cell(s, d, c) for c in result.all_columns()]}
                       for s in result.systems]} for d in result.datasets]
    metrics = [{"label": m.label, "name": m.name, "version": m.version,
                "options_text": json.dumps(m.options, sort_keys=True, ensure_ascii=False),
                "references": m.references, "higher_is_better": m.higher_is_better,
                "columns": result.columns.get(m.label, [])} for m in cfg.metrics]
    conflicts = [{"column": c, "dataset": d} for c in result.all_columns() for d in result.datasets
                 if column_has_conflict(result, c, d)]
    return env.from_string(TEMPLATE).render(
        title=cfg.title, config=cfg.rel(cfg.path), version=__version__, systems=result.systems,
        datasets=result.datasets, columns=result.all_columns(), metrics=metrics, column_views=column_views,
        dataset_views=dataset_views, conflicts=conflicts, failures=result.failures, cell=cell)


def write_html(result: CompareResult, out: Path, charts: dict[str, Path] | None = None) -> Path:
    path = Path(out) / "report.html"
    atomic_write(path, render_html(result, charts))
    return path
