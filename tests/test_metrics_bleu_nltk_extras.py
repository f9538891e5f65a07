"""NLTK's smoothing method4-method7, ``auto_reweigh`` and GLEU (``corpus_gleu`` / ``sentence_gleu``) against NLTK
itself, each a hashed setting."""

from __future__ import annotations

import random

import pytest
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu
from nltk.translate.gleu_score import corpus_gleu, sentence_gleu

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.text.reference_hashes import bleu_tokenize

SF = SmoothingFunction()


def _corpus(fixtures_dir, n=200, seed=0):
    d = fixtures_dir / "texygen"
    refs = d.joinpath("coco_test.txt").read_text().splitlines()
    hyps = d.joinpath("instances", "seq.txt").read_text().splitlines()[:n]
    rng = random.Random(seed)
    return hyps, [[refs[i], rng.choice(refs)] for i in range(n)]


def _tok(hyps, refs):
    return [bleu_tokenize(h) for h in hyps], [[bleu_tokenize(r) for r in rs] for rs in refs]


def _nltk_bleu(hyps, refs, ngram, smoothing, auto_reweigh=False):
    h, r = _tok(hyps, refs)
    weights = (0.25,) * 4 if ngram == 4 else tuple([1 / ngram] * ngram)
    return corpus_bleu(r, h, weights=weights, smoothing_function=getattr(SF, smoothing), auto_reweigh=auto_reweigh)


SMALL = (
    ["the cat sat on the mat", "a dog", "birds fly over hills today"],
    [["the cat is on the mat", "a cat sat on a mat"], ["a dog ran", "dogs"], ["birds fly over the hills"]],
)


@pytest.mark.parametrize("smoothing", ["method4", "method5", "method6", "method7"])
@pytest.mark.parametrize("ngram", [3, 4, 5])
def test_smoothing_methods_4_to_7_equal_nltk_corpus_bleu(fixtures_dir, smoothing, ngram):
    for hyps, refs in (_corpus(fixtures_dir), SMALL, (SMALL[0][::-1], SMALL[1][::-1])):
        expected = _nltk_bleu(hyps, refs, ngram, smoothing)
        ours = get_metric("bleu", ngram=ngram, smoothing=smoothing).compute(hyps, refs)
        assert ours["bleu"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert ours["bleu signature"].split("|")[2] == "smooth:m" + smoothing[-1]


@pytest.mark.parametrize("smoothing", ["method4", "method5", "method7"])
@pytest.mark.parametrize("ngram", [1, 2])
def test_smoothing_methods_4_to_7_with_few_orders(smoothing, ngram):
    hyps, refs = SMALL
    assert get_metric("bleu", ngram=ngram, smoothing=smoothing).compute(hyps, refs)["bleu"] == pytest.approx(
        _nltk_bleu(hyps, refs, ngram, smoothing), rel=1e-12, abs=1e-15
    )


@pytest.mark.parametrize("smoothing", ["method4", "method5", "method6", "method7"])
def test_sentence_level_equals_nltk_sentence_bleu(smoothing):
    for hyp, refs in zip(*SMALL):
        if smoothing == "method6" and hyp == "a dog":
            continue  # NLTK refuses it too (no trigram precision)
        h, r = _tok([hyp], [refs])
        expected = sentence_bleu(r[0], h[0], smoothing_function=getattr(SF, smoothing))
        assert get_metric("bleu", smoothing=smoothing).compute([hyp], [refs])["bleu"] == pytest.approx(
            expected, rel=1e-12, abs=1e-15
        )


def test_method6_refuses_what_nltk_refuses():
    with pytest.raises(MetricError, match="method6 needs a non-zero trigram precision"):
        get_metric("bleu", smoothing="method6").compute(["a dog"], [["a dog ran"]])
    with pytest.raises(MetricError, match="method6"):
        get_metric("bleu", ngram=2, smoothing="method6").compute(["a dog ran"], [["a dog ran"]])


def test_auto_reweigh_equals_nltk():
    for hyps, refs in (
        (["a cat"], [["a cat sat"]]),
        (["dog", "a cat"], [["dog"], ["a cat"]]),
        (["cat"], [["cat"]]),
        SMALL,
    ):
        for smoothing in ("method0", "method1", "method3", "method4"):
            expected = _nltk_bleu(hyps, refs, 4, smoothing, auto_reweigh=True)
            ours = get_metric("bleu", smoothing=smoothing, auto_reweigh=True).compute(hyps, refs)
            assert ours["bleu"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    short = get_metric("bleu", auto_reweigh=True).compute(["a cat"], [["a cat sat"]])
    plain = get_metric("bleu").compute(["a cat"], [["a cat sat"]])
    assert short["bleu"] != plain["bleu"]
    assert short["bleu hashvalue"] != plain["bleu hashvalue"] and "reweigh:yes" in short["bleu signature"]


def test_every_smoothing_is_a_hashed_setting():
    hashes = {get_metric("bleu", smoothing=f"method{i}").compute(*SMALL)["bleu hashvalue"] for i in range(8)}
    assert len(hashes) == 8
    assert get_metric("bleu", smoothing="m5").settings["smoothing"] == "method5"


@pytest.mark.parametrize("name", ["self-bleu", "fw-bw-bleu"])
def test_set_level_bleu_refuses_the_corpus_only_smoothings(name):
    with pytest.raises(MetricError, match="takes method0-method3"):
        get_metric(name, smoothing="method5")
    with pytest.raises(MetricError, match="auto_reweigh"):
        get_metric(name, auto_reweigh=True)


# -- GLEU --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("min_len, max_len", [(1, 4), (1, 1), (2, 3), (1, 6)])
def test_gleu_equals_nltk_corpus_and_sentence(fixtures_dir, min_len, max_len):
    for hyps, refs in (_corpus(fixtures_dir, 150), SMALL, (["", "x"], [["", "y"], ["x"]]), ([""], [[""]])):
        h, r = _tok(hyps, refs)
        ours = get_metric("gleu", min_len=min_len, max_len=max_len, per_sentence=True).compute(hyps, refs)
        assert ours["gleu"] == pytest.approx(corpus_gleu(r, h, min_len, max_len), rel=1e-12, abs=1e-15)
        assert ours["gleu per-sentence"] == pytest.approx(
            [sentence_gleu(rs, hh, min_len, max_len) for hh, rs in zip(h, r)], rel=1e-12, abs=1e-15
        )


def test_gleu_hash_signature_and_errors(cli, tmp_path):
    base = get_metric("gleu").compute(*SMALL)
    assert base["gleu signature"] == "gleu|n:1-4|tok:wordpunct-u18|refs:2|v:1"
    assert get_metric("gleu", max_len=3).compute(*SMALL)["gleu hashvalue"] != base["gleu hashvalue"]
    assert get_metric("gleu").compute(SMALL[0][::-1], SMALL[1][::-1])["gleu hashvalue"] == base["gleu hashvalue"]
    for options, words in (
        ({"min_len": 3, "max_len": 2}, "must not exceed"),
        ({"min_len": 0}, "min_len"),
        ({"per_sentence": "yes"}, "per_sentence"),
    ):
        with pytest.raises(MetricError, match=words):
            get_metric("gleu", **options)
    with pytest.raises(MetricError, match="2 hypotheses but 1 reference"):
        get_metric("gleu").compute(["a", "b"], [["a"]])
    (tmp_path / "h.txt").write_text("\n".join(SMALL[0]) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(rs[0] for rs in SMALL[1]) + "\n")
    r = cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "h.txt"),
        "--refs",
        str(tmp_path / "r.txt"),
        "-m",
        "gleu",
        "-m",
        "bleu",
        "-o",
        "bleu.smoothing=method7",
        "-o",
        "bleu.auto_reweigh=true",
        "--json",
    )
    assert r.returncode == 0, r
    import json

    out = json.loads(r.stdout)
    h, rr = _tok(SMALL[0], [[rs[0]] for rs in SMALL[1]])
    assert out["gleu"] == pytest.approx(corpus_gleu(rr, h), rel=1e-12)
    assert out["bleu"] == pytest.approx(corpus_bleu(rr, h, smoothing_function=SF.method7, auto_reweigh=True), rel=1e-12)
