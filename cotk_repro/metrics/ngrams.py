"""Vectorized n-gram counting for the BLEU family (numpy).

Sentences (token lists) are encoded once into one flat array of token ids; for each
order n every valid position gets a *dense* n-gram code, built from the (n-1)-gram
code and the next token and compressed with ``np.unique`` (so codes never overflow,
whatever the vocabulary size or n). Codes are shared by every sentence encoded
together, so a hypothesis set and a reference set encoded in one :class:`NgramIndex`
can be matched by code.

``<unk>`` is one token (also when it sits inside a string: ``"a <unk> b"``), and an
n-gram that contains it is marked so that it never matches (docs/spec.md section 5). The other
special tokens (``<pad>``, ``<go>``, ``<eos>``) are kept whole too, so that an id input
turned into text scores its special tokens as one token each, as CoTK does.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Sequence

import numpy as np

from .reference_hashes import bleu_tokenize

UNK = "<unk>"
#: special tokens kept whole by the tokenizer (``<unk>`` also never matches)
ATOMIC = (UNK, "<pad>", "<go>", "<eos>")
_ATOMIC_SPLIT = re.compile("(" + "|".join(map(re.escape, ATOMIC)) + ")")


def has_special(text: str) -> bool:
    """Whether ``text`` holds a special token that :func:`tokenize_text` keeps whole."""
    return "<" in text and any(t in text for t in ATOMIC)


def tokenize_text(text: str) -> list[str]:
    """BLEU's fixed WordPunct tokenizer, keeping each special token (``<unk>``, ``<pad>``, ...) whole."""
    if not has_special(text):
        return bleu_tokenize(text)
    parts = _ATOMIC_SPLIT.split(text)
    out: list[str] = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part)
        else:
            out.extend(bleu_tokenize(part))
    return out


# Bulk WordPunct: a token is a maximal run of \w or of [^\w\s]; splitting the punctuation runs off and then
# splitting on whitespace gives the same tokens (str.split and re's \s agree on what is whitespace). The
# ASCII path works on bytes, where \w is [A-Za-z0-9_] and whitespace is \t\n\v\f\r, \x1c-\x1f and space.
_PUNCT_RUNS = re.compile(r"([^\w\s]+)")
_PUNCT_RUNS_ASCII = re.compile(rb"([^A-Za-z0-9_\t\n\x0b\x0c\r\x1c-\x1f ]+)")


def tokenize_texts(texts: Sequence[str]) -> list[list[str]]:
    """:func:`tokenize_text` of many texts at once (several times faster than one regex call per text)."""
    texts = list(texts)
    if not texts:
        return []
    block = "\n".join(texts)
    simple = "<" not in block and "\r" not in block and block.count("\n") == len(texts) - 1
    slow = [] if simple else [i for i, t in enumerate(texts) if has_special(t) or "\n" in t or "\r" in t]
    if slow:
        out: list[list[str] | None] = [None] * len(texts)
        for i in slow:
            out[i] = tokenize_text(texts[i])
        rest = [i for i in range(len(texts)) if out[i] is None]
        for i, toks in zip(rest, tokenize_texts([texts[i] for i in rest])):
            out[i] = toks
        return out  # type: ignore[return-value]
    if block.isascii():
        spaced = b" ".join(_PUNCT_RUNS_ASCII.split(block.encode("ascii"))).decode("ascii")
    else:
        spaced = " ".join(_PUNCT_RUNS.split(block))
    lines = spaced.split("\n")
    if len(lines) != len(texts):  # pragma: no cover - defensive: fall back to the regex per text
        return list(map(tokenize_text, texts))
    return list(map(str.split, lines))


class NgramIndex:
    """Token lists -> per-order arrays of (sentence, n-gram code) occurrences."""

    def __init__(self, sentences: Sequence[Sequence[str]], max_n: int):
        self.max_n = max_n
        self.n_sentences = len(sentences)
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        self.lengths = lengths
        total = int(lengths.sum())
        flat = list(chain.from_iterable(sentences))
        vocab = {w: i for i, w in enumerate(dict.fromkeys(chain((UNK,), flat)))}  # <unk> is id 0
        tokens = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=total)
        self.vocab_size = len(vocab)
        sent_of = np.repeat(np.arange(len(sentences), dtype=np.int64), lengths)
        starts = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        pos_in_sent = np.arange(total, dtype=np.int64) - np.repeat(starts[:-1], lengths)
        remaining = lengths[sent_of] - pos_in_sent  # tokens from this position to the sentence end

        #: per order n (1-based): (sentence index, dense code) of every n-gram occurrence
        self.sent: list[np.ndarray] = [np.empty(0, np.int64)]
        self.code: list[np.ndarray] = [np.empty(0, np.int64)]
        #: per order: boolean array over codes, True when the n-gram contains <unk>
        self.code_has_unk: list[np.ndarray] = [np.empty(0, bool)]
        self.n_codes: list[int] = [0]

        code = tokens.copy()
        unk = tokens == 0
        n_codes = self.vocab_size
        valid_idx = np.arange(total, dtype=np.int64)
        for n in range(1, max_n + 1):
            if n > 1:
                keep = remaining[valid_idx] >= n
                valid_idx = valid_idx[keep]
                nxt = tokens[valid_idx + (n - 1)]
                pair = code[keep] * self.vocab_size + nxt
                unk = unk[keep] | (nxt == 0)
                uniq, code = np.unique(pair, return_inverse=True)
                code = code.reshape(-1).astype(np.int64, copy=False)
                n_codes = len(uniq)
            has_unk = np.zeros(n_codes, dtype=bool)
            if unk.any():
                has_unk[code[unk]] = True
            self.sent.append(sent_of[valid_idx])
            self.code.append(code)
            self.code_has_unk.append(has_unk)
            self.n_codes.append(n_codes)

    def counts(self, n: int, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unique (code, sentence) pairs of order ``n`` among sentences ``lo:hi``, sorted by code then
        sentence, with their counts: ``(code, sentence, count)``."""
        hi = self.n_sentences if hi is None else hi
        sent, code = self.sent[n], self.code[n]
        if lo != 0 or hi != self.n_sentences:
            sel = (sent >= lo) & (sent < hi)
            sent, code = sent[sel], code[sel]
        span = max(self.n_sentences, 1)
        keys, cnt = np.unique(code * span + sent, return_counts=True)
        return keys // span, keys % span, cnt.astype(np.int64)


def group_max(codes: np.ndarray, counts: np.ndarray, n_codes: int) -> np.ndarray:
    """Per code, the largest count (``codes`` sorted ascending); 0 for codes absent."""
    out = np.zeros(n_codes, dtype=np.int64)
    if len(codes):
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        out[codes[starts]] = np.maximum.reduceat(counts, starts)
    return out


def group_top2(codes: np.ndarray, counts: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per code, the largest and second largest count over sentences (a multiset: ties repeat)."""
    top1 = np.zeros(n_codes, dtype=np.int64)
    top2 = np.zeros(n_codes, dtype=np.int64)
    if len(codes):
        order = np.lexsort((-counts, codes))
        c, k = codes[order], counts[order]
        first = np.r_[True, c[1:] != c[:-1]]
        starts = np.flatnonzero(first)
        top1[c[starts]] = k[starts]
        second = starts + 1
        ok = second < len(c)
        second = second[ok]
        same = c[second] == c[starts[ok]]
        top2[c[second[same]]] = k[second[same]]
    return top1, top2


def closest_lengths(hyp_lens: np.ndarray, ref_lens: np.ndarray) -> np.ndarray:
    """For each hypothesis length h, the reference length r minimizing (|r - h|, r) (NLTK's rule)."""
    u = np.unique(ref_lens)
    idx = np.searchsorted(u, hyp_lens, side="left")
    hi = u[np.minimum(idx, len(u) - 1)]
    lo = u[np.maximum(idx - 1, 0)]
    has_hi = idx < len(u)
    has_lo = idx > 0
    # a tie goes to the shorter length: choose lo when h - lo <= hi - h
    pick_lo = has_lo & (~has_hi | ((hyp_lens - lo) <= (hi - hyp_lens)))
    out = np.where(pick_lo, lo, hi)
    return np.where(has_hi & (hi == hyp_lens), hyp_lens, out)


def closest_lengths_leave_one_out(lens: np.ndarray) -> np.ndarray:
    """Self-BLEU: for each sentence, the closest length among the *other* sentences."""
    u, cnt = np.unique(lens, return_counts=True)
    out = closest_lengths(lens, lens)  # equals h where h occurs (at least itself)
    unique_pos = np.searchsorted(u, lens)
    lonely = cnt[unique_pos] == 1
    if lonely.any():
        # neighbours of h in u, skipping h itself
        p = unique_pos[lonely]
        h = lens[lonely]
        has_lo = p > 0
        has_hi = p + 1 < len(u)
        lo = u[np.maximum(p - 1, 0)]
        hi = u[np.minimum(p + 1, len(u) - 1)]
        pick_lo = has_lo & (~has_hi | ((h - lo) <= (hi - h)))
        out = out.copy()
        out[lonely] = np.where(pick_lo, lo, hi)
    return out
