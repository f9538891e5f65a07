"""cotk_repro.compat.cotk: CoTK 0.1.0's own v2 regression cases, the CoTK rules' hashes, the new native
metrics against hand computations, and the native ``sample_mode="cotk"`` against CoTK 0.1.0 itself."""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import cotk_repro.compat.cotk as C
from cotk_repro.metrics import MetricError, evaluate, get_metric, metric_names
from cotk_repro.metrics.facts import facts_for_result_key, metric_facts

FIXTURES = Path(__file__).parent / "fixtures"
V2 = FIXTURES / "cotk_v2"
TEXYGEN = FIXTURES / "texygen"


def _cases():
    for path in sorted(V2.glob("*_v2.jsonl")):
        for i, line in enumerate(path.read_text().splitlines()):
            if line.strip():
                yield pytest.param(path.name[: -len("_v2.jsonl")], i, line, id=f"{path.name[:-9]}-{i}")


def _run_case(name: str, line: str):
    """CoTK's harness (tests/metric/metric_base.py, version_test): cls(**init), forward(**batch), close()."""
    data = json.loads(line)
    init = dict(data["init"])
    if isinstance(init.get("dataloader"), dict):
        init["dataloader"] = C.vocab_dataloader(
            init["dataloader"]["all_vocab_list"], init["dataloader"]["valid_vocab_len"]
        )
    metric = getattr(C, name)(**init)
    for batch in data["forward"]:
        metric.forward(**batch)
    return metric, metric.close(), data["output"]


def test_v2_suite_is_complete():
    names = {p.name[: -len("_v2.jsonl")] for p in V2.glob("*_v2.jsonl")}
    assert len(list(_cases())) == 45 and len(names) == 10
    assert all(hasattr(C, n) for n in names)


@pytest.mark.parametrize("name,index,line", list(_cases()))
def test_v2_case(name, index, line):
    metric, result, expected = _run_case(name, line)
    assert set(result) == set(expected)  # CoTK's keys, no more
    for key, value in expected.items():
        if key.endswith("hashvalue"):
            assert isinstance(result[key], str) and len(result[key]) == 64
            assert result[key] != value  # this library's hash, never CoTK's
        else:
            assert abs(result[key] - value) <= 1e-12, (key, result[key], value)
    assert metric.signatures  # each value's native signature, naming the rule used


def test_compat_signatures_name_the_cotk_rules():
    line = (V2 / "SelfBleuCorpusMetric_v2.jsonl").read_text().splitlines()[0]
    metric, _, _ = _run_case("SelfBleuCorpusMetric", line)
    assert "|tok:given|" in metric.signatures["self-bleu"] and "|pick:cotk|" in metric.signatures["self-bleu"]
    line = (V2 / "PerplexityMetric_v2.jsonl").read_text().splitlines()[0]
    metric, _, _ = _run_case("PerplexityMetric", line)
    assert "unk-target:skip" in metric.signatures["perplexity"]
    line = (V2 / "NgramFwBwPerplexityMetric_v2.jsonl").read_text().splitlines()[1]
    metric, _, _ = _run_case("NgramFwBwPerplexityMetric", line)
    assert "|lm:kn-cotk|" in metric.signatures["fwppl"]


# -- the CoTK rules as native settings -----------------------------------------------------------------


def _lines(name: str, count: int) -> list[str]:
    return (TEXYGEN / name).read_text().splitlines()[:count]


def test_sample_mode_cotk_hash_differs_exactly_when_the_value_can():
    sents = _lines("instances/mle.txt", 300)
    fair = get_metric("self-bleu", sample=100).compute(sents)
    cotk = get_metric("self-bleu", sample=100, sample_mode="cotk").compute(sents)
    assert fair["self-bleu"] != cotk["self-bleu"]
    assert fair["self-bleu hashvalue"] != cotk["self-bleu hashvalue"]
    # the rule picks the sentences CoTK picks: a seeded shuffle, the first 100
    import random

    order = list(range(300))
    random.seed(1229)
    random.shuffle(order)
    picked = [sents[i] for i in order[:100]]
    assert abs(get_metric("self-bleu").compute(picked)["self-bleu"] - cotk["self-bleu"]) <= 1e-12
    # no sampling (sample >= size): the same sentences, so the same value and the same hash
    whole = get_metric("self-bleu", sample=1000).compute(sents)
    assert whole == get_metric("self-bleu", sample=1000, sample_mode="cotk").compute(sents)
    # fw/bw: the first `sample` of each set
    refs = _lines("coco_test.txt", 200)
    fb = get_metric("fw-bw-bleu", sample=50, sample_mode="cotk").compute(sents, refs)
    first = get_metric("fw-bw-bleu").compute(sents[:50], refs[:50])
    for key in ("fw-bleu", "bw-bleu", "fw-bw-bleu"):
        assert abs(fb[key] - first[key]) <= 1e-12
    assert fb["fw-bleu hashvalue"] != first["fw-bleu hashvalue"]
    assert fb["fw-bleu hashvalue"] != get_metric("fw-bw-bleu", sample=50).compute(sents, refs)["fw-bleu hashvalue"]
    with pytest.raises(MetricError, match="sample_mode"):
        get_metric("self-bleu", sample_mode="first")


def test_retokenize_false_keeps_special_tokens_atomic():
    dl = C.vocab_dataloader(["<pad>", "<unk>", "<go>", "<eos>", "a", "b", "c"], 7)
    assert dl.convert_ids_to_tokens([2, 4, 0, 5, 3, 0, 0]) == ["a", "<pad>", "b"]  # CoTK: inner <pad> stays
    hyp, ref = ["a", "<pad>", "b", "c"], ["a", "<pad>", "b", "c"]
    given = get_metric("bleu", retokenize=False).compute([hyp], [[ref]])
    assert given["bleu"] == 1.0 and "|tok:given|" in given["bleu signature"]
    retok = get_metric("bleu").compute([hyp], [[ref]])  # the default keeps special tokens whole too
    assert retok["bleu"] == 1.0 and retok["bleu hashvalue"] != given["bleu hashvalue"]
    from cotk_repro.metrics.ngrams import tokenize_text

    assert tokenize_text("a <pad> b<eos>c <unk>, <go>x") == ["a", "<pad>", "b", "<eos>", "c", "<unk>", ",", "<go>", "x"]
    # a token WordPunct would split is one token only as given
    assert get_metric("bleu", ngram=1, retokenize=False).compute([["wheel."]], [[["wheel"]]])["bleu"] == 0.0
    assert get_metric("bleu", ngram=1).compute([["wheel."]], [[["wheel"]]])["bleu"] > 0
    # <unk> never matches, as given or not
    assert get_metric("bleu", ngram=1, retokenize=False).compute([["<unk>", "a"]], [[["<unk>", "a"]]])["bleu"] == 0.5


def _ppl_batch(ids, logp):
    return {"sent_allvocabs": np.array([ids]), "sent_length": np.array([len(ids)]), "gen_log_prob": np.array([logp])}


def test_perplexity_cotk_rules_by_hand():
    # vocab: specials, F = {a}, R = {r1, r2}; the model gives log-probs over all 7 tokens
    p = np.array([0.05, 0.2, 0.05, 0.3, 0.2, 0.1, 0.1])
    logp = np.log(np.tile(p, (4, 1)))
    ids = [2, 4, 1, 5, 3]  # <go> a <unk> r1 <eos>
    kw = dict(frequent=["a"], rare=["r1", "r2"])
    fair = get_metric("perplexity", **kw)
    fair.forward(_ppl_batch(ids, logp))
    fair = fair.close()
    assert math.isclose(
        fair["perplexity"], math.exp(-(math.log(0.2) + math.log(0.2) + math.log(0.1) + math.log(0.3)) / 4)
    )
    cotk = get_metric("perplexity", unk_targets="skip", rare_words="cotk", reference_check="cotk", **kw)
    cotk.forward(_ppl_batch(ids, logp))
    cotk = cotk.close()
    rare = math.log(0.2 / 2 + 0.1)  # p(<unk>)/|R| + p(r1)
    assert math.isclose(cotk["perplexity"], math.exp(-(math.log(0.2) + rare + math.log(0.3)) / 3), rel_tol=1e-14)
    assert cotk["perplexity hashvalue"] != fair["perplexity hashvalue"]
    assert "unk-target:skip" in cotk["perplexity signature"]
    # reference_check: CoTK scores a <pad> target and needs no <eos>; the fair default refuses
    with pytest.raises(MetricError, match="<go> tokens <eos>"):
        m = get_metric("perplexity", **kw)
        m.forward(_ppl_batch([2, 4, 0, 4], logp[:3]))
    m = get_metric("perplexity", reference_check="cotk", **kw)
    m.forward(_ppl_batch([2, 4, 0, 4], logp[:3]))
    assert math.isclose(m.close()["perplexity"], math.exp(-(2 * math.log(0.2) + math.log(0.05)) / 3))
    # the lists form: a word outside F and R is an <unk> target, skipped under the CoTK rule
    lists = get_metric("perplexity", unk_targets="skip", **kw).compute_lists([["a", "zzz"]], [[-1.0, -2.0, -3.0]])
    assert math.isclose(lists["perplexity"], math.exp(4 / 2))


def test_ngram_lm_cotk_unigram_formula():
    # CoTK's n = 1 model: p = 1/|V| for every word; N words and S end symbols scored, divided by N
    refs = [["a", "b", "c"], ["a", "d"]]
    hyps = [["a", "b"], ["e"]]
    out = get_metric("fw-rv-ppl", ngram=1, mode="cotk", tokenizer="space").compute(
        [" ".join(h) for h in hyps], [[" ".join(r)] for r in refs]
    )
    v = 4 + 1  # a b c d and <unk> (n = 1 pads nothing)
    assert math.isclose(out["fw-ppl"], v ** ((3 + 2) / 3), rel_tol=1e-12)
    assert "|lm:kn-cotk|" in out["fw-ppl signature"]
    default = get_metric("fw-rv-ppl", ngram=1, tokenizer="space").compute(
        [" ".join(h) for h in hyps], [[" ".join(r)] for r in refs]
    )
    assert default["fw-ppl hashvalue"] != out["fw-ppl hashvalue"]


# -- the new native metrics ------------------------------------------------------------------------

VECTORS = {"cat": [1.0, 0.0, 2.0], "dog": [0.5, 1.0, 1.0], "runs": [-1.0, 2.0, 0.0], "fast": [0.0, -1.0, 3.0]}


def _hand_bow(words, mode):
    vs = [VECTORS[w] for w in words if w in VECTORS]
    if not vs:
        return None
    if mode == "avg":
        return [sum(col) / len(vs) for col in zip(*vs)]
    return [max(col) for col in zip(*vs)]


def _hand_sim(g, r, mode):
    a, b = _hand_bow(g.split(), mode), _hand_bow(r.split(), mode)
    if a is None or b is None:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b))
    return (dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b)) + 1) / 2


@pytest.mark.parametrize("header", [True, False])
@pytest.mark.parametrize("mode", ["avg", "extrema"])
def test_embedding_precision_recall_equals_hand_computation(tmp_path, header, mode):
    path = tmp_path / "vectors.txt"
    lines = [f"{w} " + " ".join(repr(x) for x in v) for w, v in VECTORS.items()]
    path.write_text(("4 3\n" if header else "") + "\n".join(lines) + "\n")
    gens = [["the cat runs", "a dog", "nothing here"], ["fast dog"]]
    refs = [["cat runs fast", "dog"], ["the cat", "dog fast", "runs"]]
    out = evaluate([("embedding-precision-recall", {"vectors": str(path), "mode": mode})], gens, refs)
    prec, rec = [], []
    for gs, rs in zip(gens, refs):
        m = [[_hand_sim(g, r, mode) for g in gs] for r in rs]
        prec.append(sum(max(m[i][j] for i in range(len(rs))) for j in range(len(gs))) / len(gs))
        rec.append(sum(max(row) for row in m) / len(rs))
    assert math.isclose(out[f"{mode}-bow-precision"], sum(prec) / 2, rel_tol=1e-12)
    assert math.isclose(out[f"{mode}-bow-recall"], sum(rec) / 2, rel_tol=1e-12)
    # the vectors are in the hash; a mapping gives the same result as the file
    other = dict(VECTORS, cat=[1.0, 0.0, 2.5])
    assert (
        get_metric("embedding-precision-recall", vectors=other, mode=mode).compute(gens, refs)[
            f"{mode}-bow-precision hashvalue"
        ]
        != out[f"{mode}-bow-precision hashvalue"]
    )
    assert get_metric("embedding-precision-recall", vectors=VECTORS, mode=mode).compute(gens, refs) == out


def test_bleu_precision_recall_equals_hand_computation():
    gens = [["a b c", "a x"], ["b b"]]
    refs = [["a b c d", "x"], ["b c", "a b b"]]
    out = evaluate([("bleu-precision-recall", {"ngram": 1})], gens, refs)

    def bleu1(g, r):  # BLEU-1 with one reference: clipped unigram precision times the brevity penalty
        g, r = g.split(), r.split()
        match = sum(min(g.count(w), r.count(w)) for w in set(g))
        bp = 1.0 if len(g) > len(r) else math.exp(1 - len(r) / len(g))
        return bp * match / len(g)

    prec = rec = 0.0
    for gs, rs in zip(gens, refs):
        m = [[bleu1(g, r) for g in gs] for r in rs]
        prec += sum(max(m[i][j] for i in range(len(rs))) for j in range(len(gs))) / len(gs)
        rec += sum(max(row) for row in m) / len(rs)
    assert math.isclose(out["bleu-1-precision"], prec / 2, rel_tol=1e-12)
    assert math.isclose(out["bleu-1-recall"], rec / 2, rel_tol=1e-12)
    f32 = get_metric("bleu-precision-recall", ngram=1, score_dtype="float32").compute(gens, refs)
    assert f32["bleu-1-precision hashvalue"] != out["bleu-1-precision hashvalue"]
    assert "dtype:float32" in f32["bleu-1-precision signature"]


def test_accuracy_and_multi_turn_perplexity_are_native():
    out = evaluate(["accuracy"], [1, 2, 3, "x"], [[1], [0], [3], ["x"]])
    assert out["accuracy"] == 0.75 and len(out["accuracy hashvalue"]) == 64
    with pytest.raises(MetricError, match="one label per prediction"):
        evaluate(["accuracy"], [1, 2], [[1]])
    # two sessions of two turns; the first turn of each is scored too with skip_first_turn=False
    p = np.full((2, 2, 3, 5), np.log(0.2))
    ids = np.array([[[2, 4, 3, 0], [2, 4, 4, 3]], [[2, 3, 0, 0], [2, 4, 3, 0]]])
    lens = np.array([[3, 4], [2, 3]])
    m = get_metric("multi-turn-perplexity", frequent=["w"], rare=[], skip_first_turn=False)
    m.forward({"multi_turn_ref_allvocabs": ids, "multi_turn_ref_length": lens, "multi_turn_gen_log_prob": p})
    out = m.close()
    assert math.isclose(out["multi-turn-perplexity"], 5.0)  # uniform over 5 tokens
    for name in ("accuracy", "bleu-precision-recall", "embedding-precision-recall", "multi-turn-perplexity"):
        assert name in metric_names() and metric_facts(name) is not None
    assert facts_for_result_key("bleu-2-recall").level == "sentence"
    assert facts_for_result_key("extrema-bow-precision").value_range == (0.0, 1.0)
    assert facts_for_result_key("multi-turn-perplexity").higher_is_better is False


# -- the adapters' other classes -----------------------------------------------------------------------


def test_chain_recorders_and_distinct():
    dl = C.vocab_dataloader(["<pad>", "<unk>", "<go>", "<eos>", "i", "like", "python", "java"], 7)
    chain = C.MetricChain()
    chain.add_metric(C.DistinctNgrams(dl, 2))
    chain.add_metric(C.LanguageGenerationRecorder(dl))
    chain.add_metric(C.SingleTurnDialogRecorder(dl))
    chain.forward(
        {
            "gen": [[4, 5, 6, 3, 0], [4, 5, 7, 3]],
            "post_allvocabs": [[2, 4, 3], [2, 5, 3]],
            "resp_allvocabs": [[2, 6, 3], [2, 7, 1, 3]],
        }
    )
    out = chain.close()
    assert out["distinct"] == 6 / 8  # padded bigrams: (None, i) (i, like) twice, ... (python, None) (java, None)
    assert out["gen"] == ["i like python", "i like java"]
    assert out["post"] == ["i", "like"] and out["resp"] == ["python", "java <unk>"]
    assert "padded:True" in chain.signatures["distinct"]
    rec = C.MultiTurnDialogRecorder(dl)
    rec.forward(
        {
            "multi_turn_ref_allvocabs": [[[2, 4, 3], [2, 5, 6, 3]]],
            "multi_turn_gen": [[[4, 3], [7, 3]]],
            "turn_length": [2],
        }
    )
    assert rec.close() == {"reference": [["i", "like python"]], "gen": [["i", "java"]]}
    with pytest.raises(ValueError, match="closed"):
        rec.forward({})
    with pytest.raises(TypeError, match="MetricBase"):
        chain.add_metric(object())


def test_adapters_take_this_librarys_dataloaders():
    from cotk_repro import data

    dl = data.load("language-generation", FIXTURES / "cotk-small" / "mscoco", min_frequent_vocab_times=2)
    same = C.vocab_dataloader(dl.vocab.all_tokens, dl.vocab.frequent_vocab_size)
    batches = list(dl.batches("test", 32))
    results = []
    for loader in (dl, same):
        bleu = C.BleuCorpusMetric(loader, reference_allvocabs_key="sent_allvocabs", gen_key="gen")
        ppl = C.PerplexityMetric(loader, reference_allvocabs_key="sent_allvocabs", reference_len_key="sent_length")
        rng = np.random.default_rng(0)
        for b in batches:
            gen = b["sent_allvocabs"][:, 1:].copy()
            gen[:, 1] = 4  # one changed word per sentence
            logits = rng.normal(size=(len(gen), gen.shape[1], dl.vocab.frequent_vocab_size))
            logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
            bleu.forward({**b, "gen": gen})
            ppl.forward({**b, "gen_log_prob": logp})
        results.append({**bleu.close(), **ppl.close()})
    assert results[0] == results[1]
    assert 0.5 < results[0]["bleu"] < 1 and results[0]["perplexity"] > 1
    # a sentence with a rare word: the CoTK rules are in the hash, the references too
    native = get_metric("perplexity", dataloader=dl)
    b = batches[0]
    size = dl.vocab.frequent_vocab_size
    shape = (len(b["sent_length"]), b["sent_allvocabs"].shape[1], size)
    native.forward({**b, "gen_log_prob": np.log(np.full(shape, 1 / size))})
    assert native.close()["perplexity hashvalue"] != results[0]["perplexity hashvalue"]
    with pytest.raises(MetricError, match="vocab_dataloader"):
        C.BleuCorpusMetric(object())


# -- the native CoTK rule against CoTK 0.1.0 itself -------------------------------------------------------


@functools.cache
def _cotk_python() -> str | None:
    candidates = [
        os.environ.get("COTK_REPRO_COTK_PYTHON", ""),
        # where scripts/setup.sh puts it: $COTK_REPRO_COTK_VENV, else the cache dir that honours XDG_CACHE_HOME
        str(Path(os.environ["COTK_REPRO_COTK_VENV"]) / "bin" / "python")
        if os.environ.get("COTK_REPRO_COTK_VENV")
        else "",
        str(
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            / "cotk-repro"
            / "bench-cotk-venv"
            / "bin"
            / "python"
        ),
        "/work/venvs/cotk010/bin/python",
    ]
    for c in candidates:
        if c and Path(c).exists():
            r = subprocess.run([c, "-c", "import cotk.metric"], capture_output=True)
            if r.returncode == 0:
                return c
    return None


CHILD = r"""
import json, sys
from cotk.dataloader import GeneralVocab, SentenceDefault, SimpleTokenizer
from cotk.metric import SelfBleuCorpusMetric, FwBwBleuCorpusMetric, NgramFwBwPerplexityMetric
d = json.load(sys.stdin)
specials = ["<pad>", "<unk>", "<go>", "<eos>"]
field = SentenceDefault(SimpleTokenizer("space", specials),
                        GeneralVocab.from_predefined(d["vocab"], len(d["vocab"])))
s = SelfBleuCorpusMetric(field, gen_key="gen", sample=d["sample"], seed=d["seed"], cpu_count=1)
s.forward({"gen": d["gen"]})
f = FwBwBleuCorpusMetric(field, d["ref"], gen_key="gen", sample=d["sample"], seed=d["seed"], cpu_count=1)
f.forward({"gen": d["gen"]})
n = NgramFwBwPerplexityMetric(field, d["ref"][:100], 3, gen_key="gen", cpu_count=1)
n.forward({"gen": d["gen"][:100]})
print(json.dumps({**s.close(), **f.close(), **n.close()}))
"""


def test_native_cotk_rules_equal_cotk_010_on_texygen():
    """Self-BLEU and Fw/Bw-BLEU (sample_mode="cotk", 200 of 300/250) and the n-gram LM (mode="cotk")."""
    python = _cotk_python()
    if python is None:
        pytest.skip("CoTK 0.1.0 is not installed (set COTK_REPRO_COTK_PYTHON to a python that imports cotk)")
    refs = [s.split() for s in _lines("coco_test.txt", 250)]
    gens = [s.split() for s in _lines("instances/seq.txt", 300)]
    vocab = ["<pad>", "<unk>", "<go>", "<eos>"] + sorted({w for s in refs for w in s})
    ids = {w: i for i, w in enumerate(vocab)}
    as_ids = [[2] + [ids.get(w, 1) for w in s] + [3, 0] for s in gens]  # unseen words -> <unk>
    ref_ids = [[2] + [ids[w] for w in s] + [3] for s in refs]
    payload = {"vocab": vocab, "gen": as_ids, "ref": ref_ids, "sample": 200, "seed": 1229}
    r = subprocess.run([python, "-c", CHILD], input=json.dumps(payload), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    gen_tokens = [[w if w in ids else "<unk>" for w in s] for s in gens]
    assert sum(t.count("<unk>") for t in gen_tokens) > 10  # the case exercises <unk>
    ours = get_metric("self-bleu", sample=200, sample_mode="cotk", retokenize=False).compute(gen_tokens)
    assert abs(ours["self-bleu"] - theirs["self-bleu"]) <= 1e-12
    fb = get_metric("fw-bw-bleu", sample=200, sample_mode="cotk", retokenize=False).compute(gen_tokens, refs)
    for key in ("fw-bleu", "bw-bleu", "fw-bw-bleu"):
        assert abs(fb[key] - theirs[key]) <= 1e-12, key
    assert ours["self-bleu"] != get_metric("self-bleu", sample=200).compute(gen_tokens)["self-bleu"]
    # CoTK's own Kneser-Ney trigram LM, both directions, on the first 100 sentences of each
    lm = get_metric("fw-rv-ppl", ngram=3, mode="cotk", tokenizer="space").compute(
        [" ".join(t) for t in gen_tokens[:100]], [[" ".join(r)] for r in refs[:100]]
    )
    assert abs(lm["fw-ppl"] - theirs["fwppl"]) <= 1e-12 * theirs["fwppl"]
    assert abs(lm["rv-ppl"] - theirs["bwppl"]) <= 1e-12 * theirs["bwppl"]


SIGNATURES = r"""
import inspect, json
import cotk.metric as M
out = {}
for name in NAMES:
    params = inspect.signature(getattr(M, name).__init__).parameters.values()
    out[name] = [[p.name, str(p.kind), repr(p.default)] for p in params if p.name != "self"]
print(json.dumps(out))
"""


def test_constructors_match_cotk_010():
    python = _cotk_python()
    if python is None:
        pytest.skip("CoTK 0.1.0 is not installed (set COTK_REPRO_COTK_PYTHON to a python that imports cotk)")
    import inspect

    names = [
        n
        for n in C.__all__
        if n not in ("CotkMetric", "CotkVocabLoader", "vocab_dataloader", "MetricBase", "DistinctNgrams")
    ]
    r = subprocess.run([python, "-c", f"NAMES = {names!r}" + SIGNATURES], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    for name in names:
        params = inspect.signature(getattr(C, name).__init__).parameters.values()
        ours = [[p.name, str(p.kind), repr(p.default)] for p in params if p.name != "self"]
        assert ours == theirs[name], name
