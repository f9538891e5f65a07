"""ROUGE-1/2/L against google's rouge-score package, alpha, hashes and errors."""

from __future__ import annotations

import random

import pytest
from rouge_score import rouge_scorer

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.rouge import f_measure

TYPES = (("rouge1", "rouge-1"), ("rouge2", "rouge-2"), ("rougeL", "rouge-l"))


def _texygen(fixtures_dir, n=300):
    d = fixtures_dir / "texygen"
    refs = d.joinpath("coco_test.txt").read_text().splitlines()[:n]
    hyps = d.joinpath("instances", "seq.txt").read_text().splitlines()[:n]
    rng = random.Random(0)
    return hyps, [[r, rng.choice(refs)] for r in refs]


def _reference(hyps, refs, alpha=0.5, stemmer=False):
    scorer = rouge_scorer.RougeScorer([t for t, _ in TYPES], use_stemmer=stemmer)
    out = {}
    for rtype, key in TYPES:
        total = 0.0
        for h, rs in zip(hyps, refs):
            if alpha == 0.5:
                total += scorer.score_multi(rs, h)[rtype].fmeasure
            else:  # rouge-score's precision and recall, Lin's weighted F
                scores = [scorer.score(r, h)[rtype] for r in rs]
                total += max(f_measure(s.precision, s.recall, alpha) for s in scores)
        out[key] = total / len(hyps)
    return out


@pytest.mark.parametrize("stemmer", [False, True])
def test_equals_rouge_score_on_texygen(fixtures_dir, stemmer):
    hyps, refs = _texygen(fixtures_dir)
    ours = get_metric("rouge", stemmer=stemmer).compute(hyps, refs)
    for key, value in _reference(hyps, refs, stemmer=stemmer).items():
        assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-15)


def test_alpha_weights_precision(fixtures_dir):
    hyps, refs = _texygen(fixtures_dir, 100)
    for alpha in (0.0, 0.2, 0.9, 1.0):
        ours = get_metric("rouge", alpha=alpha).compute(hyps, refs)
        for key, value in _reference(hyps, refs, alpha=alpha).items():
            assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-15)
    # alpha = 1 is precision: a short exact prefix gets 1.0
    assert get_metric("rouge", alpha=1.0).compute(["the cat"], [["the cat sat down"]])["rouge-1"] == 1.0


@pytest.mark.parametrize("hyp, ref", [
    ("", "a cat"), ("cat", "a cat sat"), ("Ünïcode café ok", "ok café"), ("a a a", "a"), ("!!!", "?"),
    ("The Cats are RUNNING quickly", "the cat runs quick"),
])
def test_edge_cases_equal_rouge_score(hyp, ref):
    ours = get_metric("rouge").compute([hyp], [[ref]])
    scorer = rouge_scorer.RougeScorer([t for t, _ in TYPES])
    ref_scores = scorer.score(ref, hyp)
    for rtype, key in TYPES:
        assert ours[key] == pytest.approx(ref_scores[rtype].fmeasure, rel=1e-12, abs=1e-15)


def test_types_hashes_and_signature():
    res = get_metric("rouge", types=["rouge3", "rougeL"]).compute(["a b c d"], [["a b c e"]])
    assert sorted(k for k in res if " " not in k) == ["rouge-3", "rouge-l"]
    assert res["rouge-3"] == pytest.approx(0.5)
    base = get_metric("rouge").compute(["a b"], [["a b c"]])
    assert base["rouge-1 signature"] == "rouge-1|alpha:0.5|stem:no|tok:rouge-score|refs:1|v:1"
    hashes = {base["rouge-1 hashvalue"], base["rouge-2 hashvalue"], base["rouge-l hashvalue"],
              get_metric("rouge", alpha=0.3).compute(["a b"], [["a b c"]])["rouge-1 hashvalue"],
              get_metric("rouge", stemmer=True).compute(["a b"], [["a b c"]])["rouge-1 hashvalue"],
              get_metric("rouge").compute(["a b"], [["a b d"]])["rouge-1 hashvalue"]}
    assert len(hashes) == 6
    # the model's tokenization does not matter: ROUGE re-tokenizes
    assert get_metric("rouge").compute(["A, b"], [["a b c"]])["rouge-1 hashvalue"] == base["rouge-1 hashvalue"]


@pytest.mark.parametrize("options, hyps, refs, message", [
    ({"types": ["rougeLsum"]}, ["a"], [["a"]], "ROUGE types"),
    ({"alpha": 1.5}, ["a"], [["a"]], "alpha"),
    ({}, ["a", "b"], [["a"]], "2 hypotheses but 1 reference"),
    ({}, ["a"], None, "needs references"),
    ({}, ["a"], [[]], "no reference"),
    ({}, [], [], "at least one hypothesis"),
])
def test_errors(options, hyps, refs, message):
    with pytest.raises(MetricError, match=message):
        get_metric("rouge", **options).compute(hyps, refs)
