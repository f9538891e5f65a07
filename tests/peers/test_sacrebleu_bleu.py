"""sacrebleu's own BLEU test vectors, run through cotk-repro's ``bleu``.

Source: https://github.com/mjpost/sacrebleu at commit f615c72, ``test/test_bleu.py`` and
``test/test_sentence_bleu.py`` (Copyright 2017 Amazon.com, Inc. or its affiliates; Apache License 2.0). Values
transcribed, not downloaded; every case is also recomputed with the installed sacrebleu where it has an API.

sacrebleu's settings map onto ours as: ``tokenize`` -> ``tokenizer`` (``none`` is our ``space``), its
denominators (the n-grams a hypothesis has, an order without any scoring 0) -> ``denominators="sacrebleu"``,
``smooth_method`` ``exp`` / ``none`` / ``floor`` (value 0.1) / ``add-k`` (k = 1) -> NLTK's ``method3`` /
``method0`` / ``method1`` / ``method2``, ``use_effective_order`` on a short hypothesis -> NLTK's ``auto_reweigh``.

Definitional differences (each listed in docs/metrics.md, "What the peers' suites expect"; the cases that show
them are the ``DIFFERENCES`` below, each asserted to differ the documented way):
- a floor other than 0.1 (``raw_corpus_bleu(..., .01)``, ``smooth_value=0.5``) and ``add-k`` with k != 1 have
  no counterpart: NLTK's ``method1``/``method2`` fix them at 0.1 and 1;
- ``smooth_method="none"`` with an order without matches: sacrebleu gives exactly 0, NLTK's ``method0`` floors
  the precision at ``sys.float_info.min`` (about 1e-77 for BLEU-4);
- ``lowercase=True``: ours has no lowercase setting (lowercase the text, or ``normalize``, before scoring).
"""

from __future__ import annotations

import math
import sys

import pytest
import sacrebleu

from cotk_repro.metrics import get_metric
from cotk_repro.metrics.bleu import bleu_from_counts, corpus_counts

EPSILON = 1e-8

SMOOTHING = {"exp": "method3", "none": "method0", "floor": "method1", "add-k": "method2"}
TOKENIZER = {"none": "space", "13a": "13a", "intl": "intl", "char": "char"}

# test_bleu.py: the README example (three hypotheses, two reference streams)
_REFS = [
    ["The dog bit the man.", "It was not unexpected.", "The man bit him first."],
    ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."],
]
_HYPS = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]


def per_hypothesis(streams):
    """sacrebleu's reference streams (one list per reference) -> ours (the references of each hypothesis)."""
    return [list(refs) for refs in zip(*streams)]


def ours(hyps, streams, *, tokenize="13a", smooth="exp", **options):
    metric = get_metric(
        "bleu", tokenizer=TOKENIZER[tokenize], smoothing=SMOOTHING[smooth], denominators="sacrebleu", **options
    )
    return metric.compute(list(hyps), per_hypothesis(streams))["bleu"]


@pytest.mark.parametrize(
    "hyps,kwargs,expected",
    [
        (_HYPS, {}, 48.530827),  # default BLEU settings
        (("", "", ""), {}, 0.0),  # empty hypotheses are not removed
        (_HYPS, {"tokenize": "none"}, 49.1919566),
        (_HYPS, {"tokenize": "13a"}, 48.530827),
        (_HYPS, {"tokenize": "intl"}, 43.91623493),
        (_HYPS, {"smooth_method": "none"}, 48.530827),
    ],
)
def test_corpus_bleu(hyps, kwargs, expected):
    value = ours(hyps, _REFS, tokenize=kwargs.get("tokenize", "13a"), smooth=kwargs.get("smooth_method", "exp"))
    assert abs(value * 100 - expected) < 1e-6  # sacrebleu's own EPSILON is 1e-8 on 6-8 transcribed digits
    assert value == pytest.approx(sacrebleu.corpus_bleu(list(hyps), _REFS, **kwargs).score / 100, abs=1e-12)


@pytest.mark.parametrize(
    "order,expected", [(1, "77.65"), (2, "60.50"), (3, "53.93"), (4, "48.53"), (5, "46.14"), (6, "43.28")]
)
def test_max_ngram_order(order, expected):
    assert f"{ours(_HYPS, _REFS, ngram=order) * 100:.2f}" == expected


@pytest.mark.parametrize(
    "hyps,streams,expected",
    [
        (["this is a test", "another test"], [["ref1", "ref2"]], 0.0),  # no unigram match: 0 (sacrebleu #141)
        (["this is a test"], [["this is a test"]], 1.0),
    ],
)
def test_raw_bleu(hyps, streams, expected):
    assert abs(ours(hyps, streams, tokenize="none", smooth="floor") - expected) < EPSILON


@pytest.mark.parametrize(
    "hyps,streams,expected", [(["test"], [["a test"]], 0.3678794411714425), (["a test"], [["a test"]], 1.0)]
)
def test_effective_order(hyps, streams, expected):
    # sacrebleu drops the orders a short hypothesis cannot have; NLTK's auto_reweigh spreads the weights over them
    value = get_metric("bleu", tokenizer="space", smoothing="method0", auto_reweigh=True).compute(
        hyps, per_hypothesis(streams)
    )["bleu"]
    assert abs(value - expected) < EPSILON


def test_statistics():
    hyp, ref = "am I am a character sequence".split(), "I am a symbol string sequence a a".split()
    nums, dens, _, _ = corpus_counts([hyp], [[ref]], 4)
    assert (nums, dens) == ([4, 2, 1, 0], [6, 5, 4, 3])


def test_scoring():
    assert abs(bleu_from_counts([9, 7, 5, 3], [10, 8, 6, 4], 11, 11, [0.25] * 4, "method0") - 0.8375922397) < EPSILON


def test_offset():
    hyp, ref = ["am I am a character sequence"], [["I am a symbol string sequence a a"]]
    assert abs(ours(hyp, ref, tokenize="none", smooth="none") - 0) < EPSILON  # floor 0.0 (NLTK: 1e-77)
    assert abs(ours(hyp, ref, tokenize="none", smooth="floor") - 0.1555722182) < EPSILON  # floor 0.1


@pytest.mark.parametrize(
    "nums,dens,hyp_len,ref_len",
    [
        ([0, 0, 0, 0], [4, 4, 2, 1], 0, 1),
        ([0, 0, 0, 0], [10, 11, 12, 0], 14, 10),
        ([0, 0, 0, 0], [0, 0, 0, 0], 0, 0),
        ([0, 0, 0, 0], [0, 0, 0, 0], 1, 5),
    ],
)
def test_degenerate_statistics(nums, dens, hyp_len, ref_len):
    # no unigram match: exactly 0 under every smoothing (sacrebleu: floor 0, 0.1 and 0.01)
    for smoothing in ("method0", "method1", "method3"):
        assert bleu_from_counts(nums, dens, hyp_len, ref_len, [0.25] * 4, smoothing) == 0.0


# test_sentence_bleu.py: sacrebleu issue #98
REF = "producţia de zahăr brut se exprimă în zahăr alb;"
SYS = "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;"


@pytest.mark.parametrize(
    "smooth,value,tokenize,expected",
    [
        ("exp", None, "13a", 8.493),
        ("none", None, "13a", 0.0),
        ("floor", None, "13a", 4.51688),  # defaults to 0.1
        ("floor", 0.1, "13a", 4.51688),
        ("add-k", None, "13a", 14.882),  # defaults to 1
        ("add-k", 1, "13a", 14.882),
        ("exp", None, "none", 7.347),
        ("exp", None, "intl", 8.493),
        ("exp", None, "char", 40.8759),
    ],
)
def test_sentence_bleu(smooth, value, tokenize, expected):
    got = ours([SYS], [[REF]], tokenize=tokenize, smooth=smooth)
    assert abs(got * 100 - expected) < 1e-3  # sacrebleu's EPSILON here
    reference = (
        sacrebleu.metrics.BLEU(tokenize=tokenize, smooth_method=smooth, smooth_value=value, effective_order=True)
        .sentence_score(SYS, [REF])
        .score
        / 100
    )
    if smooth != "none":
        assert got == pytest.approx(reference, abs=1e-12)


@pytest.mark.parametrize("smooth", ["exp", "none", "floor", "add-k"])
def test_sentence_bleu_zero(smooth):  # sacrebleu issue #141: no unigram match
    assert ours(["this is a cat"], [["okay thanks"]], smooth=smooth) == 0.0


# -- the definitional differences, each shown ------------------------------------------------------------------
def test_difference_floor_value_other_than_one_tenth():
    # raw_corpus_bleu(["this is a fest"], [["this is a test"]], .01) == 0.223606797749979 (floor 0.01);
    # NLTK's method1 floors at 0.1: (3/4 * 2/3 * 1/2 * 0.1/1) ** (1/4)
    got = ours(["this is a fest"], [["this is a test"]], tokenize="none", smooth="floor")
    assert got == pytest.approx((3 / 4 * 2 / 3 * 1 / 2 * 0.1) ** 0.25, abs=1e-12)
    assert abs(got - 0.223606797749979) > 0.1
    assert abs((3 / 4 * 2 / 3 * 1 / 2 * 0.01) ** 0.25 - 0.223606797749979) < EPSILON  # the same formula at 0.01


def test_difference_method0_floor_instead_of_zero():
    # sacrebleu: Statistics([6, 5, 4, 0], [6, 5, 4, 3]), floor 0.0 -> exactly 0.0; NLTK's method0: about 1e-77
    value = bleu_from_counts([6, 5, 4, 0], [6, 5, 4, 3], 6, 6, [0.25] * 4, "method0")
    assert 0.0 < value < 1e-70
    assert math.isclose(value, sys.float_info.min**0.25, rel_tol=1e-9)  # the 4-gram precision floored
