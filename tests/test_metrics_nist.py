"""NIST against NLTK's corpus_nist, hashes and errors."""

from __future__ import annotations

import random

import pytest
from nltk.translate.nist_score import corpus_nist

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.text.reference_hashes import bleu_tokenize


def _nltk(hyps, refs, n=5):
    return corpus_nist([[bleu_tokenize(r) for r in rs] for rs in refs], [bleu_tokenize(h) for h in hyps], n=n)


@pytest.mark.parametrize("model", ["mle", "leakgan"])
def test_equals_nltk_on_texygen(fixtures_dir, model):
    d = fixtures_dir / "texygen"
    refs = d.joinpath("coco_test.txt").read_text().splitlines()[:300]
    hyps = d.joinpath("instances", f"{model}.txt").read_text().splitlines()[:300]
    rng = random.Random(1)
    multi = [[r] + rng.sample(refs, rng.randint(0, 2)) for r in refs]
    for n in (1, 3, 5):
        ours = get_metric("nist", ngram=n).compute(hyps, multi)["nist"]
        assert ours == pytest.approx(_nltk(hyps, multi, n), rel=1e-12)


def test_edge_cases_equal_nltk():
    hyps = ["a cat", "", "the dog sat on the mat .", "Ünïcode café !"]
    refs = [["a cat sat"], ["something"], ["the dog sat on a mat ."], ["café !", "Ünïcode"]]
    assert get_metric("nist").compute(hyps, refs)["nist"] == pytest.approx(_nltk(hyps, refs), rel=1e-12)
    # a single sentence, hypothesis longer than the reference
    assert get_metric("nist", ngram=2).compute(["a b c d"], [["a b"]])["nist"] == pytest.approx(
        _nltk(["a b c d"], [["a b"]], 2), rel=1e-12
    )


def test_no_ngram_of_an_order_counts_zero():
    # NLTK divides by zero here (no hypothesis has a 3-gram); that order contributes 0
    two = get_metric("nist", ngram=2).compute(["a b"], [["a b c"]])["nist"]
    assert get_metric("nist", ngram=3).compute(["a b"], [["a b c"]])["nist"] == pytest.approx(two, rel=1e-12)


def test_hash_and_signature():
    res = get_metric("nist").compute(["a b"], [["a b c"]])
    assert res["nist signature"] == "nist|n:5|tok:wordpunct-u18|refs:1|v:1"
    assert res["nist hashvalue"] != get_metric("nist", ngram=4).compute(["a b"], [["a b c"]])["nist hashvalue"]
    assert res["nist hashvalue"] != get_metric("nist").compute(["a b"], [["a b d"]])["nist hashvalue"]
    assert res["nist hashvalue"] == get_metric("nist").compute(["x"], [["a  b c"]])["nist hashvalue"]


@pytest.mark.parametrize(
    "options, hyps, refs, message",
    [
        ({"ngram": 0}, ["a"], [["a"]], "ngram"),
        ({}, ["a", "b"], [["a"]], "2 hypotheses but 1 reference"),
        ({}, ["a"], [[""]], "non-empty reference"),
        ({}, ["a"], [[]], "no reference"),
    ],
)
def test_errors(options, hyps, refs, message):
    with pytest.raises(MetricError, match=message):
        get_metric("nist", **options).compute(hyps, refs)
