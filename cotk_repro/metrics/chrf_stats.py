"""chrF's match statistics for a whole corpus at once, with numpy: the same integers as sacrebleu's ``CHRF``.

sacrebleu builds a ``Counter`` of every character (and word) n-gram of every sentence and intersects them
pair by pair, in Python. Here all texts are one array of integer symbols (Unicode code points, or word ids) and
the statistics of every order come from **one sort** (:func:`sorted_statistics`): each position of each
(hypothesis, reference) pair gets one integer key, the pair's number, then the ``max_order`` symbols starting
there, then one bit for the side; past the text's end the window holds padding, 0 on the hypothesis side and
another value on the reference side, so an n-gram running off its text never matches. Sorted, the keys of one
pair that share their first n symbols are neighbours for every n at once, so an order's n-grams are runs of
equal ``key >> shift``; a run's reference count is a sum over it, its matches min(hypothesis, reference); from
order 2 on the runs of one are dropped first and from order 3 on only the runs found on both sides are kept
(an n+1-gram can match only where its first n symbols did). Symbols are used as they are while the keys fit 63
bits, else ranked over the corpus, else ranked within each pair (a pair holds few of a large alphabet); when
even that does not fit (orders far past 6), :func:`order_statistics`, one sort per order with dense re-ranked
keys, does the same work without a width limit.

The result, per reference and order, is sacrebleu's ``[hypothesis n-grams (0 when the reference has none),
reference n-grams, matches]``, so the F-scores computed from them (by sacrebleu's own ``_compute_f_score``) are
sacrebleu's. The texts' preparation is sacrebleu's too, done for the corpus at once: whitespace is what
``str.split`` splits on (a table of those code points), and chrF++'s words are sacrebleu's
``_remove_punctuation`` of each distinct whitespace-separated word.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

#: the largest code point ``str.isspace`` holds true for (U+3000 IDEOGRAPHIC SPACE); a test scans every code point
_LAST_SPACE = 0x3000
_SPACE_TABLE: np.ndarray | None = None


def space_table() -> np.ndarray:
    """``table[c]``: whether code point ``c`` is whitespace for ``str.split`` (``len 0x110000``, bool)."""
    global _SPACE_TABLE
    if _SPACE_TABLE is None:
        table = np.zeros(0x110000, dtype=bool)
        table[[c for c in range(_LAST_SPACE + 1) if chr(c).isspace()]] = True
        _SPACE_TABLE = table
    return _SPACE_TABLE


def _spans(flags: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """How many of ``flags`` are set inside each text (texts of ``lengths``, laid end to end)."""
    running = np.zeros(len(flags) + 1, dtype=np.int64)
    np.cumsum(flags, out=running[1:])
    ends = np.cumsum(lengths)
    spans: np.ndarray = running[ends] - running[ends - lengths]
    return spans


def text_symbols(
    texts: Sequence[str], whitespace: bool, words: bool, remove_punctuation: Callable[[str], list[str]]
) -> tuple[tuple[np.ndarray, np.ndarray] | None, tuple[np.ndarray, np.ndarray] | None]:
    """``(chars, words)``: each ``(symbols, lengths)`` or None when ``words`` is false: the code points of every
    text (without whitespace unless ``whitespace``) and the ids of every text's chrF++ words
    (``remove_punctuation`` of each word ``str.split`` gives), concatenated, with each text's length."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    joined = "".join(texts)
    if joined.isascii():  # one byte a code point: a quarter of the memory to go through
        cps = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
        space = space_table()[:256][cps]
    else:
        cps = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        space = space_table()[cps]
    if whitespace:
        chars = (cps.astype(np.int64), lengths)
    else:
        keep = ~space
        chars = (cps[keep].astype(np.int64), _spans(keep, lengths))
    if not words:
        return chars, None
    # a word starts at a non-space that follows a space or starts its text
    start = ~space
    start[1:] &= space[:-1]
    firsts = np.cumsum(lengths) - lengths
    firsts = firsts[lengths > 0]
    start[firsts] = ~space[firsts]
    per_text = _spans(start, lengths)
    raw = " ".join(texts).split()
    if len(raw) != int(per_text.sum()):  # str.split disagrees with the table: each text on its own
        return chars, _words_one_by_one(texts, remove_punctuation)
    distinct = dict.fromkeys(raw)
    vocab: dict[str, int] = {}
    first = np.empty(len(distinct), dtype=np.int64)
    second = np.full(len(distinct), -1, dtype=np.int64)
    for i, word in enumerate(distinct):
        distinct[word] = i
        pieces = remove_punctuation(word)
        first[i] = vocab.setdefault(pieces[0], len(vocab))
        if len(pieces) == 2:
            second[i] = vocab.setdefault(pieces[1], len(vocab))
        elif len(pieces) != 1:
            return chars, _words_one_by_one(texts, remove_punctuation)
    ids = np.fromiter(map(distinct.__getitem__, raw), dtype=np.int64, count=len(raw))
    width = 1 + (second[ids] >= 0)
    at = np.cumsum(width) - width
    symbols = np.empty(int(width.sum()), dtype=np.int64)
    symbols[at] = first[ids]
    two = width == 2
    symbols[at[two] + 1] = second[ids[two]]
    return chars, (symbols, _spans(width, per_text) if len(width) else np.zeros(len(texts), dtype=np.int64))


def _words_one_by_one(
    texts: Sequence[str], remove_punctuation: Callable[[str], list[str]]
) -> tuple[np.ndarray, np.ndarray]:
    ids: dict[str, int] = {}
    token_lists = [remove_punctuation(t) for t in texts]
    flat = [ids.setdefault(t, len(ids)) for tokens in token_lists for t in tokens]
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    return np.asarray(flat, dtype=np.int64), lengths


def _ranked(symbols: np.ndarray) -> tuple[np.ndarray, int]:
    """Symbols replaced by their rank among the distinct ones, from 1 (0 is the padding past a text's end),
    and how many distinct there are."""
    if not len(symbols):
        return symbols, 0
    present = np.zeros(int(symbols.max()) + 1, dtype=np.int64)
    present[symbols] = 1
    rank = np.cumsum(present)
    return rank[symbols], int(rank[-1])


def _ranked_in_pairs(seq: np.ndarray, pair: np.ndarray, pair_bits: int, distinct: int) -> tuple[np.ndarray, int]:
    """Symbols (from 1) replaced by their rank, from 1, among the distinct symbols of their own pair (a pair holds
    few of a large alphabet), and the largest such rank; one sort of (pair, symbol, position)."""
    total = len(seq)
    pos_bits, sym_bits = max(total - 1, 0).bit_length(), distinct.bit_length()
    if pair_bits + sym_bits + pos_bits > 63:
        return seq, distinct
    key = (pair << (sym_bits + pos_bits)) | (seq << pos_bits) | np.arange(total, dtype=np.int64)
    key.sort()
    where = key & ((1 << pos_bits) - 1)
    group = key >> pos_bits  # (pair, symbol)
    new_symbol = np.ones(total, dtype=np.int64)
    new_symbol[1:] = group[1:] != group[:-1]
    rank = np.cumsum(new_symbol)
    pair_start = np.ones(total, dtype=bool)
    pair_start[1:] = (group[1:] >> sym_bits) != (group[:-1] >> sym_bits)
    local = rank - np.maximum.accumulate(np.where(pair_start, rank, 0)) + 1
    out = np.empty(total, dtype=np.int64)
    out[where] = local
    return out, int(local.max()) if total else 0


def sorted_statistics(
    symbols: np.ndarray,
    lengths: np.ndarray,
    max_order: int,
    n_hyps: int,
    owner: np.ndarray,
    *,
    key_bits: int = 63,
    totals: bool = False,
) -> np.ndarray | None:
    """``(references, max_order, 3)`` int64 as :func:`order_statistics`, from one sort of one key per position of
    every (hypothesis, reference) pair; None when those keys need more than ``key_bits`` bits. ``totals``: only
    the matches of each order summed over the pairs, ``(max_order,)`` (corpus BLEU's clipped counts)."""
    n_texts = len(lengths)
    n_refs = n_texts - n_hyps
    out = np.zeros((n_refs, max_order, 3), dtype=np.int64)
    if max_order == 0 or n_refs == 0:
        return out[:, :, 2].sum(axis=0) if totals else out
    owner = owner.astype(np.int64)
    # the totals: a text of length L has max(L - n + 1, 0) n-grams
    orders = np.arange(1, max_order + 1, dtype=np.int64)
    ref_len, hyp_len = lengths[n_hyps:], lengths[:n_hyps][owner]
    ref_total = np.maximum(ref_len[:, None] - orders + 1, 0)
    out[:, :, 1] = ref_total
    out[:, :, 0] = np.where(ref_total > 0, np.maximum(hyp_len[:, None] - orders + 1, 0), 0)
    if not int(lengths.sum()):
        return out[:, :, 2].sum(axis=0) if totals else out
    matched = np.zeros(max_order, dtype=np.int64)
    top = int(symbols.max()) + 1 if len(symbols) else 1
    pair_bits = (n_refs - 1).bit_length()
    if pair_bits + max_order * (top + 1).bit_length() + 1 <= key_bits:  # the symbols as they are, from 1
        sym, distinct = symbols + 1, top
    else:
        sym, distinct = _ranked(symbols)
    # the texts in pair order: every reference's hypothesis (side 0), then every reference (side 1)
    if n_refs == n_hyps and np.array_equal(owner, np.arange(n_hyps)):
        seq, seq_len = sym, lengths
    else:
        order = np.concatenate((owner, np.arange(n_hyps, n_texts, dtype=np.int64)))
        seq_len = lengths[order]
        starts = np.cumsum(lengths) - lengths
        seq_start = np.cumsum(seq_len) - seq_len
        seq = sym[np.repeat(starts[order] - seq_start, seq_len) + np.arange(int(seq_len.sum()), dtype=np.int64)]
    pair_of = np.concatenate((np.arange(n_refs, dtype=np.int64), np.arange(n_refs, dtype=np.int64)))
    if pair_bits + max_order * (distinct + 1).bit_length() + 1 > key_bits:  # rank the symbols within each pair
        seq, distinct = _ranked_in_pairs(seq, np.repeat(pair_of, seq_len), pair_bits, distinct)
    # past a text's end, a window holds the padding 0 on the hypothesis side and distinct + 1 on the reference side:
    # an n-gram that runs past its text's end then never equals one of the other side
    width = (distinct + 1).bit_length()
    if pair_bits + max_order * width + 1 > key_bits:
        return None
    # window[p]: the max_order symbols from p on (across text ends for now)
    total = len(seq)
    ext = np.zeros(total + max_order, dtype=np.int64)
    ext[:total] = seq
    window = np.left_shift(seq, width * (max_order - 1))
    shifted = np.empty_like(window)
    for i in range(1, max_order):
        np.left_shift(ext[i : i + total], width * (max_order - 1 - i), out=shifted)
        window |= shifted
    del ext, shifted
    # the last max_order - 1 positions of each text: padding after their k symbols
    ends = np.cumsum(seq_len)
    is_ref = np.arange(2 * n_refs) >= n_refs
    for k in range(1, max_order):
        has = seq_len >= k
        at = ends[has] - k
        tail = width * (max_order - k)
        fill = int(sum((distinct + 1) << (width * j) for j in range(max_order - k)))
        window[at] = (window[at] >> tail << tail) | np.where(is_ref[has], fill, 0)
    keys = (window << 1) | np.repeat((pair_of << (max_order * width + 1)) | is_ref, seq_len)
    del window
    keys.sort()
    every_pair = np.arange(n_refs + 1, dtype=np.int64)
    for n in range(1, max_order + 1):
        prefix = keys >> (1 + width * (max_order - n))  # the pair and the n-gram
        if n > 1:  # an n-gram seen once (a run of one) matches nothing, nor does any longer one starting there
            same = prefix[1:] == prefix[:-1]
            shared = np.zeros(len(keys), dtype=bool)
            shared[1:] = same
            shared[:-1] |= same
            keys = keys[shared]
            prefix = keys >> (1 + width * (max_order - n))
            if not len(keys):
                break
        first = np.flatnonzero(prefix[1:] != prefix[:-1])
        first += 1
        first = np.concatenate(([0], first))
        refs = np.add.reduceat(keys & 1, first)  # each run's reference positions
        size = np.diff(first, append=len(keys))
        both = np.minimum(refs, size - refs)  # the n-gram's matches: min of its hypothesis and reference counts
        if totals:
            matched[n - 1] = both.sum()
        else:
            hit = np.flatnonzero(both)
            summed = np.concatenate(([0], np.cumsum(both[hit])))
            pair_at = np.searchsorted(prefix[first[hit]] >> (width * n), every_pair)  # runs are in pair order
            out[:, n - 1, 2] = np.diff(summed[pair_at])
        if 1 < n < max_order:  # an n+1-gram on both sides has its first n symbols on both sides
            keys = keys[np.repeat(both > 0, size)]
            if not len(keys):
                break
    return matched if totals else out


def order_statistics(
    symbols: np.ndarray, lengths: np.ndarray, max_order: int, n_hyps: int, owner: np.ndarray, *, key_limit: int = 2**62
) -> np.ndarray:
    """``(references, max_order, 3)`` int64: per reference and order, sacrebleu's [hyp, ref, match] counts.

    ``symbols``/``lengths``: the hypotheses (texts 0..n_hyps-1), then the references; ``owner[j]``: the
    hypothesis of reference j. An n-gram's key is its symbols' ranks in base V (V distinct symbols) while
    ``V**n`` times the number of texts stays below ``key_limit``; past that the keys of the order before are
    replaced by their dense ranks first (large alphabets, long orders).
    """
    n_texts = len(lengths)
    n_refs = n_texts - n_hyps
    out = np.zeros((n_refs, max_order, 3), dtype=np.int64)
    total = int(lengths.sum())
    if max_order == 0 or total == 0:
        return out
    text_of = np.repeat(np.arange(n_texts, dtype=np.int64), lengths)
    left = np.repeat(np.cumsum(lengths), lengths) - np.arange(total, dtype=np.int64)  # symbols left, itself included
    present = np.zeros(int(symbols.max()) + 1, dtype=np.int64)  # code points / word ids: a table, not a sort
    present[symbols] = 1
    sym = (np.cumsum(present) - 1)[symbols]
    V = int(present.sum())
    span = n_texts
    ref_owner = owner.astype(np.int64)
    key = sym  # per start position p < total - n + 1: the key of the n-gram starting at p (it may cross texts)
    bound = V  # keys of the current order are < bound
    for n in range(1, max_order + 1):
        if n > 1:
            if bound * V * span >= key_limit:
                _, key = np.unique(key, return_inverse=True)
                key = key.reshape(-1).astype(np.int64)
                bound = int(key.max()) + 1 if len(key) else 1
            key = key[:-1] * V + sym[n - 1 :]
            bound *= V
        valid = left[: len(key)] >= n
        if not valid.any():
            break
        texts = text_of[: len(key)][valid]
        uniq, counts = np.unique(key[valid] * span + texts, return_counts=True)
        u_text = uniq % span
        per_text = np.bincount(u_text, weights=counts, minlength=n_texts).astype(np.int64)
        is_ref = u_text >= n_hyps
        h_key, h_cnt = uniq[~is_ref], counts[~is_ref]  # sorted: by key, then hypothesis
        r_idx = u_text[is_ref] - n_hyps
        r_key = uniq[is_ref] - u_text[is_ref] + ref_owner[r_idx]  # the same n-gram in the reference's hypothesis
        r_cnt = counts[is_ref]
        if len(h_key) and len(r_key):
            at = np.minimum(np.searchsorted(h_key, r_key), len(h_key) - 1)
            hit = h_key[at] == r_key
            match: np.ndarray = np.bincount(
                r_idx[hit], weights=np.minimum(h_cnt[at[hit]], r_cnt[hit]), minlength=n_refs
            )
        else:
            match = np.zeros(n_refs, dtype=np.float64)
        ref_total = per_text[n_hyps:]
        out[:, n - 1, 0] = np.where(ref_total > 0, per_text[:n_hyps][ref_owner], 0)
        out[:, n - 1, 1] = ref_total
        out[:, n - 1, 2] = match.astype(np.int64)
    return out


#: pairs per call of the one-sort kernel when each hypothesis has one reference: fewer pair bits leave a key room
#: for a block's own (smaller) alphabet, and the arrays stay in cache (2-3x faster on 10k COCO pairs)
PAIR_BLOCK = 2048


def pair_blocks(symbols: np.ndarray, lengths: np.ndarray, n_pairs: int) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """``(symbols, lengths, pairs)`` of each block of :data:`PAIR_BLOCK` pairs, in order, for texts laid out as
    ``n_pairs`` hypotheses then their ``n_pairs`` references (one each): the block's hypotheses, then theirs."""
    if n_pairs <= PAIR_BLOCK:
        yield symbols, lengths, n_pairs
        return
    hyp_at = np.concatenate(([0], np.cumsum(lengths[:n_pairs])))
    ref_at = int(hyp_at[-1]) + np.concatenate(([0], np.cumsum(lengths[n_pairs:])))
    for lo in range(0, n_pairs, PAIR_BLOCK):
        hi = min(n_pairs, lo + PAIR_BLOCK)
        yield (
            np.concatenate((symbols[hyp_at[lo] : hyp_at[hi]], symbols[ref_at[lo] : ref_at[hi]])),
            np.concatenate((lengths[lo:hi], lengths[n_pairs + lo : n_pairs + hi])),
            hi - lo,
        )


def statistics(symbols: np.ndarray, lengths: np.ndarray, max_order: int, n_hyps: int, owner: np.ndarray) -> np.ndarray:
    """:func:`sorted_statistics`, or :func:`order_statistics` where its keys do not fit; with one reference each,
    on blocks of pairs (:func:`pair_blocks`)."""
    if len(owner) == n_hyps and n_hyps > PAIR_BLOCK and np.array_equal(owner, np.arange(n_hyps)):
        return np.concatenate(
            [
                statistics(s, n, max_order, k, np.arange(k, dtype=np.int64))
                for s, n, k in pair_blocks(symbols, lengths, n_hyps)
            ]
        )
    out = sorted_statistics(symbols, lengths, max_order, n_hyps, owner)
    return order_statistics(symbols, lengths, max_order, n_hyps, owner) if out is None else out


def chrf_statistics(metric: Any, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> np.ndarray:
    """Per reference (flattened in order), the ``3 * (char_order + word_order)`` statistics sacrebleu's ``metric``
    (a ``CHRF``) computes for it against its hypothesis."""
    if metric.lowercase:
        hyps = [h.lower() for h in hyps]
        refs = [[r.lower() for r in rs] for rs in refs]
    flat = [r for rs in refs for r in rs]
    owner = np.repeat(np.arange(len(hyps), dtype=np.int64), [len(rs) for rs in refs])
    chars, words = text_symbols(list(hyps) + flat, metric.whitespace, metric.word_order > 0, metric._remove_punctuation)
    parts = []
    if metric.char_order and chars is not None:
        parts.append(statistics(chars[0], chars[1], metric.char_order, len(hyps), owner))
    if metric.word_order and words is not None:
        parts.append(statistics(words[0], words[1], metric.word_order, len(hyps), owner))
    stats = np.concatenate(parts, axis=1)
    return stats.reshape(len(flat), -1)


def best_statistics(metric: Any, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> np.ndarray:
    """Per hypothesis, the statistics of :func:`chrf_statistics` against its best reference: the first with the
    highest sentence F-score (sacrebleu's ``_compute_f_score``), sacrebleu's rule."""
    stats = chrf_statistics(metric, hyps, refs)
    if len(stats) == len(hyps):
        return stats
    rows, chosen, at = stats.tolist(), [], 0
    for rs in refs:
        best, top = at, -1.0
        for j in range(at, at + len(rs)):
            f = metric._compute_f_score(rows[j])
            if f > top:
                best, top = j, f
        chosen.append(best)
        at += len(rs)
    return stats[chosen]
