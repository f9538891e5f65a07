"""Every metric declares its facts on its own class, and every consumer reads them from there.

The expected table below is written from the metrics' definitions (papers / docs/metrics.md), not from
the code: a wrong fact on a class, or a consumer that keeps its own table, fails here.
"""

from __future__ import annotations

import json
import math
import textwrap

import pytest

from cotk_repro.metrics import get_metric
from cotk_repro.metrics.facts import facts_for_result_key, metric_facts

INF = math.inf
#: name -> (higher_is_better, value range, reference mode, level, result keys produced by default)
TRUTH = {
    "bleu": (True, (0, 1), "aligned", "corpus", ["bleu"]),
    "self-bleu": (False, (0, 1), "none", "sentence", ["self-bleu"]),
    "fw-bw-bleu": (True, (0, 1), "set", "sentence", ["fw-bleu", "bw-bleu", "fw-bw-bleu"]),
    "perplexity": (False, (1, INF), "none", "corpus", ["perplexity"]),
    "distinct": (True, (0, 1), "none", "corpus", ["distinct-1", "distinct-2"]),
    "ngram-entropy": (True, (0, INF), "none", "corpus", ["ngram-entropy-1", "ngram-entropy-2", "ngram-entropy-3"]),
    "fw-rv-ppl": (False, (1, INF), "set", "corpus", ["fw-ppl", "rv-ppl"]),
    "rouge": (True, (0, 1), "aligned", "sentence", ["rouge-1", "rouge-2", "rouge-l"]),
    "nist": (True, (0, INF), "aligned", "corpus", ["nist"]),
    "meteor": (True, (0, 1), "aligned", "sentence", ["meteor"]),
}

HYPS = [
    "a man rides a brown horse",
    "a dog plays in the snow",
    "a plate of food on the table",
    "a cat sleeps on the bed",
]
REFS = [
    ["a man is riding a horse"],
    ["two dogs play in the snow"],
    ["a plate of food on a table"],
    ["a cat sleeps on a bed"],
]


def _result(name: str) -> dict:
    if name == "perplexity":
        m = get_metric("perplexity", frequent=["a", "b", "c"], rare=[])
        lp = [math.log(0.25)] * 3  # "a", "b" then <eos>, each at probability 1/4
        return m.compute_lists([["a", "b"]], [lp])
    metric = get_metric(name)
    refs = None if TRUTH[name][2] == "none" else REFS
    return metric.compute(HYPS, refs)


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_each_builtin_declares_its_true_facts(name):
    hib, (lo, hi), refs, level, _ = TRUTH[name]
    f = metric_facts(name)
    assert f is not None
    assert (f.higher_is_better, f.value_range, f.references, f.level) == (hib, (lo, hi), refs, level)
    assert f.cost > 0


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_every_result_key_a_metric_returns_finds_its_facts(name):
    """The keys a metric really returns match its ``result_keys``, and each value lies in its declared range."""
    result = _result(name)
    keys = [k for k in result if not k.endswith((" hashvalue", " signature"))]
    assert keys == TRUTH[name][4]
    for key in keys:
        f = facts_for_result_key(key)
        assert f is not None, key
        assert f.higher_is_better is TRUTH[name][0], key
        assert f.check_value(result[key]) is None, (key, result[key])


def test_unknown_key_has_no_facts_and_values_are_checked():
    assert facts_for_result_key("no-such-metric") is None
    assert facts_for_result_key("bleu-2") is None  # a compare column label is not a result key
    ppl = facts_for_result_key("perplexity")
    assert ppl.check_value(0.5) and "outside its range" in ppl.check_value(0.5)
    assert ppl.check_value(float("nan")) and ppl.check_value(True)
    assert ppl.check_value(12.5) is None


def test_metrics_json_lists_every_metric_with_facts_and_options(cli):
    r = cli("metrics", "--json")
    assert r.returncode == 0, r
    items = {m["name"]: m for m in json.loads(r.stdout)}
    assert set(TRUTH) <= set(items)
    for name, (hib, (lo, hi), refs, level, _) in TRUTH.items():
        m = items[name]
        assert m["higher_is_better"] is hib
        assert m["value_range"] == [lo, None if hi == INF else hi]
        assert m["needs_references"] is (refs != "none")
        assert m["references"] == refs and m["level"] == level
        assert m["plugin"] == "cotk_repro.builtins.metrics" or m["plugin"]
    bleu_opts = {o["name"]: o for o in items["bleu"]["options"]}
    assert bleu_opts["ngram"] == {"name": "ngram", "default": 4, "required": False}
    assert "sample" in {o["name"] for o in items["self-bleu"]["options"]}
    table = cli("metrics")
    assert table.returncode == 0 and "self-bleu" in table.stdout and "lower" in table.stdout


def test_compare_reads_direction_reference_mode_and_cost_from_the_metric(tmp_path):
    """Self-BLEU is lower-is-better in compare too: the repetitive system ranks last."""
    from cotk_repro.compare import compare

    root = tmp_path / "p"
    (root / "data/d/samples").mkdir(parents=True)
    (root / "data/d/gold").mkdir(parents=True)
    (root / "data/d/gold/refs.txt").write_text("\n".join(r[0] for r in REFS) + "\n")
    (root / "data/d/samples/varied.txt").write_text("\n".join(HYPS) + "\n")
    (root / "data/d/samples/repeats.txt").write_text("\n".join(["a man rides a brown horse"] * 4) + "\n")
    (root / "bench.toml").write_text(
        textwrap.dedent("""
        [[dataset]]
        name = "d"
        path = "data/d"
        [[metric]]
        name = "self-bleu"
        options = { ngram = 2 }
        [[metric]]
        name = "bleu"
        [[metric]]
        name = "fw-bw-bleu"
        """)
    )
    result, _ = compare(root / "bench.toml", jobs=1)
    specs = {m.name: m for m in result.config.metrics}
    assert specs["self-bleu"].higher_is_better is False and specs["self-bleu"].references == "none"
    assert specs["fw-bw-bleu"].references == "set" and specs["bleu"].references == "aligned"
    assert specs["fw-bw-bleu"].cost > specs["self-bleu"].cost > specs["bleu"].cost
    cells = {c.system: c for c in result.cells if c.metric == "self-bleu"}
    assert cells["repeats"].value > cells["varied"].value
    assert (cells["varied"].rank, cells["repeats"].rank) == (1, 2)
