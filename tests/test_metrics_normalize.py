"""The ``normalize`` option (Unicode normalisation before tokenizing: none, nfc, nfkc) on every metric that
tokenizes text, and the BLEU family's ``tokenizer`` option on ``bleu-precision-recall``.

Independent references: each metric with ``normalize=F`` equals the same metric on texts normalised beforehand with
``unicodedata``; ``bleu-precision-recall`` equals NLTK's ``sentence_bleu`` (method1) on sacrebleu's own tokens,
precision and recall taken by hand. With the default options every hash and signature is the one it was before the
option existed (pinned below: computed on the main branch before this change)."""

from __future__ import annotations

import math
import unicodedata

import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from sacrebleu.metrics.bleu import BLEU

from cotk_repro.metrics import MetricError, evaluate, get_metric

HYPS = ["the cat sat on the mat .", "H₂O is wet ; café ！", "नमस्ते दुनिया", "a dog ran"]
REFS = [["the cat is on the mat ."], ["water is wet ; cafe !"], ["नमस्ते दुनिया यह"], ["the dog ran away"]]
# texts that NFC and NFKC change differently: decomposed accents (NFC composes), compatibility forms (NFKC folds
# the full-width letters, the ligature, the superscript and the subscript)
ODD_HYPS = ["cafe\u0301 ｃａｆｅ ﬁne x² H₂O", "re\u0301sume\u0301 ！ ｈｉ", "ﬁle the cafe\u0301", "x² and H₂O ."]
ODD_REFS = [["café cafe fine x2 H2O"], ["résumé ! hi"], ["file the café"], ["x2 and H2O ."]]

DEFAULT_PINS = {
    "bleu": {
        "bleu hashvalue": "09bf9d11b279392242a98ab9c4b0a3367acc28b1b13ed7a139ff38b3d519d22d",
        "bleu signature": "bleu|n:4|smooth:m3|tok:wordpunct-u18|refs:1|v:1",
    },
    "bleu-precision-recall": {
        "bleu-2-precision hashvalue": "ecfc8b4f9aa93171d8ffa9086cff220bfa6c3d1df33ad11d3775f38a711a3724",
        "bleu-2-precision signature": "bleu-2-precision|n:2|smooth:m1|ctx:4|v:1",
        "bleu-2-recall hashvalue": "a7e223524e7e28a65b6bca4de3e0102ee724515d171bb010401ff099006d2f34",
        "bleu-2-recall signature": "bleu-2-recall|n:2|smooth:m1|ctx:4|v:1",
    },
    "cider": {
        "cider hashvalue": "fdcccce2168d9d05ce109460827032897a30f907cffb1be8ad1b407b11819c8f",
        "cider signature": "cider-d|n:4|sigma:6.0|tok:space|idf:refs|refs:1|v:1",
    },
    "distinct": {
        "distinct-1 hashvalue": "59e1d10efd29b8b99a3e6a33ab9c3ecc1358e612288e4ee1fc4234d7ab614c63",
        "distinct-1 signature": "distinct|n:1|tok:wordpunct-u18|hyps:4|refs:4|v:1",
        "distinct-2 hashvalue": "546c2a5d78987791763ec420a699e2e4209c95a0deb98f6d012d8d25f1771dff",
        "distinct-2 signature": "distinct|n:2|tok:wordpunct-u18|hyps:4|refs:4|v:1",
    },
    "fw-bw-bleu": {
        "bw-bleu hashvalue": "6eaddcf5d059f3b475871b7bd0eadca467ca5210d58e198a480027e5134873d6",
        "bw-bleu signature": "bw-bleu|n:4|smooth:m1|tok:wordpunct-u18|refs:4|hyps:4|v:1",
        "fw-bleu hashvalue": "52e0ef11a4e1116e8031f8144b126225bf0d05620820040c4959cf16110ff2d0",
        "fw-bleu signature": "fw-bleu|n:4|smooth:m1|tok:wordpunct-u18|refs:4|v:1",
        "fw-bw-bleu hashvalue": "a8879696aa54420118a4c422830bf0bc5fc42e763354b8e87ddf26a3b9139236",
        "fw-bw-bleu signature": "fw-bw-bleu|n:4|smooth:m1|tok:wordpunct-u18|refs:4|hyps:4|v:1",
    },
    "fw-rv-ppl": {
        "fw-ppl hashvalue": "373a0e5e45b2f174178d25f70096559999132d9771fbe0fa00a6e928661a018d",
        "fw-ppl signature": "fw-ppl|n:2|lm:kn-interp|d:0.75|cutoff:1|tok:wordpunct-u18|refs:4|hyps:4|v:1",
        "rv-ppl hashvalue": "aa0f7b3b82b70e35a3743076edf8caa208aa9b833127857add3c09221c2efd37",
        "rv-ppl signature": "rv-ppl|n:2|lm:kn-interp|d:0.75|cutoff:1|tok:wordpunct-u18|refs:4|hyps:4|v:1",
    },
    "gleu": {
        "gleu hashvalue": "f79a37652152906f8ce1e318b2d62f8d9b462ee3111da7eb2ce541c8418f0940",
        "gleu signature": "gleu|n:1-4|tok:wordpunct-u18|refs:1|v:1",
    },
    "meteor": {
        "meteor hashvalue": "e3c9b80ebf907fd6ed0ae3735de03ae3909c8ee8f1414af5cb907e4631a67d47",
        "meteor signature": "meteor|mod:exact+stem|a:0.9|b:3.0|g:0.5|tok:wordpunct-u18|refs:1|v:1",
    },
    "ngram-entropy": {
        "ngram-entropy-1 hashvalue": "f8f717e4314dc0accce50854d57c62e40b710a17eada3c67dda251b9a6a63615",
        "ngram-entropy-1 signature": "ngram-entropy|n:1|group:all|log:e|tok:wordpunct-u18|hyps:4|refs:4|v:1",
        "ngram-entropy-2 hashvalue": "5de56c7ffe15ab72298328b220c6e8ce1efac314a07ee6c29fd430ffba320c4e",
        "ngram-entropy-2 signature": "ngram-entropy|n:2|group:all|log:e|tok:wordpunct-u18|hyps:4|refs:4|v:1",
        "ngram-entropy-3 hashvalue": "2077d1cf52bc500cb240b2d849519457480ea33da4b42e9fcbb9812024c96615",
        "ngram-entropy-3 signature": "ngram-entropy|n:3|group:all|log:e|tok:wordpunct-u18|hyps:4|refs:4|v:1",
    },
    "nist": {
        "nist hashvalue": "90b35e206f9edf08c31c1f482660e6da16aa726b0d5a2c86c57a7e2641072a51",
        "nist signature": "nist|n:5|tok:wordpunct-u18|refs:1|v:1",
    },
    "rouge": {
        "rouge-1 hashvalue": "0f1c01f54c91adfee64727e492e79fb65f275eea65ffd48a103c9ad9af5d9c0d",
        "rouge-1 signature": "rouge-1|alpha:0.5|stem:no|tok:rouge-score|refs:1|v:1",
        "rouge-2 hashvalue": "4cdd7f547c56c79bfdc220dae848978f9ddc9a0ce26bfcbbd714f0a363a8efa8",
        "rouge-2 signature": "rouge-2|alpha:0.5|stem:no|tok:rouge-score|refs:1|v:1",
        "rouge-l hashvalue": "87b55212d25ee1398cc60dcfa2d6cd55e54e3f94776ebf684250865a644766ac",
        "rouge-l signature": "rouge-l|alpha:0.5|stem:no|tok:rouge-score|refs:1|v:1",
        "rouge-lsum hashvalue": "964ad3744e4722cc1621a2aea940817d33d91a2ff0456e8fcc27eb6f3b4dea5b",
        "rouge-lsum signature": "rouge-lsum|alpha:0.5|stem:no|tok:rouge-score|split:newline|refs:1|v:1",
    },
    "self-bleu": {
        "self-bleu hashvalue": "f963459f4d5ad63ce73c3c1c35b78d41bf31f2209657124fe78c8b9f9a6e409c",
        "self-bleu signature": "self-bleu|n:4|smooth:m1|tok:wordpunct-u18|size:4|v:1",
    },
}

CASES = [
    ("distinct", {}),
    ("ngram-entropy", {}),
    ("nist", {}),
    ("meteor", {"wordnet": False}),
    ("gleu", {}),
    ("cider", {}),
    ("fw-rv-ppl", {"ngram": 2}),
    ("bleu", {}),
    ("self-bleu", {}),
    ("fw-bw-bleu", {}),
    ("rouge", {"types": ["rouge1", "rouge2", "rougeL", "rougeLsum"]}),
]
REFERENCE_FREE = ("self-bleu",)


def _run(name, opts, hyps, refs):
    return get_metric(name, **opts).compute(hyps, None if name in REFERENCE_FREE else refs)


def _ids(result):
    return {k: v for k, v in result.items() if k.endswith("hashvalue") or k.endswith("signature")}


def test_default_hashes_and_signatures_unchanged():
    for name, opts in CASES:
        assert _ids(_run(name, opts, HYPS, REFS)) == DEFAULT_PINS[name], name
        assert _ids(_run(name, {**opts, "normalize": "none"}, HYPS, REFS)) == DEFAULT_PINS[name], name
    got = get_metric("bleu-precision-recall").compute([[h, h.upper()] for h in HYPS], REFS)
    assert _ids(got) == DEFAULT_PINS["bleu-precision-recall"]


@pytest.mark.parametrize("name,opts", CASES)
@pytest.mark.parametrize("form", ["nfc", "nfkc"])
def test_normalize_equals_normalising_first(name, opts, form):
    """``normalize=F`` scores exactly what the metric scores on texts normalised with unicodedata first; the form is
    in the hash (different from none's and from the other form's) and in the signature."""
    norm = lambda t: unicodedata.normalize(form.upper(), t)  # noqa: E731
    ours = _run(name, {**opts, "normalize": form}, ODD_HYPS, ODD_REFS)
    first = _run(name, opts, [norm(h) for h in ODD_HYPS], [[norm(r) for r in rs] for rs in ODD_REFS])
    plain = _run(name, opts, ODD_HYPS, ODD_REFS)
    other = _run(name, {**opts, "normalize": "nfkc" if form == "nfc" else "nfc"}, ODD_HYPS, ODD_REFS)
    values = [k for k in ours if not k.endswith(("hashvalue", "signature"))]
    assert values and all(
        ours[k] == first[k] or (isinstance(ours[k], float) and math.isnan(ours[k]) and math.isnan(first[k]))
        for k in values
    ), name
    for key in (k for k in ours if k.endswith("hashvalue")):
        assert ours[key] != plain[key] and ours[key] != other[key], (name, key)
    assert all(form in ours[k] for k in ours if k.endswith("signature")), name


def test_normalize_changes_the_tokens_where_it_should():
    """NFKC folds H₂O's subscript (three WordPunct tokens become one) and the full-width letters: distinct-1 moves."""
    plain = get_metric("distinct", ngram=1).compute(["H₂O ｈｉ", "H2O hi"])
    folded = get_metric("distinct", ngram=1, normalize="nfkc").compute(["H₂O ｈｉ", "H2O hi"])
    assert plain["distinct-1"] == 6 / 6 and folded["distinct-1"] == 2 / 4
    assert "tok:wordpunct-u" in plain["distinct-1 signature"]
    assert "+nfkc|" in folded["distinct-1 signature"]


@pytest.mark.parametrize("name", [n for n, _ in CASES] + ["bleu-precision-recall"])
def test_unknown_normalize_is_one_sentence(name):
    with pytest.raises(MetricError) as exc:
        get_metric(name, normalize="nfd")
    assert "unknown normalize 'nfd'; choose one of none, nfc, nfkc" in exc.value.message
    assert "\n" not in exc.value.message


def test_rouge_normalize_keeps_full_width_letters():
    """rouge-score's tokenizer keeps ASCII letters and digits only: NFKC turns full-width ones into them."""
    plain = get_metric("rouge", types=["rouge1"]).compute(["ｈｅｌｌｏ world"], [["hello world"]])
    folded = get_metric("rouge", types=["rouge1"], normalize="nfkc").compute(["ｈｅｌｌｏ world"], [["hello world"]])
    assert plain["rouge-1"] == pytest.approx(2 / 3) and folded["rouge-1"] == 1.0
    assert "|norm:nfkc|" in folded["rouge-1 signature"]


def test_normalize_through_evaluate():
    got = evaluate([("distinct", {"normalize": "nfkc"}), ("nist", {"normalize": "nfc"})], ODD_HYPS, ODD_REFS)
    assert got["distinct-1"] == get_metric("distinct", normalize="nfkc").compute(ODD_HYPS)["distinct-1"]
    assert "+nfc|" in got["nist signature"]


# bleu-precision-recall's tokenizer option


def _nltk_precision_recall(contexts, refs, tokenize, n):
    weights = [1 / n] * n
    smooth = SmoothingFunction().method1
    prec, rec = [], []
    for gens, rs in zip(contexts, refs):
        g = [tokenize(x) for x in gens]
        r = [tokenize(x) for x in rs]
        m = [[sentence_bleu([ref], gen, weights, smoothing_function=smooth) for gen in g] for ref in r]
        prec.append(sum(max(m[a][b] for a in range(len(r))) for b in range(len(g))) / len(g))
        rec.append(sum(max(row) for row in m) / len(r))
    return sum(prec) / len(prec), sum(rec) / len(rec)


CONTEXTS = [
    ["我们今天去公园玩。", "他说：“你好！”", "天气很好"],
    ["学生 和 老师 ， 今天", "中文测试句子。"],
    ["The cat sat on the mat.", "It wasn't 3.5 dollars!"],
]
CONTEXT_REFS = [
    ["我们今天去公园。", "天气很好，我们去玩"],
    ["老师和学生", "中文测试。"],
    ["The cat is on the mat.", "It was $3.5!"],
]


@pytest.mark.parametrize("tokenizer", ["zh", "intl", "char", "13a", "space"])
@pytest.mark.parametrize("n", [2, 4])
def test_bleu_precision_recall_tokenizer_equals_nltk_on_sacrebleus_tokens(tokenizer, n):
    if tokenizer == "space":
        tokenize = str.split
    else:
        sb = BLEU(tokenize=tokenizer).tokenizer
        tokenize = lambda s: sb(s.rstrip()).split()  # noqa: E731 - sacrebleu's BLEU tokenizes line.rstrip()
    ours = get_metric("bleu-precision-recall", ngram=n, tokenizer=tokenizer).compute(CONTEXTS, CONTEXT_REFS)
    prec, rec = _nltk_precision_recall(CONTEXTS, CONTEXT_REFS, tokenize, n)
    assert ours[f"bleu-{n}-precision"] == pytest.approx(prec, abs=1e-12)
    assert ours[f"bleu-{n}-recall"] == pytest.approx(rec, abs=1e-12)
    default = get_metric("bleu-precision-recall", ngram=n).compute(CONTEXTS, CONTEXT_REFS)
    assert ours[f"bleu-{n}-precision hashvalue"] != default[f"bleu-{n}-precision hashvalue"]
    assert f"|tok:{tokenizer}" in ours[f"bleu-{n}-precision signature"]


def test_bleu_precision_recall_default_is_wordpunct_and_tokenizer_nltk_is_the_default():
    from nltk.tokenize import WordPunctTokenizer

    ours = get_metric("bleu-precision-recall").compute(CONTEXTS, CONTEXT_REFS)
    prec, rec = _nltk_precision_recall(CONTEXTS, CONTEXT_REFS, WordPunctTokenizer().tokenize, 2)
    assert ours["bleu-2-precision"] == pytest.approx(prec, abs=1e-12)
    assert ours["bleu-2-recall"] == pytest.approx(rec, abs=1e-12)
    assert get_metric("bleu-precision-recall", tokenizer="nltk").compute(CONTEXTS, CONTEXT_REFS) == ours


def test_bleu_precision_recall_normalize_and_bad_tokenizer():
    folded = get_metric("bleu-precision-recall", normalize="nfkc").compute([["ｈｉ there"]], [["hi there"]])
    assert folded["bleu-2-precision"] == pytest.approx(1.0)
    assert "|norm:nfkc|" in folded["bleu-2-precision signature"]
    with pytest.raises(MetricError) as exc:
        get_metric("bleu-precision-recall", tokenizer="nope")
    assert "unknown tokenizer 'nope' for the BLEU family" in exc.value.message
