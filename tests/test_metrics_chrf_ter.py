"""chrF / chrF++ and TER against sacrebleu itself (the reference implementation): corpus and sentence
values, multi-reference and non-ASCII text, every setting in the signature and the hash, facts, the CLI, the
Python API and compare."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from sacrebleu.metrics import CHRF, TER

from cotk_repro.metrics import MetricError, evaluate, get_metric
from cotk_repro.metrics.facts import facts_for_result_key, metric_facts

HYPS = [
    "The cat sat on the mat.",
    "Über den Wolken muss die Freiheit wohl grenzenlos sein",
    "猫がマットの上に座った。",
    "a dog, 12,500 people and $3.5 — well!",
    "",
    "Ein Haus am See",
]
REFS = [
    ["The cat is on the mat.", "A cat sat on a mat"],
    ["über den Wolken", "Die Freiheit über den Wolken"],
    ["猫はマットの上に座っていた。", "マットの上の猫"],
    ["A dog and 12.500 people, $3.50 well", "dog people"],
    ["nothing here", "empty hypothesis"],
    ["Ein Haus am See.", "Das Haus am See"],
]


def _texygen(fixtures_dir, n=400, k=3):
    d = fixtures_dir / "texygen"
    refs = d.joinpath("coco_test.txt").read_text().splitlines()
    hyps = d.joinpath("instances", "seq.txt").read_text().splitlines()[:n]
    rng = random.Random(1)
    return hyps, [[refs[i]] + rng.sample(refs, k - 1) for i in range(n)]


def _streams(refs):
    width = max(map(len, refs))
    return [[rs[j] if j < len(rs) else None for rs in refs] for j in range(width)]


CHRF_SETTINGS = [
    dict(),
    dict(word_order=2),
    dict(char_order=4, word_order=1, beta=1),
    dict(word_order=2, lowercase=True, whitespace=True),
    dict(eps_smoothing=True, word_order=2),
    dict(beta=3, char_order=2),
]
TER_SETTINGS = [
    dict(),
    dict(normalized=True),
    dict(no_punct=True),
    dict(case_sensitive=True),
    dict(normalized=True, asian_support=True, case_sensitive=True),
]


@pytest.mark.parametrize("settings", CHRF_SETTINGS)
def test_chrf_equals_sacrebleu_corpus_and_sentence(settings, fixtures_dir):
    for hyps, refs in (
        _texygen(fixtures_dir),
        (HYPS, REFS),
        (HYPS, [rs[:1] for rs in REFS]),
        (HYPS, [rs[: 1 + i % 2] for i, rs in enumerate(REFS)]),
    ):  # variable reference counts
        ours = get_metric("chrf", **settings)
        expected = CHRF(**settings).corpus_score(hyps, _streams(refs)).score / 100
        assert abs(ours.compute(hyps, refs)["chrf"] - expected) <= 1e-9
        sent = ours.sentence_scores(hyps[:40], refs[:40])
        for h, rs, s in zip(hyps, refs, sent):
            assert abs(s - CHRF(**settings).sentence_score(h, rs).score / 100) <= 1e-9


@pytest.mark.parametrize("settings", TER_SETTINGS)
def test_ter_equals_sacrebleu_corpus_and_sentence(settings, fixtures_dir):
    for hyps, refs in (
        _texygen(fixtures_dir, 150),
        (HYPS, REFS),
        (HYPS, [rs[: 1 + i % 2] for i, rs in enumerate(REFS)]),
    ):
        ours = get_metric("ter", **settings)
        expected = TER(**settings).corpus_score(hyps, _streams(refs)).score / 100
        assert abs(ours.compute(hyps, refs)["ter"] - expected) <= 1e-9
        for h, rs, s in zip(hyps[:30], refs[:30], ours.sentence_scores(hyps[:30], refs[:30])):
            assert abs(s - TER(**settings).sentence_score(h, rs).score / 100) <= 1e-9


def test_ter_is_unbounded_and_lower_is_better():
    r = get_metric("ter").compute(["a b c d e f g h"], [["x"]])
    assert r["ter"] == pytest.approx(8.0)  # 1 substitution + 7 deletions over 1 reference word
    assert get_metric("ter").compute(["same words"], [["same words"]])["ter"] == 0.0
    f = facts_for_result_key("ter")
    assert f.higher_is_better is False and f.value_range == (0.0, float("inf")) and f.check_value(8.0) is None
    c = facts_for_result_key("chrf")
    assert c.higher_is_better is True and c.value_range == (0.0, 1.0)
    assert metric_facts("chrf").level == metric_facts("ter").level == "corpus"


def test_signatures_name_every_setting():
    r = get_metric("chrf", word_order=2).compute(HYPS, REFS)
    assert r["chrf signature"] == "chrf|nc:6|nw:2|beta:2|case:mixed|eff:yes|ws:no|refs:2|v:1"
    r = get_metric("chrf", char_order=4, beta=1, lowercase=True, whitespace=True, eps_smoothing=True).compute(
        HYPS, [rs[: 1 + i % 2] for i, rs in enumerate(REFS)]
    )
    assert r["chrf signature"] == "chrf|nc:4|nw:0|beta:1|case:lc|eff:no|ws:yes|refs:var|v:1"
    r = get_metric("ter", normalized=True, no_punct=True, asian_support=True, case_sensitive=True).compute(
        HYPS, [rs[:1] for rs in REFS]
    )
    assert r["ter signature"] == "ter|case:mixed|tok:tercom|norm:yes|punct:no|asian:yes|refs:1|v:1"


def test_hash_covers_every_setting_and_the_references_not_their_order():
    def h(name, settings, hyps=HYPS, refs=REFS):
        return get_metric(name, **settings).compute(hyps, refs)[f"{name} hashvalue"]

    for name, options in (
        (
            "chrf",
            dict(
                char_order=[6, 3],
                word_order=[0, 2],
                beta=[2, 1],
                whitespace=[False, True],
                lowercase=[False, True],
                eps_smoothing=[False, True],
            ),
        ),
        (
            "ter",
            dict(
                normalized=[False, True],
                no_punct=[False, True],
                asian_support=[False, True],
                case_sensitive=[False, True],
            ),
        ),
    ):
        keys = list(options)
        hashes = {h(name, dict(zip(keys, combo))) for combo in itertools.product(*options.values())}
        assert len(hashes) == 2 ** len(keys), name  # every combination of settings: its own hash
        base = h(name, {})
        assert h(name, {}, HYPS[::-1], REFS[::-1]) == base  # sample order does not matter
        assert h(name, {}, ["other"] * len(HYPS)) == base  # the hypotheses are not hashed
        changed = [list(rs) for rs in REFS]
        changed[0][0] = "The cat is on the hat."
        assert h(name, {}, refs=changed) != base


def test_chrf_per_sentence_through_the_api():
    r = evaluate([("chrf", {"word_order": 2, "per_sentence": True}), "ter"], HYPS, REFS)
    assert r["chrf per-sentence"] == get_metric("chrf", word_order=2).sentence_scores(HYPS, REFS)
    assert set(r) >= {"chrf", "chrf hashvalue", "chrf signature", "ter", "ter hashvalue", "ter signature"}


@pytest.mark.parametrize(
    "name, options, hyps, refs, words",
    [
        ("chrf", {}, ["a", "b"], [["a"]], "2 hypotheses but 1 reference lists"),
        ("chrf", {}, [], [], "at least one hypothesis"),
        ("ter", {}, ["a"], [[]], "no reference"),
        ("chrf", {"word_order": -1}, ["a"], [["a"]], "word_order must be an integer"),
        ("chrf", {"lowercase": "no"}, ["a"], [["a"]], "lowercase must be true or false"),
        ("ter", {"normalized": 1}, ["a"], [["a"]], "normalized must be true or false"),
        ("chrf", {"char_order": 0}, ["a"], [["a"]], "char_order or word_order above 0"),
    ],
)
def test_bad_input_is_one_sentence(name, options, hyps, refs, words):
    with pytest.raises(MetricError, match=words):
        get_metric(name, **options).compute(hyps, refs)


def test_evaluate_command_and_metrics_listing(cli, tmp_path):
    (tmp_path / "h.txt").write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    (tmp_path / "r.jsonl").write_text("".join(json.dumps({"references": rs}) + "\n" for rs in REFS), encoding="utf-8")
    r = cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "h.txt"),
        "--refs",
        str(tmp_path / "r.jsonl"),
        "-m",
        "chrf",
        "-m",
        "ter",
        "-o",
        "chrf.word_order=2",
        "-o",
        "ter.case_sensitive=true",
        "--json",
    )
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    assert abs(out["chrf"] - CHRF(word_order=2).corpus_score(HYPS, _streams(REFS)).score / 100) <= 1e-9
    assert abs(out["ter"] - TER(case_sensitive=True).corpus_score(HYPS, _streams(REFS)).score / 100) <= 1e-9
    assert out["chrf signature"].startswith("chrf|nc:6|nw:2|") and "case:mixed" in out["ter signature"]
    (tmp_path / "short.txt").write_text("one\n")
    bad = cli(
        "evaluate", "--hyps", str(tmp_path / "short.txt"), "--refs", str(tmp_path / "r.jsonl"), "-m", "ter", "--json"
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stdout == ""
    listing = {m["name"]: m for m in json.loads(cli("metrics", "--json").stdout)}
    assert listing["chrf"]["higher_is_better"] is True and listing["chrf"]["value_range"] == [0.0, 1.0]
    assert listing["ter"]["higher_is_better"] is False and listing["ter"]["value_range"] == [0.0, None]
    assert "divided by 100" in listing["chrf"]["scale"] and "divided by 100" in listing["ter"]["scale"]
    assert {o["name"] for o in listing["chrf"]["options"]} >= {
        "char_order",
        "word_order",
        "beta",
        "whitespace",
        "lowercase",
        "eps_smoothing",
    }
    assert {o["name"] for o in listing["ter"]["options"]} >= {
        "normalized",
        "no_punct",
        "asian_support",
        "case_sensitive",
    }


def test_compare_ranks_chrf_up_and_ter_down(tmp_path):
    from cotk_repro.compare import compare
    from cotk_repro.compare.charts import ranked_systems

    refs = ["the cat sat on the mat", "a dog ran in the park today", "birds fly high over the hills"]
    good = ["the cat sat on a mat", "a dog ran in a park", "birds fly over the hills"]
    bad = ["cat", "the the the the the the park", "hills"]
    files = {
        "data/d/gold/refs.txt": "\n".join(refs) + "\n",
        "data/d/samples/good.txt": "\n".join(good) + "\n",
        "data/d/samples/bad.txt": "\n".join(bad) + "\n",
        "bench.toml": '[[dataset]]\nname = "d"\npath = "data/d"\n[[metric]]\nname = "chrf"\n'
        'options = { word_order = 2 }\n[[metric]]\nname = "ter"\n',
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    result, _ = compare(tmp_path / "bench.toml", jobs=1)
    assert not result.failures, result.failures
    streams = [refs]
    assert (
        abs(result.cell("good", "d", "chrf").value - CHRF(word_order=2).corpus_score(good, streams).score / 100) <= 1e-9
    )
    assert abs(result.cell("bad", "d", "ter").value - TER().corpus_score(bad, streams).score / 100) <= 1e-9
    assert ranked_systems(result, "chrf")[0][0] == "good"
    assert ranked_systems(result, "ter")[0][0] == "good"  # the lower TER ranks first


def test_corpus_statistics_equal_sacrebleus_also_with_dense_keys_and_empty_texts(fixtures_dir):
    """The numpy statistics (cotk_repro.metrics.chrf_stats) against sacrebleu's own per-sentence ones, with the
    key re-ranking forced at every order (what a large alphabet triggers) and with empty texts."""
    import numpy as np

    from cotk_repro.metrics import chrf_stats

    hyps, refs = _texygen(fixtures_dir, 60)
    hyps, refs = hyps + HYPS + ["", "x"], refs + REFS + [["", "y"], [""]]
    for settings in CHRF_SETTINGS:
        m = CHRF(**settings)
        expected = [m._extract_corpus_statistics([h], [[r]])[0] for h, rs in zip(hyps, refs) for r in rs]
        assert chrf_stats.chrf_statistics(m, hyps, refs).tolist() == expected
        real_sorted, real_order = chrf_stats.sorted_statistics, chrf_stats.order_statistics
        try:  # symbols re-ranked (a large alphabet), then keys too wide: one sort per order, re-ranked at every order
            for bits in (40, 1):
                chrf_stats.sorted_statistics = lambda *a, bits=bits, real_sorted=real_sorted, **k: real_sorted(
                    *a, **{**k, "key_bits": bits}
                )
                chrf_stats.order_statistics = lambda *a, real_order=real_order, **k: real_order(
                    *a, **{**k, "key_limit": 1}
                )
                assert chrf_stats.chrf_statistics(m, hyps, refs).tolist() == expected
        finally:
            chrf_stats.sorted_statistics, chrf_stats.order_statistics = real_sorted, real_order
        one_each = [rs[0] for rs in refs]
        single = [m._extract_corpus_statistics([h], [[r]])[0] for h, r in zip(hyps, one_each)]
        real_block = chrf_stats.PAIR_BLOCK
        try:  # one reference each: the kernel on blocks of pairs (sizes that cut the corpus unevenly)
            for block in (1, 7, 64):
                chrf_stats.PAIR_BLOCK = block
                assert chrf_stats.chrf_statistics(m, hyps, [[r] for r in one_each]).tolist() == single
        finally:
            chrf_stats.PAIR_BLOCK = real_block
    assert np.asarray(chrf_stats.chrf_statistics(CHRF(), [""], [[""]])).sum() == 0
    assert get_metric("chrf").compute([""], [[""]])["chrf"] == CHRF().corpus_score([""], [[""]]).score / 100


def test_one_sort_statistics_equal_one_sort_per_order_on_random_texts():
    """sorted_statistics (one sort for every order) against order_statistics (one per order) on random symbol
    strings: small and large alphabets, empty and short texts, one to three references, orders past the lengths."""
    import numpy as np

    from cotk_repro.metrics import chrf_stats

    rng = np.random.default_rng(7)
    for trial in range(60):
        n_hyps = int(rng.integers(1, 12))
        per = rng.integers(1, 4, n_hyps) if trial % 2 else np.ones(n_hyps, dtype=np.int64)
        owner = np.repeat(np.arange(n_hyps), per)
        lengths = rng.integers(0, 14, n_hyps + len(owner))
        alphabet = int(rng.choice([1, 2, 3, 30, 5000]))
        symbols = rng.integers(0, alphabet, int(lengths.sum())) * int(rng.choice([1, 97]))
        for order in (1, 2, 6, 9):
            fast = chrf_stats.sorted_statistics(symbols, lengths, order, n_hyps, owner)
            slow = chrf_stats.order_statistics(symbols, lengths, order, n_hyps, owner)
            if fast is not None:
                assert fast.tolist() == slow.tolist(), (trial, order)


def test_whitespace_table_is_str_split():
    """The corpus-at-once preparation removes exactly what ``str.split`` splits on, at every code point."""
    from cotk_repro.metrics import chrf_stats

    table = chrf_stats.space_table()
    assert [c for c in range(0x110000) if chr(c).isspace()] == [int(c) for c in table.nonzero()[0]]
    for texts in (
        ["a\u3000b\x1c c\u2028d", " \t", "", "x\u00a0y\u200bz", "(hi) there, you!"],
        ["a\x1cb\x1f c\x0bd\x0c", " \t", "", "x\ry", "(hi) there, you!"],
    ):  # the second: ASCII
        chars, words = chrf_stats.text_symbols(texts, False, True, CHRF()._remove_punctuation)
        assert chars[0].tolist() == [ord(c) for t in texts for c in "".join(t.split())]
        assert chars[1].tolist() == [len("".join(t.split())) for t in texts]
        assert words[1].tolist() == [len(CHRF()._remove_punctuation(t)) for t in texts]
