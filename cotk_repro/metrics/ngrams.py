"""Vectorized n-gram counting for the BLEU family (numpy).

Sentences (token lists) are encoded once into one flat array of token ids; for each
order n every valid position gets a *dense* n-gram code: the rank of (the (n-1)-gram's
code, the next token) among the distinct pairs (so codes never overflow, whatever the
vocabulary size or n). Grouping is one plain sort of ``value << bits | position`` per
order (:func:`stable_order`; numpy's sort is vectorized, its argsort several times
slower), and everything else comes from the runs of the sorted array: occurrences
sorted by code then sentence, counts, largest counts per code. Codes are shared by every sentence encoded
together, so a hypothesis set and a reference set encoded in one :class:`NgramIndex`
can be matched by code.

``<unk>`` is one token (also when it sits inside a string: ``"a <unk> b"``), and an
n-gram that contains it is marked so that it never matches (docs/spec.md section 5). The other
special tokens (``<pad>``, ``<go>``, ``<eos>``) are kept whole too, so that an id input
turned into text scores its special tokens as one token each, as CoTK does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import chain, count

import numpy as np

from ..core import wordpunct
from ..text.reference_hashes import bleu_tokenize

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
    return wordpunct.tokenize_many(texts)


def stable_order(values: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for ints in ``[0, bound)``: where value and position fit in 63 bits,
    one plain sort of ``value << bits | position`` (several times faster than an argsort)."""
    n = len(values)
    pos_bits = max(n - 1, 0).bit_length()
    if max(bound - 1, 0).bit_length() + pos_bits > 63:
        return np.argsort(values, kind="stable")
    key = values << pos_bits
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    return key & ((1 << pos_bits) - 1)


def run_starts(*sorted_columns: np.ndarray) -> np.ndarray:
    """Indices where a run of equal rows begins, over columns sorted together (lexicographically)."""
    first = sorted_columns[0]
    new = np.empty(len(first), dtype=bool)
    if len(first):
        new[0] = True
        np.not_equal(first[1:], first[:-1], out=new[1:])
        for col in sorted_columns[1:]:
            new[1:] |= col[1:] != col[:-1]
    return np.flatnonzero(new)


def dense_ranks(sorted_values: np.ndarray) -> np.ndarray:
    """For sorted values, each one's rank among the distinct values (0, 0, 1, 2, 2, ...)."""
    new = np.zeros(len(sorted_values), dtype=np.int64)
    new[1:] = sorted_values[1:] != sorted_values[:-1]
    return np.cumsum(new)


def run_lengths(starts: np.ndarray, total: int) -> np.ndarray:
    """Lengths of the runs beginning at ``starts`` in an array of ``total`` elements."""
    return np.diff(np.append(starts, total))


def token_ids(sentences: Sequence[Sequence[str]], total: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Dense token ids in order of first occurrence, ``<unk>`` 0: ``(ids per position, positions ordered by id,
    the ids in that order, number of ids)``. One dict operation a token: each gets the position of its first
    occurrence, then those are ranked."""
    first: dict[str, int] = {}
    first_pos = np.fromiter(
        map(first.setdefault, chain((UNK,), chain.from_iterable(sentences)), count()), dtype=np.int64, count=total + 1
    )[1:]
    order = stable_order(first_pos, total + 1)
    ranks = dense_ranks(first_pos[order])
    if total and first_pos[order[0]] != 0:  # <unk> absent: the ids start at 1
        ranks += 1
    tokens = np.empty(total, dtype=np.int64)
    tokens[order] = ranks
    return tokens, order, ranks, len(first)


class NgramIndex:
    """Token lists -> per order, every n-gram occurrence as (dense n-gram code, sentence), sorted by code then
    sentence.

    ``shared`` keeps only the n-grams that can match somewhere else, for the BLEU family: ``"any"``, n-grams
    found in at least two sentences (Self-BLEU); an index ``H``, n-grams found both before and from sentence ``H``
    (a hypothesis set and a reference set). An n-gram is found only if both its (n-1)-grams are, so each order
    looks only at the positions where they were; ``<unk>`` is never kept. ``None`` (default): every n-gram.
    """

    def __init__(self, sentences: Sequence[Sequence[str]], max_n: int, shared: str | int | None = None):
        self.max_n = max_n
        self.n_sentences = len(sentences)
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        self.lengths = lengths
        total = int(lengths.sum())
        tokens, order, ranks, V = token_ids(sentences, total)
        self.vocab_size = V
        sent_of = np.repeat(np.arange(len(sentences), dtype=np.int64), lengths)
        remaining = np.repeat(np.cumsum(lengths), lengths) - np.arange(total, dtype=np.int64)  # tokens left

        #: per order n (1-based): (sentence index, dense code) of every n-gram occurrence, sorted by code then
        #: sentence (then position)
        self.sent: list[np.ndarray] = [np.empty(0, np.int64)]
        self.code: list[np.ndarray] = [np.empty(0, np.int64)]
        #: per order: boolean array over codes, True when the n-gram contains <unk>
        self.code_has_unk: list[np.ndarray] = [np.empty(0, bool)]
        self.n_codes: list[int] = [0]
        self._counts: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

        # Codes of order n are the ranks of (code of the (n-1)-gram, next token) among the distinct pairs, so they
        # stay dense (never overflow); positions are visited in order, so a stable order by value is sorted by
        # code, then sentence.
        code_at = tokens.copy()  # per position: the code of the n-gram starting there (current order)
        if shared is None:
            valid = np.arange(total, dtype=np.int64)
            pos1, code1 = order, ranks  # the order by first occurrence is the order by id
        else:
            valid = np.flatnonzero(tokens != 0)
            known = ranks != 0
            pos1, code1 = order[known], ranks[known]
        unk = tokens[valid] == 0
        alive: np.ndarray | None = None  # per position: its (n-1)-gram was kept
        n_codes = V
        for n in range(1, max_n + 1):
            if n == 1:
                pos, code = pos1, code1
            else:
                keep = remaining[valid] >= n
                valid, unk = valid[keep], unk[keep]
                if alive is not None:
                    keep = alive[valid] & alive[valid + 1]
                    valid, unk = valid[keep], unk[keep]
                nxt = tokens[valid + (n - 1)]
                value = code_at[valid] * V + nxt
                unk = unk | (nxt == 0)
                by_value = stable_order(value, n_codes * V)
                pos = valid[by_value]
                code = dense_ranks(value[by_value])
                n_codes = int(code[-1]) + 1 if len(code) else 0
                code_at[pos] = code
            has_unk = np.zeros(n_codes, dtype=bool)
            if unk.any():
                has_unk[code_at[valid[unk]]] = True
            sent = sent_of[pos]
            self.sent.append(sent)
            self.code.append(code)
            self.code_has_unk.append(has_unk)
            self.n_codes.append(n_codes)
            if shared is not None and n < max_n:
                alive = self._kept(code, sent, pos, total, shared)

    @staticmethod
    def _kept(code: np.ndarray, sent: np.ndarray, pos: np.ndarray, total: int, shared: str | int) -> np.ndarray:
        """Per position, whether its n-gram is shared (sentences ascend within a code's run: first and last are
        its smallest and largest sentence)."""
        starts = run_starts(code)
        sizes = run_lengths(starts, len(code))
        lo, hi = sent[starts], sent[starts + sizes - 1]
        found = lo != hi if shared == "any" else (lo < shared) & (hi >= shared)
        alive = np.zeros(total, dtype=bool)
        alive[pos] = np.repeat(found, sizes)
        return alive

    def counts(self, n: int, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unique (code, sentence) pairs of order ``n`` among sentences ``lo:hi``, sorted by code then
        sentence, with their counts: ``(code, sentence, count)``."""
        hi = self.n_sentences if hi is None else hi
        if n not in self._counts:
            sent, code = self.sent[n], self.code[n]
            starts = run_starts(code, sent)
            self._counts[n] = (code[starts], sent[starts], run_lengths(starts, len(code)))
        code, sent, cnt = self._counts[n]
        if lo != 0 or hi != self.n_sentences:
            sel = (sent >= lo) & (sent < hi)
            code, sent, cnt = code[sel], sent[sel], cnt[sel]
        return code, sent, cnt


def group_max(codes: np.ndarray, counts: np.ndarray, n_codes: int) -> np.ndarray:
    """Per code, the largest count (``codes`` sorted ascending); 0 for codes absent."""
    out = np.zeros(n_codes, dtype=np.int64)
    if len(codes):
        starts = run_starts(codes)
        out[codes[starts]] = np.maximum.reduceat(counts, starts)
    return out


def run_top2(codes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each element, the largest and second largest count of its code's run (``codes`` sorted ascending;
    a multiset: ties repeat; 0 when the run has one element)."""
    if not len(codes):
        return counts.copy(), counts.copy()
    starts = run_starts(codes)
    sizes = run_lengths(starts, len(codes))
    top1 = np.repeat(np.maximum.reduceat(counts, starts), sizes)
    is_top = counts == top1
    n_top = np.add.reduceat(is_top.astype(np.int64), starts)
    second = np.maximum.reduceat(np.where(is_top, 0, counts), starts)
    top2 = np.repeat(np.where(n_top >= 2, top1[starts], second), sizes)
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
