"""Intervals and paired significance tests (docs/metrics.md, "Significance and intervals"), against their peers.

* BLEU (``tokenizer=13a``), chrF, chrF++ and TER (one reference and several; TER's options): the score, bootstrap
  mean, 95% half-width and p-value equal sacrebleu's own ``PairedTest`` on the same inputs, ours being fractions
  (sacrebleu's bootstrap sums its statistics in float32, so its mean and half-width carry float32 rounding: compared
  to 2e-7 on our scale, 2e-5 on sacrebleu's; the scores and p-values exactly). One test runs sacrebleu's defaults
  (10,000 randomization trials); the others give both sides the same smaller count.
* The interval of one system equals sacrebleu's ``corpus_score(..., n_bootstrap=1000)``.
* Every other kind: the same draws give the same numbers as recomputing the metric on each resample (the metric
  itself on the resampled lists for corpus BLEU in NLTK's configuration, rouge-score for ROUGE, NLTK's METEOR).
* Properties (hypothesis): a system against itself gets p = 1 and an interval holding its score; two copies of one
  system get identical intervals.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.resampling import (
    ItemStatistics,
    bootstrap_indices,
    draw_counts,
    item_statistics,
    resampled_values,
    score_with_items,
)
from cotk_repro.metrics.significance import add_intervals, paired_test

FIXTURES = Path(__file__).parent / "fixtures"
N = 60  # items: enough that no two resamples tie by accident, few enough for sacrebleu's Python loops


@pytest.fixture(scope="module")
def corpus():
    """References (two streams) and three systems' outputs: COCO captions and three Texygen generators."""
    fixtures_dir = FIXTURES
    refs = (fixtures_dir / "texygen" / "coco_test.txt").read_text().splitlines()
    streams = [refs[:N], refs[N : 2 * N]]
    systems = [
        (fixtures_dir / "texygen" / "instances" / f"{name}.txt").read_text().splitlines()[:N]
        for name in ("mle", "seq", "rank")
    ]
    return streams, systems


def per_hypothesis(streams):
    return [list(rs) for rs in zip(*streams)]


def sacrebleu_rows(systems, metric, streams, method, samples):
    named = [(f"s{i}", hyps) for i, hyps in enumerate(systems)]
    _, scores = PairedTest(named, {"m": metric}, streams, test_type=method, n_samples=samples)()
    (key,) = [k for k in scores if k != "System"]
    return scores[key]


def assert_equal_to_sacrebleu(ours, theirs, method):
    assert len(ours) == len(theirs)
    for mine, peer in zip(ours, theirs):
        assert mine.score * 100 == pytest.approx(peer.score, abs=1e-9)
        assert mine.p_value == peer.p_value  # exactly: the same draws, the same counts
        if method == "bs":
            assert mine.mean * 100 == pytest.approx(peer.mean, abs=2e-5)
            assert mine.ci * 100 == pytest.approx(peer.ci, abs=2e-5)
        else:
            assert mine.mean is None and mine.ci is None


CASES = [
    ("bleu", {"tokenizer": "13a"}, lambda: BLEU()),
    ("bleu", {"tokenizer": "13a", "denominators": "sacrebleu"}, lambda: BLEU()),
    ("chrf", {}, lambda: CHRF()),
    ("chrf", {"word_order": 2}, lambda: CHRF(word_order=2)),
    ("chrf", {"eps_smoothing": True, "lowercase": True}, lambda: CHRF(eps_smoothing=True, lowercase=True)),
    ("ter", {}, lambda: TER()),
    ("ter", {"normalized": True, "case_sensitive": True}, lambda: TER(normalized=True, case_sensitive=True)),
    ("ter", {"no_punct": True, "asian_support": True}, lambda: TER(no_punct=True, asian_support=True)),
]


@pytest.mark.parametrize("n_refs", [1, 2])
@pytest.mark.parametrize("name,options,peer", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_paired_bootstrap_equals_sacrebleu(corpus, name, options, peer, n_refs):
    streams, systems = corpus
    streams = streams[:n_refs]
    rows = paired_test(
        get_metric(name, **options),
        per_hypothesis(streams),
        ("s0", systems[0]),
        [("s1", systems[1]), ("s2", systems[2])],
        method="bs",
    )
    assert_equal_to_sacrebleu(rows, sacrebleu_rows(systems, peer(), streams, "bs", 1000), "bs")


@pytest.mark.parametrize("name,options,peer", [CASES[0], CASES[3], CASES[6]], ids=["bleu", "chrf++", "ter"])
def test_approximate_randomization_equals_sacrebleu(corpus, name, options, peer):
    streams, systems = corpus
    rows = paired_test(
        get_metric(name, **options),
        per_hypothesis(streams),
        ("s0", systems[0]),
        [("s1", systems[1]), ("s2", systems[2])],
        method="ar",
        samples=300,
    )
    assert_equal_to_sacrebleu(rows, sacrebleu_rows(systems, peer(), streams, "ar", 300), "ar")


def test_approximate_randomization_at_sacrebleus_defaults(corpus):
    """10,000 trials, seed 12345: sacrebleu's ``--paired-ar`` as it runs by default."""
    streams, systems = corpus
    rows = paired_test(
        get_metric("chrf"), per_hypothesis(streams[:1]), ("s0", systems[0]), [("s1", systems[1])], method="ar"
    )
    assert_equal_to_sacrebleu(rows, sacrebleu_rows(systems[:2], CHRF(), streams[:1], "ar", 0), "ar")


@pytest.mark.parametrize("name,options,peer", [CASES[0], CASES[2], CASES[5]], ids=["bleu", "chrf", "ter"])
def test_interval_equals_sacrebleu_corpus_score_with_bootstrap(corpus, name, options, peer):
    streams, systems = corpus
    metric = get_metric(name, **options)
    result, items = score_with_items(metric, systems[1], per_hypothesis(streams))
    assert result == metric.compute(systems[1], per_hypothesis(streams))  # one pass, the same result
    for key, stats in items.items():  # ... and the same statistics as resampling alone gives
        assert np.array_equal(stats.stats, item_statistics(metric, systems[1], per_hypothesis(streams))[key].stats)
    result = add_intervals(result, items)
    theirs = peer().corpus_score(systems[1], streams, n_bootstrap=1000)
    assert result[f"{name} ci"]["mean"] * 100 == pytest.approx(theirs._mean, abs=2e-5)
    assert result[f"{name} ci"]["half_width"] * 100 == pytest.approx(theirs._ci, abs=2e-5)
    assert result[f"{name} ci"]["samples"] == 1000 and result[f"{name} ci"]["seed"] == 12345
    assert result[f"{name} signature"].endswith("|bs:1000|seed:12345")
    assert result[f"{name} hashvalue"] == metric.compute(systems[1], per_hypothesis(streams))[f"{name} hashvalue"]
    json.dumps(result)  # plain floats and ints, never numpy's


# -- every other kind: the same draws, the metric recomputed on each resample


def _resamples(n, rows=12, seed=12345):
    return bootstrap_indices(n, 1000, seed)[:rows]


def _drawn(items: ItemStatistics, idx):
    return resampled_values(draw_counts(idx, len(items)), items)


@pytest.mark.parametrize(
    "options", [{}, {"smoothing": "method1", "ngram": 3}, {"smoothing": "method2"}, {"smoothing": "method0"}]
)
def test_bleu_resamples_equal_the_metric_recomputed(corpus, options):
    """NLTK's configuration (WordPunct, max(1, n-grams) denominators) and several references: a resample's value is
    the metric's own value of the resampled lists (a drawn twice sentence counts twice)."""
    streams, systems = corpus
    refs = per_hypothesis(streams)
    metric = get_metric("bleu", **options)
    idx = _resamples(N)
    drawn = _drawn(item_statistics(metric, systems[0], refs)["bleu"], idx)
    for row, value in zip(idx, drawn):
        again = metric.compute([systems[0][i] for i in row], [refs[i] for i in row])["bleu"]
        assert value == pytest.approx(again, rel=1e-12, abs=1e-15)


def test_gleu_resamples_equal_nltk_corpus_gleu_recomputed(corpus):
    from nltk.translate.gleu_score import corpus_gleu

    from cotk_repro.text.reference_hashes import bleu_tokenize

    streams, systems = corpus
    refs = per_hypothesis(streams)
    items = item_statistics(get_metric("gleu"), systems[0], refs)["gleu"]
    idx = _resamples(N, rows=4)
    for row, value in zip(idx, _drawn(items, idx)):
        again = corpus_gleu(
            [[bleu_tokenize(r) for r in refs[i]] for i in row], [bleu_tokenize(systems[0][i]) for i in row]
        )
        assert value == pytest.approx(again, rel=1e-12)


def test_rouge_resamples_equal_rouge_score_recomputed(corpus):
    from rouge_score import rouge_scorer

    streams, systems = corpus
    refs = per_hypothesis(streams)
    items = item_statistics(get_metric("rouge", types=["rouge1", "rougeL"]), systems[0], refs)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"])
    idx = _resamples(N)
    peer = [scorer.score_multi(rs, h) for h, rs in zip(systems[0], refs)]
    for rtype, key in (("rouge1", "rouge-1"), ("rougeL", "rouge-l")):
        for row, value in zip(idx, _drawn(items[key], idx)):
            assert value == pytest.approx(np.mean([peer[i][rtype].fmeasure for i in row]), rel=1e-12)


def test_meteor_resamples_equal_nltk_recomputed(corpus):
    from nltk.translate.meteor_score import meteor_score

    from cotk_repro.text.reference_hashes import bleu_tokenize

    class NoSynonyms:
        def synsets(self, word):
            return []

    streams, systems = corpus
    refs = per_hypothesis(streams[:1])
    items = item_statistics(get_metric("meteor", wordnet=False), systems[0], refs)["meteor"]
    per_item = [
        meteor_score([bleu_tokenize(r) for r in rs], bleu_tokenize(h), wordnet=NoSynonyms())
        for h, rs in zip(systems[0], refs)
    ]
    idx = _resamples(N)
    for row, value in zip(idx, _drawn(items, idx)):
        assert value == pytest.approx(np.mean([per_item[i] for i in row]), rel=1e-9)


@pytest.mark.parametrize(
    "name,options",
    [
        ("bleu", {}),
        ("bleu", {"smoothing": "method4"}),
        ("rouge", {"types": ["rouge2", "rougeLsum"]}),
        ("meteor", {"wordnet": False}),
    ],
)
def test_one_pass_gives_the_metrics_result_and_the_same_statistics(corpus, name, options):
    """compare and evaluate --ci score and collect statistics in one pass: the result is the metric's, to the bit."""
    streams, systems = corpus
    refs = per_hypothesis(streams)
    metric = get_metric(name, **options)
    result, items = score_with_items(metric, systems[2], refs)
    assert result == metric.compute(systems[2], refs)
    if options.get("smoothing") == "method4":
        assert items == {}  # no interval for NLTK's corpus-only smoothing, and no error either
        return
    alone = item_statistics(metric, systems[2], refs)
    assert set(items) == set(alone) and all(np.array_equal(items[k].stats, alone[k].stats) for k in items)


def test_accuracy_resamples_equal_the_share_right():
    preds = ["a", "b", "a", "c", "a", "b", "b", "a"] * 5
    labels = ["a", "b", "b", "c", "c", "b", "a", "a"] * 5
    items = item_statistics(get_metric("accuracy"), preds, labels)["accuracy"]
    idx = _resamples(len(preds))
    for row, value in zip(idx, _drawn(items, idx)):
        assert value == pytest.approx(
            get_metric("accuracy").compute([preds[i] for i in row], [labels[i] for i in row])["accuracy"]
        )


def test_a_metric_without_interval_says_why():
    with pytest.raises(MetricError, match="has no interval: a set-level value"):
        paired_test(get_metric("self-bleu"), None, ("b", ["a b c", "c d e"]), [("s", ["a b", "b c"])])
    with pytest.raises(MetricError, match="smoothing method4 has no interval"):
        item_statistics(get_metric("bleu", smoothing="method4"), ["a b c d"], [["a b c d"]])


def test_every_registered_metric_declares_its_resampling():
    from cotk_repro.metrics.facts import describe_metrics
    from cotk_repro.protocols import RESAMPLINGS

    described = {d["name"]: d for d in describe_metrics()}
    for name, d in described.items():
        assert "error" not in d, d
        assert d["resampling"] in RESAMPLINGS
        assert (d["no_interval"] is None) == (d["resampling"] != "none"), name
    assert {n for n, d in described.items() if d["resampling"] != "none"} >= {"bleu", "chrf", "ter", "rouge", "meteor"}


def test_a_broken_declaration_is_refused_at_registration():
    from cotk_repro.metrics import Metric
    from cotk_repro.protocols import contract_problem

    class Claims(Metric):
        resampling = "statistics"

        def compute(self, hypotheses, references=None):
            return {"x": 1.0}

    class NoReason(Claims):
        resampling = "none"
        no_interval = " "

    class Unknown(Claims):
        resampling = "jackknife"

    assert "does not implement resample_statistics()" in contract_problem("metric", "x", Claims)
    assert "without a reason" in contract_problem("metric", "x", NoReason)
    assert "'jackknife', not one of statistics, values, none" in contract_problem("metric", "x", Unknown)


# -- properties


_words = st.lists(st.sampled_from("the a cat dog sat on mat red blue ran .".split()), min_size=0, max_size=9)
_corpus = st.lists(st.tuples(_words, _words), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=_corpus, name=st.sampled_from(["bleu", "chrf", "ter", "rouge"]), method=st.sampled_from(["bs", "ar"]))
def test_a_system_against_itself_gets_p_one_and_an_interval_holding_its_score(pairs, name, method):
    hyps = [" ".join(h) for h, _ in pairs]
    refs = [[" ".join(r)] for _, r in pairs]
    try:
        metric = get_metric(name)
        rows = paired_test(metric, refs, ("b", hyps), [("copy", list(hyps))], method=method, samples=200)
    except MetricError:
        return  # an input the metric refuses (ROUGE's all-empty texts are scored; chrF's empty corpus is not)
    for row in rows:
        if row.system == "copy":
            assert row.p_value == 1.0
        if method == "bs":
            assert (
                row.mean - row.ci - 1e-12 <= row.score <= row.mean + row.ci + 1e-12
                or row.ci == 0
                and abs(row.mean - row.score) < 1e-9
            )
    base = [r for r in rows if r.system == "b"]
    copy = [r for r in rows if r.system == "copy"]
    assert [(r.score, r.mean, r.ci) for r in base] == [(r.score, r.mean, r.ci) for r in copy]


def test_sacrebleu_calls_a_system_significantly_different_from_itself_and_we_do_not():
    """The one deliberate difference: sacrebleu counts resampled differences strictly above the observed one, so two
    copies of one system get ``1 / (samples + 1)``; here they get 1 (nothing differs on any item)."""
    hyps = ["the cat sat on the mat", "a dog ran", "hello world there you"] * 5
    refs = [["the cat sat on a mat"], ["the dog ran"], ["hello world here you are"]] * 5
    theirs = sacrebleu_rows([hyps, list(hyps)], BLEU(), [[r[0] for r in refs]], "bs", 200)
    assert theirs[1].p_value == pytest.approx(1 / 201)
    ours = paired_test(get_metric("bleu", tokenizer="13a"), refs, ("b", hyps), [("c", list(hyps))], samples=200)
    assert ours[1].p_value == 1.0 and (ours[1].mean, ours[1].ci) == (ours[0].mean, ours[0].ci)


# -- the commands


@pytest.fixture(scope="module")
def files(corpus, tmp_path_factory):
    streams, systems = corpus
    root = tmp_path_factory.mktemp("significance")
    (root / "refs.jsonl").write_text("".join(json.dumps({"references": rs}) + "\n" for rs in per_hypothesis(streams)))
    paths = []
    for i, hyps in enumerate(systems):
        paths.append(root / f"s{i}.txt")
        paths[-1].write_text("\n".join(hyps) + "\n")
    return root, paths


def test_significance_command_json_and_table_equal_sacrebleu(corpus, files):
    from conftest import run_cli

    streams, systems = corpus
    root, paths = files
    args = ["significance", "--refs", str(root / "refs.jsonl"), "--baseline", str(paths[0])]
    args += ["--systems", str(paths[1]), str(paths[2]), "-m", "bleu", "-o", "bleu.tokenizer=13a"]
    out = run_cli(*args, "--json")
    assert out.returncode == 0, out
    got = json.loads(out.stdout)
    assert [(g["system"], g["metric"]) for g in got] == [(str(p), "bleu") for p in paths]
    assert set(got[0]) == {"system", "metric", "score", "mean", "ci", "p_value"} and got[0]["p_value"] is None
    theirs = sacrebleu_rows(systems, BLEU(), streams, "bs", 1000)
    for mine, peer in zip(got, theirs):
        assert mine["score"] * 100 == pytest.approx(peer.score, abs=1e-9) and mine["p_value"] == peer.p_value
        assert mine["ci"] * 100 == pytest.approx(peer.ci, abs=2e-5)
    table = run_cli(*args, "--method", "ar", "--samples", "300", "--seed", "7")
    assert table.returncode == 0, table
    assert "bleu|n:4|smooth:m3|tok:13a" in table.stdout and "|refs:2|v:1|ar:300|seed:7" in table.stdout
    assert "Approximate randomization (Riezler & Maxwell 2005): 300 trials" in " ".join(table.stdout.split())
    refused = run_cli(
        "significance",
        "--refs",
        str(root / "refs.jsonl"),
        "--baseline",
        str(paths[0]),
        "--systems",
        str(paths[1]),
        "-m",
        "self-bleu",
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.strip().count("\n") == 0 and "has no interval and no paired test" in refused.stderr


def test_evaluate_ci_adds_the_interval_and_signs_it(corpus, files):
    from conftest import run_cli

    streams, systems = corpus
    root, paths = files
    out = run_cli(
        "evaluate",
        "--hyps",
        str(paths[1]),
        "--refs",
        str(root / "refs.jsonl"),
        "-m",
        "chrf",
        "-m",
        "distinct",
        "--ci",
        "--json",
    )
    assert out.returncode == 0, out
    result = json.loads(out.stdout)
    theirs = CHRF().corpus_score(systems[1], streams, n_bootstrap=1000)
    assert result["chrf"] * 100 == pytest.approx(theirs.score, abs=1e-9)
    assert result["chrf ci"]["mean"] * 100 == pytest.approx(theirs._mean, abs=2e-5)
    assert result["chrf ci"]["half_width"] * 100 == pytest.approx(theirs._ci, abs=2e-5)
    assert result["chrf ci"]["samples"] == 1000 and result["chrf ci"]["seed"] == 12345
    assert result["chrf signature"].endswith("|refs:2|v:1|bs:1000|seed:12345")
    assert "distinct-1 ci" not in result and not result["distinct-1 signature"].endswith("seed:12345")
    from cotk_repro.metrics.files import evaluate_files

    plain = evaluate_files(paths[1], root / "refs.jsonl", ["chrf"])
    assert plain["chrf hashvalue"] == result["chrf hashvalue"]  # the interval never enters the hash
    other = evaluate_files(paths[1], root / "refs.jsonl", ["chrf"], ci=(200, 7))
    assert other["chrf ci"]["samples"] == 200 and other["chrf ci"]["seed"] == 7
    assert other["chrf signature"].endswith("|bs:200|seed:7")


# -- compare: intervals per cell, tests against the baseline, the best cluster


def _compare_project(root: Path, corpus, baseline: str | None = "s0") -> Path:
    streams, systems = corpus
    (root / "data" / "d" / "gold").mkdir(parents=True)
    (root / "data" / "d" / "samples").mkdir()
    (root / "data" / "d" / "gold" / "refs.txt").write_text("\n".join(streams[0]) + "\n")
    for i, hyps in enumerate(systems):
        (root / "data" / "d" / "samples" / f"s{i}.txt").write_text("\n".join(hyps) + "\n")
    (root / "data" / "d" / "samples" / "s0-copy.txt").write_text("\n".join(systems[0]) + "\n")
    base = f'baseline = "{baseline}"\n' if baseline else ""
    config = root / "benchmark.toml"
    config.write_text(
        f'[report]\nout = "reports"\ncharts = false\n\n[[dataset]]\nname = "d"\npath = "data/d"\n{base}\n'
        '[[metric]]\nname = "chrf"\n\n[[metric]]\nname = "distinct"\n'
    )
    return config


def test_compare_marks_what_is_significant_against_the_baseline(corpus, tmp_path):
    from cotk_repro.compare import evaluate_config, load_config, write_report
    from cotk_repro.metrics.significance import holm_bonferroni

    streams, systems = corpus
    cfg = load_config(_compare_project(tmp_path, corpus))
    result = evaluate_config(cfg, jobs=1)
    files = write_report(result)
    cells = {c.system: c for c in result.cells if c.column == "chrf"}
    # the same draws as the significance command: the same p-values
    rows = paired_test(
        get_metric("chrf"),
        [[r] for r in streams[0]],
        ("s0", systems[0]),
        [("s1", systems[1]), ("s2", systems[2]), ("s0-copy", systems[0])],
    )
    by = {r.system: r for r in rows}
    for name in ("s1", "s2", "s0-copy"):
        assert cells[name].p_value == by[name].p_value
        assert (cells[name].mean, cells[name].ci) == pytest.approx((by[name].mean, by[name].ci), rel=1e-12)
    others = [s for s in result.systems if s != "s0"]
    assert [cells[s].p_holm for s in others] == holm_bonferroni([cells[s].p_value for s in others])
    assert cells["s0-copy"].p_value == 1.0 and (cells["s0-copy"].mean, cells["s0-copy"].ci) == (
        cells["s0"].mean,
        cells["s0"].ci,
    )
    assert cells["s0"].p_value is None and cells["s0"].significant is None
    assert all(c.significant == (c.p_holm < 0.05) for c in cells.values() if c.p_holm is not None)
    best = max(cells.values(), key=lambda c: c.value)
    assert best.best and cells["s0-copy"].best == cells["s0"].best
    assert all(c.ci is None for c in result.cells if c.metric == "distinct")  # a set-level metric: no interval
    data = json.loads((cfg.out / "results.json").read_text())
    assert data["significance"]["correction"] == "Holm-Bonferroni" and data["significance"]["baselines"] == {"d": "s0"}
    assert (cfg.out / "results.csv").read_text().splitlines()[0].endswith(",p_value,p_holm,significant,best")
    tex = (cfg.out / "report.tex").read_text()
    assert r"$\pm$" in tex and "Holm-Bonferroni" in tex
    assert "significantly different from the baseline s0" in tex
    assert tex.count("$^{*}$") == 1 + sum(bool(c.significant) for c in cells.values())  # the note, then each cell
    assert "± " in (cfg.out / "report.html").read_text()
    assert len(files) > 3


def test_compare_without_intervals_writes_the_report_as_before(corpus, tmp_path):
    from cotk_repro.compare import evaluate_config, load_config, write_report

    cfg = load_config(_compare_project(tmp_path, corpus, baseline=None))
    result = evaluate_config(cfg, jobs=1)
    write_report(result)
    assert all(c.resampled is None and "ci" not in c.as_dict() for c in result.cells)
    assert "significance" not in json.loads((cfg.out / "results.json").read_text())
    assert (cfg.out / "results.csv").read_text().splitlines()[0].endswith(",flag,error")


def test_compare_refuses_a_baseline_that_is_not_a_system(corpus, tmp_path):
    from cotk_repro.compare import load_config
    from cotk_repro.errors import CotkError

    with pytest.raises(CotkError, match=r"benchmark\.toml:8: the baseline 'nobody' of dataset 'd' is not one of its"):
        load_config(_compare_project(tmp_path, corpus, baseline="nobody"))


def test_an_interval_travels_from_the_result_dict_into_the_record(tmp_path):
    """``evaluate --ci --json`` is a result dict: ``save_result`` and the record keep each ``KEY ci`` as the result's
    ``ci`` (the dashboard shows it); a malformed one is refused with one sentence."""
    from cotk_repro.core.results import normalize_results, read_result_file, save_result
    from cotk_repro.errors import RunError
    from cotk_repro.records.view import Result

    metric = get_metric("chrf")
    hyps, refs = ["a cat sat on the mat", "the dog ran"], [["the cat sat on the mat"], ["a dog ran"]]
    result = add_intervals(*score_with_items(metric, hyps, refs), 200, 3)
    saved = read_result_file(save_result(result, tmp_path / "result.json"))["results"]["chrf"]
    assert saved["ci"] == result["chrf ci"] and Result.of(saved).ci == {
        "mean": result["chrf ci"]["mean"],
        "half_width": result["chrf ci"]["half_width"],
    }
    assert "ci" not in normalize_results(metric.compute(hyps, refs))["results"]["chrf"]
    with pytest.raises(RunError, match="the interval of 'chrf' must be an object with numbers"):
        normalize_results({**result, "chrf ci": {"mean": 0.5, "half_width": -1}})


class _ScriptedJudge:
    """TEST DOUBLE: a judge answering each prompt by a fixed rule (no model); the settings a pinned ``hf`` judge
    declares, with fake digests."""

    name, pinned, batch_size = "scripted", True, 4

    def __init__(self):
        self.settings = {"weights_sha256": "a" * 64, "tokenizer_sha256": "b" * 64, "max_new_tokens": 4}
        self.settings["do_sample"] = False

    def generate(self, prompts):
        # a verdict that depends on the texts: A when response A is the longer, B when shorter, a tie else, and an
        # unparsable answer for one prompt in seven
        out = []
        for p in prompts:
            a = p.split("Response A: ", 1)[1].split("\n", 1)[0]
            b = p.split("Response B: ", 1)[1].split("\n", 1)[0]
            out.append(
                "???"
                if (len(a) * 7 + len(b)) % 7 == 3
                else "A"
                if len(a) > len(b)
                else "B"
                if len(a) < len(b)
                else "tie"
            )
        return out


def test_llm_pairwise_win_rate_resamples_equal_the_metric_recomputed(corpus):
    """The win rate's items (each item's score, unparsable ones left out): a resample's value is the metric on the
    resampled items, judged again; the judge is asked once for the value and its statistics together."""
    pytest.importorskip("cotk_repro_lm")
    streams, systems = corpus
    queries = [f"describe picture {i}" for i in range(N)]
    metric = get_metric("llm-pairwise", judge=_ScriptedJudge(), baseline=systems[0])
    result, items = score_with_items(metric, systems[1], None, queries)
    assert (
        result["llm-pairwise"]
        == get_metric("llm-pairwise", judge=_ScriptedJudge(), baseline=systems[0]).compute(systems[1], queries=queries)[
            "llm-pairwise"
        ]
    )
    idx = _resamples(N, rows=5)
    for row, value in zip(idx, _drawn(items["llm-pairwise"], idx)):
        again = get_metric("llm-pairwise", judge=_ScriptedJudge(), baseline=[systems[0][i] for i in row]).compute(
            [systems[1][i] for i in row], queries=[queries[i] for i in row]
        )["llm-pairwise"]
        assert value == pytest.approx(again, rel=1e-12)
    with pytest.raises(MetricError, match="needs the queries the hypotheses answer"):
        item_statistics(metric, systems[1], None)


def test_bleu_sentence_counts_one_reference_kernel_equals_the_general_one_and_each_sentence(corpus):
    """BLEU's per-sentence counts with one reference each come from chrF's one-sort kernel: equal to the general
    path (each reference given twice takes it) and to corpus_counts of each sentence alone, <unk> never matching."""
    from cotk_repro.metrics.bleu import corpus_counts, sentence_counts

    streams, systems = corpus
    hyps = [h.split() + (["<unk>"] if i % 5 == 0 else []) for i, h in enumerate(systems[1])]
    refs = [[r.split() + (["<unk>"] if i % 7 == 0 else [])] for i, r in enumerate(streams[0])]
    fast = sentence_counts(hyps, refs, 4)
    assert np.array_equal(fast, sentence_counts(hyps, [r + r for r in refs], 4))
    for i in range(0, N, 6):
        nums, dens, h, r = corpus_counts([hyps[i]], [refs[i]], 4)
        assert fast[i].tolist() == [h, r, *nums, *dens]
