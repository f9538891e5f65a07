"""fw-rv-ppl and its Kneser-Ney LM: equal to NLTK's KneserNeyInterpolated (mode "nltk"), normalized
distributions (mode "interpolated"), the metric's forward/reverse wiring, hashes and errors."""

from __future__ import annotations

import math
import random

import pytest
from nltk.lm import KneserNeyInterpolated, Vocabulary
from nltk.lm.preprocessing import padded_everygram_pipeline

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.kn_lm import KneserNeyLM
from cotk_repro.text.reference_hashes import bleu_tokenize

WORDS = "a b c d e f g".split()


def _corpus(seed, n=25, words=WORDS[:5]):
    rng = random.Random(seed)
    return [[rng.choice(words) for _ in range(rng.randint(1, 6))] for _ in range(n)]


def _nltk_lm(order, discount, cutoff, train):
    lm = KneserNeyInterpolated(order, discount=discount)
    ngrams, flat = padded_everygram_pipeline(order, train)
    lm.fit(ngrams, Vocabulary(flat, unk_cutoff=cutoff))
    return lm


@pytest.mark.parametrize("order", [2, 3, 5])
@pytest.mark.parametrize("cutoff", [1, 2])
def test_nltk_mode_equals_nltk(order, cutoff):
    train = _corpus(order * 10 + cutoff)
    ref = _nltk_lm(order, 0.3, cutoff, train)
    ours = KneserNeyLM(order, 0.3, cutoff, mode="nltk").fit(train)
    rng = random.Random(order)
    for _ in range(200):  # in-vocabulary, OOV and padded contexts of every length
        ctx = [rng.choice(WORDS + ["<s>"]) for _ in range(rng.randint(0, order))]
        word = rng.choice(WORDS + ["</s>"])
        assert ours.score(word, ctx) == pytest.approx(ref.score(word, ctx), rel=1e-12, abs=1e-15)


def test_interpolated_mode_is_normalized_and_positive():
    lm = KneserNeyLM(3, 0.75).fit(_corpus(3))
    vocab = sorted(lm.vocab)
    for ctx in (["a", "b"], ["<s>", "<s>"], ["zzz", "a"], ["e", "e"], []):
        probs = [lm.score(w, ctx) for w in vocab]
        assert all(p > 0 for p in probs)
        assert sum(probs) == pytest.approx(1.0, abs=1e-12)
    assert lm.score("never-seen", ["a"]) == lm.score("<UNK>", ["a"]) > 0


def test_fw_rv_ppl_nltk_mode_against_nltk_perplexity():
    real = [" ".join(s) for s in _corpus(7, n=30)]
    gen = [" ".join(s) for s in _corpus(8, n=20)]
    res = get_metric("fw-rv-ppl", ngram=3, discount=0.5, unk_cutoff=1, mode="nltk").compute(gen, [[r] for r in real])

    def nltk_ppl(train, test):
        lm = _nltk_lm(3, 0.5, 1, [bleu_tokenize(s) for s in train])
        logs = []
        for s in test:
            padded = ["<s>", "<s>"] + bleu_tokenize(s) + ["</s>"]
            logs += [math.log(lm.score(padded[i], padded[i - 2 : i])) for i in range(2, len(padded))]
        return math.exp(-sum(logs) / len(logs))

    assert res["fw-ppl"] == pytest.approx(nltk_ppl(real, gen), rel=1e-12)
    assert res["rv-ppl"] == pytest.approx(nltk_ppl(gen, real), rel=1e-12)


def test_fw_rv_ppl_default_and_hashes():
    real = ["a man rides a horse .", "a dog runs on the beach", "two people ride bikes ."]
    gen = ["a man rides a bike .", "a dog on the horse", "a horse runs"]
    m = get_metric("fw-rv-ppl")
    res = m.compute(gen, [[r] for r in real])
    assert res["fw-ppl"] > 1 and res["rv-ppl"] > 1
    assert res["fw-ppl signature"] == "fw-ppl|n:5|lm:kn-interp|d:0.75|cutoff:1|tok:wordpunct-u18|refs:3|hyps:3|v:1"
    assert res["fw-ppl hashvalue"] != res["rv-ppl hashvalue"]
    # the generated text is what is scored: not in the hash; the real text and the LM settings are
    other = get_metric("fw-rv-ppl").compute(gen[:2], [[r] for r in real])
    assert other["fw-ppl hashvalue"] == res["fw-ppl hashvalue"]
    assert (
        get_metric("fw-rv-ppl", ngram=3).compute(gen, [[r] for r in real])["fw-ppl hashvalue"]
        != res["fw-ppl hashvalue"]
    )
    assert get_metric("fw-rv-ppl").compute(gen, [[r] for r in real[:2]])["fw-ppl hashvalue"] != res["fw-ppl hashvalue"]
    # the real text is a set: reference order does not matter, and its size need not match
    shuffled = get_metric("fw-rv-ppl").compute(gen, [[r] for r in real[::-1]])
    assert shuffled["fw-ppl"] == pytest.approx(res["fw-ppl"], rel=1e-12)
    assert shuffled["fw-ppl hashvalue"] == res["fw-ppl hashvalue"]


@pytest.mark.parametrize(
    "options, hyps, refs, message",
    [
        ({"ngram": 0}, ["a"], [["a"]], "order"),
        ({"discount": 2}, ["a"], [["a"]], "discount"),
        ({"mode": "modified"}, ["a"], [["a"]], "unknown Kneser-Ney mode"),
        ({"unk_cutoff": 0}, ["a"], [["a"]], "unk_cutoff"),
        ({}, ["a"], None, "needs references"),
        ({}, [], [["a"]], "at least one hypothesis"),
        ({}, ["a"], ["a"], "is a string"),
        # NLTK's formulas give an unseen word probability 0 when no training word was rare
        ({"mode": "nltk", "ngram": 2}, ["a b"], [["a c"]], "probability 0"),
    ],
)
def test_errors(options, hyps, refs, message):
    with pytest.raises(MetricError, match=message):
        get_metric("fw-rv-ppl", **options).compute(hyps, refs)
