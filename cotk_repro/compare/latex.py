"""``report.tex``: the compare result as a paper's tables — one booktabs table per dataset.

Rendered from ``templates/compare/report.tex.j2`` by a Jinja environment of its own (delimiters ``<< >>``
and ``<% %>``, which LaTeX's braces and ``%`` cannot collide with) whose ``finalize``
escapes every printed value for LaTeX (the way ``.html`` templates autoescape): no LaTeX is assembled
from strings in code, and a system named ``50%_{x}`` prints as text, never as markup. Numbers use the
same rounding as the figures (:func:`cotk_repro.compare.paper.display`); the best value of each column
(only within its main comparability group, and among pinned systems when there are any) is bold; a double
dagger marks a value of an unpinned system; the header carries each metric's direction; each
column's readable signature and short hash are listed under its table. The file needs only packages of
a plain TeX installation (booktabs, graphicx): ``pdflatex report.tex`` compiles it as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from ..core.fileio import atomic_write
from .engine import CompareResult
from .naming import curve_stem
from .paper import best_cells, display

_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"\textquotedbl{}",
}


class Tex(str):
    """Text that is already LaTeX (made only by this module): printed as is."""


def _char(ch: str) -> str:
    if ch in _SPECIALS:
        return _SPECIALS[ch]
    if ch < " " or "\x7f" <= ch < "\xa0":
        return ""  # control characters print nothing
    if ord(ch) > 0x17F:  # beyond what pdflatex's T1 fonts and utf8 inputenc set up: the code point, as text
        return f"[U+{ord(ch):04X}]"
    return ch


#: what LaTeX reads as an argument of the command before a cell: ``\\[2pt]`` / ``\midrule[2pt]`` (a length, or
#: "Missing number" and a run that never ends without -halt-on-error) and ``\\*`` (a star that vanishes);
#: a backslash too, so that an escaped character is never glued to what precedes it
_TRAPS = ("[", "*", "\\")


def escape(value: object) -> str:
    r"""Plain text as LaTeX that prints it literally: specials escaped, control characters dropped, Latin letters
    kept (utf8 inputenc), any other character as its code point ``[U+4E2D]`` so that a plain pdflatex compiles.

    Text that begins (after spaces, which LaTeX skips while it looks for an optional argument) with ``[``, ``*``
    or an escaped character starts with ``{}``: in a table cell after ``\\`` or ``\midrule`` it is then text,
    never that command's argument."""
    if isinstance(value, Tex):
        return value
    text = "" if value is None else str(value)
    out = "".join(map(_char, text))
    return "{}" + out if out.lstrip().startswith(_TRAPS) else out


@lru_cache(maxsize=1)
def _environment():
    import jinja2

    from ..core.templating import templates_dir

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        finalize=escape,
        block_start_string="<%",
        block_end_string="%>",
        variable_start_string="<<",
        variable_end_string=">>",
        comment_start_string="<#",
        comment_end_string="#>",
    )
    env.filters["cells"] = lambda items: Tex(" & ".join(escape(i) for i in items))  # a table row, each escaped
    return env


def _cell(result: CompareResult, system: str, dataset: str, column: str, best: set[str]) -> Tex:
    c = result.cell(system, dataset, column)
    if c is None:
        return Tex("")
    if c.error is not None or c.value is None:
        return Tex(r"\textit{failed}")
    text = display(c.value)
    if c.ci is not None:  # intervals on: the value +- its 95% half-width, and the best cluster bolded
        text += r" {\scriptsize $\pm$" + display(c.ci) + "}"
        if c.best:
            text = r"\textbf{" + text + "}"
        if c.significant:
            text += r"$^{*}$"
    elif system in best:
        text = r"\textbf{" + text + "}"
    if c.group not in (None, "A") or c.hash is None:
        text += r"$^{\dagger}$"
    if not c.pinned:
        text += r"$^{\ddagger}$"
    return Tex(text)


def _header(result: CompareResult, column: str) -> Tex:
    arrow = r"$\uparrow$" if result.metric_of_column(column).higher_is_better else r"$\downarrow$"
    return Tex(escape(column) + " " + arrow)


def render_latex(result: CompareResult, curves: Sequence[str] = ()) -> str:
    """The whole ``report.tex`` (a standalone article) as text; ``curves``: the per-epoch metrics whose
    ``curve-<metric>.pdf`` sits beside it (included as figures)."""
    columns = result.all_columns()
    tables = []
    for dataset in result.datasets:
        best = {c: best_cells(result, dataset, c) for c in columns}
        transposed = len(columns) > len(result.systems)
        if transposed:  # rows metrics, columns systems (Texygen's Tables 1-3 and CoTK's Table 7 are laid out so)
            head = [Tex("metric")] + [Tex(escape(s)) for s in result.systems]
            rows = [
                [_header(result, c)] + [_cell(result, s, dataset, c, best[c]) for s in result.systems] for c in columns
            ]
        else:
            head = [Tex("system")] + [_header(result, c) for c in columns]
            rows = [[Tex(escape(s))] + [_cell(result, s, dataset, c, best[c]) for c in columns] for s in result.systems]
        notes = []
        for c in columns:
            cells = [x for x in (result.cell(s, dataset, c) for s in result.systems) if x is not None]
            main = next((x for x in cells if x.group == "A"), None)
            notes.append(
                {
                    "column": c,
                    "signature": (main.signature if main else None) or "(no signature)",
                    "hash": ((main.hash or "")[:12]) if main else "",
                }
            )
        flagged = any(
            x is not None and x.value is not None and (x.group not in (None, "A") or x.hash is None)
            for s in result.systems
            for c in columns
            for x in [result.cell(s, dataset, c)]
        )
        unpinned = any(
            x is not None and x.value is not None and not x.pinned
            for s in result.systems
            for c in columns
            for x in [result.cell(s, dataset, c)]
        )
        significance = any(
            x is not None and x.ci is not None
            for s in result.systems
            for c in columns
            for x in [result.cell(s, dataset, c)]
        )
        baseline = next((d.baseline for d in result.config.datasets if d.name == dataset), None)
        tables.append(
            {
                "significance": significance,
                "baseline": baseline,
                "dataset": dataset,
                "unpinned": unpinned,
                "align": Tex("l" + "r" * (len(head) - 1)),
                "head": head,
                "rows": rows,
                "notes": notes,
                "flagged": flagged,
                "wide": len(head) > 8,
            }
        )
    return (
        _environment()
        .get_template("compare/report.tex.j2")
        .render(
            title=result.config.title,
            tables=tables,
            systems=result.systems,
            curves=[{"name": n, "file": Tex("{" + curve_stem(n) + "}.pdf")} for n in curves],
        )
    )


def write_latex(result: CompareResult, out: Path, curves: Sequence[str] = ()) -> Path:
    """Write ``report.tex`` into ``out`` atomically and return its path."""
    path = Path(out) / "report.tex"
    atomic_write(path, render_latex(result, curves))
    return path
