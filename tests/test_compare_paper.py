"""`compare` writes what a paper prints: report.tex (compiled with a real pdflatex), grouped SVG/PDF/PNG figures.

Values are checked against the compare result itself (independent of the rendering): the bold cell of each
row is the best value among the row's comparable cells, recomputed here by hand; the figures' labels carry the
same rounding as the table. Texygen's reference config (six systems, 22 columns) is the realistic case.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from texygen_report import shares_the_report
from texygen_report import texygen_report as shared_texygen_report


@pytest.fixture
def texygen_report(tmp_path_factory):
    """Texygen's example compared once per test process (tests/texygen_report.py; test_compare.py reads it too)."""
    result, _, out = shared_texygen_report(tmp_path_factory)
    assert not result.failures, result.failures
    return result, out


needs_pdflatex = pytest.mark.skipif(
    shutil.which("pdflatex") is None, reason="pdflatex is not installed (Debian texlive-latex-recommended)"
)


def pdflatex(folder) -> None:
    """Compile ``folder/report.tex`` the way every report test does: no shell escape, stop at the first error
    (``-halt-on-error``: a LaTeX error is a failure here, never a prompt), and a time limit (an argument trap such
    as ``\\midrule[U+4E2D]`` can make a run without -halt-on-error loop)."""
    try:
        proc = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "report.tex"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"pdflatex did not finish {folder / 'report.tex'} within 120 s")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (folder / "report.pdf").read_bytes().startswith(b"%PDF")


def _rows(tex: str) -> list[list[str]]:
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    return [[c.strip() for c in line.rstrip("\\ ").split("&")] for line in body.strip().splitlines()]


@shares_the_report
def test_report_tex_bolds_the_best_comparable_value_of_each_metric_with_the_figures_rounding(texygen_report):
    from cotk_repro.compare.paper import display

    result, out = texygen_report
    tex = (out / "report.tex").read_text(encoding="utf-8")
    assert r"\usepackage{booktabs}" in tex and r"\toprule" in tex
    rows = _rows(tex)
    columns = result.all_columns()
    assert len(rows) == len(columns) == 22  # transposed: 22 metric columns > 6 systems
    for row, column in zip(rows, columns):
        higher = result.metric_of_column(column).higher_is_better
        assert row[0].startswith(column.replace("_", r"\_"))
        assert row[0].endswith(r"$\uparrow$" if higher else r"$\downarrow$")
        values = {s: result.cell(s, "coco", column).value for s in result.systems}
        best = (max if higher else min)(values.values())
        for system, cell_text in zip(result.systems, row[1:]):
            printed = display(values[system])
            if values[system] == best:
                assert cell_text == r"\textbf{" + printed + "}", (column, system)
            else:
                assert cell_text == printed, (column, system)
    # every column's readable signature is listed under the table
    for column in columns:
        sig = result.cell(result.systems[0], "coco", column).signature
        assert sig.replace("_", r"\_").replace("|", r"\textbar{}") in tex


@shares_the_report
@needs_pdflatex
def test_report_tex_compiles_with_plain_pdflatex(texygen_report, tmp_path):
    _, out = texygen_report
    shutil.copy(out / "report.tex", tmp_path / "report.tex")
    pdflatex(tmp_path)


@shares_the_report
def test_one_grouped_figure_per_metric_family_in_svg_pdf_png(texygen_report):
    from cotk_repro.compare.paper import display

    result, out = texygen_report
    families = sorted(p.stem.removeprefix("figure-") for p in out.glob("figure-*.svg"))
    assert families == ["bw-bleu", "distinct", "fw-bleu", "fw-bw-bleu", "ngram-entropy", "self-bleu"]
    for family in families:
        assert (out / f"figure-{family}.pdf").read_bytes().startswith(b"%PDF")
        assert (out / f"figure-{family}.png").read_bytes().startswith(b"\x89PNG")
    svg = (out / "figure-self-bleu.svg").read_text(encoding="utf-8")
    ET.fromstring(svg)  # well-formed XML
    # matplotlib writes text as glyph paths with the string in a comment: the labels use the tables' rounding
    labels = set(re.findall(r"<!-- ([0-9.]+) -->", svg))
    for column in ("self-bleu-2", "self-bleu-5"):
        for system in result.systems:
            assert display(result.cell(system, "coco", column).value) in labels


@shares_the_report
def test_html_metrics_table_shows_expanded_labels_not_templates(texygen_report):
    _, out = texygen_report
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "{key}" not in html
    assert "fw-bleu-2, bw-bleu-2, fw-bw-bleu-2" in html
    assert "1 datasets" not in html and "1 dataset," in html


def test_latex_escapes_every_special_and_strange_character():
    from cotk_repro.compare.latex import escape

    assert escape(r"50%_{x}$#&~^\|<>") == (
        r"50\%\_\{x\}\$\#\&\textasciitilde{}\textasciicircum{}\textbackslash{}"
        r"\textbar{}\textless{}\textgreater{}"
    )
    assert escape("a\x1b[2Jb\x00c") == "a[2Jbc"  # control characters print nothing
    assert escape("café 中") == "café [U+4E2D]"


@needs_pdflatex
def test_hostile_system_and_title_names_still_compile(tmp_path):
    from cotk_repro.compare import compare

    evil = r"x\input{/etc/passwd}%$_^"
    (tmp_path / "data" / "d" / "gold").mkdir(parents=True)
    (tmp_path / "data" / "d" / "samples").mkdir(parents=True)
    (tmp_path / "data" / "d" / "gold" / "refs.txt").write_text("a b c\nd e f\n")
    (tmp_path / "data" / "d" / "samples" / "sys.txt").write_text("a b c\nd e\n")
    (tmp_path / "bench.toml").write_text(
        '[report]\ntitle = "T \\\\end{document} 中"\ncharts = false\n[[dataset]]\nname = "d"\npath = "data/d"\n'
        '[[system]]\nname = "' + evil.replace("\\", "\\\\") + '"\nsamples = "data/d/samples/sys.txt"\n'
        '[[metric]]\nname = "distinct"\n',
        encoding="utf-8",
    )
    result, _ = compare(tmp_path / "bench.toml", out=tmp_path / "r", jobs=1)
    assert not result.failures, result.failures
    tex = (tmp_path / "r" / "report.tex").read_text(encoding="utf-8")
    assert r"\input{" not in tex and r"\textbackslash{}input\{/etc/passwd\}" in tex
    pdflatex(tmp_path / "r")


def _bench(tmp_path, systems: list[str], metrics: list[str]):
    """A compare config over one tiny dataset with these system names and metrics; its result."""
    from cotk_repro.compare import compare

    (tmp_path / "data" / "d" / "gold").mkdir(parents=True)
    (tmp_path / "data" / "d" / "samples").mkdir(parents=True)
    (tmp_path / "data" / "d" / "gold" / "refs.txt").write_text("a b c\nd e f\n")
    (tmp_path / "data" / "d" / "samples" / "sys.txt").write_text("a b c\nd e\n")
    toml = '[report]\ntitle = "[draft] * T"\ncharts = false\n[[dataset]]\nname = "d"\npath = "data/d"\n'
    for name in systems:
        quoted = name.replace("\\", "\\\\").replace('"', '\\"')
        toml += f'[[system]]\nname = "{quoted}"\nsamples = "data/d/samples/sys.txt"\n'
    toml += "".join(f'[[metric]]\nname = "{m}"\n' for m in metrics)
    (tmp_path / "bench.toml").write_text(toml, encoding="utf-8")
    result, _ = compare(tmp_path / "bench.toml", out=tmp_path / "r", jobs=1)
    assert not result.failures, result.failures
    return result


#: names LaTeX would read as the optional argument (or star) of the \\ or \midrule before their cell
TRAP_NAMES = ["[draft]", "*starred", "  [spaced", "中文", "\\input", "[", "*"]


@needs_pdflatex
@pytest.mark.parametrize(
    "systems, metrics",
    [(TRAP_NAMES, ["distinct"]), (TRAP_NAMES[:2], ["distinct", "bleu", "self-bleu"])],
    ids=["systems-as-rows", "systems-as-columns"],
)
def test_names_that_look_like_a_latex_argument_print_as_text_and_compile(tmp_path, systems, metrics):
    """A system named ``[draft]`` (or ``中文``, escaped as ``[U+4E2D][U+6587]``) right after ``\\midrule`` or
    ``\\\\`` was taken as that command's optional argument: "Missing number", and a run without -halt-on-error
    never ended. Every name, in a row's first cell or in the header, compiles and prints as text."""
    result = _bench(tmp_path, systems, metrics)
    transposed = len(result.all_columns()) > len(result.systems)
    assert transposed is (len(systems) == 2)  # both layouts are exercised
    tex = (tmp_path / "r" / "report.tex").read_text(encoding="utf-8")
    assert "{}[draft]" in tex and "{}*starred" in tex and "\\section*{{}[draft] * T}" in tex
    if not transposed:
        assert "{}[U+4E2D][U+6587]" in tex and "{}\\textbackslash{}input" in tex
        body = tex.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
        for line in body.strip().splitlines():  # no row begins with a bare [ or * (its \\ or \midrule would eat it)
            assert not line.lstrip().startswith(("[", "*")), line
    pdflatex(tmp_path / "r")


def test_escape_protects_only_what_a_preceding_command_could_take():
    from cotk_repro.compare.latex import escape

    assert escape("[x]") == "{}[x]" and escape(" *x") == "{} *x" and escape("中") == "{}[U+4E2D]"
    assert escape("\\x") == "{}\\textbackslash{}x" and escape("%x") == "{}\\%x"
    assert escape("a[x]") == "a[x]" and escape("x*") == "x*" and escape("") == ""


def test_newcomers_rough_edges_get_one_sentence_each(tmp_path, cli):
    (tmp_path / "data" / "d" / "gold").mkdir(parents=True)
    (tmp_path / "data" / "d" / "samples").mkdir(parents=True)
    (tmp_path / "data" / "d" / "gold" / "refs.txt").write_text("a b c\n")
    (tmp_path / "data" / "d" / "samples" / "s.txt").write_text("a b\n")
    body = '[[dataset]]\nname = "d"\npath = "data/d"\n[[metric]]\nname = "bleu"\n'
    (tmp_path / "typo.toml").write_text(body + "options = { ngramm = 2 }\n")
    res = cli("compare", "typo.toml", "--out", "r", cwd=tmp_path)
    assert res.returncode == 2 and "metric 'bleu' has no option 'ngramm' (did you mean 'ngram'?)" in res.stderr, res
    res = cli("compare", "data", cwd=tmp_path)
    assert res.returncode == 2 and "is a folder" in res.stderr, res
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + body.encode())
    res = cli("compare", "bom.toml", "--out", "r", cwd=tmp_path)
    assert res.returncode == 0, res
    (tmp_path / "h.txt").write_text("a b\n")
    res = cli(
        "evaluate",
        "--hyps",
        "h.txt",
        "--refs",
        "data/d/gold/refs.txt",
        "-m",
        "distinct",
        "-m",
        "bleu",
        "-o",
        "bleu.ngram=abc",
        cwd=tmp_path,
    )
    assert res.returncode == 2 and "metric 'bleu': ngram must be a whole number" in res.stderr, res
