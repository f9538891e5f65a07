"""CIDEr-D against pycocoevalcap's ``Cider`` on the repo's COCO caption fixtures, its hash, facts and errors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.cider import cider_scores
from cotk_repro.metrics.facts import metric_facts

pytest.importorskip("pycocoevalcap", reason="pycocoevalcap (a test dependency) is not installed")
from pycocoevalcap.cider import cider_scorer
from pycocoevalcap.cider.cider import Cider

FIXTURES = Path(__file__).parent / "fixtures" / "texygen"


def _captions(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()


def _corpus(n: int, seed: int = 0, refs_per: int = 5) -> tuple[list[str], list[list[str]]]:
    """Hypotheses from coco_test; references drawn from coco_train, with near copies of the hypothesis
    mixed in (so that high-order n-grams match and the length penalty matters)."""
    test, train = _captions("coco_test.txt"), _captions("coco_train.txt")
    rng = random.Random(seed)
    hyps, refs = test[:n], []
    for h in hyps:
        rs = rng.sample(train, refs_per)
        words = h.split()
        if rng.random() < 0.6 and len(words) > 2:
            cut = rng.randrange(1, len(words))
            rs[rng.randrange(refs_per)] = " ".join(words[:cut] + rng.choice(train).split()[:3] + words[cut:])
        if rng.random() < 0.2:
            rs[rng.randrange(refs_per)] = h
        refs.append(rs)
    return hyps, refs


def _pycoco(hyps, refs, n=4, sigma=6.0):
    """pycocoevalcap's values. Its ``Cider`` class always counts n-grams up to 4 (``Cider(n=2)`` fails), so
    other orders go through its ``CiderScorer`` with the documents cooked at that order."""
    if n == 4:
        score, scores = Cider(n=n, sigma=sigma).compute_score(
            {i: r for i, r in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)}
        )
    else:
        scorer = cider_scorer.CiderScorer(n=n, sigma=sigma)
        for h, rs in zip(hyps, refs):
            scorer.crefs.append(cider_scorer.cook_refs(rs, n))
            scorer.ctest.append(cider_scorer.cook_test(h, n))
        score, scores = scorer.compute_score()
    return float(score), [float(s) for s in scores]


@pytest.mark.parametrize("n,sigma", [(4, 6.0), (4, 3.0), (4, 12.5), (1, 6.0), (2, 6.0), (3, 6.0)])
def test_equals_pycocoevalcap_on_coco_fixtures(n, sigma):
    hyps, refs = _corpus(600, seed=n)
    expected, expected_each = _pycoco(hyps, refs, n, sigma)
    assert expected > 0.3  # the near copies make the comparison meaningful
    ours = get_metric("cider", ngram=n, sigma=sigma).compute(hyps, refs)
    assert abs(ours["cider"] - expected) <= 1e-9
    each = cider_scores([h.split() for h in hyps], [[r.split() for r in rs] for rs in refs], n, sigma)
    assert max(abs(a - b) for a, b in zip(each, expected_each)) <= 1e-9


def test_edge_cases_equal_pycocoevalcap():
    """Empty and one-word hypotheses, a hypothesis equal to its only reference, varying reference counts,
    repeated n-grams (clipping), words absent from every reference and <unk>."""
    hyps = [
        "",
        "a",
        "a man riding a horse",
        "the the the the dog",
        "zebra quantum flux",
        "a man riding a horse",
        "a <unk> on a <unk>",
    ]
    refs = [
        ["a dog"],
        ["a cat", "a"],
        ["a man riding a horse"],
        ["the dog runs", "the the dog", "a dog"],
        ["a zebra in a field"],
        ["a woman riding a bike", "a man on a horse", "riding", "a man riding a horse ."],
        ["a <unk> on a <unk>", "a cat on a mat"],
    ]  # <unk> is a word like any other here, as in pycocoevalcap
    expected, each = _pycoco(hyps, refs)
    ours = get_metric("cider").compute(hyps, refs)
    assert abs(ours["cider"] - expected) <= 1e-9
    got = cider_scores([h.split() for h in hyps], [[r.split() for r in rs] for rs in refs])
    assert max(abs(a - b) for a, b in zip(got, each)) <= 1e-9


@pytest.mark.parametrize(
    "hyps, refs",
    [
        (["a b c d", "x y"], [["a b c"], ["x y z"]]),  # no reference has a 4-gram
        (["a b", "c"], [["a b"], ["c"]]),  # none has a trigram
        (["a", "b c"], [["a"], ["b"]]),  # none has a bigram
        (
            ["a b c d e", "x"],
            [
                ["a b c d e"],
                ["x"],
            ],
        ),  # one has every order, the other none
    ],
)
def test_references_without_ngrams_of_some_order_equal_pycocoevalcap(hyps, refs):
    """np.bincount of empty weights is int64: an order no reference has used to crash the in-place division."""
    expected, each = _pycoco(hyps, refs)
    assert abs(get_metric("cider").compute(hyps, refs)["cider"] - expected) <= 1e-9
    got = cider_scores([h.split() for h in hyps], [[r.split() for r in rs] for rs in refs])
    assert max(abs(a - b) for a, b in zip(got, each)) <= 1e-9


def test_evaluate_command_when_no_reference_has_a_4gram(cli, tmp_path):
    (tmp_path / "h.txt").write_text("a b c d\nx y\n")
    (tmp_path / "r.txt").write_text("a b c\nx y z\n")
    r = cli("evaluate", "--hyps", str(tmp_path / "h.txt"), "--refs", str(tmp_path / "r.txt"), "-m", "cider", "--json")
    assert r.returncode == 0, r
    expected, _ = _pycoco(["a b c d", "x y"], [["a b c"], ["x y z"]])
    assert abs(expected - 4.824071717646683) <= 1e-12
    assert abs(json.loads(r.stdout)["cider"] - expected) <= 1e-9


def test_streaming_forward_equals_compute():
    hyps, refs = _corpus(300)
    m = get_metric("cider")
    for i in range(0, len(hyps), 64):
        m.forward({"hyps": hyps[i : i + 64], "refs": refs[i : i + 64]})
    assert m.close() == get_metric("cider").compute(hyps, refs)


def test_hash_covers_reference_set_and_settings_not_order_or_hypotheses():
    hyps, refs = _corpus(100)
    base = get_metric("cider").compute(hyps, refs)
    assert base["cider signature"] == "cider-d|n:4|sigma:6.0|tok:space|idf:refs|refs:5|v:1"
    order = list(range(len(hyps)))
    random.Random(1).shuffle(order)
    shuffled = get_metric("cider").compute([hyps[i] for i in order], [refs[i][::-1] for i in order])
    assert shuffled["cider hashvalue"] == base["cider hashvalue"]
    assert shuffled["cider"] == pytest.approx(base["cider"], abs=1e-12)
    other_hyps = get_metric("cider").compute(hyps[::-1], refs)
    assert other_hyps["cider hashvalue"] == base["cider hashvalue"]
    # the IDF depends on every reference: changing one changes the hash
    changed = [list(r) for r in refs]
    changed[0][0] += " extra"
    assert get_metric("cider").compute(hyps, changed)["cider hashvalue"] != base["cider hashvalue"]
    for options in ({"sigma": 5.0}, {"ngram": 3}, {"tokenizer": "nltk"}):
        assert get_metric("cider", **options).compute(hyps, refs)["cider hashvalue"] != base["cider hashvalue"]


def test_facts_declared_on_the_class():
    facts = metric_facts("cider")
    assert facts.higher_is_better is True
    assert facts.value_range == (0.0, 10.0)
    assert facts.level == "sentence" and facts.needs_references and facts.paired_references
    # a hypothesis equal to all of its references, each word distinct, reaches the bound
    hyps = ["a b c d e", "f g h i j", "k l m n o"]
    score = get_metric("cider").compute(hyps, [[h, h] for h in hyps])["cider"]
    assert score == pytest.approx(10.0, abs=1e-12)
    assert facts.check_value(score) is None and facts.check_value(10.5) is not None


@pytest.mark.parametrize(
    "options,message",
    [
        ({"ngram": 0}, "ngram"),
        ({"ngram": [1, 2]}, "one integer"),
        ({"sigma": 0}, "sigma"),
        ({"tokenizer": "no-such-tokenizer"}, "tokenizer"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(MetricError, match=message):
        get_metric("cider", **options)


def test_bad_inputs():
    m = get_metric("cider")
    with pytest.raises(MetricError, match="needs references"):
        m.compute(["a b"], None)
    with pytest.raises(MetricError, match="no reference"):
        m.compute(["a b", "c"], [["a"], []])
    with pytest.raises(MetricError, match="1 hypotheses but 2"):
        m.compute(["a b"], [["a"], ["b"]])


def test_evaluate_command_with_jsonl_references(cli, tmp_path):
    hyps, refs = _corpus(50)
    (tmp_path / "captions.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    (tmp_path / "refs.jsonl").write_text("".join(json.dumps({"references": r}) + "\n" for r in refs), encoding="utf-8")
    r = cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "captions.txt"),
        "--refs",
        str(tmp_path / "refs.jsonl"),
        "-m",
        "cider",
        "-o",
        "cider.sigma=4",
        "--json",
    )
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    assert abs(out["cider"] - _pycoco(hyps, refs, sigma=4.0)[0]) <= 1e-9
    assert out["cider signature"] == "cider-d|n:4|sigma:4.0|tok:space|idf:refs|refs:5|v:1"


def test_reference_set_hash_items_equal_canonical_json():
    """reference_set_hash encodes token lists without canonical_json's walk; the bytes must not change."""
    from cotk_repro.core.canonical import StreamHasher, canonical_json
    from cotk_repro.text.reference_hashes import reference_set_hash

    refs = [[["a", "b"], ["é", '"q"', "\\"]], [["x"]], [[], ["😀", "<unk>"]]]
    h = StreamHasher("cotk-repro/reference-set/v1")
    h.update({"metric": "m", "settings": {"k": 1.5}})
    h.update(len(refs))
    for item in sorted(canonical_json(sorted(r)) for r in refs):
        h.update_bytes(item)
    assert reference_set_hash("m", {"k": 1.5}, refs) == h.hexdigest()
    with pytest.raises(ValueError):
        reference_set_hash("m", {}, [[[float("nan")]]])
