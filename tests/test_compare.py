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
from conftest import REPO_ROOT
from texygen_report import shares_the_report, texygen_report

from cotk_repro.core.canonical import hash_object
from cotk_repro.plugins import reset_plugins

PLUGIN = '''
from cotk_repro.hookspecs import hookimpl
from cotk_repro.core.canonical import hash_object


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


class Streamed:
    """CoTK-style forward/close metric that records how it was fed: lines, batches, the largest batch."""

    name = "toy-stream"
    version = "1"
    settings = {}

    def __init__(self):
        self.lines = self.batches = self.largest = self.ref_hits = 0

    def forward(self, batch):
        hyps = batch["hyps"]
        refs = batch.get("refs")
        self.lines += len(hyps)
        self.batches += 1
        self.largest = max(self.largest, len(hyps))
        if refs is not None:
            self.ref_hits += sum(h in r for h, r in zip(hyps, refs))

    def close(self):
        h = hash_object({"metric": "toy-stream"})
        return {"lines": float(self.lines), "lines hashvalue": h, "batches": float(self.batches),
                "batches hashvalue": h, "largest": float(self.largest), "largest hashvalue": h,
                "same": float(self.ref_hits), "same hashvalue": h}


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
    register("toy-stream", Streamed)


def make_reverse(sep=" "):
    """A generator that is a plain callable: text -> text."""
    def reverse(text):
        return sep.join(reversed(text.split()))
    return reverse


@hookimpl
def register_generators(register):
    register("upper", Upper)
    register("reverse-fn", make_reverse)
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
    for expected in [
        "metric-toy-len.csv",
        "metric-toy-len-hashes.csv",
        "metric-overlap.csv",
        "metric-tokens.csv",
        "corpus-news.csv",
        "corpus-wiki.csv",
        "corpus-news-hashes.csv",
        "results.csv",
        "results.json",
        "report.html",
        "chart-toy-len.png",
        "chart-overlap.png",
    ]:
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
        ("1", "2") if a > b else ("2", "1")
    )
    assert long[("alpha", "news", "overlap")]["signature"] == "overlap|v:1"
    data = json.loads((out / "results.json").read_text())
    assert data["conflicts"] == [] and data["failures"] == []
    assert (out / "chart-overlap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_incomparable_values_are_flagged_and_never_ranked_together(tmp_path, toy_site, cli):
    # toy-len(by_size) hashes the sample count: gamma has 2 lines, the others 3 -> two hash groups
    files = dict(BASIC)
    files["data/news/samples/gamma.txt"] = "one two three four five six seven eight\nnine\n"
    files["data/news/samples/beta.txt"] = "cat\nthe dog ran\nfish\n"
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
    assert cells[("beta", "news", "toy-len")]["error"] == "RuntimeError: boom on purpose"
    assert cells[("beta", "news", "overlap")]["value"] is not None  # the other metric ran on that system
    assert "line 2 is not UTF-8" in cells[("beta", "wiki", "toy-len")]["error"]
    assert all(c["value"] is not None for k, c in cells.items() if k[0] == "alpha")
    assert {(f["system"], f["dataset"], f["metric"]) for f in data["failures"]} == {
        ("beta", "news", "toy-len"),
        ("beta", "wiki", "toy-len"),
        ("beta", "wiki", "toy-overlap"),
    }
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
    toml = (
        (root / "bench.toml")
        .read_text()
        .replace('generator = "upper"', 'generator = "upper"\nsettings = { fail_on = "zzz" }')
    )
    (root / "bench.toml").write_text(toml)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert result.generated == {("copy", "d"): "cache", ("upper", "d"): "generated"}
    (root / "data/d/inputs.txt").write_text("a b\nd e\nf h\n")
    result, _ = compare(root / "bench.toml", jobs=1)
    assert result.generated == {("copy", "d"): "generated", ("upper", "d"): "generated"}
    assert len(list((root / "cache").rglob("*.txt"))) == 5


def test_a_plain_callable_generator_works_and_is_cached_by_its_settings(tmp_path, toy_site):
    from cotk_repro.compare import compare

    files = {
        "data/d/gold/refs.txt": "c b a\ne d\n",
        "data/d/inputs.txt": "a b c\nd e\n",
        "bench.toml": """
            [report]
            cache = "cache"
            [[dataset]]
            name = "d"
            path = "data/d"
            [[system]]
            name = "rev"
            generator = "reverse-fn"
            settings = { sep = " " }
            [[metric]]
            name = "toy-overlap"
            """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert not result.failures, result.failures
    out = next((root / "cache").rglob("*.txt"))
    assert out.read_text() == "c b a\ne d\n" and out.parent.name == "reverse-fn"
    meta = json.loads(out.with_suffix(".json").read_text())
    assert (meta["generator"], meta["settings"], meta["lines"]) == ("reverse-fn", {"sep": " "}, 2)
    assert result.cell("rev", "d", "overlap").value == 1.0
    result, _ = compare(root / "bench.toml", jobs=1)
    assert result.generated == {("rev", "d"): "cache"}


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


def test_metrics_with_forward_close_are_fed_in_batches(tmp_path, toy_site):
    from cotk_repro.compare import compare
    from cotk_repro.compare.engine import STREAM_BATCH

    n = 2 * STREAM_BATCH + 5
    gold = "".join(f"line {i}\n" for i in range(n))
    samples = "".join(f"line {i if i % 3 else -i}\n" for i in range(n))  # every third differs (but line 0)
    files = {
        "data/d/gold/refs.txt": gold,
        "data/d/samples/s.txt": samples,
        "bench.toml": """
                 [[dataset]]
                 name = "d"
                 path = "data/d"
                 [[metric]]
                 name = "toy-stream"
                 references = "aligned"
                 """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert not result.failures, result.failures
    value = {c.column: c.value for c in result.cells}
    assert value == {
        "lines": n,
        "batches": 3,
        "largest": STREAM_BATCH,
        "same": sum(1 for i in range(n) if i % 3 or i == 0),
    }


def test_sample_file_that_changes_length_after_the_checks_fails_only_its_cells(tmp_path, toy_site):
    from cotk_repro.compare import evaluate_config, load_config

    root = write(tmp_path / "p", BASIC)
    cfg = load_config(root / "bench.toml")
    (root / "data/news/samples/beta.txt").write_text("cat\n")  # 1 line now, gold has 3
    result = evaluate_config(cfg, jobs=1)
    failed = {(f.system, f.dataset, f.metric): f.message for f in result.failures}
    assert failed == {("beta", "news", "toy-overlap"): "the samples and the gold file have different numbers of lines"}
    assert result.cell("beta", "news", "toy-len").value == 1.0  # the reference-free metric still ran


def test_text_format_normalizer_units():
    from cotk_repro.text.textfmt import TextFormat, normalizer

    n = normalizer(TextFormat(strip_tags=("<unk>",), sentence_separator="__eou__", lowercase=True))
    assert n("Hello <unk>  World __eou__ Bye") == "hello world bye"
    assert normalizer(TextFormat(reference_separator="\t")).references("a b\tc  d") == ["a b", "c d"]


def test_line_counting_streams_without_trailing_newline(tmp_path):
    from cotk_repro.text.textfmt import count_lines, iter_lines

    for text, n in [("a\nb\n", 2), ("a\nb", 2), ("", 0), ("\n", 1), ("a\r\nb\r\n", 2)]:
        p = tmp_path / "f.txt"
        p.write_bytes(text.encode())
        assert count_lines(p) == n == len(list(iter_lines(p)))
    p.write_text("x\n" * 5000)
    assert count_lines(p) == 5000


def test_rerun_removes_files_of_columns_that_are_gone_and_keeps_others(tmp_path, toy_site):
    from cotk_repro.compare import compare

    root = write(tmp_path / "p", BASIC)
    compare(root / "bench.toml", jobs=1)
    out = root / "reports"
    (out / "notes.txt").write_text("mine")
    assert (out / "metric-overlap.csv").is_file()
    toml = (root / "bench.toml").read_text()
    (root / "bench.toml").write_text(toml[: toml.index('[[metric]]\nname = "toy-overlap"')])
    _, files = compare(root / "bench.toml", jobs=1)
    assert not (out / "metric-overlap.csv").exists() and not (out / "chart-tokens.png").exists()
    assert (out / "metric-toy-len.csv").is_file() and (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == sorted([f.name for f in files] + ["notes.txt"])


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
    one = cli("compare", str(root / "bench.toml"), "--json", "--jobs", "1", "--out", str(tmp_path / "r1"), env=toy_site)
    two = cli("compare", str(root / "bench.toml"), "--json", "--jobs", "2", "--out", str(tmp_path / "r2"), env=toy_site)
    assert one.returncode == 0 and two.returncode == 0, (one, two)
    a, b = json.loads(one.stdout), json.loads(two.stdout)  # stdout is JSON only
    assert "evaluating" not in one.stderr  # no progress bar when stderr is not a terminal
    assert a["cells"] == b["cells"] and len(a["cells"]) == 2 * 2 * 3
    assert (tmp_path / "r1" / "metric-toy-len.csv").read_text() == (tmp_path / "r2" / "metric-toy-len.csv").read_text()
    assert not (root / "reports").exists()
    helptext = cli("compare", "--help").stdout
    for opt in ("--out", "--jobs", "--open", "--json"):
        assert opt in helptext
    # the help explains the config format (tables, gold layout, the metric keys), brackets not eaten by markup
    for words in (
        "[report]",
        "[[dataset]]",
        "[[system]]",
        "[[metric]]",
        "gold/refs.jsonl",
        "samples/<system>.txt",
        "options = { ngram = 2 }",
        "references =",
        "generator = NAME",
        "strip_tags",
    ):
        assert words in " ".join(helptext.split()), words


def test_progress_bar_on_a_terminal_while_json_stays_clean(tmp_path, toy_site):
    """stderr on a real pseudo-terminal gets the progress bar; stdout (a pipe) gets JSON only."""
    import os
    import pty
    import subprocess

    root = write(tmp_path / "p", BASIC)
    leader, follower = pty.openpty()
    env = dict(os.environ, **toy_site, COLUMNS="100", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cotk_repro", "compare", str(root / "bench.toml"), "--json", "--jobs", "1"],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
        cwd=REPO_ROOT,
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    stdout = proc.stdout.read()
    assert proc.wait(timeout=120) == 0
    os.close(leader)
    assert b"evaluating" in seen
    assert json.loads(stdout)["schema"] == "cotk-repro/compare-report"


def test_open_launches_the_browser_on_the_html_report(tmp_path, toy_site, cli):
    # a real browser command via $BROWSER (what Python's webbrowser honours): it records the URL it was given
    root = write(tmp_path / "p", BASIC)
    seen = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(f"import sys\nopen({str(seen)!r}, 'a').write(sys.argv[1] + '\\n')\n")
    env = dict(toy_site, BROWSER=f"{sys.executable} {browser} %s", DISPLAY="")
    res = cli("compare", str(root / "bench.toml"), "--jobs", "1", "--open", env=env)
    assert res.returncode == 0, res
    assert seen.read_text().split() == [(root / "reports" / "report.html").resolve().as_uri()]
    res = cli("compare", str(root / "bench.toml"), "--jobs", "1", env=env)
    assert res.returncode == 0 and len(seen.read_text().split()) == 1  # without --open nothing is opened


# -- real metrics, checked against NLTK ---------------------------------------------------------


def _need(*names):
    """Skip unless every named metric is registered and can be built (its implementation module imports)."""
    from cotk_repro.metrics import get_metric

    missing = []
    for name in names:
        try:
            get_metric(name)
        except Exception:
            missing.append(name)
    if missing:
        pytest.skip(f"metrics not available yet: {missing}")


def test_real_bleu_through_compare_matches_nltk_corpus_bleu(tmp_path):
    _need("bleu")
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
            """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert not result.failures, result.failures
    expected = corpus_bleu(
        [[r.split()] for r in refs],
        [h.split() for h in hyps],
        weights=(0.5, 0.5),
        smoothing_function=SmoothingFunction().method3,
    )
    assert result.cell("s", "d", "bleu-2").value == pytest.approx(expected, abs=1e-12)
    assert result.cell("s", "d", "bleu-2").hash
    assert result.config.metrics[0].references == "aligned"


def test_set_and_reference_free_bleu_family_through_compare_match_nltk(tmp_path):
    """fw-bw-bleu gets the whole gold set (not aligned, other length), self-bleu no references: NLTK by hand."""
    _need("fw-bw-bleu", "self-bleu")
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    from cotk_repro.compare import compare

    gold = [
        "a man rides a horse",
        "two dogs play in the snow",
        "a plate of food on a table",
        "a man is riding a brown horse",
        "a cat sleeps on the bed",
    ]
    hyps = ["a man rides a brown horse", "a dog plays in snow", "a plate of food", "a cat on the bed"]
    files = {
        "data/d/gold/refs.txt": "\n".join(gold) + "\n",
        "data/d/samples/s.txt": "\n".join(hyps) + "\n",
        "bench.toml": """
                 [[dataset]]
                 name = "d"
                 path = "data/d"
                 [[metric]]
                 name = "fw-bw-bleu"
                 label = "{key}-3"
                 options = { ngram = 3 }
                 [[metric]]
                 name = "self-bleu"
                 options = { ngram = 2 }
                 """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    assert not result.failures, result.failures
    assert [m.references for m in result.config.metrics] == ["set", "none"]
    smooth = SmoothingFunction().method1
    tok = [s.split() for s in gold], [s.split() for s in hyps]

    def mean_bleu(sents, refs, n, leave_out=False):
        w = tuple(1.0 / n for _ in range(n))
        scores = [
            sentence_bleu(
                [r for j, r in enumerate(refs) if not (leave_out and j == i)], s, w, smoothing_function=smooth
            )
            for i, s in enumerate(sents)
        ]
        return sum(scores) / len(scores)

    fw, bw = mean_bleu(tok[1], tok[0], 3), mean_bleu(tok[0], tok[1], 3)
    assert result.cell("s", "d", "fw-bleu-3").value == pytest.approx(fw, abs=1e-12)
    assert result.cell("s", "d", "bw-bleu-3").value == pytest.approx(bw, abs=1e-12)
    assert result.cell("s", "d", "fw-bw-bleu-3").value == pytest.approx(2 * fw * bw / (fw + bw), abs=1e-12)
    assert result.cell("s", "d", "self-bleu").value == pytest.approx(mean_bleu(tok[1], tok[1], 2, True), abs=1e-12)
    assert all(c.hash and c.group == "A" for c in result.cells)


def test_real_self_bleu_on_sets_of_different_sizes_is_not_ranked_together(tmp_path):
    """Self-BLEU grows with the set size (docs/spec.md section 5): a system with fewer samples gets another hash, its own group."""
    _need("self-bleu")
    from cotk_repro.compare import compare

    lines = [
        "a man rides a horse",
        "a man rides a brown horse",
        "a dog runs on the beach",
        "a dog runs",
        "two cats sleep on a bed",
        "a cat sleeps on the bed",
    ]
    files = {
        "data/d/samples/six.txt": "\n".join(lines) + "\n",
        "data/d/samples/six-b.txt": "\n".join(reversed(lines)) + "\n",
        "data/d/samples/four.txt": "\n".join(lines[:4]) + "\n",
        "data/d/gold/refs.txt": "unused\n",
        "bench.toml": """
                 [[dataset]]
                 name = "d"
                 path = "data/d"
                 [[metric]]
                 name = "self-bleu"
                 options = { ngram = 2 }
                 """,
    }
    root = write(tmp_path / "p", files)
    result, _ = compare(root / "bench.toml", jobs=1)
    cells = {c.system: c for c in result.cells}
    assert cells["six"].hash == cells["six-b"].hash != cells["four"].hash
    assert cells["six"].value == pytest.approx(cells["six-b"].value, abs=1e-12)  # order never matters
    assert (cells["six"].group, cells["four"].group) == ("A", "B")
    assert (cells["six"].rank, cells["six-b"].rank, cells["four"].rank) == (1, 1, 1)  # tie; four ranked alone
    assert "not comparable" in cells["four"].flag


def test_progress_is_reported_for_every_task(tmp_path, toy_site):
    from cotk_repro.compare import evaluate_config, load_config
    from cotk_repro.compare.engine import count_tasks

    root = write(tmp_path / "p", BASIC)
    cfg = load_config(root / "bench.toml")
    calls = []
    evaluate_config(cfg, jobs=2, on_progress=lambda done, total: calls.append((done, total)))
    total = count_tasks(cfg)
    assert total == 2 * 2 * 2  # systems x datasets x metric entries
    assert calls == [(i, total) for i in range(1, total + 1)]


# -- built-in generators --------------------------------------------------------------------------


def test_builtin_generators_copy_and_ngram():
    from cotk_repro.plugins import get_component

    copy = get_component("generator", "copy")(lowercase=True, max_tokens=2)
    assert copy.generate(["The Cat Sat", "A"]) == ["the cat", "a"]
    inputs = ["a cat sat on the mat", "a dog sat on the rug", "the cat ran", "a dog ran on the mat"] * 3
    ngram = get_component("generator", "ngram")
    out = ngram(order=2, seed=3).generate(inputs)
    assert len(out) == len(inputs) and out == ngram(order=2, seed=3).generate(inputs)
    assert out != ngram(order=2, seed=4).generate(inputs)

    # every bigram it emits, sentence boundaries included, exists in the inputs
    def bigrams(s):
        toks = ["<s>"] + s.split() + ["</s>"]
        return set(zip(toks, toks[1:]))

    seen = set().union(*(bigrams(s) for s in inputs))
    for s in out:
        assert s and bigrams(s) <= seen, s
    assert max(len(s.split()) for s in ngram(order=1, seed=0, max_length=3).generate(inputs)) <= 3
    with pytest.raises(ValueError):
        ngram(order=0)
    assert ngram(order=3).settings == {"order": 3, "seed": 0, "max_length": 30}


# -- the Texygen example against its committed reference report -----------------------------------

TEXYGEN = REPO_ROOT / "examples" / "texygen"


def _example_metrics() -> set[str]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    return {m["name"] for m in tomllib.loads((TEXYGEN / "benchmark.toml").read_text(encoding="utf-8"))["metric"]}


REGENERATE = (
    "if a metric changed on purpose, regenerate the reference: cotk-repro compare "
    "examples/texygen/benchmark.toml --out examples/texygen/reference-report"
)


def _reference_rows() -> dict[tuple[str, str, str], dict[str, str]]:
    with open(TEXYGEN / "reference-report" / "results.csv", newline="", encoding="utf-8") as fh:
        return {(r["system"], r["dataset"], r["column"]): r for r in csv.DictReader(fh)}


def test_texygen_reference_report_matches_a_fresh_run_for_one_system(fixtures_dir):
    """The committed numbers and hashes of one system (TextGAN, the smallest) recomputed from the data."""
    from cotk_repro.compare import evaluate_config, load_config

    _need(*_example_metrics())
    cfg = load_config(TEXYGEN / "benchmark.toml")
    cfg.systems = [s for s in cfg.systems if s.name == "textgan"]
    result = evaluate_config(cfg, jobs=2)
    assert not result.failures, result.failures
    ref = _reference_rows()
    assert {k for k in ref if k[0] == "textgan"} == {(c.system, c.dataset, c.column) for c in result.cells}
    for c in result.cells:
        r = ref[(c.system, c.dataset, c.column)]
        assert c.hash == r["hash"] and len(c.hash) == 64, (c.column, REGENERATE)
        assert math.isclose(c.value, float(r["value"]), rel_tol=0, abs_tol=1e-12), (
            c.column,
            c.value,
            r["value"],
            REGENERATE,
        )
    # the committed distinct and entropy values checked against a count by hand on the sample file
    from nltk.tokenize import WordPunctTokenizer

    tokenize = WordPunctTokenizer().tokenize  # the metrics' fixed tokenizer, NLTK's own implementation
    sents = [
        tokenize(line)
        for line in (fixtures_dir / "texygen" / "instances" / "textgan.txt").read_text(encoding="utf-8").splitlines()
    ]
    committed = {k[2]: float(r["value"]) for k, r in ref.items() if k[0] == "textgan"}
    for n in (1, 2, 3):
        grams = [tuple(t[i : i + n]) for t in sents for i in range(len(t) - n + 1)]
        counts: dict[tuple, int] = {}
        for g in grams:
            counts[g] = counts.get(g, 0) + 1
        assert committed[f"distinct-{n}"] == pytest.approx(len(counts) / len(grams), abs=1e-12)
        entropy = -sum(c / len(grams) * math.log(c / len(grams)) for c in counts.values())
        assert committed[f"ngram-entropy-{n}"] == pytest.approx(entropy, abs=1e-9)


@pytest.mark.slow
@shares_the_report
def test_texygen_example_reproduces_its_reference_report(tmp_path_factory, fixtures_dir):
    _need(*_example_metrics())
    # the whole example compared once per test process, shared with test_compare_paper.py (tests/texygen_report.py)
    result, files, out = texygen_report(tmp_path_factory)
    assert not result.failures, result.failures
    assert sorted(result.systems) == sorted(p.stem for p in (fixtures_dir / "texygen" / "instances").glob("*.txt"))
    ref = _reference_rows()
    assert len(ref) == len(result.cells)
    for c in result.cells:
        r = ref[(c.system, c.dataset, c.column)]
        assert c.hash == r["hash"], (c.system, c.column, REGENERATE)
        assert math.isclose(c.value, float(r["value"]), rel_tol=0, abs_tol=1e-12), (c.system, c.column, REGENERATE)
        assert c.group == "A"  # one gold set, one setting per column: everything comparable
        assert str(c.rank) == r["rank"]
    names = {f.name for f in files}
    assert "report.html" in names and "corpus-coco.csv" in names and any(n.startswith("chart-") for n in names)
    # the committed wide tables: the same hashes exactly; values within 1e-12 (the last bits of means may differ
    # between machines' math libraries)
    assert read_csv(out / "corpus-coco-hashes.csv") == read_csv(TEXYGEN / "reference-report" / "corpus-coco-hashes.csv")
    fresh, committed = (read_csv(p / "corpus-coco.csv") for p in (out, TEXYGEN / "reference-report"))
    assert fresh[0] == committed[0] and [r[0] for r in fresh] == [r[0] for r in committed]
    for a, b in zip(fresh[1:], committed[1:]):
        assert all(math.isclose(float(x), float(y), rel_tol=0, abs_tol=1e-12) for x, y in zip(a[1:], b[1:]))
