"""rouge-score's own unit tests, run through cotk-repro's ``rouge`` (and its LCS helpers).

Source: rouge-score 0.1.2 (https://github.com/google-research/google-research/tree/master/rouge),
``rouge_scorer_test.py`` (Copyright 2022 The rouge_score Authors; Apache License 2.0). Values transcribed,
not downloaded. Precision and recall are our F-measure at ``alpha`` 1 and 0. The tests against
ROUGE-1.5.5 read rouge-score's ``testdata`` files from ``tests/fixtures/rouge_testdata/`` (see
``tests/fixtures/NOTICE.md``) and also compare with the installed rouge-score; ``testRougeLsumLarge`` (a 142 KB
file) is left out: the same code path is the multi-sentence Lsum test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.rouge import lcs_indices, rouge_tokenize, summary_lcs

KEYS = {"rouge1": "rouge-1", "rouge2": "rouge-2", "rouge9": "rouge-9", "rougeL": "rouge-l", "rougeLsum": "rouge-lsum"}


def prf(rtype, target, prediction, refs=None):
    """(precision, recall, F1) of one prediction against one target (or several: ``refs``)."""
    refs = [refs or [target]]
    return tuple(
        get_metric("rouge", types=[rtype], alpha=a).compute([prediction], refs)[KEYS[rtype]] for a in (1.0, 0.0, 0.5)
    )


@pytest.mark.parametrize("rtype", ["rougen", "rouge0", "rouge10"])
def test_invalid_rouge_types(rtype):
    with pytest.raises(MetricError):
        get_metric("rouge", types=[rtype])


@pytest.mark.parametrize("rtype", ["rouge1", "rouge9", "rougeL", "rougeLsum"])
def test_valid_rouge_types(rtype):
    result = get_metric("rouge", types=[rtype]).compute(["testing"], [["testing one two"]])
    assert [k for k in result if " " not in k] == [KEYS[rtype]]


def test_rouge1():
    assert prf("rouge1", "testing one two", "testing") == pytest.approx((1, 1 / 3, 1 / 2))


def test_rouge1_multi():
    assert prf("rouge1", None, "testing", refs=["testing one two"]) == pytest.approx((1, 1 / 3, 1 / 2))


def test_rouge_all_multi():
    r = get_metric("rouge", types=["rouge1", "rouge2", "rougeL"]).compute(
        ["text first"], [["first text", "first something"]]
    )
    assert (r["rouge-1"], r["rouge-2"], r["rouge-l"]) == pytest.approx((1, 0, 0.5))


@pytest.mark.parametrize("rtype", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
def test_rouge_empty(rtype):
    assert prf(rtype, "testing one two", "") == (0, 0, 0)


def test_rouge2():
    assert prf("rouge2", "testing one two", "testing one") == pytest.approx((1, 1 / 2, 2 / 3))


def test_rouge_l_consecutive():
    assert prf("rougeL", "testing one two", "testing one") == pytest.approx((1, 2 / 3, 4 / 5))


def test_rouge_l_non_consecutive():
    assert prf("rougeL", "testing one two", "testing two") == pytest.approx((1, 2 / 3, 4 / 5))


def test_multiple_rouge_types():
    r = get_metric("rouge", types=["rouge1", "rougeL"]).compute(["testing one"], [["testing one two"]])
    assert sorted(k for k in r if " " not in k) == ["rouge-1", "rouge-l"]
    assert (r["rouge-1"], r["rouge-l"]) == pytest.approx((4 / 5, 4 / 5))


def test_rouge_lsum_sentence_splitting():
    f = prf("rougeLsum", "First sentence.\nSecond Sentence.", "Second sentence.\nFirst Sentence.")[2]
    assert f == pytest.approx(1.0)
    f = prf("rougeLsum", "First sentence. Second Sentence.", "Second sentence. First Sentence.")[2]
    assert f == pytest.approx(0.5)


def test_lcs_table():
    assert lcs_indices([1, 2, 3, 4, 5], [2, 5, 3, 4]) == [1, 2, 3]
    assert lcs_indices([1, 2, 3, 4, 5], [8, 9]) == []


def test_summary_level_lcs():
    p, r = summary_lcs([[1, 2, 3, 4, 5]], [[1, 2, 6, 7, 8], [1, 3, 8, 9, 5]])
    assert (p, r) == (0.4, 0.8)
    assert summary_lcs([["reference"]], [[]]) == (0.0, 0.0)


def test_rouge_lsum():
    assert prf("rougeLsum", "w1 w2 w3 w4 w5", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5") == pytest.approx(
        (0.4, 0.8, 0.5333), abs=1e-4
    )
    assert prf("rougeLsum", "w1 w2 w3 w4 w5", "") == (0, 0, 0)
    assert prf("rougeLsum", "", "w1") == (0, 0, 0)
    assert prf("rougeLsum", "w1 w2 w3 w4 w5", "/") == (0, 0, 0)


# -- rouge_scorer_test.py: the tests against ROUGE-1.5.5 (rouge-score's testdata, in tests/fixtures/) ------------
TESTDATA = Path(__file__).resolve().parents[1] / "fixtures" / "rouge_testdata"


def _pairs():
    targets = (TESTDATA / "target.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    predictions = (TESTDATA / "prediction.txt").read_text(encoding="utf-8").splitlines(keepends=True)
    return list(zip(targets, predictions))


# (rouge type, stemming) -> (recall, precision, F1) of the two pairs, as ROUGE-1.5.5 printed them
ROUGE155 = {
    ("rouge1", False): [(0.40741, 0.68750, 0.51163), (0.40476, 0.65385, 0.50000)],
    ("rouge1", True): [(0.40741, 0.68750, 0.51163), (0.42857, 0.69231, 0.52941)],
    ("rouge2", False): [(0.30769, 0.53333, 0.39024), (0.29268, 0.48000, 0.36364)],
    ("rouge2", True): [(0.30769, 0.53333, 0.39024), (0.29268, 0.48000, 0.36364)],
    ("rougeL", False): [(0.40741, 0.68750, 0.51163), (0.40476, 0.65385, 0.50000)],
}


@pytest.mark.parametrize("rtype,stem", list(ROUGE155))
def test_against_rouge155(rtype, stem):
    from rouge_score import rouge_scorer

    for (target, prediction), (r, p, f) in zip(_pairs(), ROUGE155[rtype, stem]):
        got = [
            get_metric("rouge", types=[rtype], alpha=a, stemmer=stem).compute([prediction.strip()], [[target.strip()]])[
                KEYS[rtype]
            ]
            for a in (0.0, 1.0, 0.5)
        ]
        assert got == pytest.approx([r, p, f], abs=5e-6)  # assertAlmostEqual(..., 5)
        theirs = rouge_scorer.RougeScorer([rtype], use_stemmer=stem).score(target, prediction)[rtype]
        assert got == pytest.approx([theirs.recall, theirs.precision, theirs.fmeasure], abs=1e-12)


def test_rouge_lsum_against_rouge155_with_stemming():
    target = (TESTDATA / "target_multi.0.txt").read_text(encoding="utf-8")
    prediction = (TESTDATA / "prediction_multi.0.txt").read_text(encoding="utf-8")
    got = [
        get_metric("rouge", types=["rougeLsum"], alpha=a, stemmer=True).compute([prediction], [[target]])["rouge-lsum"]
        for a in (0.0, 1.0, 0.5)
    ]
    assert got == pytest.approx([0.36538, 0.66667, 0.47205], abs=5e-6)


def test_union_lcs_through_summary_lcs():
    # Section 3.2 of Lin (2004): ref [1..5], candidate sentences with LCS [1, 2] and [1, 3, 5]: union [1, 2, 3, 5]
    p, r = summary_lcs([[1, 2, 3, 4, 5]], [[1, 2, 6, 7, 8], [1, 3, 8, 9, 5]])
    assert r == 4 / 5


def test_tokenizer_init_and_default_tokenizer():
    # rouge_scorer_test.testRougeTokenizerInit; tokenizers_test (with and without the stemmer); tokenize_test
    assert prf("rouge1", "this is a test", "this is a test")[2] == 1.0
    assert rouge_tokenize("this is a test") == ["this", "is", "a", "test"]
    from nltk.stem import porter

    assert rouge_tokenize("the friends had a meeting", porter.PorterStemmer()) == ["the", "friend", "had", "a", "meet"]
    assert rouge_tokenize("one Two three") == ["one", "two", "three"]
    assert rouge_tokenize("one\n Two \nthree") == ["one", "two", "three"]
