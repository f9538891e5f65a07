"""Dataloaders, vocabulary and hash codes: the paper's Figure 4 pattern (docs/spec.md section 5) on a
hand-made dataset and on Texygen's COCO captions, checked against independent computations
(NLTK's WordPunctTokenizer, collections.Counter, the reference_hashes module)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from nltk.tokenize import WordPunctTokenizer

from cotk_repro import data
from cotk_repro.text.reference_hashes import bleu_reference_hash, perplexity_reference_hash

# A small corpus: punctuation attached to words (so `space` and `nltk` tokenize differently),
# tokens seen 1, 2, 3 and more times in train, some tokens only in dev/test.
HAND_TRAIN = [
    "the cat sat on the mat.",
    "the dog sat on the log.",
    "a cat and a dog, on a mat!",
    "the bird flew over the mat.",
    "a dog ran; the cat sat.",
    "the mat is red.",
    "Mr. Brown's dog isn't here.",
    "the cat, the dog and the bird.",
]
HAND_DEV = ["the cat ran on the log.", "a red bird sat."]
HAND_TEST = [
    "the dog sat on a red mat.",
    "a zebra ran over the log!",
    "the bird, the cat: friends.",
    "an owl flew (quietly) home.",
]

SIGNS = {
    # variant: raw, data, vocab, setting, general, perplexity, bleu  (None: may differ)
    "shuffled": dict(raw="=", data="=", vocab="=", setting="=", general="=", perplexity="=", bleu="="),
    "higher threshold": dict(raw="=", data="=", vocab="≠", setting="≠", general="≠", perplexity="=", bleu="="),
    "other tokenizer": dict(raw="=", data="≠", vocab="≠", setting="≠", general="≠", perplexity="≠", bleu="="),
    "test sample removed": dict(raw="≠", data="≠", vocab=None, setting="=", general="≠", perplexity="≠", bleu="≠"),
}


def write_lm(
    folder: Path, train: list[str], dev: list[str], test: list[str], names=("train", "dev", "test"), fmt="{}.txt"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, lines in zip(names, (train, dev, test)):
        (folder / fmt.format(split)).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return folder


def read_lines(path: Path) -> list[str]:
    return [s for s in path.read_text(encoding="utf-8").split("\n") if s.strip()]


def codes(folder: Path, **options) -> dict[str, str]:
    dl = data.load("language-generation", folder, **options)
    return {**dl.hash_codes, **dl.reference_hashes("test")}


def assert_pattern(base: dict, variant: dict, signs: dict, label: str) -> None:
    for key, sign in signs.items():
        if sign == "=":
            assert base[key] == variant[key], f"{label}: {key} hash should be equal"
        elif sign == "≠":
            assert base[key] != variant[key], f"{label}: {key} hash should differ"


def figure4(
    tmp_path: Path, train: list[str], dev: list[str], test: list[str], threshold: int, higher: int, other_tokenizer: str
) -> None:
    base_dir = write_lm(tmp_path / "base", train, dev, test)
    rng = random.Random(4)
    shuffled = [list(x) for x in (train, dev, test)]
    for lines in shuffled:
        rng.shuffle(lines)
    assert shuffled[0] != train
    shuf_dir = write_lm(tmp_path / "shuffled", *shuffled)
    removed_dir = write_lm(tmp_path / "removed", train, dev, test[: len(test) // 2] + test[len(test) // 2 + 1 :])

    base = codes(base_dir, tokenizer="nltk", min_frequent_vocab_times=threshold)
    variants = {
        "shuffled": codes(shuf_dir, tokenizer="nltk", min_frequent_vocab_times=threshold),
        "higher threshold": codes(base_dir, tokenizer="nltk", min_frequent_vocab_times=higher),
        "other tokenizer": codes(base_dir, tokenizer=other_tokenizer, min_frequent_vocab_times=threshold),
        "test sample removed": codes(removed_dir, tokenizer="nltk", min_frequent_vocab_times=threshold),
    }
    for label, variant in variants.items():
        assert_pattern(base, variant, SIGNS[label], label)
    # the hashes are all distinct SHA-256 hex digests
    assert all(len(v) == 64 and int(v, 16) >= 0 for v in base.values())
    assert len(set(base.values())) == len(base)


def test_figure4_pattern_hand_made(tmp_path):
    figure4(tmp_path, HAND_TRAIN, HAND_DEV, HAND_TEST, threshold=2, higher=3, other_tokenizer="space")


def test_figure4_pattern_hand_made_punkt(tmp_path):
    figure4(tmp_path, HAND_TRAIN, HAND_DEV, HAND_TEST, threshold=2, higher=3, other_tokenizer="punkt")


@pytest.fixture
def coco(fixtures_dir, tmp_path) -> Path:
    train = fixtures_dir / "texygen" / "coco_train.txt"
    test = fixtures_dir / "texygen" / "coco_test.txt"
    folder = tmp_path / "coco"
    folder.mkdir()
    (folder / "train.txt").write_bytes(train.read_bytes())
    (folder / "test.txt").write_bytes(test.read_bytes())
    (folder / "dev.txt").write_text("".join(s + "\n" for s in read_lines(test)[:500]), encoding="utf-8")
    return folder


@pytest.mark.slow
def test_figure4_pattern_texygen_coco(coco, tmp_path):
    train, dev, test = (read_lines(coco / f"{s}.txt") for s in ("train", "dev", "test"))
    figure4(tmp_path / "fig4", train, dev, test, threshold=10, higher=20, other_tokenizer="space")


def test_coco_matches_independent_tokenization_and_vocab(coco):
    dl = data.load("language-generation", coco, tokenizer="nltk", min_frequent_vocab_times=10)
    wp = WordPunctTokenizer()
    lines = {s: read_lines(coco / f"{s}.txt") for s in ("train", "dev", "test")}
    for split, raw in lines.items():
        expected = [wp.tokenize(line.strip()) for line in raw]
        assert dl.sentences(split) == expected
        assert dl.raw_sentences(split) == [line.strip() for line in raw]
        assert dl.sample_counts[split] == len(raw)
    train_counts = Counter(t for line in lines["train"] for t in wp.tokenize(line))
    all_counts = Counter(t for raw in lines.values() for line in raw for t in wp.tokenize(line))
    frequent = sorted((t for t, c in train_counts.items() if c >= 10), key=lambda t: (-train_counts[t], t))
    rare = sorted((t for t in all_counts if t not in frequent), key=lambda t: (-all_counts[t], t))
    assert dl.vocab.frequent == frequent
    assert dl.vocab.rare == rare
    assert dl.vocab.all_tokens == ["<pad>", "<unk>", "<go>", "<eos>", *frequent, *rare]
    assert dl.vocab.frequent_vocab_size == 4 + len(frequent)
    assert dl.vocab.all_vocab_size == 4 + len(frequent) + len(rare)
    # reference-side hashes: exactly what the metrics compute from the same references
    refs = [wp.tokenize(line) for line in lines["test"]]
    assert dl.reference_hashes("test")["perplexity"] == perplexity_reference_hash(refs, frequent + rare)
    assert dl.reference_hashes("test")["bleu"] == bleu_reference_hash([[line] for line in lines["test"]])


def test_vocab_thresholds_and_special_ids(tmp_path):
    folder = write_lm(tmp_path / "d", HAND_TRAIN, HAND_DEV, HAND_TEST)
    dl = data.load("language-generation", folder, tokenizer="space", min_frequent_vocab_times=3, min_rare_vocab_times=2)
    toks = {
        s: [line.split() for line in lines]
        for s, lines in (("train", HAND_TRAIN), ("dev", HAND_DEV), ("test", HAND_TEST))
    }
    train_counts = Counter(t for s in toks["train"] for t in s)
    all_counts = Counter(t for lst in toks.values() for s in lst for t in s)
    assert set(dl.vocab.frequent) == {t for t, c in train_counts.items() if c >= 3}
    assert set(dl.vocab.rare) == {t for t, c in all_counts.items() if c >= 2 and train_counts[t] < 3}
    assert not set(dl.vocab.frequent) & set(dl.vocab.rare)
    v = dl.vocab
    assert v.special_tokens == ["<pad>", "<unk>", "<go>", "<eos>"]
    assert (v.pad_id, v.unk_id, v.go_id, v.eos_id) == (0, 1, 2, 3)
    assert v.token_to_id("the") == 4  # the most frequent training token comes first
    assert v.token_to_id("no-such-token") == v.unk_id
    rare = v.rare[0]
    assert v.token_to_id(rare) >= v.frequent_vocab_size
    assert dl.convert_tokens_to_ids([rare, "the"], only_frequent=True) == [v.unk_id, 4]
    # a token seen once in all splits is in neither F nor R: <unk> in both views
    once = next(t for t, c in all_counts.items() if c == 1)
    assert dl.convert_tokens_to_ids([once]) == [v.unk_id]


def test_batches_layout_and_views(coco):
    dl = data.load("language-generation", coco, min_frequent_vocab_times=10)
    sents = dl.sentences("dev")
    batches = list(dl.batches("dev", batch_size=64))
    assert sum(len(b["sent_length"]) for b in batches) == len(sents) == 500
    b = batches[0]
    assert set(b) == {"sent", "sent_allvocabs", "sent_length", "sent_str"}
    assert b["sent"].shape == b["sent_allvocabs"].shape == (64, max(len(s) for s in sents[:64]) + 2)
    fvs = dl.vocab.frequent_vocab_size
    for row, allrow, n, tokens in zip(b["sent"], b["sent_allvocabs"], b["sent_length"], sents):
        assert n == len(tokens) + 2
        assert row[0] == dl.vocab.go_id and row[n - 1] == dl.vocab.eos_id
        assert (row[n:] == dl.vocab.pad_id).all()
        assert dl.convert_ids_to_tokens(allrow) == tokens
        expected_freq = [dl.vocab.token_to_id(t) if dl.vocab.token_to_id(t) < fvs else dl.vocab.unk_id for t in tokens]
        assert row[1 : n - 1].tolist() == expected_freq
    assert b["sent_str"] == dl.raw_sentences("dev")[:64]
    assert any((b["sent"] == dl.vocab.unk_id).any() for b in batches)
    assert dl.convert_ids_to_sentence(b["sent_allvocabs"][0]) == dl.convert_tokens_to_sentence(sents[0])


def test_batches_shuffle_deterministic_by_seed(tmp_path):
    folder = write_lm(tmp_path / "d", HAND_TRAIN, HAND_DEV, HAND_TEST)
    dl = data.load("language-generation", folder, min_frequent_vocab_times=1)

    def order(seed):
        return [s for b in dl.batches("train", batch_size=3, shuffle=True, seed=seed) for s in b["sent_str"]]

    assert order(0) == order(0)
    assert sorted(order(0)) == sorted(HAND_TRAIN)
    assert order(0) != order(1) or order(0) != order(2)
    expected = [HAND_TRAIN[i] for i in np.random.default_rng(7).permutation(len(HAND_TRAIN))]
    assert order(7) == expected
    plain = [s for b in dl.batches("train", batch_size=3) for s in b["sent_str"]]
    assert plain == HAND_TRAIN


def test_shuffled_batches_across_many_chunks(tmp_path, monkeypatch):
    """A corpus stored in many chunks (small ``CHUNK_SAMPLES``): each shuffled batch's strings and ids are the
    sentences the permutation names, written out here from the file's lines and WordPunct-free ``split``."""
    from cotk_repro.data import chunks

    monkeypatch.setattr(chunks, "CHUNK_SAMPLES", 37)
    rng = random.Random(5)
    words = [f"w{i}" for i in range(60)]
    train = [" ".join(rng.choices(words, k=rng.randint(1, 12))) for _ in range(1000)]
    folder = write_lm(tmp_path / "d", train, HAND_DEV, HAND_TEST)
    dl = data.load("language-generation", folder, tokenizer="space", min_frequent_vocab_times=1)
    order = np.random.default_rng(11).permutation(len(train))
    seen = 0
    for b in dl.batches("train", batch_size=7, shuffle=True, seed=11):
        expected = [train[i] for i in order[seen : seen + len(b["sent_str"])]]
        assert b["sent_str"] == expected
        for row, n, text in zip(b["sent_allvocabs"], b["sent_length"], expected):
            assert dl.convert_ids_to_tokens(row) == text.split() and n == len(text.split()) + 2
            assert row[n - 1] == dl.vocab.eos_id and (row[n:] == dl.vocab.pad_id).all()
        seen += len(expected)
    assert seen == len(train)


def test_convert_ids_trim(tmp_path):
    folder = write_lm(tmp_path / "d", HAND_TRAIN, HAND_DEV, HAND_TEST)
    dl = data.load("language-generation", folder, min_frequent_vocab_times=1)
    ids = dl.convert_tokens_to_ids(["the", "cat", "sat"])
    full = [dl.vocab.go_id, *ids, dl.vocab.eos_id, dl.vocab.pad_id, *ids]
    assert dl.convert_ids_to_tokens(full) == ["the", "cat", "sat"]
    assert dl.convert_ids_to_tokens(full, trim=False)[:5] == ["<go>", "the", "cat", "sat", "<eos>"]
    assert dl.convert_ids_to_sentence(np.array(full)) == "the cat sat"


def test_file_name_variants_and_line_endings_keep_hashes(tmp_path):
    base = codes(write_lm(tmp_path / "a", HAND_TRAIN, HAND_DEV, HAND_TEST))
    # CoTK's MSCOCO names
    assert codes(write_lm(tmp_path / "b", HAND_TRAIN, HAND_DEV, HAND_TEST, fmt="mscoco_{}.txt")) == base
    # CRLF, a BOM, blank lines and surrounding spaces are not part of the data
    c = tmp_path / "c"
    write_lm(c, HAND_TRAIN, HAND_DEV, HAND_TEST)
    (c / "train.txt").write_bytes(b"\xef\xbb\xbf" + "".join("  " + s + " \r\n\r\n" for s in HAND_TRAIN).encode())
    assert codes(c) == base
    # one changed character changes raw, data and general
    d = write_lm(tmp_path / "d", HAND_TRAIN[:-1] + [HAND_TRAIN[-1].replace("bird", "birds")], HAND_DEV, HAND_TEST)
    changed = codes(d)
    assert changed["raw"] != base["raw"] and changed["data"] != base["data"] and changed["general"] != base["general"]
    assert changed["setting"] == base["setting"]


def test_streaming_block_boundaries_do_not_matter(coco, monkeypatch):
    from cotk_repro.data import reading

    whole = data.load("language-generation", coco)
    monkeypatch.setattr(reading, "BLOCK_BYTES", 4099)  # hundreds of blocks, cut mid-line
    small = data.load("language-generation", coco)
    assert small.hash_codes == whole.hash_codes
    assert small.sentences("test") == whole.sentences("test")
    assert small.raw_sentences("train") == whole.raw_sentences("train")


def test_lowercase_and_max_sent_length(tmp_path):
    folder = write_lm(tmp_path / "d", HAND_TRAIN, HAND_DEV, HAND_TEST)
    base = data.load("language-generation", folder, min_frequent_vocab_times=1)
    low = data.load("language-generation", folder, min_frequent_vocab_times=1, lowercase=True)
    assert low.hash_codes["raw"] == base.hash_codes["raw"]
    assert low.hash_codes["data"] != base.hash_codes["data"]
    assert low.hash_codes["setting"] != base.hash_codes["setting"]
    assert "Mr" in base.vocab.frequent + base.vocab.rare and "Mr" not in low.vocab
    assert low.sentences("train")[6][:2] == ["mr", "."]
    assert low.raw_sentences("train")[6] == HAND_TRAIN[6]  # raw text is kept as is
    short = data.load("language-generation", folder, min_frequent_vocab_times=1, max_sent_length=3)
    assert short.sentences("train") == [WordPunctTokenizer().tokenize(s)[:3] for s in HAND_TRAIN]
    assert short.hash_codes["setting"] != base.hash_codes["setting"]
    assert short.hash_codes["raw"] == base.hash_codes["raw"]
    assert max(b["sent"].shape[1] for b in short.batches("train")) == 5


def test_registry_names_and_lookup():
    assert {"language-generation", "single-turn-dialog", "multi-turn-dialog"} <= set(data.loader_names())
    assert {"space", "nltk", "punkt"} <= set(data.tokenizer_names())
    tok = data.get_tokenizer("nltk")
    assert tok.name == "nltk" and tok.tokenize("a b.") == ["a", "b", "."]
    assert isinstance(tok.settings, dict)


def test_punkt_learns_from_train_split_in_any_order(tmp_path):
    train = HAND_TRAIN + ["Mr. Smith met Dr. Jones.", "Dr. Who met Mr. Brown.", "Mr. Lee and Dr. Kim sat."] * 3
    a = data.load(
        "language-generation",
        write_lm(tmp_path / "a", train, HAND_DEV, HAND_TEST),
        tokenizer="punkt",
        min_frequent_vocab_times=1,
    )
    b = data.load(
        "language-generation",
        write_lm(tmp_path / "b", list(reversed(train)), HAND_DEV, HAND_TEST),
        tokenizer="punkt",
        min_frequent_vocab_times=1,
    )
    assert a.hash_codes == b.hash_codes
    assert a.tokenizer.fitted
    # whatever Punkt learned, the BLEU hash is the one of the raw references
    assert a.reference_hashes("test")["bleu"] == bleu_reference_hash([[s] for s in HAND_TEST])
