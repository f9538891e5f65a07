"""`cotk-repro compare`: reports over systems x datasets x metrics, comparability flags, failures, generators.

Small hand-made corpora. Test metrics come from a real plugin distribution (a dist-info folder with an
entry point in group ``cotk_repro`` on PYTHONPATH, found by importlib.metadata like any installed plugin);
values are checked against independent computations (hand counts, NLTK).
"""

from __future__ import annotations

import csv
import html as htmlmod
import json
import math
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_cli
from cotk_repro.canonical import hash_object
from cotk_repro.plugins import registry, reset_plugins

PLUGIN = '''
from cotk_repro.hookspecs import hookimpl
from cotk_repro.canonical import hash_object


class MeanLength:
    """Mean number of space-separated tokens per hypothesis. ``by_size``: the hash covers the sample count."""

    name = "toy-len"
    version = "1"

    def __init__(self, by_size=False):
        self.by_size = by_size
        self.settings = {"by_size": by_size}

    def compute(self, hypotheses, references=None):
        if any("BOOM" in h for h in hypotheses):
            raise RuntimeError("boom on purpose")
        value = sum(len(h.split()) for h in hypotheses) / len(hypotheses)
        key = {"metric": "toy-len", "n": len(hypotheses) if self.by_size else None, "refs": references}
        return {"toy-len": value, "toy-len hashvalue": hash_object(key)}


class Overlap:
    """Fraction of hypothesis tokens found in the hypothesis' own references (aligned); two keys."""

    name = "toy-overlap"
    version = "1"
    settings = {}

    def compute(self, hypotheses, references=None):
        hits = total = 0
        for h, refs in zip(hypotheses, references):
            vocab = {t for r in refs for t in r.split()}
            toks = h.split()
            total += len(toks)
            hits += sum(t in vocab for t in toks)
        h = hash_object({"metric": "toy-overlap", "refs": references})
        return {"overlap": hits / max(total, 1), "overlap hashvalue": h, "overlap signature": "overlap|v:1",
                "tokens": float(total), "tokens hashvalue": h}


class Upper:
    name = "upper"
    version = "3"
    batch_size = 2

    def __init__(self, fail_on=None):
        self.fail_on = fail_on
        self.settings = {"fail_on": fail_on}

    def generate(self, inputs):
        if self.fail_on and any(self.fail_on in x for x in inputs):
            raise RuntimeError("the model crashed")
        return [x.upper() for x in inputs]


@hookimpl
def register_metrics(register):
    register("toy-len", MeanLength)
    register("toy-overlap", Overlap)


@hookimpl
def register_generators(register):
    register("upper", Upper)
'''


def install_toy_plugin(site: Path) -> Path:
    site.mkdir(parents=True, exist_ok=True)
    (site / "cotk_compare_toy.py").write_text(PLUGIN, encoding="utf-8")
    dist = site / "cotk_compare_toy-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cotk-compare-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cotk_repro]\ncotk_compare_toy = cotk_compare_toy\n")
    return site


@pytest.fixture
def toy_site(tmp_path):
    """The toy plugin on sys.path (in-process) and PYTHONPATH (subprocesses)."""
    import importlib

    site = install_toy_plugin(tmp_path / "site")
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    reset_plugins()
    yield {"PYTHONPATH": str(site)}
    sys.path.remove(str(site))
    sys.modules.pop("cotk_compare_toy", None)
    reset_plugins()


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n") if name.endswith(".toml") else text, encoding="utf-8")
    return root


def read_csv(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


BASIC = {
    "data/news/gold/refs.txt": "the cat sat\na dog ran\nbirds fly high\n",
    "data/news/samples/alpha.txt": "the cat sat down\na dog\nbirds fly\n",
    "data/news/samples/beta.txt": "cat\nthe dog ran far away\nfish swim\n",
    "data/wiki/gold/refs.jsonl": '{"references": ["one two", "one three"]}\n{"references": ["four five six"]}\n',
    "data/wiki/samples/alpha.txt": "one two three\nfour six\n",
    "data/wiki/samples/beta.txt": "seven\nfour five six seven\n",
    "bench.toml": """
        [report]
        out = "reports"
        title = "basic"

        [[dataset]]
        name = "news"
        path = "data/news"

        [[dataset]]
        name = "wiki"
        path = "data/wiki"

        [[metric]]
        name = "toy-len"
        references = "none"

        [[metric]]
        name = "toy-overlap"
        """,
}


def overlap_by_hand(hyps: list[str], refs: list[list[str]]) -> float:
    hits = total = 0
    for h, rs in zip(hyps, refs):
        vocab = {t for r in rs for t in r.split()}
        total += len(h.split())
        hits += sum(t in vocab for t in h.split())
    return hits / total


def test_report_tables_values_and_hashes(tmp_path, toy_site):
    from cotk_repro.compare import compare

    root = write(tmp_path / "p", BASIC)
    result, files = compare(root / "bench.toml", jobs=1)
    out = root / "reports"
    assert not result.failures
    names = {f.name for f in files}
    for expected in ["metric-toy-len.csv", "metric-toy-len-hashes.csv", "metric-overlap.csv", "metric-tokens.csv",
                     "corpus-news.csv", "corpus-wiki.csv", "corpus-news-hashes.csv", "results.csv",
                     "results.json", "report.html", "chart-toy-len.png", "chart-overlap.png"]:
        assert expected in names and (out / expected).is_file(), expected
    # metric CSV: rows systems, columns datasets; values independently computed
    rows = read_csv(out / "metric-toy-len.csv")
    assert rows[0] == ["system", "news", "wiki"]
    assert [r[0] for r in rows[1:]] == ["alpha", "beta"]
    assert float(rows[1][1]) == pytest.approx((4 + 2 + 2) / 3)
    assert float(rows[2][2]) == pytest.approx((1 + 4) / 2)
    rows = read_csv(out / "metric-overlap.csv")
    news_refs = [["the cat sat"], ["a dog ran"], ["birds fly high"]]
    wiki_refs = [["one two", "one three"], ["four five six"]]
    assert float(rows[1][1]) == overlap_by_hand(["the cat sat down", "a dog", "birds fly"], news_refs)
    assert float(rows[2][2]) == overlap_by_hand(["seven", "four five six seven"], wiki_refs)
    # corpus CSV: rows systems, columns metric columns (a two-key metric gives two columns)
    rows = read_csv(out / "corpus-news.csv")
    assert rows[0] == ["system", "toy-len", "overlap", "tokens"]
    assert float(rows[2][3]) == 1 + 5 + 2
    # every cell keeps its hash: the hash of the references the metric saw
    hashes = read_csv(out / "corpus-wiki-hashes.csv")
    assert hashes[1][2] == hash_object({"metric": "toy-overlap", "refs": wiki_refs})
    assert hashes[1][1] == hash_object({"metric": "toy-len", "n": None, "refs": None})
    # long format: ranks within one group, best first
    long = {(r["system"], r["dataset"], r["column"]): r for r in csv.DictReader(open(out / "results.csv"))}
    assert long[("alpha", "news", "overlap")]["group"] == "A"
    a, b = float(long[("alpha", "news", "overlap")]["value"]), float(long[("beta", "news", "overlap")]["value"])
    assert (long[("alpha", "news", "overlap")]["rank"], long[("beta", "news", "overlap")]["rank"]) == (
        ("1", "2") if a > b else ("2", "1"))
    assert long[("alpha", "news", "overlap")]["signature"] == "overlap|v:1"
    data = json.loads((out / "results.json").read_text())
    assert data["conflicts"] == [] and data["failures"] == []
    assert (out / "chart-overlap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_incomparable_values_are_flagged_and_never_ranked_together(tmp_path, toy_site, cli):
    # toy-len(by_size) hashes the sample count: gamma has 2 lines, the others 3 -> two hash groups
    files = dict(BASIC)
    files["data/news/samples/gamma.txt"] = "one two three four five six seven eight\nnine\n"
    files["data/wiki/samples/gamma.txt"] = "x y\nz\n"
    files["bench.toml"] = """
        [[dataset]]
        name = "news"
        path = "data/news"

        [[metric]]
        name = "toy-len"
        options = { by_size = true }
        references = "none"
        """
    root = write(tmp_path / "p", files)
    res = cli("compare", str(root / "bench.toml"), "--json", "--jobs", "2", env=toy_site)
    assert res.returncode == 0, res
    data = json.loads(res.stdout)
    cells = {c["system"]: c for c in data["cells"]}
    # gamma's value (4.5) is the largest, but it is in its own group: ranked only there
    assert cells["gamma"]["value"] == 4.5 and cells["gamma"]["value"] > cells["alpha"]["value"]
    assert cells["gamma"]["hash"] != cells["alpha"]["hash"] == cells["beta"]["hash"]
    assert (cells["alpha"]["group"], cells["beta"]["group"], cells["gamma"]["group"]) == ("A", "A", "B")
    assert (cells["alpha"]["rank"], cells["beta"]["rank"], cells["gamma"]["rank"]) == (1, 2, 1)
    assert "not comparable" in cells["gamma"]["flag"] and cells["alpha"]["flag"] is None
    assert data["conflicts"] == [{"column": "toy-len", "dataset": "news"}]
    out = root / "reports"
    long = list(csv.DictReader(open(out / "results.csv")))
    assert {r["system"]: r["group"] for r in long} == {"alpha": "A", "beta": "A", "gamma": "B"}
    assert read_csv(out / "metric-toy-len-hashes.csv")[3][1] == cells["gamma"]["hash"]
    page = (out / "report.html").read_text()
    assert "Not comparable" in page and "[B]" in page
    # the chart ranks alpha and beta only; gamma is drawn apart as not ranked
    from cotk_repro.compare import analyze, evaluate_config, load_config
    from cotk_repro.compare.charts import ranked_systems

    result = evaluate_config(load_config(root / "bench.toml"), jobs=1)
    analyze(result)
    assert ranked_systems(result, "toy-len") == (["alpha", "beta"], ["gamma"])
    # the table printed on stdout marks the group
    res = cli("compare", str(root / "bench.toml"), "--jobs", "1", env=toy_site)
    assert res.returncode == 0 and "[B]" in res.stdout and "not comparable" in res.stdout


def test_failing_metric_and_failing_system_do_not_stop_the_others(tmp_path, toy_site, cli):
    files = dict(BASIC)
    files["data/news/samples/beta.txt"] = "cat\nBOOM goes the model\nfish swim\n"
    root = write(tmp_path / "p", files)
    (root / "data/wiki/samples/beta.txt").write_bytes(b"seven\n\xff\xfe broken\n")  # not UTF-8
    res = cli("compare", str(root / "bench.toml"), "--json", "--jobs", "2", env=toy_site)
    assert res.returncode == 1, res
    data = json.loads(res.stdout)
    cells = {(c["system"], c["dataset"], c["column"]): c for c in data["cells"]}
    assert cells[("beta", "news", "toy-len")]["error"] == "boom on purpose"
    assert cells[("beta", "news", "overlap")]["value"] is not None  # the other metric ran on that system
    assert "line 2 is not UTF-8" in cells[("beta", "wiki", "toy-len")]["error"]
    assert all(c["value"] is not None for k, c in cells.items() if k[0] == "alpha")
    assert {(f["system"], f["dataset"], f["metric"]) for f in data["failures"]} == {
        ("beta", "news", "toy-len"), ("beta", "wiki", "toy-len"), ("beta", "wiki", "toy-overlap")}
    assert "boom on purpose" in res.stderr and "Traceback" not in res.stderr
    page = (root / "reports" / "report.html").read_text()
    assert "Failures" in page and "boom on purpose" in page
    rows = read_csv(root / "reports" / "metric-toy-len.csv")
    assert rows[2][1] == "" and rows[1][1] != ""
    assert read_csv(root / "reports" / "metric-toy-len-hashes.csv")[2][1] == "error"


def test_generator_systems_are_cached_by_name_version_settings_and_input(tmp_path, toy_site):
    from cotk_repro.compare import compare

    files = {
        "data/d/gold/refs.txt": "a b c\nd e\nf g h\n",
        "data/d/inputs.txt": "a b\nd e\nf g\n",
        "bench.toml": """
            [report]
            cache = "cache"

            [[dataset]]
            name = "d"
            path = "data/d"

            [[system]]
            name = "copy"
            generator = "copy"

            [[system]]
            name = "upper"
            generator = "upper"
            format = { lowercase = true }

            [[metric]]
            name = "toy-overlap"
            """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert not result.failures
    assert result.generated == {("copy", "d"): "generated", ("upper", "d"): "generated"}
    expected = overlap_by_hand(["a b", "d e", "f g"], [["a b c"], ["d e"], ["f g h"]])
    assert result.cell("copy", "d", "overlap").value == expected == 1.0
    assert result.cell("upper", "d", "overlap").value == expected  # uppercased, lowercased back by its format
    cached = sorted((root / "cache").rglob("*.txt"))
    assert len(cached) == 2
    upper_out = next(p for p in cached if p.parent.name == "upper")
    assert upper_out.read_text() == "A B\nD E\nF G\n"
    meta = json.loads(upper_out.with_suffix(".json").read_text())
    assert meta["generator"] == "upper" and meta["version"] == "3" and meta["settings"] == {"fail_on": None}
    # unchanged -> reused; the cached file is what is scored
    upper_out.write_text("X Y\nX Y\nX Y\n")
    result, _ = compare(root / "bench.toml", jobs=1)
    assert result.generated == {("copy", "d"): "cache", ("upper", "d"): "cache"}
    assert result.cell("upper", "d", "overlap").value == 0.0
    # new settings -> new key; new inputs -> new key
    toml = (root / "bench.toml").read_text().replace('generator = "upper"', 'generator = "upper"\nsettings = { fail_on = "zzz" }')
    (root / "bench.toml").write_text(toml)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert result.generated == {("copy", "d"): "cache", ("upper", "d"): "generated"}
    (root / "data/d/inputs.txt").write_text("a b\nd e\nf h\n")
    result, _ = compare(root / "bench.toml", jobs=1)
    assert result.generated == {("copy", "d"): "generated", ("upper", "d"): "generated"}
    assert len(list((root / "cache").rglob("*.txt"))) == 5


def test_failing_generator_is_reported_and_the_rest_runs(tmp_path, toy_site):
    from cotk_repro.compare import compare

    files = {
        "data/d/gold/refs.txt": "a b c\nd e\nf g h\n",
        "data/d/inputs.txt": "a b\nd e\nf g\n",
        "bench.toml": """
            [report]
            cache = "cache"
            [[dataset]]
            name = "d"
            path = "data/d"
            [[system]]
            name = "crashy"
            generator = "upper"
            settings = { fail_on = "f g" }
            [[system]]
            name = "copy"
            generator = "copy"
            [[metric]]
            name = "toy-len"
            """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert [(f.system, f.metric) for f in result.failures] == [("crashy", None)]
    assert "the model crashed" in result.failures[0].message
    assert result.cell("crashy", "d", "toy-len").error == "no samples: the generator failed"
    assert result.cell("copy", "d", "toy-len").value == 2.0
    assert not list((root / "cache").rglob("upper/*.txt"))  # no half-written cache entry
    assert not [p for p in (root / "cache").rglob("*") if p.name.endswith(".tmp")]


def test_text_formats_strip_tags_separators_and_jsonl(tmp_path, toy_site):
    from cotk_repro.compare import compare

    files = {
        "data/d/gold/refs.txt": "The cat ||| A cat\nthe dog\n",
        "data/d/samples/s.txt": "<s> The CAT <eos> <pad> <pad>\nthe <b>dog</b> </s> runs <eos>\n",
        "bench.toml": """
            [formats.tagged]
            strip_tags = ["<eos>", "<pad>", "<s>"]
            strip_pattern = "</?b>"
            sentence_separator = "</s>"
            lowercase = true

            [[dataset]]
            name = "d"
            path = "data/d"
            gold_format = { reference_separator = "|||", lowercase = true }

            [[system]]
            name = "s"
            format = "tagged"

            [[metric]]
            name = "toy-len"
            references = "none"

            [[metric]]
            name = "toy-overlap"
            """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert not result.failures, result.failures
    # samples seen by the metric: "the cat" / "the dog runs"
    assert result.cell("s", "d", "toy-len").value == (2 + 3) / 2
    refs = [["the cat", "a cat"], ["the dog"]]
    assert result.cell("s", "d", "overlap").value == overlap_by_hand(["the cat", "the dog runs"], refs)
    assert result.cell("s", "d", "overlap").hash == hash_object({"metric": "toy-overlap", "refs": refs})


def test_text_format_normalizer_units():
    from cotk_repro.compare.textfmt import TextFormat, count_lines, normalizer

    n = normalizer(TextFormat(strip_tags=("<unk>",), sentence_separator="__eou__", lowercase=True))
    assert n("Hello <unk>  World __eou__ Bye") == "hello world bye"
    assert normalizer(TextFormat(reference_separator="\t")).references("a b\tc  d") == ["a b", "c d"]


def test_line_counting_streams_without_trailing_newline(tmp_path):
    from cotk_repro.compare.textfmt import count_lines, iter_lines

    for text, n in [("a\nb\n", 2), ("a\nb", 2), ("", 0), ("\n", 1), ("a\r\nb\r\n", 2)]:
        p = tmp_path / "f.txt"
        p.write_bytes(text.encode())
        assert count_lines(p) == n == len(list(iter_lines(p)))
    p.write_text("x\n" * 5000)
    assert count_lines(p) == 5000


def test_html_report_escapes_user_text(tmp_path, toy_site):
    from cotk_repro.compare import compare

    evil = "<script>alert(1)</script>"
    files = {
        "data/d/gold/refs.txt": "a\n",
        "data/d/samples/s.txt": "a\n",
        "bench.toml": f"""
            [report]
            title = "{evil} & co"
            [[dataset]]
            name = "d"
            path = "data/d"
            [[system]]
            name = "{evil}"
            samples = "data/d/samples/s.txt"
            [[metric]]
            name = "toy-len"
            """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    page = (root / "reports" / "report.html").read_text()
    assert "<script>" not in page
    assert htmlmod.escape(evil) in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert read_csv(root / "reports" / "metric-toy-len.csv")[1][0] == evil  # CSV keeps the name as is


def test_cli_json_help_and_jobs_agree(tmp_path, toy_site, cli):
    root = write(tmp_path / "p", BASIC)
    one = cli("compare", str(root / "bench.toml"), "--json", "--jobs", "1", "--out", str(tmp_path / "r1"),
              env=toy_site)
    two = cli("compare", str(root / "bench.toml"), "--json", "--jobs", "2", "--out", str(tmp_path / "r2"),
              env=toy_site)
    assert one.returncode == 0 and two.returncode == 0, (one, two)
    a, b = json.loads(one.stdout), json.loads(two.stdout)  # stdout is JSON only
    assert a["cells"] == b["cells"] and len(a["cells"]) == 2 * 2 * 3
    assert (tmp_path / "r1" / "metric-toy-len.csv").read_text() == (tmp_path / "r2" / "metric-toy-len.csv").read_text()
    assert not (root / "reports").exists()
    helptext = cli("compare", "--help").stdout
    for opt in ("--out", "--jobs", "--open", "--json"):
        assert opt in helptext


# -- real metrics, checked against NLTK ---------------------------------------------------------

def _need(*names):
    try:
        known = registry("metric")
    except Exception:  # noqa: BLE001
        known = {}
    missing = [n for n in names if n not in known]
    if missing:
        pytest.skip(f"metrics not registered yet: {missing}")


def test_real_bleu_and_distinct_through_compare_match_independent_values(tmp_path):
    _need("bleu", "distinct")
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

    from cotk_repro.compare import compare

    refs = ["the cat sat on the mat", "a dog ran in the park today", "birds fly high over the hills"]
    hyps = ["the cat sat on a mat", "a dog ran in a park", "birds fly over the hills"]
    files = {
        "data/d/gold/refs.txt": "\n".join(refs) + "\n",
        "data/d/samples/s.txt": "\n".join(h + " <eos> <pad>" for h in hyps) + "\n",
        "bench.toml": """
            [format]
            strip_tags = ["<eos>", "<pad>"]
            [[dataset]]
            name = "d"
            path = "data/d"
            [[metric]]
            name = "bleu"
            label = "bleu-2"
            options = { ngram = 2 }
            [[metric]]
            name = "distinct"
            """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert not result.failures, result.failures
    expected = corpus_bleu([[r.split()] for r in refs], [h.split() for h in hyps], weights=(0.5, 0.5),
                           smoothing_function=SmoothingFunction().method3)
    assert result.cell("s", "d", "bleu-2").value == pytest.approx(expected, abs=1e-12)
    assert result.cell("s", "d", "bleu-2").hash
    distinct = [c for c in result.cells if c.metric == "distinct"]
    assert distinct and all(c.hash for c in distinct)
