"""Distinct-n and n-gram entropy: hand-computed cases, hashes/signatures and error cases."""

from __future__ import annotations

import math

import pytest

from cotk_repro.metrics import MetricError, evaluate, get_metric


def test_distinct_hand_computed():
    hyps = ["the cat sat", "the cat ran .", "dog"]
    res = get_metric("distinct").compute(hyps)
    # unigrams: the cat sat the cat ran . dog -> 8 total, distinct {the, cat, sat, ran, ., dog} = 6
    assert res["distinct-1"] == 6 / 8
    # bigrams: (the cat)(cat sat)(the cat)(cat ran)(ran .) -> 5 total, 4 distinct
    assert res["distinct-2"] == 4 / 5
    assert res["distinct-2 signature"] == "distinct|n:2|tok:wordpunct-u18|hyps:3|refs:none|v:1"
    assert len(res["distinct-1 hashvalue"]) == 64


def test_distinct_options_and_hashes():
    hyps = ["a b a b", "a b"]
    r3 = get_metric("distinct", ngram=3).compute(hyps)
    assert list(k for k in r3 if " " not in k) == ["distinct-3"]
    assert r3["distinct-3"] == 2 / 2  # (a b a), (b a b)
    # a sentence shorter than n has no n-gram; none at all gives 0.0
    assert get_metric("distinct", ngram=5).compute(hyps)["distinct-5"] == 0.0
    # every setting that changes the score changes the hash
    base = get_metric("distinct").compute(hyps)
    assert base["distinct-1 hashvalue"] != base["distinct-2 hashvalue"]
    spaced = get_metric("distinct", tokenizer="space").compute(["a,b a", "a"])
    word = get_metric("distinct").compute(["a,b a", "a"])
    assert spaced["distinct-1"] == 2 / 3 and word["distinct-1"] == 3 / 5  # a,b | a | a  vs  a , b a a
    assert spaced["distinct-1 hashvalue"] != word["distinct-1 hashvalue"]
    assert get_metric("distinct").compute(hyps + ["a b"])["distinct-1 hashvalue"] != base["distinct-1 hashvalue"]
    with_refs = get_metric("distinct").compute(hyps, [["x"], ["y"]])
    other_refs = get_metric("distinct").compute(hyps, [["x"], ["z"]])
    assert with_refs["distinct-1"] == base["distinct-1"]
    assert with_refs["distinct-1 hashvalue"] != other_refs["distinct-1 hashvalue"] != base["distinct-1 hashvalue"]
    # token lists are detokenized and re-tokenized like strings
    assert get_metric("distinct").compute([["a", "b"], ["a"]])["distinct-1"] == 2 / 3


def test_distinct_unicode():
    res = get_metric("distinct", ngram=1).compute(["café crème café", "naïve"])
    assert res["distinct-1"] == 3 / 4


def test_ngram_entropy_hand_computed_one_group():
    res = get_metric("ngram-entropy", ngram=[1, 2]).compute(["a a b", "a c"])
    # unigrams a:3 b:1 c:1 of 5
    h1 = -(3 / 5 * math.log(3 / 5) + 2 * (1 / 5 * math.log(1 / 5)))
    # bigrams (a a), (a b), (a c): uniform over 3
    h2 = math.log(3)
    assert res["ngram-entropy-1"] == pytest.approx(h1, rel=1e-12)
    assert res["ngram-entropy-2"] == pytest.approx(h2, rel=1e-12)
    assert (
        res["ngram-entropy-1 signature"] == "ngram-entropy|n:1|group:all|log:e|tok:wordpunct-u18|hyps:2|refs:none|v:1"
    )


def test_ngram_entropy_groups_averaged_and_log_base():
    hyps = ["a b", "a b", "c d", "e f"]
    m = get_metric("ngram-entropy", ngram=1, group_size=2, log_base=2)
    res = m.compute(hyps)
    # group 1: a:2 b:2 -> 1 bit; group 2: c d e f uniform -> 2 bits; eq. 6: the mean
    assert res["ngram-entropy-1"] == pytest.approx(1.5, rel=1e-12)
    groups = get_metric("ngram-entropy", ngram=1, log_base=2).compute_groups([["a b", "a b"], ["c d", "e f"]])
    assert groups["ngram-entropy-1"] == pytest.approx(1.5, rel=1e-12)
    # grouping and log base are in the hash
    whole = get_metric("ngram-entropy", ngram=1, log_base=2).compute(hyps)
    assert whole["ngram-entropy-1"] == pytest.approx(-(2 * 0.25 * math.log2(0.25) + 4 * 0.125 * math.log2(0.125)))
    nats = get_metric("ngram-entropy", ngram=1, group_size=2).compute(hyps)
    assert nats["ngram-entropy-1"] == pytest.approx(1.5 * math.log(2), rel=1e-12)
    hashes = {
        res["ngram-entropy-1 hashvalue"],
        whole["ngram-entropy-1 hashvalue"],
        nats["ngram-entropy-1 hashvalue"],
        groups["ngram-entropy-1 hashvalue"],
    }
    assert len(hashes) == 4


def test_evaluate_merges_and_passes_tokenizer():
    res = evaluate(["distinct", ("ngram-entropy", {"ngram": 1})], ["a,b a", "a"], tokenizer="space")
    assert res["distinct-1"] == 2 / 3
    assert "ngram-entropy-1 hashvalue" in res and "tok:space" in res["distinct-1 signature"]


@pytest.mark.parametrize(
    "name, options, hyps, refs, message",
    [
        ("distinct", {"ngram": 0}, ["a"], None, "ngram must be"),
        ("distinct", {"ngram": "2"}, ["a"], None, "ngram must be"),
        ("distinct", {}, [], None, "at least one hypothesis"),
        ("distinct", {}, "a b", None, "single string"),
        ("distinct", {}, ["a", 3], None, "not a string"),
        ("distinct", {}, ["a", "b"], [["x"]], "2 hypotheses but 1 reference"),
        ("distinct", {"tokenizer": "nonexistent"}, ["a"], None, "unknown tokenizer"),
        ("ngram-entropy", {"group_size": 2}, ["a", "b", "c"], None, "do not split into groups of 2"),
        ("ngram-entropy", {"group_size": 0}, ["a"], None, "group_size"),
        ("ngram-entropy", {"log_base": 1}, ["a"], None, "log_base"),
    ],
)
def test_errors(name, options, hyps, refs, message):
    with pytest.raises(MetricError, match=message):
        get_metric(name, **options).compute(hyps, refs)


def test_empty_group_is_an_error():
    with pytest.raises(MetricError, match="no empty group"):
        get_metric("ngram-entropy").compute_groups([["a"], []])
