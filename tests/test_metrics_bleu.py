"""The BLEU family against NLTK (the independent reference), on the shared Texygen data and hand-made cases.

NLTK is called on the tokens of NLTK's own ``WordPunctTokenizer`` (never the project's tokenizer, which is what is
tested); for ``<unk>`` cases each ``<unk>`` is given to NLTK as a token that occurs nowhere else, which is what
"an n-gram containing <unk> never matches" means.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import unicodedata
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nltk.tokenize import WordPunctTokenizer as NltkWordPunct
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

from cotk_repro.metrics import MetricError, evaluate, get_metric
from cotk_repro.metrics.bleu import self_bleu_scores, set_bleu_scores
from cotk_repro.metrics.ngrams import tokenize_texts
from cotk_repro.text.reference_hashes import bleu_reference_hash

SMOOTH = SmoothingFunction()
#: NLTK's own tokenizer: the independent reference side
nltk_wordpunct = NltkWordPunct().tokenize
_counter = itertools.count()


def nltk_tokens(text: str) -> list[str]:
    """WordPunct tokens; each <unk> becomes a fresh token that matches nothing."""
    parts = re.split(r"<unk>", text)
    out = nltk_wordpunct(parts[0])
    for part in parts[1:]:
        out.append(f"\x00unk{next(_counter)}")
        out.extend(nltk_wordpunct(part))
    return out


def nltk_corpus(hyps, refs, n=4, smoothing="method3"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return corpus_bleu(
            [[nltk_tokens(r) for r in rs] for rs in refs],
            [nltk_tokens(h) for h in hyps],
            weights=[1.0 / n] * n,
            smoothing_function=getattr(SMOOTH, smoothing),
        )


def nltk_sentence(refs_tokens, hyp_tokens, n=4, smoothing="method1"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sentence_bleu(
            refs_tokens, hyp_tokens, weights=[1.0 / n] * n, smoothing_function=getattr(SMOOTH, smoothing)
        )


def nltk_self_bleu(sents, n=4):
    toks = [nltk_tokens(s) for s in sents]
    return [nltk_sentence(toks[:i] + toks[i + 1 :], toks[i], n) for i in range(len(toks))]


def read_lines(path, limit=None):
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[:limit] if limit else lines


# --------------------------------------------------------------------------------------------- corpus BLEU


@pytest.mark.parametrize("model", ["mle", "leakgan"])
def test_corpus_bleu_equals_nltk_on_texygen(fixtures_dir, model):
    hyps = read_lines(fixtures_dir / "texygen" / "instances" / f"{model}.txt")
    refs = read_lines(fixtures_dir / "texygen" / "coco_test.txt")[: len(hyps)]
    res = get_metric("bleu").compute(hyps, [[r] for r in refs])
    expected = nltk_corpus(hyps, [[r] for r in refs])
    assert res["bleu"] == pytest.approx(expected, rel=0, abs=1e-12)
    assert res["bleu hashvalue"] == bleu_reference_hash([[r] for r in refs])
    assert res["bleu signature"] == "bleu|n:4|smooth:m3|tok:wordpunct-u18|refs:1|v:1"


def test_corpus_bleu_multi_reference_equals_nltk(fixtures_dir):
    refs_all = read_lines(fixtures_dir / "texygen" / "coco_test.txt", 1500)
    hyps = read_lines(fixtures_dir / "texygen" / "instances" / "seq.txt", 500)
    refs = [refs_all[i * 3 : (i + 1) * 3][: 1 + i % 3] for i in range(500)]  # 1, 2 or 3 references
    for n, smoothing in [(4, "method3"), (2, "method3"), (3, "method1"), (4, "method2"), (1, "method0")]:
        res = get_metric("bleu", ngram=n, smoothing=smoothing).compute(hyps, refs)
        assert res["bleu"] == pytest.approx(nltk_corpus(hyps, refs, n, smoothing), rel=0, abs=1e-12)
        assert f"|n:{n}|smooth:m{smoothing[-1]}|" in res["bleu signature"]
        assert "refs:1-3" in res["bleu signature"]


def test_bleu_custom_weights_equal_nltk():
    hyps = ["the cat sat on the mat .", "a dog runs in the park"]
    refs = [["the cat is on the mat ."], ["a dog runs through the park", "dogs run in parks"]]
    res = get_metric("bleu", ngram=3, weights=[0.5, 0.3, 0.2]).compute(hyps, refs)
    expected = corpus_bleu(
        [[nltk_wordpunct(r) for r in rs] for rs in refs],
        [nltk_wordpunct(h) for h in hyps],
        weights=[0.5, 0.3, 0.2],
        smoothing_function=SMOOTH.method3,
    )
    assert res["bleu"] == pytest.approx(expected, rel=0, abs=1e-12)
    assert "|w:0.5,0.3,0.2|" in res["bleu signature"]
    assert res["bleu hashvalue"] != get_metric("bleu", ngram=3).compute(hyps, refs)["bleu hashvalue"]


@pytest.mark.parametrize(
    "hyps,refs",
    [
        (["", "a cat sat on the mat"], [["a cat sat on a mat"], ["a cat sat on the mat"]]),  # empty hypothesis
        (["a cat", "on the mat"], [["a cat sat"], ["on the mat ."]]),  # hypotheses shorter than n
        (["a cat sat on the mat"], [["a cat sat on the mat today"]]),  # a single sentence
        (["a <unk> sat on the mat", "the <unk> is red"], [["a <unk> sat on the mat"], ["the <unk> is red"]]),  # <unk>
        (["a cat sat on the mat"], [["a <unk> sat on the <unk>", "a cat <unk> on the mat"]]),  # <unk> in references
        (
            ["ein Hund läuft über die Straße", "猫 が 座る 。"],
            [["ein Hund läuft über die Straße ."], ["猫 が 座った 。"]],
        ),
        (["zero overlap here"], [["nothing in common"]]),
    ],
)
def test_bleu_edge_cases_equal_nltk(hyps, refs):
    for n in (1, 2, 4):
        res = get_metric("bleu", ngram=n).compute(hyps, refs)
        assert res["bleu"] == pytest.approx(nltk_corpus(hyps, refs, n), rel=0, abs=1e-12)


def test_unk_never_matches():
    same = get_metric("bleu").compute(["a cat sat on the mat"], [["a cat sat on the mat"]])["bleu"]
    assert same == pytest.approx(1.0)
    with_unk = get_metric("bleu").compute(["a <unk> sat on the mat"], [["a <unk> sat on the mat"]])["bleu"]
    assert with_unk < 1.0
    # the unigram precision is 5/6 and every higher-order n-gram touching <unk> misses: same as a unique word
    assert with_unk == pytest.approx(nltk_corpus(["a X1 sat on the mat"], [["a X2 sat on the mat"]]), abs=1e-12)


def test_bleu_token_and_id_inputs_equal_text_inputs():
    hyps = ["the cat , it sat .", "dogs run"]
    refs = [["the cat , it sat !"], ["dogs run fast"]]
    text = get_metric("bleu").compute(hyps, refs)
    toks = get_metric("bleu").compute([h.split() for h in hyps], [[r.split() for r in rs] for rs in refs])
    assert toks == text

    class Vocab:  # a minimal dataloader-like object: ids -> tokens -> sentence
        words = ["<pad>", "<unk>", "<go>", "<eos>"] + sorted(
            {w for s in hyps + [r for rs in refs for r in rs] for w in s.split()}
        )

        def convert_ids_to_tokens(self, ids, trim=True):
            return [self.words[i] for i in ids if i > 3]

        def convert_tokens_to_sentence(self, tokens):
            return " ".join(tokens)

    dl = Vocab()
    ids = [[2] + [dl.words.index(w) for w in h.split()] + [3] for h in hyps]
    ref_ids = [[[2] + [dl.words.index(w) for w in r.split()] + [3] for r in rs] for rs in refs]
    assert get_metric("bleu", dataloader=dl).compute(ids, ref_ids) == text
    with pytest.raises(MetricError, match="dataloader"):
        get_metric("bleu").compute(ids, ref_ids)


def test_forward_close_equals_compute(fixtures_dir):
    hyps = read_lines(fixtures_dir / "texygen" / "instances" / "rank.txt", 300)
    refs = [[r] for r in read_lines(fixtures_dir / "texygen" / "coco_test.txt", 300)]
    for name in ("bleu", "self-bleu", "fw-bw-bleu"):
        m = get_metric(name)
        for i in range(0, 300, 64):
            m.forward({"hyps": hyps[i : i + 64], "refs": refs[i : i + 64]})
        assert m.close() == get_metric(name).compute(hyps, refs if name != "self-bleu" else None)


def test_bleu_hash_rules():
    hyps = ["a cat sat on the mat", "the dog barked", "birds fly south"]
    refs = [["a cat is on the mat"], ["the dog barked loudly"], ["birds fly north"]]
    base = get_metric("bleu").compute(hyps, refs)
    # order of samples does not matter
    perm = [2, 0, 1]
    shuffled = get_metric("bleu").compute([hyps[i] for i in perm], [refs[i] for i in perm])
    assert shuffled["bleu hashvalue"] == base["bleu hashvalue"]
    assert shuffled["bleu"] == pytest.approx(base["bleu"], abs=1e-15)
    # the hypotheses are not in the hash, n and smoothing are (unlike CoTK's BLEU hash, which leaves n out)
    assert get_metric("bleu").compute(["x"] * 3, refs)["bleu hashvalue"] == base["bleu hashvalue"]
    assert get_metric("bleu", ngram=2).compute(hyps, refs)["bleu hashvalue"] != base["bleu hashvalue"]
    assert get_metric("bleu", smoothing="method1").compute(hyps, refs)["bleu hashvalue"] != base["bleu hashvalue"]
    # references are hashed after re-tokenization: spacing that WordPunct ignores does not change it
    spaced = [["a cat is on the mat"], ["the  dog barked loudly"], ["birds fly north "]]
    assert get_metric("bleu").compute(hyps, spaced)["bleu hashvalue"] == base["bleu hashvalue"]
    # a reference removed changes it
    assert get_metric("bleu").compute(hyps[:2], refs[:2])["bleu hashvalue"] != base["bleu hashvalue"]


def test_bleu_hash_equals_dataloader_reference_hash(fixtures_dir):
    from cotk_repro import data

    if not hasattr(data, "load"):
        pytest.skip("cotk_repro.data.load is not available yet")
    dl = data.load("language-generation", fixtures_dir / "cotk-small" / "mscoco", tokenizer="nltk")
    sents = dl.sentences("test")
    refs = [[s] for s in sents]  # token lists, detokenized by the dataloader
    hyps = [s[: max(1, len(s) - 2)] for s in sents]
    res = get_metric("bleu", dataloader=dl).compute(hyps, refs)
    assert res["bleu hashvalue"] == dl.reference_hashes("test")["bleu"]
    text = get_metric("bleu").compute(
        [dl.convert_tokens_to_sentence(h) for h in hyps], [[dl.convert_tokens_to_sentence(s)] for s in sents]
    )
    assert text == res
    # CoTK style: id batches from the dataloader (hypotheses: the first 4 ids of each reference)
    m = get_metric("bleu", dataloader=dl)
    for batch in dl.batches("test", batch_size=16):
        m.forward({"gen": [row[1:5] for row in batch["sent_allvocabs"]], "sent_allvocabs": batch["sent_allvocabs"]})
    from_ids = m.close()
    assert from_ids["bleu hashvalue"] == dl.reference_hashes("test")["bleu"]
    assert from_ids["bleu"] == pytest.approx(
        nltk_corpus([" ".join(s[:4]) for s in sents], [[" ".join(s)] for s in sents]), abs=1e-12
    )


@pytest.mark.parametrize(
    "options,message",
    [
        ({"ngram": 0}, "ngram"),
        ({"ngram": "x"}, "ngram"),
        ({"weights": [1, 2]}, "weights"),
        ({"smoothing": "method9"}, "smoothing"),
        ({"bogus": 1}, "has no option 'bogus'; its options: ngram"),
    ],
)
def test_bad_options_are_clear_errors(options, message):
    with pytest.raises(MetricError, match=message):
        get_metric("bleu", **options)


def test_bad_inputs_are_clear_errors():
    m = get_metric("bleu")
    with pytest.raises(MetricError, match="2 hypotheses but 1 reference lists"):
        m.compute(["a b", "c d"], [["a b"]])
    with pytest.raises(MetricError, match="at least one hypothesis"):
        m.compute([], [])
    with pytest.raises(MetricError, match="needs references"):
        m.compute(["a"], None)
    with pytest.raises(MetricError, match="no references"):
        m.compute(["a"], [[]])
    with pytest.raises(MetricError, match="is a string"):
        m.compute(["a"], ["a"])
    with pytest.raises(MetricError, match="at least two sentences"):
        get_metric("self-bleu").compute(["only one"])
    with pytest.raises(MetricError, match="sample"):
        get_metric("self-bleu", sample=0)
    with pytest.raises(MetricError, match="needs references"):
        get_metric("fw-bw-bleu").compute(["a"], None)


# --------------------------------------------------------------------------------------------- Self-BLEU


@pytest.mark.parametrize("model", ["mle", "leakgan"])
def test_self_bleu_equals_nltk_per_sentence(fixtures_dir, model):
    sents = read_lines(fixtures_dir / "texygen" / "instances" / f"{model}.txt", 200)
    if model == "leakgan":  # duplicates count as references of each other (left out by position, not value)
        sents = sents[:150] + sents[:50]
    expected = nltk_self_bleu(sents)
    got = self_bleu_scores(tokenize_texts(sents), 4, [0.25] * 4, "method1")
    assert got == expected  # per sentence: bit for bit
    res = get_metric("self-bleu").compute(sents)
    assert res["self-bleu"] == pytest.approx(sum(expected) / len(expected), rel=0, abs=1e-12)
    assert res["self-bleu signature"] == "self-bleu|n:4|smooth:m1|tok:wordpunct-u18|size:200|v:1"


def test_self_bleu_edge_cases_equal_nltk():
    sents = [
        "",
        "a",
        "a cat",
        "a cat sat",
        "a cat sat",
        "a <unk> sat on",
        "über straße 猫",
        "a cat sat on the mat",
        "the mat",
    ]
    for n in (1, 2, 3, 4):
        expected = nltk_self_bleu(sents, n)
        assert self_bleu_scores(tokenize_texts(sents), n, [1.0 / n] * n, "method1") == expected
    two = ["a cat sat", "a dog sat"]
    assert get_metric("self-bleu").compute(two)["self-bleu"] == pytest.approx(sum(nltk_self_bleu(two)) / 2, abs=1e-12)


def test_self_bleu_hash_covers_n_size_and_sampling(fixtures_dir):
    sents = read_lines(fixtures_dir / "texygen" / "instances" / "mle.txt", 400)
    full = get_metric("self-bleu").compute(sents)
    assert get_metric("self-bleu", ngram=3).compute(sents)["self-bleu hashvalue"] != full["self-bleu hashvalue"]
    assert get_metric("self-bleu").compute(sents[:300])["self-bleu hashvalue"] != full["self-bleu hashvalue"]
    # the hash does not depend on which sentences (it identifies the setting, the model's text is what is scored)
    assert (
        get_metric("self-bleu").compute(sents[100:])["self-bleu hashvalue"]
        == get_metric("self-bleu").compute(sents[:300])["self-bleu hashvalue"]
    )
    s1 = get_metric("self-bleu", sample=100, seed=1).compute(sents)
    s2 = get_metric("self-bleu", sample=100, seed=2).compute(sents)
    assert s1["self-bleu hashvalue"] != s2["self-bleu hashvalue"]
    assert s1 == get_metric("self-bleu", sample=100, seed=1).compute(sents)  # deterministic
    assert "|size:100|sample:100|seed:1|" in s1["self-bleu signature"]
    # the sample is an exact Self-BLEU of the sampled sentences
    picked = sorted(random.Random(1).sample(range(400), 100))
    assert s1["self-bleu"] == pytest.approx(
        get_metric("self-bleu").compute([sents[i] for i in picked])["self-bleu"], abs=1e-15
    )
    # a sample as large as the set is the whole set, but says it asked for a sample
    big = get_metric("self-bleu", sample=1000).compute(sents)
    assert big["self-bleu"] == pytest.approx(full["self-bleu"], abs=1e-15)
    assert big["self-bleu hashvalue"] != full["self-bleu hashvalue"]


# --------------------------------------------------------------------------------------------- Fw/Bw-BLEU


@pytest.mark.parametrize("model", ["seq", "textgan"])
def test_fw_bw_bleu_equals_nltk_per_sentence(fixtures_dir, model):
    hyps = read_lines(fixtures_dir / "texygen" / "instances" / f"{model}.txt", 120)
    refs = read_lines(fixtures_dir / "texygen" / "coco_test.txt", 150)
    ht, rt = [nltk_tokens(h) for h in hyps], [nltk_tokens(r) for r in refs]
    fw_exp = [nltk_sentence(rt, h) for h in ht]
    bw_exp = [nltk_sentence(ht, r) for r in rt]
    fw, bw = set_bleu_scores(tokenize_texts(hyps), tokenize_texts(refs), 4, [0.25] * 4, "method1", both=True)
    assert fw == fw_exp and bw == bw_exp
    res = get_metric("fw-bw-bleu").compute(hyps, refs)
    f, b = sum(fw_exp) / len(fw_exp), sum(bw_exp) / len(bw_exp)
    assert res["fw-bleu"] == pytest.approx(f, rel=0, abs=1e-12)
    assert res["bw-bleu"] == pytest.approx(b, rel=0, abs=1e-12)
    assert res["fw-bw-bleu"] == pytest.approx(2 * f * b / (f + b), rel=0, abs=1e-12)
    for key in ("fw-bleu", "bw-bleu", "fw-bw-bleu"):
        assert len(res[f"{key} hashvalue"]) == 64 and res[f"{key} signature"].startswith(key + "|n:4|")
    # reference lists are flattened into the set
    assert get_metric("fw-bw-bleu").compute(hyps, [[r] for r in refs]) == res


def test_fw_bw_hashes():
    hyps = ["a cat sat on the mat", "the dog barked", "birds fly south"]
    refs = ["a cat is on the mat", "the dog barked loudly"]
    base = get_metric("fw-bw-bleu").compute(hyps, refs)
    other_model = get_metric("fw-bw-bleu").compute(["x y z", "y z x", "z y y"], refs)
    for key in ("fw-bleu", "bw-bleu", "fw-bw-bleu"):
        assert other_model[f"{key} hashvalue"] == base[f"{key} hashvalue"]
    assert get_metric("fw-bw-bleu", ngram=2).compute(hyps, refs)["fw-bleu hashvalue"] != base["fw-bleu hashvalue"]
    fewer = get_metric("fw-bw-bleu").compute(hyps[:2], refs)
    assert fewer["fw-bleu hashvalue"] == base["fw-bleu hashvalue"]  # a mean over hypotheses
    assert fewer["bw-bleu hashvalue"] != base["bw-bleu hashvalue"]  # grows with the generated set


# --------------------------------------------------------------------------------------------- properties


WORDS = ["a", "b", "c", "d", "<unk>", "é", "."]
sentence = st.lists(st.sampled_from(WORDS), min_size=0, max_size=7).map(" ".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(1, 4), smoothing=st.sampled_from(["method0", "method1", "method2", "method3"]))
def test_property_corpus_bleu_equals_nltk(data, n, smoothing):
    hyps = data.draw(st.lists(sentence, min_size=1, max_size=6))
    refs = [data.draw(st.lists(sentence, min_size=1, max_size=3)) for _ in hyps]
    got = get_metric("bleu", ngram=n, smoothing=smoothing).compute(hyps, refs)["bleu"]
    expected = nltk_corpus(hyps, refs, n, smoothing)
    assert math.isclose(got, expected, rel_tol=0, abs_tol=1e-12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sents=st.lists(sentence, min_size=2, max_size=8),
    others=st.lists(sentence, min_size=1, max_size=6),
    n=st.integers(1, 4),
)
def test_property_self_and_fw_bw_equal_nltk(sents, others, n):
    w = [1.0 / n] * n
    assert self_bleu_scores(tokenize_texts(sents), n, w, "method1") == nltk_self_bleu(sents, n)
    st_, ot = [nltk_tokens(s) for s in sents], [nltk_tokens(o) for o in others]
    fw, bw = set_bleu_scores(tokenize_texts(sents), tokenize_texts(others), n, w, "method1", both=True)
    assert fw == [nltk_sentence(ot, h, n) for h in st_]
    assert bw == [nltk_sentence(st_, r, n) for r in ot]


# --------------------------------------------------------------------------------------------- evaluate()


def test_evaluate_merges_and_checks_names():
    hyps = ["a cat sat on the mat", "the dog barked"]
    refs = [["a cat is on the mat"], ["the dog barked loudly"]]
    res = evaluate(["bleu", ("bleu", {"ngram": 2}), "self-bleu"], hyps, refs)
    assert res["bleu"] == pytest.approx(get_metric("bleu", ngram=2).compute(hyps, refs)["bleu"])  # later wins
    assert res["self-bleu"] == get_metric("self-bleu").compute(hyps)["self-bleu"]
    with pytest.raises(MetricError, match=r"registered metrics: .*bleu"):
        evaluate(["bleu", "no-such-metric"], hyps, refs)
    toks = evaluate(["bleu"], [h.split() for h in hyps], [[r.split() for r in rs] for rs in refs], tokenizer="space")
    assert toks["bleu"] == get_metric("bleu").compute(hyps, refs)["bleu"]


def test_reference_digest_equals_core_bleu_reference_hash():
    from cotk_repro.metrics.bleu import ReferenceDigest

    refs = [["a cat sat .", "a <unk> sat"], ['über straße 猫 "quoted" \\ back'], ["x"], ["a cat sat .", "b"]]
    digest = ReferenceDigest(refs, [tokenize_texts(rs) for rs in refs])
    assert digest.hash("bleu", 4, [0.25] * 4, "method3") == bleu_reference_hash(refs)
    assert ReferenceDigest(refs).hash(
        "fw-bleu", 2, [0.7, 0.3], "method1", {"sample": None, "references": 5}
    ) == bleu_reference_hash(
        refs,
        metric="fw-bleu",
        ngram=2,
        weights=[0.7, 0.3],
        smoothing="method1",
        extra={"sample": None, "references": 5},
    )


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(
        st.text(
            alphabet=st.sampled_from(list("ab_1 .,'\t\n\r\x0b\x1c\u00a0\u2028éß猫-<>unk!")) | st.characters(),
            max_size=12,
        ),
        max_size=6,
    )
)
def test_property_bulk_tokenizer_equals_wordpunct(texts):
    # every special token is kept whole (<unk>, <pad>, <go>, <eos>), the rest is WordPunct
    specials = ("<unk>", "<pad>", "<go>", "<eos>")
    expected = [[t for t in re.split(r"(<unk>|<pad>|<go>|<eos>)", x) if t] for x in texts]
    expected = [
        [tok for part in parts for tok in ([part] if part in specials else nltk_wordpunct(part))] for parts in expected
    ]
    assert tokenize_texts(texts) == expected


def test_distinct_rows_scored_once_equal_every_row_scored():
    """sentence_scores scores each distinct (counts, lengths) row once: the same floats as scoring every row,
    and _unique_rows (one int64 per row) equals np.unique(axis=0), also on its fallback path."""
    import numpy as np

    from cotk_repro.metrics.bleu import _score_rows, _unique_rows, sentence_scores

    rng = np.random.default_rng(5)
    for smoothing in ("method0", "method1", "method2", "method3"):
        lens = rng.integers(0, 9, 400)
        nums = np.minimum(rng.integers(0, 4, (400, 4)), np.maximum(lens[:, None] - np.arange(4), 0))
        dens = np.maximum(1, lens[:, None] - np.arange(4))
        refs = rng.integers(1, 9, 400)
        w = [0.4, 0.3, 0.2, 0.1]
        assert sentence_scores(nums, dens, lens, refs, w, smoothing) == _score_rows(
            nums, dens, lens, refs, w, smoothing
        )
    for key in (rng.integers(0, 3, (50, 6)), np.array([[2**40, 1], [2**40, 0], [5, 2**30], [5, 2**30]])):
        rows, inverse = _unique_rows(key)
        expected_rows, expected_inverse = np.unique(key, axis=0, return_inverse=True)
        assert rows.tolist() == expected_rows.tolist() and inverse.tolist() == expected_inverse.reshape(-1).tolist()


def test_row_scorer_equals_scalar_bleu_bit_for_bit():
    """_score_rows (precisions in numpy, log once per distinct precision, fsum/exp per row) gives exactly the floats
    of bleu_from_counts (NLTK's arithmetic, one sentence at a time) for every smoothing, zero counts, short and long
    hypotheses, empty ones and uneven weights."""
    import numpy as np

    from cotk_repro.metrics.bleu import _score_rows, bleu_from_counts

    rng = np.random.default_rng(11)
    for smoothing in ("method0", "method1", "method2", "method3"):
        for w in ([0.25] * 4, [0.4, 0.3, 0.2, 0.1], [1.0, 0.0, 0.0, 0.0]):
            lens = rng.integers(0, 30, 3000)
            dens = np.maximum(1, lens[:, None] - np.arange(4))
            nums = np.minimum(rng.integers(0, 12, (3000, 4)), np.maximum(lens[:, None] - np.arange(4), 0))
            nums[rng.random((3000, 4)) < 0.3] = 0
            refs = rng.integers(1, 30, 3000)
            got = _score_rows(nums, dens, lens, refs, w, smoothing)
            want = [
                bleu_from_counts(n, d, h, r, w, smoothing)
                for n, d, h, r in zip(nums.tolist(), dens.tolist(), lens.tolist(), refs.tolist())
            ]
            assert got == want


def test_corpus_counts_equal_plain_counting():
    """corpus_counts (each order only over positions whose two (n-1)-grams matched) gives exactly the clipped counts,
    denominators and lengths of plain Counter-based counting (NLTK's modified precision), on random small-vocabulary
    data with repeats, <unk>, empty sentences and several references per hypothesis."""
    import random
    from collections import Counter

    from cotk_repro.metrics.bleu import corpus_counts

    def grams(toks, n):
        return Counter(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))

    rng = random.Random(4)
    for _ in range(60):
        vocab = ["a", "b", "c", "<unk>"][: rng.randint(1, 4)]
        sent = lambda vocab=vocab: [rng.choice(vocab) for _ in range(rng.randint(0, 12))]  # noqa: E731
        hyps = [sent() for _ in range(rng.randint(1, 30))]
        refs = [[sent() for _ in range(rng.randint(1, 3))] for _ in hyps]
        nums = [0] * 4
        for h, rs in zip(hyps, refs):
            for n in range(1, 5):
                best: Counter = Counter()
                for r in rs:
                    best |= grams(r, n)
                nums[n - 1] += sum(min(c, best[g]) for g, c in grams(h, n).items() if "<unk>" not in g)
        got = corpus_counts(hyps, refs, 4)
        assert got[0] == nums
        assert got[1] == [sum(max(1, len(h) - n + 1) for h in hyps) for n in range(1, 5)]
        assert got[2] == sum(map(len, hyps))
        assert got[3] == sum(min((len(r) for r in rs), key=lambda x: (abs(x - len(h)), x)) for h, rs in zip(hyps, refs))


def test_bulk_tokenizers_equal_nltk_wordpunct_on_fixture_text(fixtures_dir):
    """Both bulk WordPunct tokenizers (BLEU's tokenize_texts and the data loaders' nltk tokenize_many) give NLTK's
    WordPunctTokenizer tokens, line for line, on every Texygen fixture file and on unicode text (accents, CJK,
    non-ASCII spaces and punctuation, digits of other scripts)."""
    from nltk.tokenize import WordPunctTokenizer as NltkWordPunct

    from cotk_repro.data.tokenizers import WordPunctTokenizer

    lines = []
    for path in sorted((fixtures_dir / "texygen").rglob("*.txt")):
        lines.extend(path.read_text(encoding="utf-8").splitlines())
    lines += [
        "café au lait, s'il vous plaît!",
        "日本語の文。「引用」も…",
        "naïve\u00a0coöperation\u2009— ok?",
        "٣ cats ٤dogs",
        "emoji 🙂🙂 done",
        "tab\tand\u2028line",
        "a_b __init__ x--y",
        "",
    ]
    expected = [NltkWordPunct().tokenize(line) for line in lines]
    assert len(lines) > 10000
    assert tokenize_texts(lines) == expected
    assert WordPunctTokenizer().tokenize_many(lines) == expected


# ---------------------------------------------------------------------------------------------
# Scripts where the interpreter's ``re`` and NLTK's ``regex`` split differently (issue 33): BLEU, Self-BLEU and
# distinct equal NLTK computed independently (NLTK's tokenizer, corpus_bleu / sentence_bleu, n-grams counted here)

_WORDS = {
    "thai": "ภาษาไทย สวัสดี ครับ ผม ชอบ กิน ข้าว ที่ บ้าน เมือง ใหญ่ น้ำ ไม่ ได้ จริงๆ".split(),
    "hindi": "नमस्ते दुनिया यह एक किताब है मैं घर जाता हूँ पानी ठंडा और गरम क्या".split(),
    "nfd": [
        unicodedata.normalize("NFD", w)
        for w in "café résumé naïve ἀλήθεια ψυχή Việt Nam tiếng người được không élève".split()
    ],
    "emoji": "👍🏽 👨‍👩‍👧 ❤️ 🇫🇷 ok! 😀😀 go 🎉, fine 🙏🏿 yes".split(),
    "scripts": "H₂O CO₂ x² m³ ½ ①② a₁ E=mc² ⁴⁵ note¹ r₀ ok".split(),
    "control": ["a\x1cb", "c\x1d", "\x1ed", "e\x1f.f", "x\x00y", "word", "a\x07b", "tab\tx", "z\x1c\x1c"],
}


def _corpus(kind: str, n: int, seed: int) -> list[str]:
    rng = random.Random(f"{kind}-{seed}")
    words = _WORDS[kind]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(n)]


def _nltk_distinct(sents: list[str], n: int) -> float:
    grams = [tuple(t[i : i + n]) for t in map(nltk_wordpunct, sents) for i in range(len(t) - n + 1)]
    return len(set(grams)) / len(grams)


@pytest.mark.parametrize("kind", sorted(_WORDS))
def test_bleu_self_bleu_distinct_equal_nltk_on_every_script(kind):
    hyps, refs = _corpus(kind, 40, 1), _corpus(kind, 40, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected_bleu = corpus_bleu(
            [[nltk_wordpunct(r)] for r in refs], [nltk_wordpunct(h) for h in hyps], smoothing_function=SMOOTH.method3
        )
        toks = [nltk_wordpunct(h) for h in hyps]
        expected_self = math.fsum(
            sentence_bleu(toks[:i] + toks[i + 1 :], toks[i], smoothing_function=SMOOTH.method1)
            for i in range(len(toks))
        ) / len(toks)
    res = evaluate(["bleu", "self-bleu", ("distinct", {"ngram": [1, 2]})], hyps, [[r] for r in refs])
    assert res["bleu"] == pytest.approx(expected_bleu, abs=1e-12)
    assert res["self-bleu"] == pytest.approx(expected_self, abs=1e-12)
    assert res["distinct-1"] == _nltk_distinct(hyps, 1)
    assert res["distinct-2"] == _nltk_distinct(hyps, 2)


# ---------------------------------------------------------------------------------------------
# sacrebleu's tokenizers through the BLEU family (-o bleu.tokenizer=NAME): sacrebleu is the reference

_SACRE_WORDS = {
    "chinese": "我们 今天 去 公园 玩 ， 天气 很 好 。 他 说 你好 ！ 中文 测试 句子 学生 老师 书".split(),
    "japanese": "日本語 の テキスト です 。 今日 は 天気 が いい 私 学生 東京 に 行き ます ね".split(),
    "thai": _WORDS["thai"],
    "hindi": _WORDS["hindi"] + ["।", ","],
    "korean": "한국어 텍스트 입니다 . 오늘 날씨 가 좋아요 학생 서울 에 갑니다 나는 책을 읽었다".split(),
    "english": "the cat sat on a mat . it was n't happy , but the dog ran away ! yes $5 U.S.A. don't".split(),
}
_SACRE_TOKENIZERS = {
    "chinese": ("zh", "char"),
    "japanese": ("ja-mecab", "char"),
    "korean": ("ko-mecab", "13a"),
    "thai": ("13a", "intl", "char"),
    "hindi": ("13a", "intl", "char"),
    "english": ("13a", "intl", "char", "zh"),
}


def _sacre_corpus(kind, n, seed):
    rng = random.Random(f"{kind}-{seed}")
    joiner = "" if kind in ("chinese", "japanese") else " "
    return [
        joiner.join(rng.choice(_SACRE_WORDS[kind]) for _ in range(rng.randint(5, 14))) + (" ." if i % 3 else "")
        for i in range(n)
    ]


@pytest.mark.parametrize("kind,tokenizer", [(k, t) for k, ts in _SACRE_TOKENIZERS.items() for t in ts])
def test_bleu_with_sacrebleu_tokenizers_equals_sacrebleu(kind, tokenizer):
    """With smoothing method3 (sacrebleu's ``exp``) and the same tokenizer, BLEU equals
    ``sacrebleu.corpus_bleu(...).score / 100`` to 1e-12, one and two references."""
    import sacrebleu

    hyps, refs, refs2 = _sacre_corpus(kind, 60, 1), _sacre_corpus(kind, 60, 2), _sacre_corpus(kind, 60, 3)
    for ref_sets in ([refs], [refs, refs2]):
        expected = sacrebleu.corpus_bleu(hyps, ref_sets, tokenize=tokenizer)
        assert all(expected.totals), "every order has n-grams (see the zero-total test below)"
        got = evaluate([("bleu", {"tokenizer": tokenizer})], hyps, [list(rs) for rs in zip(*ref_sets)])
        assert abs(got["bleu"] - expected.score / 100) <= 1e-12
        sig = sacrebleu.metrics.bleu.BLEU(tokenize=tokenizer).tokenizer.signature()
        assert got["bleu signature"].startswith(f"bleu|n:4|smooth:m3|tok:{sig}-sacrebleu{sacrebleu.__version__}|")


def test_sacrebleu_differs_only_where_an_order_has_no_ngrams():
    """The one difference, stated in docs/metrics.md: where the hypotheses have no n-gram of some order at all,
    sacrebleu stops there and scores 0; NLTK (and so cotk-repro) counts max(1, 0) n-grams and smooths."""
    import sacrebleu

    hyps, refs = ["我们今天去公园玩。", "他说你好！"], ["我们明天去公园玩。", "他说：你好！"]
    expected = sacrebleu.corpus_bleu(hyps, [refs], tokenize="intl")
    assert expected.totals[2] == 0 and expected.score == 0.0
    got = evaluate([("bleu", {"tokenizer": "intl"})], hyps, [[r] for r in refs])["bleu"]
    toks = [r.split() for r in map(lambda t: sacrebleu.metrics.bleu.BLEU(tokenize="intl").tokenizer(t), hyps)]
    rtoks = [[r.split()] for r in map(lambda t: sacrebleu.metrics.bleu.BLEU(tokenize="intl").tokenizer(t), refs)]
    assert got == pytest.approx(corpus_bleu(rtoks, toks, smoothing_function=SMOOTH.method3), abs=1e-15) and got > 0


@pytest.mark.parametrize("tokenizer", ["zh", "char", "13a"])
def test_self_bleu_and_fw_bw_bleu_with_a_sacrebleu_tokenizer_equal_nltk_on_its_tokens(tokenizer):
    from sacrebleu.metrics.bleu import BLEU

    tok = BLEU(tokenize=tokenizer).tokenizer
    sents, refs = _sacre_corpus("chinese", 30, 4), _sacre_corpus("chinese", 25, 5)
    toks = [tok(s.rstrip()).split() for s in sents]
    rtoks = [tok(s.rstrip()).split() for s in refs]
    expected = [nltk_sentence(toks[:i] + toks[i + 1 :], toks[i]) for i in range(len(toks))]
    got = evaluate([("self-bleu", {"tokenizer": tokenizer})], sents)
    assert got["self-bleu"] == pytest.approx(math.fsum(expected) / len(expected), abs=1e-12)
    fw = [nltk_sentence(rtoks, t) for t in toks]
    got = evaluate([("fw-bw-bleu", {"tokenizer": tokenizer})], sents, refs)
    assert got["fw-bleu"] == pytest.approx(math.fsum(fw) / len(fw), abs=1e-12)
    assert f"tok:{tokenizer}-sacrebleu" in got["fw-bw-bleu signature"]


def test_tokenizer_and_normalization_are_in_the_hash_and_signature():
    hyps, refs = _sacre_corpus("chinese", 20, 1), [[r] for r in _sacre_corpus("chinese", 20, 2)]
    results = {t: evaluate([("bleu", {"tokenizer": t})], hyps, refs) for t in ("nltk", "zh", "char", "space")}
    assert len({r["bleu hashvalue"] for r in results.values()}) == 4
    assert results["nltk"] == evaluate(["bleu"], hyps, refs)  # nltk is the default
    sub, sub_refs = _corpus("scripts", 20, 1), [[r] for r in _corpus("scripts", 20, 2)]  # H₂O, x², ½
    nfkc = evaluate([("bleu", {"normalize": "nfkc"})], sub, sub_refs)
    plain = evaluate(
        ["bleu"],
        [unicodedata.normalize("NFKC", h) for h in sub],
        [[unicodedata.normalize("NFKC", r[0])] for r in sub_refs],
    )
    assert nfkc["bleu"] == plain["bleu"] != evaluate(["bleu"], sub, sub_refs)["bleu"]
    assert nfkc["bleu hashvalue"] != plain["bleu hashvalue"]
    assert "|norm:nfkc|" in nfkc["bleu signature"]
    nfc = evaluate([("bleu", {"normalize": "nfc"})], sub, sub_refs)
    assert nfc["bleu hashvalue"] != evaluate(["bleu"], sub, sub_refs)["bleu hashvalue"]
    with pytest.raises(MetricError, match="unknown normalize 'nfd'"):
        get_metric("bleu", normalize="nfd")


def test_shared_tokenizer_of_evaluate_leaves_the_bleu_family_alone():
    hyps, refs = _sacre_corpus("chinese", 10, 1), [[r] for r in _sacre_corpus("chinese", 10, 2)]
    assert evaluate(["bleu"], hyps, refs, tokenizer="zh")["bleu"] == evaluate(["bleu"], hyps, refs)["bleu"]
    assert evaluate(["distinct"], hyps, tokenizer="zh")["distinct-1 signature"].startswith("distinct|n:1|tok:zh-")


def test_bad_tokenizer_names_and_missing_mecab_are_one_sentence(monkeypatch):
    with pytest.raises(MetricError, match=r"^metric 'bleu': unknown tokenizer 'zz' for the BLEU family; choose nltk"):
        get_metric("bleu", tokenizer="zz")
    import sacrebleu.tokenizers.tokenizer_ja_mecab as ja

    monkeypatch.setattr(ja, "MeCab", None)
    with pytest.raises(
        MetricError,
        match=r"tokenizer 'ja-mecab' needs sacrebleu's optional dependencies.*"
        r"pip install 'sacrebleu\[ja\]'$",
    ):
        get_metric("self-bleu", tokenizer="ja-mecab")


def test_compare_config_takes_the_bleu_tokenizer_option(tmp_path):
    """``options = { tokenizer = "zh" }`` in a compare config: the cell equals the API's value and hash."""
    from cotk_repro.compare import evaluate_config, load_config

    hyps, refs = _sacre_corpus("chinese", 12, 1), _sacre_corpus("chinese", 12, 2)
    (tmp_path / "data" / "zh" / "gold").mkdir(parents=True)
    (tmp_path / "data" / "zh" / "samples").mkdir(parents=True)
    (tmp_path / "data" / "zh" / "gold" / "refs.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (tmp_path / "data" / "zh" / "samples" / "sys.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    (tmp_path / "bench.toml").write_text(
        '[report]\nout = "reports"\n\n[[dataset]]\nname = "zh"\npath = "data/zh"\n\n'
        '[[metric]]\nname = "bleu"\noptions = { tokenizer = "zh" }\n',
        encoding="utf-8",
    )
    result = evaluate_config(load_config(tmp_path / "bench.toml"), jobs=1)
    assert not result.failures, result.failures
    (cell,) = [c for c in result.cells if c.column == "bleu"]
    api = evaluate([("bleu", {"tokenizer": "zh"})], hyps, [[r] for r in refs])
    assert cell.value == api["bleu"] and cell.hash == api["bleu hashvalue"]


@pytest.mark.parametrize("kind,tokenizer", [(k, t) for k, ts in _SACRE_TOKENIZERS.items() for t in ts])
def test_sacrebleu_denominators_equal_sacrebleu_with_short_hypotheses(kind, tokenizer):
    """``denominators="sacrebleu"``: the n-grams there are (NLTK counts max(1, n-grams) per hypothesis, which
    differs where a hypothesis is shorter than n), and an order without any n-gram scores 0: equal to
    ``sacrebleu.corpus_bleu`` on every corpus, one-word hypotheses included."""
    import sacrebleu

    rng = random.Random(f"short-{kind}")
    hyps = [h if rng.random() < 0.6 else h[: rng.randint(0, 3)] for h in _sacre_corpus(kind, 60, 1)]
    refs = _sacre_corpus(kind, 60, 2)
    for hs in (hyps, [h[:2] for h in hyps]):  # the second: (almost) no 4-grams at all
        expected = sacrebleu.corpus_bleu(hs, [refs], tokenize=tokenizer).score / 100
        got = evaluate([("bleu", {"tokenizer": tokenizer, "denominators": "sacrebleu"})], hs, [[r] for r in refs])
        assert abs(got["bleu"] - expected) <= 1e-12
        assert "|den:sacrebleu|" in got["bleu signature"]
    default = evaluate([("bleu", {"tokenizer": tokenizer})], hyps, [[r] for r in refs])
    assert default["bleu hashvalue"] != got["bleu hashvalue"]


def test_one_reference_counts_from_one_sort_equal_the_per_order_counts(fixtures_dir, monkeypatch):
    """With one reference per hypothesis corpus BLEU's clipped counts come from chrF's one-sort kernel; they equal
    the general per-order counting, ``<unk>`` (never matching) and empty sentences included."""
    import random

    from cotk_repro.metrics import bleu as bleu_module
    from cotk_repro.metrics import chrf_stats
    from cotk_repro.metrics.ngrams import tokenize_texts

    d = fixtures_dir / "texygen"
    hyps = tokenize_texts(d.joinpath("instances", "mle.txt").read_text().splitlines()[:800])
    refs = tokenize_texts(d.joinpath("coco_test.txt").read_text().splitlines()[:800])
    hyps += [[], ["<unk>"], ["a", "<unk>", "b"], ["x", "y", "z", "x", "y"]]
    refs += [["a"], ["<unk>"], ["a", "<unk>", "b"], ["x", "y", "x", "y", "z"]]
    rng = random.Random(5)
    for sent in hyps[:200] + refs[:200]:
        if sent and rng.random() < 0.5:
            sent[rng.randrange(len(sent))] = "<unk>"
    nested = [[r] for r in refs]
    for n in (1, 2, 4, 7):
        fast = bleu_module.corpus_counts(hyps, nested, n)
        with monkeypatch.context() as m:
            m.setattr(bleu_module, "_single_reference_matches", lambda *a: None)
            assert bleu_module.corpus_counts(hyps, nested, n) == fast
        for block in (1, 97, 803):  # the kernel run on blocks of pairs: the same sums
            with monkeypatch.context() as m:
                m.setattr(chrf_stats, "PAIR_BLOCK", block)
                assert bleu_module.corpus_counts(hyps, nested, n) == fast
    assert bleu_module.corpus_counts([["<unk>", "a"]], [[["<unk>", "a"]]], 2)[0] == [1, 0]
