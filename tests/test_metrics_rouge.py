"""ROUGE-1/2/L against google's rouge-score package, alpha, hashes and errors."""

from __future__ import annotations

import json
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


@pytest.mark.parametrize(
    "hyp, ref",
    [
        ("", "a cat"),
        ("cat", "a cat sat"),
        ("Ünïcode café ok", "ok café"),
        ("a a a", "a"),
        ("!!!", "?"),
        ("The Cats are RUNNING quickly", "the cat runs quick"),
    ],
)
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
    hashes = {
        base["rouge-1 hashvalue"],
        base["rouge-2 hashvalue"],
        base["rouge-l hashvalue"],
        get_metric("rouge", alpha=0.3).compute(["a b"], [["a b c"]])["rouge-1 hashvalue"],
        get_metric("rouge", stemmer=True).compute(["a b"], [["a b c"]])["rouge-1 hashvalue"],
        get_metric("rouge").compute(["a b"], [["a b d"]])["rouge-1 hashvalue"],
    }
    assert len(hashes) == 6
    # the model's tokenization does not matter: ROUGE re-tokenizes
    assert get_metric("rouge").compute(["A, b"], [["a b c"]])["rouge-1 hashvalue"] == base["rouge-1 hashvalue"]


@pytest.mark.parametrize(
    "options, hyps, refs, message",
    [
        ({"types": ["rougeW"]}, ["a"], [["a"]], "ROUGE types"),
        ({"types": ["rougeLSum"]}, ["a"], [["a"]], "ROUGE types"),
        ({"sentence_separator": " "}, ["a"], [["a"]], "sentence_separator"),
        ({"sentence_separator": 3}, ["a"], [["a"]], "sentence_separator"),
        ({"alpha": 1.5}, ["a"], [["a"]], "alpha"),
        ({}, ["a", "b"], [["a"]], "2 hypotheses but 1 reference"),
        ({}, ["a"], None, "needs references"),
        ({}, ["a"], [[]], "no reference"),
        ({}, [], [], "at least one hypothesis"),
    ],
)
def test_errors(options, hyps, refs, message):
    with pytest.raises(MetricError, match=message):
        get_metric("rouge", **options).compute(hyps, refs)


# rouge-score's own rougeLsum cases (rouge_score/rouge_scorer_test.py, Apache-2.0, Google): testRougeLsum and
# testRougeLSumSentenceSplitting, values transcribed
@pytest.mark.parametrize(
    "target, prediction, stemmer, p, r, f",
    [
        ("w1 w2 w3 w4 w5", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", False, 0.4, 0.8, 0.5333),
        ("w1 w2 w3 w4 w5", "", False, 0.0, 0.0, 0.0),
        ("", "w1", False, 0.0, 0.0, 0.0),
        ("w1 w2 w3 w4 w5", "/", False, 0.0, 0.0, 0.0),
        ("First sentence.\nSecond Sentence.", "Second sentence.\nFirst Sentence.", True, 1.0, 1.0, 1.0),
        ("First sentence. Second Sentence.", "Second sentence. First Sentence.", True, 0.5, 0.5, 0.5),
    ],
)
def test_rouge_lsum_on_rouge_scores_own_cases(target, prediction, stemmer, p, r, f):
    ours = get_metric("rouge", types=["rougeLsum"], stemmer=stemmer).compute([prediction], [[target]])
    assert ours["rouge-lsum"] == pytest.approx(f, abs=1e-4)
    ref = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=stemmer).score(target, prediction)["rougeLsum"]
    assert (ref.precision, ref.recall) == pytest.approx((p, r), abs=1e-4)
    assert ours["rouge-lsum"] == ref.fmeasure


@pytest.mark.parametrize("stemmer", [False, True])
def test_rouge_lsum_equals_rouge_score_on_multi_sentence_texts(fixtures_dir, stemmer):
    hyps, refs = _texygen(fixtures_dir, 240)
    rng = random.Random(3)
    join = lambda lines: "\n".join(lines)  # noqa: E731
    hyps = [join(hyps[i : i + rng.randint(1, 3)]) for i in range(0, 120)]
    refs = [[join([r for rs in refs[i : i + rng.randint(1, 4)] for r in rs[:1]]), refs[i][1]] for i in range(0, 120)]
    scorer = rouge_scorer.RougeScorer(["rougeLsum", "rougeL"], use_stemmer=stemmer)
    ours = get_metric("rouge", types=["rougeLsum", "rougeL"], stemmer=stemmer).compute(hyps, refs)
    for rtype, key in (("rougeLsum", "rouge-lsum"), ("rougeL", "rouge-l")):
        expected = sum(scorer.score_multi(rs, h)[rtype].fmeasure for h, rs in zip(hyps, refs)) / len(hyps)
        assert ours[key] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert ours["rouge-lsum"] != ours["rouge-l"]


def test_sentence_separator_for_one_line_texts(cli, tmp_path):
    hyps = ["the cat sat <n> on the mat today", "a dog <n> ran home"]
    refs = [["the cat was on the mat <n> it sat"], ["a dog ran <n> home it went"]]
    sep = get_metric("rouge", types=["rougeLsum", "rouge1"], sentence_separator="<n>").compute(hyps, refs)
    scorer = rouge_scorer.RougeScorer(["rougeLsum", "rouge1"])
    nl = lambda t: t.replace("<n>", "\n")  # noqa: E731
    for rtype, key in (("rougeLsum", "rouge-lsum"), ("rouge1", "rouge-1")):
        expected = sum(scorer.score(nl(rs[0]), nl(h))[rtype].fmeasure for h, rs in zip(hyps, refs)) / 2
        assert sep[key] == pytest.approx(expected, rel=1e-12)
    assert "sep:<n>" in sep["rouge-lsum signature"] and "split:newline" in sep["rouge-lsum signature"]
    plain = get_metric("rouge", types=["rougeLsum"]).compute(hyps, refs)
    assert plain["rouge-lsum"] != sep["rouge-lsum"]  # without the option "<n>" is a word "n" in one sentence
    assert plain["rouge-lsum hashvalue"] != sep["rouge-lsum hashvalue"]
    # sentence boundaries are in the hash: the same tokens split otherwise score otherwise
    a = get_metric("rouge", types=["rougeLsum"]).compute(["x y"], [["a b\nc d"]])["rouge-lsum hashvalue"]
    b = get_metric("rouge", types=["rougeLsum"]).compute(["x y"], [["a b c\nd"]])["rouge-lsum hashvalue"]
    assert a != b
    # the default types keep their hashes (no separator given)
    assert "sentence_separator" not in get_metric("rouge").settings
    (tmp_path / "h.txt").write_text("\n".join(hyps) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(rs[0] for rs in refs) + "\n")
    r = cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "h.txt"),
        "--refs",
        str(tmp_path / "r.txt"),
        "-m",
        "rouge",
        "-o",
        'rouge.types=["rougeLsum","rouge1"]',
        "-o",
        "rouge.sentence_separator=<n>",
        "--json",
    )
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    assert out["rouge-lsum"] == pytest.approx(sep["rouge-lsum"], rel=1e-12)
    assert out["rouge-lsum hashvalue"] == sep["rouge-lsum hashvalue"]


@pytest.mark.parametrize("name,options", [("meteor", {"wordnet": False}), ("nist", {}), ("rouge", {})])
@pytest.mark.parametrize(
    "hypotheses,references,message",
    [
        ([], [], "{name} needs at least one hypothesis"),
        ("a b", [["a b"]], "hypotheses is a single string"),
        (["a b", "c"], [["a b"], []], "sample 1 has no reference"),
    ],
)
def test_meteor_nist_and_rouge_check_their_samples_alike(name, options, hypotheses, references, message):
    """One preamble (metrics/_text.py check_samples) for the three: the same sentence for the same bad input."""
    with pytest.raises(MetricError, match="^" + message.format(name=name)):
        get_metric(name, **options).compute(hypotheses, references)


# -- issue 40: the tokenizer option (non-Latin scripts) ------------------------------------------------------------

ZH_HYPS = ["我们今天去公园散步", "天气很好，我们出去玩吧", "他说明天\n会下雨"]
ZH_REFS = [["我们明天去公园跑步", "今天我们去公园"], ["今天天气不好"], ["明天会下雨\n他说"]]
RU_HYPS = ["Кошка сидела на ковре, мурлыча.", "Сегодня хорошая погода", "Он пошёл домой — быстро!"]
RU_REFS = [["Кошка сидит на ковре", "кошка на ковре мурлычет"], ["Погода сегодня хорошая"], ["Он быстро пошёл домой!"]]
ALL_TYPES = (("rouge1", "rouge-1"), ("rouge2", "rouge-2"), ("rougeL", "rouge-l"), ("rougeLsum", "rouge-lsum"))


class _CharTokenizer:
    """A character tokenizer for rouge-score, written here: every character that is not whitespace."""

    def tokenize(self, text):
        return [c for c in text if not c.isspace()]


class _SpaceTokenizer:
    def tokenize(self, text):
        return text.split()


class _SacrebleuTokenizer:
    """sacrebleu's own tokenizer object, called as sacrebleu's BLEU calls it."""

    def __init__(self, tok):
        self.tok = tok

    def tokenize(self, text):
        return self.tok(text.rstrip()).split()


def _rouge_score_with(tokenizer, hyps, refs):
    scorer = rouge_scorer.RougeScorer([t for t, _ in ALL_TYPES], tokenizer=tokenizer)
    return {
        key: sum(scorer.score_multi(rs, h)[rtype].fmeasure for h, rs in zip(hyps, refs)) / len(hyps)
        for rtype, key in ALL_TYPES
    }


def _references():
    from nltk.tokenize import WordPunctTokenizer
    from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International
    from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

    return [
        ("char", _CharTokenizer(), ZH_HYPS, ZH_REFS),
        ("zh", _SacrebleuTokenizer(TokenizerZh()), ZH_HYPS, ZH_REFS),
        ("space", _SpaceTokenizer(), RU_HYPS, RU_REFS),
        ("nltk", WordPunctTokenizer(), RU_HYPS, RU_REFS),
        ("intl", _SacrebleuTokenizer(TokenizerV14International()), RU_HYPS, RU_REFS),
    ]


@pytest.mark.parametrize("name", ["char", "zh", "space", "nltk", "intl"])
def test_tokenizer_option_equals_rouge_score_given_that_tokenizer(name):
    [(_, reference, hyps, refs)] = [r for r in _references() if r[0] == name]
    ours = get_metric("rouge", types=[t for t, _ in ALL_TYPES], tokenizer=name).compute(hyps, refs)
    expected = _rouge_score_with(reference, hyps, refs)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    assert ours["rouge-1"] > 0.2  # the texts do overlap: not the default tokenizer's 0


def test_tokenizer_is_hashed_and_signed_and_the_default_is_unchanged():
    default = get_metric("rouge").compute(["a b"], [["a b c"]])
    same = get_metric("rouge", tokenizer="rouge-score").compute(["a b"], [["a b c"]])
    assert same == default and "|tok:rouge-score|" in default["rouge-1 signature"]
    results = {name: get_metric("rouge", tokenizer=name).compute(["a b"], [["a b c"]]) for name in ("space", "char")}
    assert results["space"]["rouge-1 signature"] == "rouge-1|alpha:0.5|stem:no|tok:space|refs:1|v:1"
    assert "|tok:char-sacrebleu" in results["char"]["rouge-1 signature"]
    hashes = {default["rouge-1 hashvalue"]} | {r["rouge-1 hashvalue"] for r in results.values()}
    assert len(hashes) == 3  # the same value (F1 0.8) under three tokenizers: three hashes
    assert {r["rouge-1"] for r in results.values()} == {default["rouge-1"]}
    # a registered tokenizer or a tokenizer object is taken as rouge-score takes one
    obj = get_metric("rouge", tokenizer=_CharTokenizer()).compute(ZH_HYPS, ZH_REFS)
    assert obj["rouge-1"] == pytest.approx(_rouge_score_with(_CharTokenizer(), ZH_HYPS, ZH_REFS)["rouge-1"])


def test_default_tokenizer_warns_when_most_hypotheses_have_no_token(recwarn):
    from cotk_repro.errors import CotkWarning

    with pytest.warns(CotkWarning, match=r"3 of 3 hypotheses .* tokenizer \(char, nltk, space, zh or intl"):
        assert get_metric("rouge").compute(ZH_HYPS, ZH_REFS)["rouge-1"] == 0.0
    with pytest.warns(CotkWarning, match="-o rouge.tokenizer=char"):
        get_metric("rouge").compute(RU_HYPS, RU_REFS)
    recwarn.clear()
    get_metric("rouge").compute(["the cat", "猫", "a dog"], [["the cat"], ["猫"], ["a dog"]])  # one of three
    get_metric("rouge").compute(["!!!", "?"], [["a"], ["b"]])  # punctuation has no word to lose
    get_metric("rouge", tokenizer="char").compute(ZH_HYPS, ZH_REFS)
    assert not [w for w in recwarn if issubclass(w.category, CotkWarning)]


def test_tokenizer_errors_are_one_sentence():
    with pytest.raises(MetricError, match="stemmer=True applies to rouge-score's own tokenizer only"):
        get_metric("rouge", stemmer=True, tokenizer="space")
    with pytest.raises(MetricError, match="unknown tokenizer 'no-such'"):
        get_metric("rouge", tokenizer="no-such")


def test_evaluate_command_warns_and_takes_the_tokenizer(cli, tmp_path):
    (tmp_path / "h.txt").write_text("\n".join(h.replace("\n", " ") for h in ZH_HYPS) + "\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("\n".join(rs[0].replace("\n", " ") for rs in ZH_REFS) + "\n", encoding="utf-8")
    files = ["--hyps", str(tmp_path / "h.txt"), "--refs", str(tmp_path / "r.txt"), "-m", "rouge", "--json"]
    plain = cli("evaluate", *files)
    assert plain.returncode == 0 and json.loads(plain.stdout)["rouge-1"] == 0.0, plain
    [warning] = [line for line in plain.stderr.splitlines() if line.startswith("Warning: ")]
    assert "3 of 3 hypotheses" in warning and "-o rouge.tokenizer=char" in warning and "Traceback" not in plain.stderr
    char = cli("evaluate", *files, "-o", "rouge.tokenizer=char")
    assert char.returncode == 0 and "Warning" not in char.stderr, char
    hyps = [h.replace("\n", " ") for h in ZH_HYPS]
    refs = [[rs[0].replace("\n", " ")] for rs in ZH_REFS]
    assert json.loads(char.stdout)["rouge-1"] == pytest.approx(
        _rouge_score_with(_CharTokenizer(), hyps, refs)["rouge-1"], rel=1e-12
    )
    # evaluate --tokenizer is for token-list inputs: it leaves ROUGE's tokenizer alone
    shared = cli("evaluate", *files, "--tokenizer", "space")
    assert json.loads(shared.stdout)["rouge-1 signature"] == json.loads(plain.stdout)["rouge-1 signature"]
