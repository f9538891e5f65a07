"""METEOR against NLTK's meteor_score.

The WordNet data is not installed here (and cannot be downloaded), so the metric runs its
exact and stem modules only and says so in its settings, signature and hash. NLTK's
``meteor_score`` always runs its WordNet stage; to compare the same modules it is given a
WordNet stand-in whose ``synsets`` returns nothing -- which is exactly "no synonym module".
NLTK's synonym stage also always matches a word to itself, but after the stem stage no
equal words are left unmatched, so with no synsets that stage adds no match.
"""

from __future__ import annotations

import random

import pytest
from nltk.translate.meteor_score import meteor_score

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.meteor import wordnet_available
from cotk_repro.metrics.reference_hashes import bleu_tokenize


class NoSynonyms:
    """Stands in for WordNet with no synonyms at all (see the module docstring)."""

    def synsets(self, word):
        return []


def _nltk(hyps, refs, **kw):
    wn = kw.pop("wordnet", None) or NoSynonyms()
    return sum(meteor_score([bleu_tokenize(r) for r in rs], bleu_tokenize(h), wordnet=wn, **kw)
               for h, rs in zip(hyps, refs)) / len(hyps)


def _metric(**kw):
    return get_metric("meteor", wordnet=False, **kw)


def test_equals_nltk_exact_and_stem(shared_data):
    d = shared_data / "texygen"
    refs = d.joinpath("coco_test.txt").read_text().splitlines()[:300]
    hyps = d.joinpath("instances", "rank.txt").read_text().splitlines()[:300]
    rng = random.Random(2)
    multi = [[r, rng.choice(refs)] for r in refs]
    assert _metric().compute(hyps, multi)["meteor"] == pytest.approx(_nltk(hyps, multi), rel=1e-12)
    kw = {"alpha": 0.7, "beta": 2.0, "gamma": 0.3}
    assert _metric(**kw).compute(hyps, multi)["meteor"] == pytest.approx(_nltk(hyps, multi, **kw), rel=1e-12)


def test_hand_computed():
    # exact: the, cat ; stem: running~runs (run) ; 3 matches; hyp 4 words, ref 3 words
    value = _metric().compute(["the cat was running"], [["the cat runs"]])["meteor"]
    p, r = 3 / 4, 3 / 3
    fmean = p * r / (0.9 * p + 0.1 * r)
    assert value == pytest.approx((1 - 0.5 * (2 / 3) ** 3) * fmean, rel=1e-12)  # chunks: [the cat] [running]


@pytest.mark.parametrize("hyp, ref", [
    ("", "a cat"), ("cat", "a"), ("Café CAFÉ", "café"), ("a b a b", "b a b a"), ("the the the", "the"),
])
def test_edge_cases_equal_nltk(hyp, ref):
    assert _metric().compute([hyp], [[ref]])["meteor"] == pytest.approx(_nltk([hyp], [[ref]]), rel=1e-12,
                                                                          abs=1e-15)


def test_modules_in_settings_signature_and_hash():
    m = get_metric("meteor")  # "auto": synonyms only when WordNet is installed
    res = m.compute(["a cat"], [["a cat sat"]])
    if wordnet_available():  # pragma: no cover - not installed on the reference machines
        assert m.modules == ["exact", "stem", "wordnet"]
    else:
        assert m.modules == ["exact", "stem"] and m.settings["wordnet_version"] is None
        assert "mod:exact+stem|" in res["meteor signature"]
        with pytest.raises(MetricError, match="WordNet data is not installed"):
            get_metric("meteor", wordnet=True)
    assert m.settings["modules"] == m.modules
    hashes = {res["meteor hashvalue"],
              get_metric("meteor", alpha=0.8).compute(["a cat"], [["a cat sat"]])["meteor hashvalue"],
              get_metric("meteor").compute(["a cat"], [["a dog sat"]])["meteor hashvalue"]}
    assert len(hashes) == 3


@pytest.mark.parametrize("options, hyps, refs, message", [
    ({"wordnet": "maybe"}, ["a"], [["a"]], "wordnet must be"),
    ({"alpha": -1}, ["a"], [["a"]], "alpha"),
    ({}, ["a", "b"], [["a"]], "2 hypotheses but 1 reference"),
    ({}, ["a"], [[]], "no reference"),
])
def test_errors(options, hyps, refs, message):
    with pytest.raises(MetricError, match=message):
        get_metric("meteor", **options).compute(hyps, refs)
