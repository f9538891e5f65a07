"""`compare` draws the texygen systems' training curves (result keys ``NAME@epoch-N``) from real tiny runs.

Two models are trained by the ``texygen`` generator at toy sizes (seconds on a CPU); the expected number
of points per line comes from the settings (one evaluation per generator epoch), not from compare's output.
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

# as its siblings: run as a file of its own (pytest plugins/cotk-repro-texygen/tests/...), tests/conftest.py's skip of
# an absent plugin's tests is not loaded, and the module fixture failed on the unknown generator instead
pytest.importorskip(
    "cotk_repro_texygen", reason="the cotk-repro-texygen plugin is not installed (scripts/setup.sh installs it)"
)

SETTINGS = {"mle": (4, 2), "seqgan": (3, 1)}  # model -> (pre_gen_epochs, adv_epochs); eval_every = 1
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def curves_report(tmp_path_factory):
    from cotk_repro.compare import compare

    root = tmp_path_factory.mktemp("texygen-curves")
    (root / "data" / "gold").mkdir(parents=True)
    (root / "data" / "gold" / "refs.txt").write_text("1 2 3 4\n5 6 7 8\n" * 8, encoding="utf-8")
    (root / "data" / "inputs.txt").write_text("x\n" * 16, encoding="utf-8")
    systems = "".join(
        f'[[system]]\nname = "{m.upper()}"\ngenerator = "texygen"\n'
        f'settings = {{ model = "{m}", preset = "tiny", pre_gen_epochs = {pre}, adv_epochs = {adv}, '
        f"eval_every = 1 }}\n"
        for m, (pre, adv) in SETTINGS.items()
    )
    (root / "bench.toml").write_text(
        '[report]\ntitle = "curves"\njobs = 1\n[[dataset]]\nname = "oracle"\npath = "data"\n'
        + systems
        + '[[metric]]\nname = "distinct"\n',
        encoding="utf-8",
    )
    result, files = compare(root / "bench.toml", out=root / "r", jobs=1)
    assert not result.failures, result.failures
    return result, root / "r"


def test_compare_draws_one_curve_figure_per_metric_with_one_line_per_system(curves_report):
    result, out = curves_report
    assert sorted(result.curves) == ["embsim", "nll-oracle", "nll-test"]
    for name in result.curves:
        for fmt, magic in (("svg", b"<?xml"), ("pdf", b"%PDF"), ("png", b"\x89PNG")):
            assert (out / f"curve-{name}.{fmt}").read_bytes().startswith(magic), (name, fmt)
    svg = (out / "curve-nll-oracle.svg").read_text(encoding="utf-8")
    root = ET.fromstring(svg)
    comments = set(re.findall(r"<!-- (.+?) -->", svg))  # matplotlib keeps each text's string in a comment
    for model, (pre, adv) in SETTINGS.items():
        assert model.upper() in comments  # the legend names the system
        line = root.find(f".//{SVG}g[@id='curve-{model.upper()}']")
        assert line is not None, model
        markers = line.findall(f".//{SVG}use")
        assert len(markers) == pre + adv, (model, len(markers))  # one point per evaluated epoch
    # the points are the values the generator's own training reported, in epoch order
    rows = list(csv.DictReader((out / "curves.csv").open(encoding="utf-8")))
    mle = [r for r in rows if r["metric"] == "nll-oracle" and r["system"] == "MLE"]
    assert [int(r["epoch"]) for r in mle] == list(range(1, 7))


def test_the_tables_show_final_values_and_never_an_epoch_column(curves_report):
    result, out = curves_report
    assert all("@epoch" not in c for c in result.all_columns())
    for name in ("report.html", "report.tex", "corpus-oracle.csv", "results.csv"):
        text = (out / name).read_text(encoding="utf-8")
        assert "@epoch" not in text.replace("NAME@epoch-N", ""), name
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'href="curve-nll-oracle.svg"' in html and 'href="curve-nll-oracle.pdf"' in html
    tex = (out / "report.tex").read_text(encoding="utf-8")
    assert r"\includegraphics[width=\linewidth]{{curve-nll-oracle}.pdf}" in tex


@pytest.mark.skipif(
    shutil.which("pdflatex") is None, reason="pdflatex is not installed (Debian texlive-latex-recommended)"
)
def test_report_tex_with_curve_figures_compiles(curves_report):
    _, out = curves_report
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "report.tex"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert (out / "report.pdf").read_bytes().startswith(b"%PDF")


def test_a_cached_generation_still_has_its_curves(curves_report, tmp_path):
    from cotk_repro.compare import compare

    result, out = curves_report
    again, _ = compare(out.parent / "bench.toml", out=tmp_path / "again", jobs=1)
    assert set(again.generated.values()) == {"cache"}
    assert again.curves == result.curves
