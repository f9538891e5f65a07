"""Bulk WordPunct (cotk_repro.core.wordpunct) and the spaced form: every path equals the regex text by text, and the
canonical JSON built from the spaced form equals canonical_json of the token lists."""

from __future__ import annotations

import random
import re

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from cotk_repro.core import canonical, wordpunct
from cotk_repro.core.canonical import canonical_json
from cotk_repro.data import chunks, hashing
from cotk_repro.data.tokenizers import SpaceTokenizer, WordPunctTokenizer

REGEX = regex.compile(r"\w+|[^\w\s]+")  # NLTK compiles WordPunct with regex
# ASCII-heavy: punctuation runs, quotes and backslashes (escaped in JSON), repeated and edge spaces, DEL, and a few
# characters that send a block down the other paths (tabs, control characters, line breaks, non-ASCII)
ALPHABET = list("ab_Z9 .,'\"\\-!?()/\x7f") + ["  ", "...", "--", "\t", "\x01", "\x1f", "\n", "é"]


def _texts(rng: random.Random, n: int, odd: float) -> list[str]:
    alphabet = ALPHABET if rng.random() < odd else ALPHABET[:-5]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(n)]


@pytest.mark.parametrize("n", [1, 7, 300, 2000])  # below and above the size where numpy takes over
def test_every_path_equals_the_regex(n):
    rng = random.Random(n)
    spaced_seen = 0
    for _ in range(40 if n < 2000 else 8):
        texts = _texts(rng, n, odd=0.3)
        expected = [REGEX.findall(t) for t in texts]
        assert wordpunct.tokenize_many(texts) == expected
        assert WordPunctTokenizer().tokenize_many(texts) == expected
        spaced = wordpunct.tokenize_spaced(texts)
        if spaced is None:  # only where a text is not plain ASCII on one line
            block = "\n".join(texts)
            assert (
                not block.isascii() or re.search(r"[\x00-\x09\x0b-\x1f]", block) or block.count("\n") != len(texts) - 1
            )
            continue
        spaced_seen += 1
        # the spaced form: one line a text, one space between tokens, none at either end of a line
        assert spaced.decode("ascii").split("\n") == [" ".join(e) for e in expected]
        assert wordpunct.split_spaced(spaced) == expected
        assert canonical.spaced_token_list_items(spaced) == [canonical_json([e]) for e in expected]
    assert spaced_seen


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from(ALPHABET[:-5]), max_size=12).map("".join), min_size=1, max_size=8),
    pad=st.integers(0, 600),
)
def test_property_spaced_form_and_its_json(texts, pad):
    texts = texts + ["a, b."] * pad  # pad pushes some examples over the numpy threshold
    expected = [REGEX.findall(t) for t in texts]
    spaced = wordpunct.tokenize_spaced(texts)
    assert spaced is not None
    assert wordpunct.split_spaced(spaced) == expected
    assert canonical.spaced_token_list_items(spaced) == [canonical_json([e]) for e in expected]
    space = SpaceTokenizer().tokenize_spaced(texts)
    assert wordpunct.split_spaced(space) == [t.split() for t in texts]
    assert canonical.spaced_token_list_items(space) == [canonical_json([t.split()]) for t in texts]


def test_refusals():
    """Text the spaced form cannot carry goes down the other paths."""
    assert wordpunct.tokenize_spaced(["a\tb"]) is None
    assert wordpunct.tokenize_spaced(["café"]) is None
    assert wordpunct.tokenize_spaced(["two\nlines", "x"]) is None
    assert SpaceTokenizer().tokenize_spaced(["a\x1fb"]) is None  # str.split splits there, bytes.split does not
    assert wordpunct.tokenize_spaced(["", "  ", "x"]) == b"\n\nx"
    assert canonical.spaced_token_list_items(b"\n\nx") == [b"[[]]", b"[[]]", b'[["x"]]']


@pytest.mark.parametrize("tokenizer", [WordPunctTokenizer(), SpaceTokenizer()])
def test_chunk_digests_equal_the_token_list_path(tokenizer):
    """prepare() with the spaced form gives the same chunk as the generic path (a tokenizer without one), truncation
    and lowercasing included."""

    class Plain:  # the same tokens, no spaced form
        name, settings = tokenizer.name, tokenizer.settings
        tokenize_many = staticmethod(tokenizer.tokenize_many)
        tokenize = staticmethod(tokenizer.tokenize)

    rng = random.Random(3)
    for max_len in (None, 5):
        utts = [t for t in _texts(rng, 3000, odd=0) if t.strip()]
        fast = chunks.prepare(chunks.Recipe(tokenizer, True, max_len), utts, None, None, True)
        slow = chunks.prepare(chunks.Recipe(Plain(), True, max_len), utts, None, None, True)
        assert (
            fast.data_digests
            == slow.data_digests
            == hashing.data_digests_one(
                [
                    (t if max_len is None else t[:max_len])
                    for t in map(tokenizer.tokenize, (u.strip().lower() for u in utts))
                ]
            )
        )
        assert fast.table == slow.table and (fast.ids == slow.ids).all() and (fast.lengths == slow.lengths).all()


# ---------------------------------------------------------------------------------------------
# NLTK's WordPunctTokenizer itself (the pinned NLTK compiles the pattern with ``regex``): every code point

CONTEXTS = ("a{}b", "{}", "{}word", "word{}", "!{}!")


def _nltk_tokens(text: str) -> list[str]:
    from nltk.tokenize import WordPunctTokenizer as NltkWordPunct

    return NltkWordPunct().tokenize(text)


def _all_contexts(lo: int, hi: int) -> list[str]:
    return [ctx.format(chr(cp)) for cp in range(lo, hi) for ctx in CONTEXTS]


@pytest.mark.parametrize("start", range(0, 0x110000, 0x44000))
def test_every_code_point_equals_nltk_in_every_context(start):
    """Every code point (surrogates and unassigned ones included) in ``a<cp>b``, ``<cp>``, ``<cp>word``,
    ``word<cp>`` and ``!<cp>!``: the bulk path and the per-text path give NLTK's own tokens. Batched: the texts
    joined by spaces (a token never spans a space) go through NLTK, the bulk path and the per-text path at once."""
    for lo in range(start, start + 0x44000, 0x11000):
        texts = _all_contexts(lo, lo + 0x11000)
        joined = " ".join(texts)
        expected = _nltk_tokens(joined)
        if wordpunct.tokenize_many([joined, "x"])[0] != expected or wordpunct.findall(joined) != expected:
            for cp in range(lo, lo + 0x11000):  # name the first code point that differs
                for ctx in CONTEXTS:
                    text = ctx.format(chr(cp))
                    assert wordpunct.tokenize_many([text, "x"])[0] == _nltk_tokens(text), hex(cp)
                    assert wordpunct.findall(text) == _nltk_tokens(text), hex(cp)
            pytest.fail("the joined texts differ from NLTK's tokens")


@pytest.mark.parametrize("start", range(0, 0x110000, 0x44000))
def test_bulk_path_one_text_per_code_point_and_context(start):
    """The numpy path for many non-ASCII texts (the class table, the inserted spaces and the tokens dealt out to the
    texts by line): every code point but the line break and \\x1c-\\x1f (which take the per-text path), one text
    per code point and context, gives NLTK's tokens in order, and each text gets exactly its own."""
    skip = {0x0A, 0x1C, 0x1D, 0x1E, 0x1F}
    for lo in range(start, start + 0x44000, 0x11000):
        texts = [ctx.format(chr(cp)) for cp in range(lo, lo + 0x11000) if cp not in skip for ctx in CONTEXTS]
        ours = wordpunct._tokenize_block("\n".join(texts))
        assert ours == wordpunct.tokenize_many(texts)
        assert [tok for toks in ours for tok in toks] == _nltk_tokens(" ".join(texts))
        # each text's tokens joined are the text without its whitespace (a token never spans a space)
        assert ["".join(toks) for toks in ours] == regex.sub(r"[^\S\n]", "", "\n".join(texts)).split("\n")


def test_many_texts_of_sampled_code_points_every_tokenizer():
    """The multi-text paths (the data tokenizer, BLEU's bulk tokenizer, text by text) on the first 1,024 code points
    and 20,000 sampled ones, one text per code point and context."""
    from cotk_repro.metrics.ngrams import tokenize_texts
    from cotk_repro.text.reference_hashes import bleu_tokenize

    cps = list(range(1024)) + random.Random(33).sample(range(1024, 0x110000), 20000)
    texts = [ctx.format(chr(cp)) for cp in cps for ctx in CONTEXTS]
    expected = [_nltk_tokens(t) for t in texts]
    assert wordpunct.tokenize_many(texts) == expected
    assert WordPunctTokenizer().tokenize_many(texts) == expected
    assert [bleu_tokenize(t) for t in texts] == expected
    plain = [i for i, t in enumerate(texts) if "<" not in t]  # BLEU keeps <unk>-style tokens whole
    assert tokenize_texts([texts[i] for i in plain]) == [expected[i] for i in plain]


@pytest.mark.parametrize(
    "texts",
    [
        ["a\x1cb", "c.\x1d!d", "x\x1f"],  # ASCII with NLTK's punctuation-not-space separators: the bytes path
        ["é\x1cb", "\x1e", "ok"],  # non-ASCII with them: per text through regex
        ["H₂O ²³ ½", "नमस्ते दुनिया", "e\u0301te\u0301", "👍🏽!", "ภาษาไทย"],
        ["a\x1cb\n", "two"],  # a line break inside a text
    ]
    + [[chr(c) + "a" + chr(c) for c in range(0, 128)]],
)
def test_control_characters_and_scripts_every_path(texts):
    expected = [_nltk_tokens(t) for t in texts]
    assert wordpunct.tokenize_many(texts) == expected
    assert [wordpunct.findall(t) for t in texts] == expected
    assert WordPunctTokenizer().tokenize_many(texts) == expected
    assert wordpunct.tokenize_many(texts * 800) == expected * 800  # numpy's size


def test_known_differences_from_re():
    """The cases the issue measured: ``re`` (the interpreter's data) splits these differently from NLTK."""
    assert wordpunct.findall("H₂O") == ["H", "₂", "O"]
    assert wordpunct.findall("नमस्ते") == ["नमस्ते"]  # combining vowel signs are word characters
    assert wordpunct.findall("a\x1cb") == ["a", "\x1c", "b"]
    assert re.findall(r"\w+|[^\w\s]+", "नमस्ते") != ["नमस्ते"]


def test_tokenizer_id_names_engine_and_unicode_version():
    version = wordpunct.unicode_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    major, minor = version.split(".")[:2]
    assert wordpunct.tokenizer_id() == "wordpunct-u" + major + ("" if minor == "0" else "." + minor)
    assert WordPunctTokenizer().settings["unicode"] == version
    assert WordPunctTokenizer().settings["engine"] == "regex"
