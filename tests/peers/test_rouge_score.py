"""rouge-score's own unit tests, run through cotk-repro's ``rouge`` (and its LCS helpers).

Source: rouge-score 0.1.2 (https://github.com/google-research/google-research/tree/master/rouge),
``rouge_scorer_test.py`` (Copyright 2022 The rouge_score Authors; Apache License 2.0). Values transcribed,
not downloaded. Precision and recall are our F-measure at ``alpha`` 1 and 0. The tests that read
rouge-score's ``testdata`` files (ROUGE-1.5.5 runs, the large Lsum file) are left out.
"""

from __future__ import annotations

import pytest

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.rouge import lcs_indices, summary_lcs

KEYS = {"rouge1": "rouge-1", "rouge2": "rouge-2", "rouge9": "rouge-9", "rougeL": "rouge-l", "rougeLsum": "rouge-lsum"}


def prf(rtype, target, prediction, refs=None):
    """(precision, recall, F1) of one prediction against one target (or several: ``refs``)."""
    refs = [refs or [target]]
    return tuple(get_metric("rouge", types=[rtype], alpha=a).compute([prediction], refs)[KEYS[rtype]]
                 for a in (1.0, 0.0, 0.5))


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
    r = get_metric("rouge", types=["rouge1", "rouge2", "rougeL"]).compute(["text first"],
                                                                          [["first text", "first something"]])
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
    assert prf("rougeLsum", "w1 w2 w3 w4 w5", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5") == pytest.approx((0.4, 0.8, 0.5333),
                                                                                               abs=1e-4)
    assert prf("rougeLsum", "w1 w2 w3 w4 w5", "") == (0, 0, 0)
    assert prf("rougeLsum", "", "w1") == (0, 0, 0)
    assert prf("rougeLsum", "w1 w2 w3 w4 w5", "/") == (0, 0, 0)
