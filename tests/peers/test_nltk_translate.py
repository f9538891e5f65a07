"""NLTK's own BLEU, GLEU, NIST and METEOR test vectors (unit tests and doctests), run through cotk-repro's metrics.

Source: https://github.com/nltk/nltk at commit f2a92bd7e, ``nltk/test/unit/translate/test_bleu.py``, the
doctests of ``nltk/translate/bleu_score.py`` (``sentence_bleu``, ``SmoothingFunction``) and
``nltk/translate/gleu_score.py``, ``nltk/translate/nist_score.py`` and ``nltk/translate/meteor_score.py``,
``nltk/test/{bleu,meteor}.doctest``, ``nltk/test/unit/translate/test_meteor.py`` and ``test_nist.py``
(Copyright (C) NLTK Project; Apache License 2.0). Values transcribed, not downloaded. Token lists are scored as given
(``retokenize=False``: NLTK's tests split on spaces); NLTK's default smoothing is ``method0`` (ours is
``method3``, CoTK's), so it is named. The two tests that
read NLTK's ``wmt15_eval`` package (BLEU and NIST against ``mteval-v13a.pl`` on 100 WMT15 sentences) read its
files from ``tests/fixtures/wmt15_eval/`` (see ``tests/fixtures/NOTICE.md``), and also compare with NLTK itself.
test_meteor.py's two type checks (a string where NLTK wants tokens) have no counterpart: ours takes text.

Definitional difference shown here: NLTK's ``method0`` does not give 0 when an order has no match; it floors
the precision at ``sys.float_info.min``, so BLEU-4 is about 1e-77 (``round(..., 4) == 0``), as ours.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nltk.translate.bleu_score import SmoothingFunction
from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu
from nltk.translate.nist_score import corpus_nist as nltk_corpus_nist

from cotk_repro.metrics import get_metric
from cotk_repro.metrics.bleu import brevity_penalty, smoothed_precisions
from cotk_repro.metrics.bleu_smoothing import modified_precision
from cotk_repro.metrics.meteor import wordnet_available

REF1 = ("It is a guide to action that ensures that the military will forever heed Party commands").split()
REF2 = (
    "It is the guiding principle which guarantees the military forces always being under the command of the Party"
).split()
REF3 = "It is the practical guide for the army always to heed the directions of the party".split()
HYP1 = "It is a guide to action which ensures that the military always obeys the commands of the party".split()
HYP2 = "It is to insure the troops forever hearing the activity guidebook that party direct".split()


def bleu(refs, hyp, *, ngram=4, weights=None, smoothing="method0", **options):
    m = get_metric("bleu", ngram=ngram, weights=weights, smoothing=smoothing, retokenize=False, **options)
    return m.compute([hyp], [refs])["bleu"]


def corpus(refs_list, hyps, **options):
    return get_metric("bleu", retokenize=False, **{"smoothing": "method0", **options}).compute(hyps, refs_list)["bleu"]


# -- test_bleu.py: TestBLEU -------------------------------------------------------------------------------
def test_modified_precision():
    refs = ["the cat is on the mat".split(), "there is a cat on the mat".split()]
    hyp = "the the the the the the the".split()
    assert round(float(modified_precision(refs, hyp, 1)), 4) == 0.2857
    assert float(modified_precision(refs, hyp, 2)) == 0.0
    refs = [REF1, REF2, REF3]
    assert float(modified_precision(refs, "of the".split(), 1)) == 1.0
    assert float(modified_precision(refs, "of the".split(), 2)) == 1.0
    assert round(float(modified_precision(refs, HYP1, 1)), 4) == 0.9444
    assert round(float(modified_precision(refs, HYP2, 1)), 4) == 0.5714
    assert round(float(modified_precision(refs, HYP1, 2)), 4) == 0.5882
    assert round(float(modified_precision(refs, HYP2, 2)), 4) == 0.0769


def test_brevity_penalty():
    assert brevity_penalty(8, 7) == pytest.approx(0.8669, abs=1e-4)  # closest of 11 and 8 to 7
    assert brevity_penalty(7, 7) == 1.0  # refs 11, 8, 6, 7: the closest is 7


def test_zero_matches():
    refs = ["The candidate has no alignment to any of the references".split()]
    for n in range(1, 3):
        assert bleu(refs, "John loves Mary".split(), ngram=n) == 0


def test_full_matches():
    for n in range(1, 3):
        assert bleu(["John loves Mary".split()], "John loves Mary".split(), ngram=n) == 1.0


def test_partial_matches_hypothesis_longer_than_reference():
    assert round(bleu(["John loves Mary".split()], "John loves Mary who loves Mike".split()), 4) == 0.0


# -- TestBLEUFringeCases ------------------------------------------------------------------------------------
def test_case_where_n_is_bigger_than_hypothesis_length():
    assert round(bleu(["John loves Mary ?".split()], "John loves Mary".split()), 4) == 0.0
    assert round(bleu(["John loves Mary".split()], "John loves Mary".split()), 4) == 0.0


def test_empty_hypothesis():
    assert bleu(["The candidate has no alignment to any of the references".split()], []) == 0


def test_length_one_hypothesis_method4():
    bleu(["The candidate has no alignment to any of the references".split()], ["Foo"], smoothing="method4")


def test_empty_references():
    assert bleu([[]], "John loves Mary".split()) == 0


def test_empty_references_and_hypothesis():
    assert bleu([[]], []) == 0


def test_reference_or_hypothesis_shorter_than_fourgrams():
    assert round(bleu(["let it go".split()], "let go it".split()), 4) == 0.0


def test_numpy_weights():
    import numpy as np

    refs = ["The candidate has no alignment to any of the references".split()]
    assert bleu(refs, "John loves Mary".split(), weights=np.array([0.25] * 4).tolist()) == 0


def test_corpus_bleu_with_bad_sentence():
    hyp = "Teo S yb , oe uNb , R , T t , , t Tue Ar saln S , , 5istsi l , 5oe R ulO sae oR R".split()
    ref = (
        "Their tasks include changing a pump on the faulty stokehold .Likewise , two species that are very "
        "similar in morphology were distinguished using genetics ."
    ).split()
    assert round(corpus([[ref]], [hyp]), 4) == 0.0


def test_corpus_bleu_with_multiple_weights():
    refs = [[REF1, REF2, REF3], ["he was interested in world history because he read the book".split()]]
    hyps = [HYP1, "he read the book because he was interested in world history".split()]
    from nltk.translate.bleu_score import corpus_bleu

    for weights in ((1, 0, 0, 0), (0.25, 0.25, 0.25, 0.25), (0, 0, 0, 0, 1)):
        ours = corpus(refs, hyps, ngram=len(weights), weights=list(weights))
        assert ours == pytest.approx(corpus_bleu(refs, hyps, weights), rel=1e-12)


# -- doctests of bleu_score.py ------------------------------------------------------------------------------
def test_sentence_bleu_doctests():
    # NLTK's doctests print "0.5045..." (ELLIPSIS: the leading digits, not a rounding)
    assert str(bleu([REF1, REF2, REF3], HYP1)).startswith("0.5045")
    assert round(bleu([REF1, REF2, REF3], HYP2), 4) == 0.0
    assert str(bleu([REF1, REF2, REF3], HYP2, smoothing="method1")).startswith("0.0370")
    assert str(bleu([REF1, REF2, REF3], HYP1, ngram=5)).startswith("0.3920")


@pytest.mark.parametrize(
    "smoothing, expected",
    [
        ("method0", "0.4118"),
        ("method1", "0.4118"),
        ("method2", "0.4452"),
        ("method3", "0.4118"),
        ("method4", "0.4118"),
        ("method5", "0.4905"),
        ("method6", "0.4135"),
        ("method7", "0.4905"),
    ],
)
def test_smoothing_function_doctests(smoothing, expected):
    value = bleu([REF1], HYP1, smoothing=smoothing)
    assert str(value).startswith(expected)  # NLTK's doctest: "0.4118..."


def test_method0_floor_is_not_zero():
    """NLTK's method0 floors a zero precision at sys.float_info.min: BLEU is tiny, not 0 (ours too)."""
    p = smoothed_precisions([3, 2, 0, 0], [3, 2, 1, 1], "method0")
    assert p[2] > 0
    value = bleu(["let it go".split()], "let go it".split())
    assert 0 < value < 1e-70


# -- doctests of gleu_score.py ------------------------------------------------------------------------------
def gleu(refs_list, hyps, **options):
    return get_metric("gleu", tokenizer="space", **options).compute(
        [" ".join(h) for h in hyps], [[" ".join(r) for r in rs] for rs in refs_list]
    )["gleu"]


def test_gleu_doctests():
    assert str(gleu([["the cat is on the mat".split()]], ["the the the the the the the".split()])).startswith("0.0909")
    assert str(gleu([[REF1]], [HYP1])).startswith("0.4393")
    assert str(gleu([[REF1]], [HYP2])).startswith("0.1206")
    refs = [[REF1, REF2, REF3], ["he was interested in world history because he read the book".split()]]
    hyps = [HYP1, "he read the book because he was interested in world history".split()]
    assert str(gleu(refs, hyps)).startswith("0.5673")
    each = get_metric("gleu", tokenizer="space", per_sentence=True).compute(
        [" ".join(h) for h in hyps], [[" ".join(REF1)], [" ".join(refs[1][0])]]
    )["gleu per-sentence"]
    assert str(sum(each) / 2).startswith("0.6144")


# -- test_meteor.py -----------------------------------------------------------------------------------------
def test_meteor():
    # NLTK lowercases with preprocess=str.lower; the second reference is "this istest" (a missing comma)
    m = get_metric("meteor", wordnet=False)
    value = m.compute(["THIS Is a tEST".lower()], [["this is a test", "this istest"]])["meteor"]
    assert value == 0.9921875


# -- test_meteor.py's doctest siblings: nltk/test/meteor.doctest and nltk/translate/meteor_score.py ------------
# With WordNet (Debian's wordnet-base + wordnet-sense-index, as NLTK reads it); the sentences tokenize the same
# with NLTK's word_tokenize (the doctests' tokenizer) and ours (WordPunct), so they are given as text.
needs_wordnet = pytest.mark.skipif(not wordnet_available(), reason="WordNet 3.0 is not installed")

MET_REF1 = "It is a guide to action that ensures that the military will forever heed Party commands"
MET_REF2 = (
    "It is the guiding principle which guarantees the military forces always being under the command of the Party"
)
MET_REF3 = "It is the practical guide for the army always to heed the directions of the party"
MET_HYP1 = "It is a guide to action which ensures that the military always obeys the commands of the party"


@needs_wordnet
@pytest.mark.parametrize(
    "refs,hyp,expected",
    [
        # meteor.doctest
        (["The candidate has no alignment to any of the references"], "John loves Mary", 0.0),
        (["The cat sat on the mat"], "on the mat sat the cat", 0.5),
        (["The cat sat on the mat"], "The cat was sat on the mat", 0.9654),
        (["create or update a vm set"], "creates or updates a virtual machine scale set", 0.7806),  # NLTK issue #2751
        # meteor_score.py: single_meteor_score and meteor_score
        ([MET_REF1], MET_HYP1, 0.6944),
        (["this is a cat"], "non matching hypothesis", 0.0),
        ([MET_REF1, MET_REF2, MET_REF3], MET_HYP1, 0.6944),
    ],
)
def test_meteor_doctests(refs, hyp, expected):
    # NLTK's meteor lowercases (preprocess=str.lower); ours too
    value = get_metric("meteor").compute([hyp], [refs])["meteor"]
    assert round(value, 4) == expected


@needs_wordnet
def test_meteor_doctest_identical_sentence():
    value = get_metric("meteor").compute(["The cat sat on the mat"], [["The cat sat on the mat"]])["meteor"]
    assert abs(round(value, 4) - 0.9977) < 1e-2  # meteor.doctest: "same_res"


# -- bleu.doctest ----------------------------------------------------------------------------------------------
def test_bleu_doctest_no_alignment_unigram_weights():
    refs = ["The candidate has no alignment to any of the references".split()]
    assert bleu(refs, "John loves Mary".split(), ngram=1) == 0


def test_bleu_doctest_method4_short_hypothesis():
    value = bleu(["It is a place of quiet contemplation .".split()], "It is .".split(), smoothing="method4")
    assert str(value * 100).startswith("4.4267")


# -- nist_score.py's doctests ----------------------------------------------------------------------------------
def _nist(refs_list, hyps, n=5):
    return get_metric("nist", ngram=n, tokenizer="space").compute(
        [" ".join(h) for h in hyps], [[" ".join(r) for r in rs] for rs in refs_list]
    )["nist"]


def test_sentence_nist_doctests():
    refs = [REF1, REF2, REF3]
    assert str(_nist([refs], [HYP1])).startswith("3.3709")
    assert str(_nist([refs], [HYP2])).startswith("1.4619")


# -- test_bleu.py: TestBLEUvsMteval13a and test_nist.py: TestNIST (NLTK's wmt15_eval files, in tests/fixtures/) --
WMT15 = Path(__file__).resolve().parents[1] / "fixtures" / "wmt15_eval"


def _wmt15():
    hyps = [line.split() for line in (WMT15 / "google.ru").read_text(encoding="utf-8").splitlines()]
    refs = [[line.split()] for line in (WMT15 / "ref.ru").read_text(encoding="utf-8").splitlines()]
    lines = (WMT15 / "mteval-13a.output").read_text(encoding="utf-8").splitlines()
    nist_scores = [float(x) for x in lines[-4].split()[1:-1]]  # cumulative NIST, 1..9-grams
    bleu_scores = [float(x) for x in lines[-2].split()[1:-1]]  # cumulative BLEU, 1..9-grams
    return hyps, refs, nist_scores, bleu_scores


@pytest.mark.parametrize("smoothing", ["method0", "method3"])  # NLTK: without smoothing, and mteval's own
def test_corpus_bleu_vs_mteval13a(smoothing):
    hyps, refs, _, mteval = _wmt15()
    assert len(hyps) == len(refs) == 100 and len(mteval) == 9
    for n, expected in zip(range(1, 10), mteval):
        ours = corpus(refs, hyps, ngram=n, smoothing=smoothing)
        assert abs(ours - expected) < 0.005  # NLTK's own tolerance
        assert ours == pytest.approx(
            nltk_corpus_bleu(
                refs, hyps, weights=(1.0 / n,) * n, smoothing_function=getattr(SmoothingFunction(), smoothing)
            ),
            abs=1e-12,
        )


def test_corpus_nist_vs_mteval13a():
    hyps, refs, mteval, _ = _wmt15()
    for n, expected in zip(range(1, 10), mteval):
        ours = _nist(refs, hyps, n)
        assert abs(ours - expected) < 0.05  # NLTK's own tolerance
        assert ours == pytest.approx(nltk_corpus_nist(refs, hyps, n), abs=1e-12)
