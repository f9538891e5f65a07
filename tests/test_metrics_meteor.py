"""METEOR against NLTK's meteor_score.

With ``wordnet=False`` the metric runs its exact and stem modules only and says so in its settings, signature and
hash. NLTK's ``meteor_score`` always runs its WordNet stage; to compare the same modules it is given a WordNet
stand-in whose ``synsets`` returns nothing -- which is exactly "no synonym module". NLTK's synonym stage also
always matches a word to itself, but after the stem stage no equal words are left unmatched, so with no synsets
that stage adds no match. With WordNet (Debian's ``wordnet-base``, found by :mod:`cotk_repro.data.wordnet`) the
value equals NLTK's ``meteor_score`` given the same WordNet reader; those tests are skipped where WordNet is not
installed (the test machines install it: scripts/setup.sh).
"""

from __future__ import annotations

import random

import pytest
from nltk.tokenize import WordPunctTokenizer
from nltk.translate.meteor_score import meteor_score

from cotk_repro.data import wordnet as wordnet_loader
from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.meteor import wordnet_available

bleu_tokenize = WordPunctTokenizer().tokenize  # NLTK's own tokenizer: the independent side
needs_wordnet = pytest.mark.skipif(not wordnet_available(), reason="WordNet 3.0 is not installed")


class NoSynonyms:
    """Stands in for WordNet with no synonyms at all (see the module docstring)."""

    def synsets(self, word):
        return []


def _nltk(hyps, refs, **kw):
    wn = kw.pop("wordnet", None) or NoSynonyms()
    return sum(
        meteor_score([bleu_tokenize(r) for r in rs], bleu_tokenize(h), wordnet=wn, **kw) for h, rs in zip(hyps, refs)
    ) / len(hyps)


def _metric(**kw):
    return get_metric("meteor", wordnet=False, **kw)


def test_equals_nltk_exact_and_stem(fixtures_dir):
    d = fixtures_dir / "texygen"
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


@pytest.mark.parametrize(
    "hyp, ref",
    [
        ("", "a cat"),
        ("cat", "a"),
        ("Café CAFÉ", "café"),
        ("a b a b", "b a b a"),
        ("the the the", "the"),
    ],
)
def test_edge_cases_equal_nltk(hyp, ref):
    assert _metric().compute([hyp], [[ref]])["meteor"] == pytest.approx(_nltk([hyp], [[ref]]), rel=1e-12, abs=1e-15)


def test_modules_in_settings_signature_and_hash():
    m = get_metric("meteor", wordnet=False)
    res = m.compute(["a cat"], [["a cat sat"]])
    assert m.modules == ["exact", "stem"] and m.settings["wordnet_version"] is None
    assert "mod:exact+stem|" in res["meteor signature"]
    assert m.settings["modules"] == m.modules
    hashes = {
        res["meteor hashvalue"],
        get_metric("meteor", wordnet=False, alpha=0.8).compute(["a cat"], [["a cat sat"]])["meteor hashvalue"],
        get_metric("meteor", wordnet=False).compute(["a cat"], [["a dog sat"]])["meteor hashvalue"],
    }
    assert len(hashes) == 3


@needs_wordnet
def test_with_wordnet_equals_nltk_with_the_same_wordnet(fixtures_dir):
    d = fixtures_dir / "texygen"
    refs = d.joinpath("coco_test.txt").read_text().splitlines()[:200]
    hyps = d.joinpath("instances", "rank.txt").read_text().splitlines()[:200]
    multi = [[r, refs[(i * 7) % len(refs)]] for i, r in enumerate(refs)]
    wn = wordnet_loader.load_wordnet()
    m = get_metric("meteor")  # WordNet is the default
    res = m.compute(hyps, multi)
    assert m.modules == ["exact", "stem", "wordnet"] and m.wordnet_version == "3.0"
    assert res["meteor"] == pytest.approx(_nltk(hyps, multi, wordnet=wn), rel=1e-12)
    assert "mod:exact+stem+wordnet|" in res["meteor signature"]
    assert res["meteor hashvalue"] != get_metric("meteor", wordnet=False).compute(hyps, multi)["meteor hashvalue"]
    assert res["meteor"] != get_metric("meteor", wordnet=False).compute(hyps, multi)["meteor"]  # synonyms count
    assert get_metric("meteor", wordnet="auto").compute(hyps, multi) == res


@pytest.fixture
def no_wordnet(tmp_path, monkeypatch):
    """A machine without WordNet: nothing in NLTK's data path, no Debian folder, no COTK_REPRO_WORDNET."""
    import nltk.data

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "nltk_data")])
    monkeypatch.setattr(wordnet_loader, "DEFAULT_ROOTS", (str(tmp_path / "usr-share-wordnet"),))
    monkeypatch.delenv("COTK_REPRO_WORDNET", raising=False)
    wordnet_loader.load_wordnet.cache_clear()
    yield tmp_path
    wordnet_loader.load_wordnet.cache_clear()


def test_missing_wordnet_is_one_sentence_saying_what_to_install(no_wordnet):
    with pytest.raises(MetricError) as err:
        get_metric("meteor")
    message = str(err.value)
    assert "apt-get install wordnet-base wordnet-sense-index" in message and "nltk.downloader wordnet" in message
    assert "meteor.wordnet=false" in message and "\n" not in message
    fallback = get_metric("meteor", wordnet="auto")  # explicit: synonyms where installed, recorded
    assert fallback.modules == ["exact", "stem"]
    assert "mod:exact+stem|" in fallback.compute(["a cat"], [["a cat"]])["meteor signature"]


@needs_wordnet
@pytest.mark.parametrize("how", ["copy", "symlink"])
def test_debian_files_where_nltk_looks(no_wordnet, how):
    """Debian's files (no lexnames, perhaps no index.sense) put into NLTK's data path, copied or linked: found,
    read without an error, the same synonyms as Debian's own folder."""
    import os
    import shutil

    import nltk.data

    target = no_wordnet / "nltk_data" / "corpora" / "wordnet"
    target.parent.mkdir(parents=True)
    if how == "copy":
        shutil.copytree("/usr/share/wordnet", target)
        (target / "index.sense").unlink(missing_ok=True)
    else:
        os.symlink("/usr/share/wordnet", target)
    assert str(no_wordnet / "nltk_data") in nltk.data.path
    m = get_metric("meteor")
    assert m.modules == ["exact", "stem", "wordnet"]
    assert wordnet_loader.find_root() == target
    value = m.compute(["the dog sat on the mat"], [["the hound sits on a rug"]])["meteor"]
    wordnet_loader.load_wordnet.cache_clear()
    debian = wordnet_loader.load_wordnet("/usr/share/wordnet")
    assert value == pytest.approx(
        _nltk(["the dog sat on the mat"], [["the hound sits on a rug"]], wordnet=debian), rel=1e-12
    )


def test_unreadable_wordnet_is_one_sentence(no_wordnet):
    broken = no_wordnet / "broken"
    broken.mkdir()
    for name in wordnet_loader.NEEDED:
        (broken / name).write_text("not wordnet\n", encoding="utf-8")
    with pytest.raises(MetricError, match="cannot be read") as err:
        get_metric("meteor", wordnet=str(broken))
    assert "unexpected" not in str(err.value).lower()


@pytest.mark.parametrize(
    "options, hyps, refs, message",
    [
        ({"wordnet": "maybe"}, ["a"], [["a"]], "wordnet must be"),
        ({"alpha": -1}, ["a"], [["a"]], "alpha"),
        ({}, ["a", "b"], [["a"]], "2 hypotheses but 1 reference"),
        ({}, ["a"], [[]], "no reference"),
    ],
)
def test_errors(options, hyps, refs, message):
    with pytest.raises(MetricError, match=message):
        get_metric("meteor", **options).compute(hyps, refs)
