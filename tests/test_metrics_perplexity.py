"""Perplexity: hand-computed cases, the paper's rare-word redistribution and its Table 6 behaviour,
the CoTK batch API against the list API, the dataloader hash, multi-turn, and every error case."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cotk_repro.metrics import MetricError, get_metric
from cotk_repro.metrics.base import HASH_SUFFIX, SIGNATURE_SUFFIX
from cotk_repro.text.reference_hashes import perplexity_reference_hash

SPECIALS = ["<pad>", "<unk>", "<go>", "<eos>"]


def ppl(**kw):
    return get_metric("perplexity", **kw)


def test_hand_computed_redistribution():
    # F = {a, b}, R = {c, d}: "c" is rare, so it contributes log(p(<unk>) / |R|) = log(0.2 / 2)
    m = ppl(frequent=["a", "b"], rare=["c", "d"])
    res = m.compute_lists([["a", "c"]], [[math.log(0.5), math.log(0.2), math.log(0.3)]])
    assert res["perplexity"] == pytest.approx((0.5 * 0.1 * 0.3) ** (-1 / 3), rel=1e-12)
    assert res["perplexity" + HASH_SUFFIX] == perplexity_reference_hash([["a", "c"]], ["a", "b", "c", "d"])
    assert res["perplexity" + SIGNATURE_SUFFIX] == "perplexity|vocab:4|unk:spread|eos:yes|refs:1|v:1"


def test_hand_computed_two_sentences_and_unknown_token():
    # "zz" is outside F ∪ R: it is <unk> in the all-vocab view too, so log p(<unk>) is not divided
    m = ppl(frequent=["a"], rare=["b", "c", "d"])
    m.forward(
        {
            "tokens": [["a", "b"], ["zz"]],
            "log_probs": [[math.log(0.4), math.log(0.3), math.log(0.3)], [math.log(0.25), math.log(0.5)]],
        }
    )
    value = m.close()["perplexity"]
    expected = math.exp(-(math.log(0.4) + math.log(0.1) + math.log(0.3) + math.log(0.25) + math.log(0.5)) / 5)
    assert value == pytest.approx(expected, rel=1e-12)


def _uniform_batch(sentences, vocab_tokens, columns):
    """Batch arrays for ``sentences`` with a uniform model over ``columns`` outputs."""
    ids = {t: i for i, t in enumerate(vocab_tokens)}
    width = max(len(s) for s in sentences) + 2
    allv = np.zeros((len(sentences), width), np.int64)
    for r, s in enumerate(sentences):
        allv[r, : len(s) + 2] = [2] + [ids[t] for t in s] + [3]
    lens = np.array([len(s) + 2 for s in sentences])
    logp = np.full((len(sentences), width - 1, columns), -math.log(columns))
    return {"sent_allvocabs": allv, "sent_length": lens, "gen_log_prob": logp}


def test_batch_api_matches_hand_computation():
    frequent, rare = ["a", "b", "c"], ["d", "e"]
    vocab = SPECIALS + frequent + rare
    sents = [["a", "d"], ["b", "c", "e", "a"]]
    m = ppl(frequent=frequent, rare=rare)
    m.forward(_uniform_batch(sents, vocab, 7))  # 7 = 4 specials + |F|
    res = m.close()
    # targets: 6 words (2 rare) + 2 <eos>; each F/eos target has p = 1/7, each rare word 1/7/2
    expected = math.exp(-(8 * math.log(1 / 7) + 2 * math.log(1 / 2)) / 8)
    assert res["perplexity"] == pytest.approx(expected, rel=1e-12)
    assert res["perplexity hashvalue"] == perplexity_reference_hash(sents, frequent + rare)


def test_batch_api_equals_list_api_with_a_random_model():
    rng = np.random.default_rng(0)
    frequent, rare = ["a", "b", "c", "d"], ["e", "f", "g"]
    vocab = SPECIALS + frequent + rare
    sents = [list(rng.choice(frequent + rare, size=n)) for n in (1, 3, 6)]
    batch = _uniform_batch(sents, vocab, 8)
    logits = rng.normal(size=batch["gen_log_prob"].shape)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    batch["gen_log_prob"] = logp
    m = ppl(frequent=frequent, rare=rare)
    m.forward(batch)
    from_arrays = m.close()
    seen = {t: vocab.index(t) if t in frequent else 1 for t in frequent + rare}
    lps = [
        [float(logp[r, t, seen[w]]) for t, w in enumerate(s)] + [float(logp[r, len(s), 3])] for r, s in enumerate(sents)
    ]
    from_lists = ppl(frequent=frequent, rare=rare).compute_lists(sents, lps)
    assert from_arrays["perplexity"] == pytest.approx(from_lists["perplexity"], rel=1e-12)
    assert from_arrays["perplexity hashvalue"] == from_lists["perplexity hashvalue"]


def test_all_vocab_model_uses_its_own_probabilities():
    frequent, rare = ["a"], ["b", "c"]
    vocab = SPECIALS + frequent + rare
    m = ppl(frequent=frequent, rare=rare)
    m.forward(_uniform_batch([["b"]], vocab, len(vocab)))  # a model over F ∪ R: no redistribution
    assert m.close()["perplexity"] == pytest.approx(len(vocab), rel=1e-12)


def test_table6_behaviour_same_union_comparable():
    """Paper Table 6: a smaller F (same F ∪ R) keeps the paper's perplexity and hash; the original
    perplexity (rare words scored as <unk>) falls as F shrinks."""
    tokens = [["a", "b", "c", "d"], ["b", "a"], ["c", "c", "d"]]
    # model 1 sees F1 = {a, b, c}; p(b) = p(c) = p(<unk>) = q, with <unk> standing for R1 = {d}
    pa, q, peos = 0.3, 0.2, 0.1
    p1 = {"a": pa, "b": q, "c": q, "<unk>": q, "<eos>": peos}
    # model 2 sees F2 = {a}; its <unk> gets the mass of b, c and <unk>: R2 = {b, c, d}
    p2 = {"a": pa, "<unk>": 3 * q, "<eos>": peos}

    def lps(p, frequent):
        return [[math.log(p[w] if w in frequent else p["<unk>"]) for w in s] + [math.log(p["<eos>"])] for s in tokens]

    r1 = ppl(frequent=["a", "b", "c"], rare=["d"]).compute_lists(tokens, lps(p1, {"a", "b", "c"}))
    r2 = ppl(frequent=["a"], rare=["b", "c", "d"]).compute_lists(tokens, lps(p2, {"a"}))
    assert r1["perplexity"] == pytest.approx(r2["perplexity"], rel=1e-12)
    assert r1["perplexity hashvalue"] == r2["perplexity hashvalue"]
    original1 = math.exp(-sum(map(sum, lps(p1, {"a", "b", "c"}))) / 12)
    original2 = math.exp(-sum(map(sum, lps(p2, {"a"}))) / 12)
    assert original2 < original1  # the unfair number: a smaller vocabulary looks better
    # a different F ∪ R is not comparable
    r3 = ppl(frequent=["a", "b", "c"], rare=["d", "x"]).compute_lists(tokens, lps(p1, {"a", "b", "c"}))
    assert r3["perplexity hashvalue"] != r1["perplexity hashvalue"]


def test_hash_ignores_order_and_covers_references():
    lp = lambda s: [math.log(0.5)] * (len(s) + 1)  # noqa: E731
    a = [["a", "b"], ["b"]]
    h1 = ppl(frequent=["a"], rare=["b"]).compute_lists(a, map(lp, a))["perplexity hashvalue"]
    h2 = ppl(frequent=["a"], rare=["b"]).compute_lists(a[::-1], map(lp, a[::-1]))["perplexity hashvalue"]
    h3 = ppl(frequent=["a"], rare=["b"]).compute_lists(a[:1], map(lp, a[:1]))["perplexity hashvalue"]
    assert h1 == h2 != h3


def test_multi_turn_scores_responses_like_single_turn():
    frequent, rare = ["a", "b"], ["c"]
    vocab = SPECIALS + frequent + rare
    sessions = [[["a"], ["b", "c"], ["a", "a"]], [["c"], ["b"]]]
    t_max, width = 3, 4
    ids = np.zeros((2, t_max, width), np.int64)
    lens = np.zeros((2, t_max), np.int64)
    for b, sess in enumerate(sessions):
        for t, s in enumerate(sess):
            ids[b, t, : len(s) + 2] = [2] + [vocab.index(w) for w in s] + [3]
            lens[b, t] = len(s) + 2
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, t_max, width - 1, 6))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    m = ppl(frequent=frequent, rare=rare, multi_turn=True)
    m.forward({"sent_allvocabs": ids, "sent_length": lens, "turn_length": np.array([3, 2]), "gen_log_prob": logp})
    multi = m.close()
    single = ppl(frequent=frequent, rare=rare)
    for b, sess in enumerate(sessions):
        for t in range(1, len(sess)):  # the first turn is context
            single.forward(
                {"sent_allvocabs": ids[b, t][None], "sent_length": lens[b, t][None], "gen_log_prob": logp[b, t][None]}
            )
    flat = single.close()
    assert multi["perplexity"] == pytest.approx(flat["perplexity"], rel=1e-12)
    assert (
        multi["perplexity hashvalue"]
        == flat["perplexity hashvalue"]
        == perplexity_reference_hash([["b", "c"], ["a", "a"], ["b"]], frequent + rare)
    )
    every = ppl(frequent=frequent, rare=rare, multi_turn=True, skip_first_turn=False)
    every.forward({"sent_allvocabs": ids, "sent_length": lens, "gen_log_prob": logp})
    res = every.close()
    assert res["perplexity hashvalue"] != multi["perplexity hashvalue"]
    assert "turns:all" in res["perplexity signature"]


def test_dataloader_hash_and_table6_with_the_loader(fixtures_dir):
    from cotk_repro import data

    path = fixtures_dir / "cotk-small" / "mscoco"
    results = []
    for times in (2, 8):
        dl = data.load("language-generation", path, min_frequent_vocab_times=times)
        m = ppl(dataloader=dl)
        n_f, n_r = dl.vocab.frequent_vocab_size, len(dl.vocab.rare)
        expected_loss, count = 0.0, 0
        for batch in dl.batches("test", batch_size=16):
            shape = batch["sent_allvocabs"].shape
            batch = dict(batch, gen_log_prob=np.full((shape[0], shape[1] - 1, n_f), -math.log(n_f)))
            m.forward(batch)
            for row, length in zip(batch["sent_allvocabs"], batch["sent_length"]):
                for i in row[1:length]:
                    expected_loss += math.log(n_f) + (math.log(n_r) if i >= n_f else 0.0)
                    count += 1
        res = m.close()
        assert res["perplexity"] == pytest.approx(math.exp(expected_loss / count), rel=1e-12)
        assert res["perplexity hashvalue"] == dl.reference_hashes("test")["perplexity"]
        results.append((len(dl.vocab.frequent), res))
    (f_small_t, r_low), (f_big_t, r_high) = results
    assert f_big_t < f_small_t  # a higher threshold gives a smaller F
    assert r_low["perplexity hashvalue"] == r_high["perplexity hashvalue"]


# -- errors ---------------------------------------------------------------------------------------
def _simple_batch():
    return _uniform_batch([["a", "b"]], SPECIALS + ["a", "b"], 6)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda b: b.pop("gen_log_prob"), "has no 'gen_log_prob'"),
        (lambda b: b.update(gen_log_prob=np.zeros((1, 3, 6))), "not a distribution"),
        (lambda b: b.update(gen_log_prob=np.full((1, 3, 4), -math.log(4))), "4 columns"),
        (lambda b: b.update(gen_log_prob=np.full((1, 2, 6), -math.log(6))), "only 2 log-probability rows"),
        (lambda b: b.update(sent_length=np.array([9])), "longer than its"),
        (lambda b: b.update(sent_length=np.array([3])), "<go> tokens <eos>"),
        (lambda b: b.update(sent_allvocabs=np.array([[2, 4, 99, 3]])), "outside the vocabulary"),
        (lambda b: b.update(sent_length=np.array([4, 4])), "batch sizes differ"),
        (lambda b: b.update(sent_allvocabs=b["sent_allvocabs"][None]), "multi_turn=True"),
    ],
)
def test_batch_errors(mutate, message):
    m = ppl(frequent=["a"], rare=["b"])
    batch = _simple_batch()
    batch["gen_log_prob"] = batch["gen_log_prob"][:, :, :5] + math.log(6 / 5)  # a distribution over |F|+4 = 5
    mutate(batch)
    with pytest.raises(MetricError, match=message.replace("(", r"\(").replace("[", r"\[")):
        m.forward(batch)


def test_zero_probability_is_a_clear_error():
    m = ppl(frequent=["a"], rare=[])
    with pytest.raises(MetricError, match="probability 0"):
        m.compute_lists([["a"]], [[-math.inf, 0.0]])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "needs a vocabulary"),
        ({"frequent": ["a"], "rare": ["a"]}, "inconsistent"),
        ({"frequent": ["<unk>"], "rare": []}, "inconsistent"),
        ({"frequent": ["a", "a"], "rare": []}, "twice"),
    ],
)
def test_vocabulary_errors(kwargs, message):
    with pytest.raises(MetricError, match=message):
        ppl(**kwargs)


def test_list_and_usage_errors():
    m = ppl(frequent=["a"], rare=["b"])
    with pytest.raises(MetricError, match="need 2 log-probabilities"):
        m.compute_lists([["a"]], [[-1.0]])
    with pytest.raises(MetricError, match="positive"):
        m.compute_lists([["a"]], [[0.5, -1.0]])
    with pytest.raises(MetricError, match="no tokens"):
        m.close()
    with pytest.raises(MetricError, match="log-probabilities, not from generated text"):
        m.compute(["a b"], [["a b"]])
    with pytest.raises(MetricError, match=r"metric .perplexity. has no option .nonsense."):
        get_metric("perplexity", frequent=["a"], rare=[], nonsense=1)


def test_table6_with_a_kneser_ney_lm(fixtures_dir):
    """Table 6 in small: a trigram LM trained with F = words seen >= t times; as F shrinks the original
    perplexity (rare words scored as <unk>) keeps falling, the paper's stays on one scale, one hash."""
    from cotk_repro import data
    from cotk_repro.metrics.kn_lm import UNK, KneserNeyLM

    rows = []
    for t in (2, 5, 20):
        dl = data.load("language-generation", fixtures_dir / "cotk-small" / "mscoco", min_frequent_vocab_times=t)
        freq = set(dl.vocab.frequent)
        lm = KneserNeyLM(3).fit([[w if w in freq else UNK for w in s] for s in dl.sentences("train")])
        test = dl.sentences("test")
        lps = [lm.sentence_log_probs([w if w in freq else UNK for w in s]) for s in test]
        res = ppl(dataloader=dl).compute_lists(test, lps)
        original = math.exp(-sum(map(sum, lps)) / sum(map(len, lps)))
        rows.append((len(freq), res["perplexity"], original, res["perplexity hashvalue"]))
    sizes, papers, originals, hashes = zip(*rows)
    assert list(sizes) == sorted(sizes, reverse=True) and sizes[0] > 2 * sizes[-1]
    assert list(originals) == sorted(originals, reverse=True)
    assert max(papers) / min(papers) < 0.5 * originals[0] / originals[-1]
    assert len(set(hashes)) == 1


def test_multi_turn_loader_hash(tmp_path):
    """Fed from the multi-turn loader's batches, the hash is the loader's perplexity reference hash."""
    import json

    from cotk_repro import data

    sessions = {
        "train": [["hi there", "hello you", "how are you ?"], ["hi", "good day"]] * 3,
        "dev": [["hello", "hi"]],
        "test": [["hi there", "how are you ?", "fine , thanks"], ["hello", "rare words here"]],
    }
    for split, rows in sessions.items():
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps({"session": s}) + "\n" for s in rows))
    dl = data.load("multi-turn-dialog", tmp_path, min_frequent_vocab_times=2)
    n_f, n_r = dl.vocab.frequent_vocab_size, len(dl.vocab.rare)
    m = ppl(dataloader=dl, multi_turn=True)
    loss, count = 0.0, 0
    for batch in dl.batches("test", batch_size=2):
        b, t, w = batch["sent_allvocabs"].shape
        m.forward(dict(batch, gen_log_prob=np.full((b, t, w - 1, n_f), -math.log(n_f))))
        for sess, lens, turns in zip(batch["sent_allvocabs"], batch["sent_length"], batch["turn_length"]):
            for k in range(1, int(turns)):
                for i in sess[k][1 : lens[k]]:
                    loss += math.log(n_f) + (math.log(n_r) if i >= n_f else 0.0)
                    count += 1
    res = m.close()
    assert res["perplexity"] == pytest.approx(math.exp(loss / count), rel=1e-12)
    assert res["perplexity hashvalue"] == dl.reference_hashes("test")["perplexity"]
