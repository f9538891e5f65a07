"""The BLEU family: corpus BLEU, Self-BLEU and forward/backward/harmonic BLEU.

Exact and fast. Every value equals NLTK (``nltk.translate.bleu_score``) bit for bit
per sentence (means to ~1e-12, summation order aside), and every computation is
linear in the data:

* ``bleu``: NLTK ``corpus_bleu`` with ``SmoothingFunction().method3`` (CoTK's choice),
  multi-reference.
* ``self-bleu``: the mean of NLTK ``sentence_bleu`` (``method1``) of each sentence
  against all the others (Zhu et al. 2018), over the **whole** set by default.
* ``fw-bw-bleu``: forward (each generated sentence against the reference set),
  backward (each reference against the generated set) and their harmonic mean
  (Shi et al. 2018).

A sentence's clipped count of an n-gram against a whole set is min(own count, the
largest count over the set), so the largest count per n-gram is computed once for
the set (for Self-BLEU the two largest, to leave the sentence itself out: by
position, not by value) and the closest reference length comes from the sorted
lengths, with NLTK's tie-breaking (the shorter one). See
``docs/bleu-semantics.md`` for the measured details.

Text is detokenized (when given tokens or ids) and re-tokenized with one fixed
tokenizer (:func:`cotk_repro.text.reference_hashes.bleu_tokenize`, NLTK's WordPunct), so
values and hashes never depend on the model's tokenizer; ``<unk>`` is one token and
an n-gram containing it never matches.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import chain, count
from json.encoder import encode_basestring  # C-accelerated; canonical JSON's string encoder
from typing import Any, Literal, overload

import numpy as np

from ..core.canonical import StreamHasher, frame_bytes, token_list_items
from ..core.gcpause import without_gc
from ..text.reference_hashes import BLEU_TOKENIZER, BLEU_VERSION, bleu_tokenize, reference_set_hash
from .base import EXACT, Metric, MetricError, check_references
from .bleu_smoothing import brevity_penalty
from .bleu_tokenizers import get_bleu_tokenizer, normalization, normalizer
from .declaration import COUNTED_INPUTS, Declaration, Setting
from .ngrams import (
    UNK,
    NgramIndex,
    closest_lengths,
    closest_lengths_leave_one_out,
    dense_ranks,
    group_max,
    has_special,
    run_lengths,
    run_starts,
    run_top2,
    stable_order,
    token_ids,
    tokenize_texts,
)
from .resampling import SET_LEVEL

SMOOTHINGS = ("method0", "method1", "method2", "method3", "method4", "method5", "method6", "method7")
_SMOOTH_ALIASES = {
    "none": "method0",
    **{f"m{i}": f"method{i}" for i in range(8)},
    **{str(i): f"method{i}" for i in range(8)},
}
#: the smoothings only corpus ``bleu`` takes (they read the corpus' last sample: cotk_repro.metrics.bleu_smoothing)
CORPUS_ONLY_SMOOTHINGS = ("method4", "method5", "method6", "method7")
EPSILON = 0.1  # NLTK SmoothingFunction's epsilon (method1)
#: how Self-BLEU and Fw/Bw-BLEU pick ``sample`` sentences: "subset" (fair default: a seeded random subset of
#: every set) or "cotk" (CoTK 0.1.0: Self-BLEU shuffles with the seed and keeps the first ``sample``;
#: Fw/Bw-BLEU keeps the first ``sample`` generated sentences and the first ``sample`` references)
SAMPLE_MODES = ("subset", "cotk")
#: ``bleu``'s n-gram totals: NLTK's (max(1, n-grams) per hypothesis) or sacrebleu's (the n-grams there are)
DENOMINATORS = ("nltk", "sacrebleu")
#: the tokenizer name in hashes and signatures when token lists are scored as given (``retokenize=False``)
GIVEN_TOKENS = "given"


# ---------------------------------------------------------------------------------------------
# NLTK's arithmetic, reproduced exactly


def smoothed_precisions(nums: Sequence[int], dens: Sequence[int], smoothing: str) -> list[float]:
    """NLTK's modified precisions after ``SmoothingFunction().<smoothing>``, as floats.

    ``float(Fraction(n, d))`` is the correctly rounded ``n / d``, as here.
    """
    if smoothing == "method3":
        out, inc = [], 1
        for n, d in zip(nums, dens):
            if n == 0:
                out.append(1 / (2**inc * d))
                inc += 1
            else:
                out.append(n / d)
        return out
    if smoothing == "method1":
        return [(n + EPSILON) / d if n == 0 else n / d for n, d in zip(nums, dens)]
    if smoothing == "method2":
        return [nums[0] / dens[0]] + [(n + 1) / (d + 1) for n, d in zip(nums[1:], dens[1:])]
    return [n / d if n != 0 else sys.float_info.min for n, d in zip(nums, dens)]  # method0


def bleu_from_counts(
    nums: Sequence[int], dens: Sequence[int], hyp_len: int, ref_len: int, weights: Sequence[float], smoothing: str
) -> float:
    """NLTK's ``corpus_bleu`` from its summed counts (``sentence_bleu`` is the one-sentence case)."""
    if nums[0] == 0:
        return 0.0
    p_n = smoothed_precisions(nums, dens, smoothing)
    bp = brevity_penalty(ref_len, hyp_len)
    return float(bp * math.exp(math.fsum(w * math.log(p) for w, p in zip(weights, p_n) if p > 0)))


def sentence_scores(
    nums: np.ndarray,
    dens: np.ndarray,
    hyp_lens: np.ndarray,
    ref_lens: np.ndarray,
    weights: Sequence[float],
    smoothing: str,
) -> list[float]:
    """Per-sentence NLTK ``sentence_bleu`` from (sentences x orders) count arrays.

    A sentence's score depends only on its counts and two lengths, and sentences share them often
    (a quarter as many distinct rows on the Texygen sets), so each distinct row is scored once.
    """
    nums, dens = np.asarray(nums, np.int64), np.asarray(dens, np.int64)
    if len(nums) == 0:
        return []
    key = np.column_stack([nums, dens, np.asarray(hyp_lens, np.int64), np.asarray(ref_lens, np.int64)])
    rows, inverse = _unique_rows(key)
    m = nums.shape[1]
    unique_scores = _score_rows(rows[:, :m], rows[:, m : 2 * m], rows[:, 2 * m], rows[:, 2 * m + 1], weights, smoothing)
    scores: list[float] = np.asarray(unique_scores, dtype=np.float64)[inverse.reshape(-1)].tolist()
    return scores


def _unique_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, axis=0, return_inverse=True)`` for non-negative int rows, through one int64 per row
    (mixed radix) where it fits: sorting numbers, not row bytes, is several times faster."""
    radices = [int(c) + 1 for c in key.max(axis=0)] if len(key) else []
    total = 1
    for r in radices:
        total *= r
    if key.min(initial=0) < 0 or total >= 2**62:
        return np.unique(key, axis=0, return_inverse=True)
    code = np.zeros(len(key), np.int64)
    for j, r in enumerate(radices):
        code = code * r + key[:, j]
    order = stable_order(code, total)
    sorted_code = code[order]
    inverse = np.empty(len(order), np.int64)
    inverse[order] = dense_ranks(sorted_code)
    return key[order[run_starts(sorted_code)]], inverse


def _score_rows(
    nums: np.ndarray,
    dens: np.ndarray,
    hyp_lens: np.ndarray,
    ref_lens: np.ndarray,
    weights: Sequence[float],
    smoothing: str,
) -> list[float]:
    """:func:`bleu_from_counts` of each row, the same floats: precisions by correctly rounded divisions of exact
    integers (numpy's as Python's), ``math.log`` once per distinct precision, ``math.fsum`` (exact, so the
    order of the terms does not matter) and ``math.exp`` per row."""
    nums, dens = np.asarray(nums, np.int64), np.asarray(dens, np.int64)
    if len(nums) == 0:
        return []
    p = _smoothed_array(nums, dens, smoothing)
    p[nums[:, 0] == 0] = 1.0  # scored 0 below (no unigram matches), never smoothed
    distinct, inverse = np.unique(p, return_inverse=True)
    logs = np.array(list(map(math.log, distinct.tolist())), dtype=np.float64)[inverse.reshape(-1)]
    terms = logs.reshape(p.shape) * np.asarray(list(weights), dtype=np.float64)
    scores = np.fromiter(map(math.exp, map(math.fsum, terms.tolist())), np.float64, count=len(p))
    h, r = np.asarray(hyp_lens, np.int64), np.asarray(ref_lens, np.int64)
    short = (h <= r) & (h > 0)  # brevity penalty exp(1 - r/h); 1 when h > r
    if short.any():
        scores[short] *= np.fromiter(map(math.exp, (1 - r[short] / h[short]).tolist()), np.float64)
    scores[(nums[:, 0] == 0) | (h == 0)] = 0.0
    values: list[float] = scores.tolist()
    return values


def _score_array(
    nums: np.ndarray,
    dens: np.ndarray,
    hyp_lens: np.ndarray,
    ref_lens: np.ndarray,
    weights: Sequence[float],
    smoothing: str,
) -> np.ndarray:
    """:func:`_score_rows` with numpy's ``log``, ``exp`` and sum (each value within a few ulps of it): the BLEU of
    thousands of resamples at once (:meth:`BleuMetric.resample_statistics`)."""
    p = _smoothed_array(nums, dens, smoothing)
    p[nums[:, 0] == 0] = 1.0
    with np.errstate(divide="ignore"):
        scores: np.ndarray = np.exp((np.log(p) * np.asarray(list(weights), dtype=np.float64)).sum(axis=1))
    h, r = hyp_lens.astype(np.float64), ref_lens.astype(np.float64)
    short = (h <= r) & (h > 0)
    scores[short] *= np.exp(1 - r[short] / h[short])
    scores[(nums[:, 0] == 0) | (hyp_lens == 0)] = 0.0
    return scores


def _smoothed_array(nums: np.ndarray, dens: np.ndarray, smoothing: str) -> np.ndarray:
    """:func:`smoothed_precisions` of each row of (rows x orders) counts, as a float array."""
    zero = nums == 0
    if smoothing == "method3":  # the k-th zero order of a row (k = 1, 2, ...) gets 1 / (2**k * den)
        k = np.cumsum(zero, axis=1)
        smoothed: np.ndarray = np.where(zero, 1 / (np.left_shift(1, k) * dens), nums / dens)
        return smoothed
    if smoothing == "method1":
        smoothed = np.where(zero, EPSILON / dens, nums / dens)
        return smoothed
    if smoothing == "method2":
        out: np.ndarray = (nums + 1) / (dens + 1)
        out[:, 0] = nums[:, 0] / dens[:, 0]
        return out
    smoothed = np.where(zero, sys.float_info.min, nums / dens)  # method0
    return smoothed


def _denominators(lengths: np.ndarray, max_n: int) -> np.ndarray:
    """Per sentence and order, max(1, number of hypothesis n-grams)."""
    orders = np.arange(1, max_n + 1, dtype=np.int64)
    return np.maximum(1, lengths[:, None] - orders[None, :] + 1)


# ---------------------------------------------------------------------------------------------
# The linear-time algorithms


def sentence_counts(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[Sequence[str]]], max_n: int) -> np.ndarray:
    """Per hypothesis, the counts :func:`corpus_counts` sums: ``(hypotheses, 2 + 2 * max_n)`` int64 of its length,
    its closest reference length, its clipped matches per order and its NLTK denominators per order (max(1,
    n-grams)). Column sums are :func:`corpus_counts`' values, so a resample's BLEU is its rows summed."""
    per = _counts(hyps, refs, max_n, per_sentence=True)
    assert not isinstance(per, tuple)
    return per


def corpus_counts(
    hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[Sequence[str]]], max_n: int
) -> tuple[list[int], list[int], int, int]:
    """Summed clipped counts, denominators, hypothesis and closest reference lengths (``corpus_bleu``)."""
    out = _counts(hyps, refs, max_n, per_sentence=False)
    assert isinstance(out, tuple)
    return out


def _counts(
    hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[Sequence[str]]], max_n: int, *, per_sentence: bool
) -> tuple[list[int], list[int], int, int] | np.ndarray:
    """Summed clipped counts, denominators, hypothesis and closest reference lengths (``corpus_bleu``).

    Only n-grams found on both sides of a pair (a hypothesis and its references) count, and an n-gram can be found
    on the other side only if both its (n-1)-grams were: each order looks only at the positions whose two
    (n-1)-grams matched (a fraction of them), never at ``<unk>``. With one reference per hypothesis every order
    comes from one sort instead (:func:`_single_reference_matches`).
    """
    H = len(hyps)
    flat = list(chain.from_iterable(refs))
    sents = list(hyps) + flat
    lengths = np.fromiter(map(len, sents), np.int64, count=len(sents))
    total = int(lengths.sum())
    if len(flat) == H and per_sentence:  # one reference each: every order of every pair from one sort
        matched = _single_reference_matches(_first_positions(sents, total), lengths, H, max_n, per_pair=True)
        if matched is not None:
            lengths_h = lengths[:H]
            return np.column_stack([lengths_h, lengths[H:], matched, _denominators(lengths_h, max_n)]).astype(np.int64)
    if len(flat) == H and not per_sentence:  # one reference each: every order from one sort (chrF's kernel)
        nums = _single_reference_matches(_first_positions(sents, total), lengths, H, max_n)
        if nums is not None:
            lengths_h = lengths[:H]
            dens = _denominators(lengths_h, max_n).sum(axis=0)
            return nums, [int(d) for d in dens], int(lengths_h.sum()), int(lengths[H:].sum())
    tokens, _, _, V = token_ids(sents, total)
    owner = np.repeat(np.arange(H, dtype=np.int64), np.fromiter(map(len, refs), np.int64, count=H))
    sent_at = np.repeat(np.arange(len(sents), dtype=np.int64), lengths)
    remaining = np.repeat(np.cumsum(lengths), lengths) - np.arange(total, dtype=np.int64)
    pair_of = np.concatenate([np.arange(H, dtype=np.int64), owner])  # per sentence: its hypothesis
    valid = np.flatnonzero(tokens != 0)  # <unk> never matches
    code_at = tokens.copy()
    n_codes = V
    alive = np.zeros(total, dtype=bool)
    nums = []
    per_order: list[np.ndarray] = []
    for n in range(1, max_n + 1):
        if n == 1:
            value = tokens[valid]
        else:
            valid = valid[remaining[valid] >= n]
            valid = valid[alive[valid] & alive[valid + 1]]
            value = code_at[valid] * V + tokens[valid + (n - 1)]
        by_value = stable_order(value, n_codes * V if n > 1 else V)
        pos = valid[by_value]
        code = dense_ranks(value[by_value])
        n_codes = int(code[-1]) + 1 if len(code) else 0
        code_at[pos] = code
        # occurrences sorted by code then position: runs of (code, sentence), hypotheses before references
        sent = sent_at[pos]
        starts = run_starts(code, sent)
        sizes = run_lengths(starts, len(code))
        r_code, r_sent = code[starts], sent[starts]
        is_hyp = r_sent < H
        key = r_code * H + pair_of[r_sent]
        h_key, h_cnt = key[is_hyp], sizes[is_hyp]
        r_key, r_cnt = key[~is_hyp], sizes[~is_hyp]
        # several references of one hypothesis: the largest count; (code, hypothesis) stays sorted
        u = run_starts(r_key)
        u_key = r_key[u]
        u_max = np.maximum.reduceat(r_cnt, u) if len(u) else r_cnt
        ref_max = _lookup(u_key, u_max, h_key)
        clipped = np.minimum(h_cnt, ref_max)
        nums.append(int(clipped.sum()))
        if per_sentence:  # key = code * H + hypothesis
            per_order.append(np.bincount(h_key % H, weights=clipped, minlength=H).astype(np.int64))
        if n < max_n:  # positions whose n-gram is found on the other side of its pair
            found = np.empty(len(key), dtype=bool)
            found[is_hyp] = ref_max > 0
            found[~is_hyp] = _lookup(h_key, h_cnt, r_key) > 0
            alive = np.zeros(total, dtype=bool)
            alive[pos] = np.repeat(found, sizes)
    lengths_h, ref_lens = lengths[:H], lengths[H:]
    dens_rows = _denominators(lengths_h, max_n)
    dens = dens_rows.sum(axis=0)
    if len(flat) == H:  # one reference each: its length
        closest_rows = ref_lens
    else:
        chosen = []
        start = 0
        rl = ref_lens.tolist()
        for h, rs in zip(lengths_h.tolist(), refs):
            cand = rl[start : start + len(rs)]
            start += len(rs)
            chosen.append(min(cand, key=lambda r: (abs(r - h), r)))
        closest_rows = np.asarray(chosen, dtype=np.int64)
    if per_sentence:
        matched = np.stack(per_order, axis=1) if per_order else np.zeros((H, max_n), dtype=np.int64)
        return np.column_stack([lengths_h, closest_rows, matched, dens_rows]).astype(np.int64)
    return nums, [int(d) for d in dens], int(lengths_h.sum()), int(closest_rows.sum())


def _first_positions(sents: Sequence[Sequence[str]], total: int) -> np.ndarray:
    """Per token, 1 + the position of its first occurrence (``<unk>``: 0): equal tokens, equal ids, in one dict
    operation a token and without ranking them (the kernel ranks what it needs within each pair)."""
    first: dict[str, int] = {UNK: 0}
    return np.fromiter(map(first.setdefault, chain.from_iterable(sents), count(1)), dtype=np.int64, count=total)


@overload
def _single_reference_matches(
    tokens: np.ndarray, lengths: np.ndarray, H: int, max_n: int, *, per_pair: Literal[False] = False
) -> list[int] | None: ...
@overload
def _single_reference_matches(
    tokens: np.ndarray, lengths: np.ndarray, H: int, max_n: int, *, per_pair: Literal[True]
) -> np.ndarray | None: ...
def _single_reference_matches(
    tokens: np.ndarray, lengths: np.ndarray, H: int, max_n: int, *, per_pair: bool = False
) -> list[int] | np.ndarray | None:
    """Clipped n-gram matches per order when each hypothesis has one reference (sentences 0..H-1, then their
    references): :func:`cotk_repro.metrics.chrf_stats.sorted_statistics` with ``<unk>`` (id 0) replaced by one
    value on the hypothesis side and another on the reference side, so that an n-gram holding it never matches;
    None where that kernel's keys do not fit. ``per_pair``: each pair's, ``(H, max_n)`` int64, instead of the sums.
    ``tokens`` is changed in place."""
    from .chrf_stats import _ranked, pair_blocks, sorted_statistics

    if not len(tokens):
        return None
    top = int(tokens.max()) + 1
    sym = tokens
    hyp_total = int(lengths[:H].sum())
    sym[:hyp_total][sym[:hyp_total] == 0] = top
    sym[hyp_total:][sym[hyp_total:] == 0] = top + 1
    sym = _ranked(sym)[0]  # dense, once: each block's kernel then ranks a small alphabet
    matched = np.zeros(max_n, dtype=np.int64)
    rows: list[np.ndarray] = []
    for block, block_lengths, pairs in pair_blocks(sym, lengths, H):  # in blocks: fewer key bits, arrays in cache
        stats = sorted_statistics(
            block, block_lengths, max_n, pairs, np.arange(pairs, dtype=np.int64), totals=not per_pair
        )
        if stats is None:
            return None
        if per_pair:
            rows.append(stats[:, :, 2])
        else:
            matched += stats
    if per_pair:
        return np.concatenate(rows) if rows else np.zeros((0, max_n), dtype=np.int64)
    return [int(x) for x in matched]


def _lookup(keys: np.ndarray, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """``values`` at each query's position in the sorted ``keys``; 0 where a query is absent."""
    if not len(keys):
        return np.zeros(len(queries), dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys, queries), len(keys) - 1)
    return np.where(keys[pos] == queries, values[pos], 0)


def _clip_vs_set(index: NgramIndex, lo: int, hi: int, rlo: int, rhi: int, max_n: int) -> np.ndarray:
    """Clipped counts of sentences lo:hi against the whole set rlo:rhi: (sentences x orders)."""
    S = hi - lo
    nums = np.zeros((S, max_n), dtype=np.int64)
    for n in range(1, max_n + 1):
        r_code, _, r_cnt = index.counts(n, rlo, rhi)
        ref_max = group_max(r_code, r_cnt, index.n_codes[n])
        ref_max[index.code_has_unk[n]] = 0
        h_code, h_sent, h_cnt = index.counts(n, lo, hi)
        clipped = np.minimum(h_cnt, ref_max[h_code])
        nums[:, n - 1] = np.bincount(h_sent - lo, weights=clipped, minlength=S).astype(np.int64)
    return nums


@overload
def set_bleu_scores(
    hyps: Sequence[Sequence[str]],
    refs: Sequence[Sequence[str]],
    max_n: int,
    weights: Sequence[float],
    smoothing: str,
    *,
    both: Literal[True],
) -> tuple[list[float], list[float]]: ...
@overload
def set_bleu_scores(
    hyps: Sequence[Sequence[str]],
    refs: Sequence[Sequence[str]],
    max_n: int,
    weights: Sequence[float],
    smoothing: str,
    *,
    both: bool = False,
) -> tuple[list[float], list[float] | None]: ...
def set_bleu_scores(
    hyps: Sequence[Sequence[str]],
    refs: Sequence[Sequence[str]],
    max_n: int,
    weights: Sequence[float],
    smoothing: str,
    *,
    both: bool = False,
) -> tuple[list[float], list[float] | None]:
    """``sentence_bleu(refs, h)`` for every h in hyps (and, with ``both``, ``sentence_bleu(hyps, r)`` for every
    r in refs), each against the whole other set, in linear time."""
    H, R = len(hyps), len(refs)
    index = NgramIndex(list(hyps) + list(refs), max_n, shared=H)  # the others never match
    lens = index.lengths
    fw_nums = _clip_vs_set(index, 0, H, H, H + R, max_n)
    fw = sentence_scores(
        fw_nums, _denominators(lens[:H], max_n), lens[:H], closest_lengths(lens[:H], lens[H:]), weights, smoothing
    )
    if not both:
        return fw, None
    bw_nums = _clip_vs_set(index, H, H + R, 0, H, max_n)
    bw = sentence_scores(
        bw_nums, _denominators(lens[H:], max_n), lens[H:], closest_lengths(lens[H:], lens[:H]), weights, smoothing
    )
    return fw, bw


def self_bleu_scores(
    sents: Sequence[Sequence[str]], max_n: int, weights: Sequence[float], smoothing: str
) -> list[float]:
    """``sentence_bleu(all others, s)`` for every sentence s (left out by position), in linear time."""
    S = len(sents)
    index = NgramIndex(sents, max_n, shared="any")  # the others never match
    nums = np.zeros((S, max_n), dtype=np.int64)
    for n in range(1, max_n + 1):
        code, sent, cnt = index.counts(n)
        t1, t2 = run_top2(code, cnt)
        other = np.where(cnt < t1, t1, t2)
        clipped = np.minimum(cnt, other)
        clipped[index.code_has_unk[n][code]] = 0
        nums[:, n - 1] = np.bincount(sent, weights=clipped, minlength=S).astype(np.int64)
    lens = index.lengths
    return sentence_scores(
        nums, _denominators(lens, max_n), lens, closest_lengths_leave_one_out(lens), weights, smoothing
    )


# ---------------------------------------------------------------------------------------------
# Hashes


def _encode_token_lists(token_lists: Sequence[Sequence[str]]) -> str:
    """``canonical_json`` of a list of token lists, as text: each token through the JSON string encoder
    (``ensure_ascii=False``), lists with ``,`` and no spaces. Equality with ``bleu_reference_hash`` is tested."""
    eb = encode_basestring
    return "[" + ",".join(["[" + ",".join(map(eb, t)) + "]" for t in token_lists]) + "]"


class ReferenceDigest:
    """:func:`cotk_repro.text.reference_hashes.bleu_reference_hash` of one reference set, computed once and then
    hashed cheaply under several settings (fw-bleu, bw-bleu and fw-bw-bleu share a reference set).

    ``references``: for each sample, its reference strings; ``tokens``: their BLEU tokens when already known
    (used for texts without special tokens, where they equal :func:`bleu_tokenize`'s).
    """

    def __init__(
        self,
        references: Sequence[Sequence[str]],
        tokens: Sequence[Sequence[Sequence[str]]] | None = None,
        given: bool = False,
    ):
        if tokens is not None and set(map(len, tokens)) <= {1}:  # one reference each: in bulk
            toks = [t[0] for t in tokens]
            if not given:
                texts = [rs[0] for rs in references]
                if "<" in "\n".join(texts):
                    toks = [bleu_tokenize(r) if has_special(r) else t for r, t in zip(texts, toks)]
            items = token_list_items(toks)
        else:
            items = []
            for i, refs in enumerate(references):
                if tokens is None:
                    toks = [bleu_tokenize(r) for r in refs]
                elif given:  # tokens as given (retokenize=False): they are what was scored
                    toks = [list(t) for t in tokens[i]]
                else:
                    toks = [bleu_tokenize(r) if has_special(r) else t for r, t in zip(refs, tokens[i])]
                if len(toks) > 1:
                    toks = sorted(toks)  # type: ignore[type-var]  # token lists (list[str]) compare; Sequence does not
                items.append(_encode_token_lists(toks).encode("utf-8"))
        items.sort()
        self._count = len(items)
        self._framed = frame_bytes(items)

    def hash(
        self, metric: str, ngram: int, weights: Sequence[float], smoothing: str, extra: Mapping[str, Any] | None = None
    ) -> str:
        return self.hash_of(
            metric,
            {
                "ngram": ngram,
                "weights": [float(w) for w in weights],
                "smoothing": smoothing,
                "tokenizer": BLEU_TOKENIZER,
                "normalize": "none",
                "version": BLEU_VERSION,
                **(extra or {}),
            },
        )

    def hash_of(self, metric: str, settings: Mapping[str, Any]) -> str:
        """The hash of this reference set under the complete ``settings`` mapping (a declaration's)."""
        h = StreamHasher("cotk-repro/reference-set/v1")
        h.update({"metric": metric, "settings": dict(settings)})
        h.update(self._count)
        h.update_framed(self._framed)
        return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# Inputs


def _is_ids(item: Any) -> bool:
    if isinstance(item, np.ndarray):
        return item.dtype.kind in "iu"
    if not isinstance(item, (list, tuple)):
        return False
    return bool(item) and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in item)


def as_text(item: Any, tokenizer: Any = None, dataloader: Any = None, what: str = "hypothesis") -> str:
    """A hypothesis/reference as text: strings as they are, token lists detokenized, id lists through the
    dataloader's vocabulary."""
    if isinstance(item, str):
        return item
    if isinstance(item, (list, tuple, np.ndarray)):
        if len(item) and _is_ids(item):
            if dataloader is None:
                raise MetricError(f"a {what} is a list of ids; pass dataloader= so that ids can be turned into words")
            tokens = dataloader.convert_ids_to_tokens([int(x) for x in item], trim=True)
            text: str = dataloader.convert_tokens_to_sentence(tokens)  # the loader contract: a str
            return text
        tokens = [str(t) for t in item]
        if tokenizer is not None:
            text = tokenizer.detokenize(tokens)
            return text
        if dataloader is not None:
            text = dataloader.convert_tokens_to_sentence(tokens)
            return text
        return " ".join(tokens)
    raise MetricError(f"a {what} must be a string, a list of tokens or a list of ids, not {type(item).__name__}")


def _smoothing_name(value: Any) -> str:
    s = str(value).strip().lower()
    s = _SMOOTH_ALIASES.get(s, s)
    if s not in SMOOTHINGS:
        raise MetricError(
            f"unknown smoothing {value!r}; choose one of {', '.join(SMOOTHINGS)} (NLTK's SmoothingFunction methods)"
        )
    return s


def _weights(ngram: Any, weights: Any) -> tuple[int, list[float]]:
    try:
        n = int(ngram)
    except (TypeError, ValueError):
        raise MetricError(f"ngram must be a whole number, got {ngram!r}") from None
    if n < 1 or n != float(ngram):
        raise MetricError(f"ngram must be a whole number >= 1, got {ngram!r}")
    if weights is None:
        return n, [1.0 / n] * n
    if isinstance(weights, str):
        weights = [w for w in weights.replace(";", ",").split(",") if w.strip()]
    try:
        w = [float(x) for x in weights]
    except (TypeError, ValueError):
        raise MetricError(f"weights must be numbers, got {weights!r}") from None
    if len(w) != n:
        raise MetricError(f"{len(w)} weights given for ngram={n}; give exactly one weight per order")
    if any(x < 0 or not math.isfinite(x) for x in w):
        raise MetricError("weights must be finite and >= 0")
    return n, w


def _int_or_none(value: Any, name: str) -> int | None:
    if value is None or value == "" or str(value).lower() in ("none", "all"):
        return None
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise MetricError(f"{name} must be a whole number, got {value!r}") from None
    if v < 1:
        raise MetricError(f"{name} must be >= 1, got {value!r}")
    return v


def _sample_indices(
    count: int, sample: int | None, seed: int, mode: str = "subset", *, shuffle: bool = True
) -> list[int] | None:
    """The positions of the ``sample`` sentences scored out of ``count``; None: all of them.

    ``"subset"``: a seeded random subset (Python's ``random``, stable across versions). ``"cotk"``: CoTK
    0.1.0's rule: with ``shuffle`` (Self-BLEU) ``random.seed(seed); random.shuffle(...)`` and the first
    ``sample``; without (Fw/Bw-BLEU) simply the first ``sample``.
    """
    if sample is None or sample >= count:
        return None
    if mode == "cotk":
        order = list(range(count))
        if shuffle:
            random.Random(seed).shuffle(order)
        return sorted(order[:sample])
    return sorted(random.Random(seed).sample(range(count), sample))


def _sample_mode(value: Any) -> str:
    mode = str(value).strip().lower()
    if mode not in SAMPLE_MODES:
        raise MetricError(f"unknown sample_mode {value!r}; choose one of {', '.join(SAMPLE_MODES)}")
    return mode


class _BleuFamily(Metric):
    version = BLEU_VERSION
    default_smoothing = "method3"
    takes_shared_tokenizer = False  # the tokenizer is BLEU's own option (bleu_tokenizers.py), never evaluate()'s
    #: the set-level metrics' sampling (self-bleu, fw-bw-bleu set them): None, the whole set
    sample: int | None = None
    seed = 1229
    sample_mode = "subset"

    def __init__(
        self,
        ngram: int = 4,
        weights: Sequence[float] | None = None,
        smoothing: str | None = None,
        tokenizer: Any = None,
        dataloader: Any = None,
        *,
        retokenize: bool = True,
        normalize: str = "none",
        auto_reweigh: bool = False,
        _extra: Mapping[str, Any] | None = None,
    ):
        n, w = _weights(ngram, weights)
        if not isinstance(auto_reweigh, bool):
            raise MetricError(f"auto_reweigh must be true or false, not {auto_reweigh!r}")
        if auto_reweigh and type(self).name != "bleu":
            raise MetricError(f"auto_reweigh is an option of corpus bleu only, not of {type(self).name}")
        #: NLTK's corpus_bleu(auto_reweigh=True): uniform weights over the corpus' hypothesis length when it is
        #: below 4 and the weights are the default (0.25,) * 4
        self.auto_reweigh = auto_reweigh
        #: the BLEU tokenizer (bleu_tokenizers.py): WordPunct by default, sacrebleu's 13a/intl/zh/char/ja-mecab/
        #: ko-mecab, space or a registered one; it also detokenizes token-list inputs
        self.bleu_tokenizer = get_bleu_tokenizer(tokenizer)
        #: Unicode normalisation of the text before tokenizing (none, nfc, nfkc), in the hash
        self.normalize = normalization(normalize)
        self._normalizer = normalizer(self.normalize)
        #: False: token lists (and id lists, through the dataloader) are scored as given, every token atomic
        #: (CoTK's rule); strings are still split with the tokenizer. True (default): everything is re-tokenized.
        self.retokenize = bool(retokenize)
        self.token_rule = self.bleu_tokenizer.name if self.retokenize else GIVEN_TOKENS
        self.ngram = n
        self.weights = w
        self.custom_weights = weights is not None and w != [1.0 / n] * n
        self.smoothing = _smoothing_name(smoothing if smoothing is not None else self.default_smoothing)
        if self.smoothing in CORPUS_ONLY_SMOOTHINGS and type(self).name != "bleu":
            raise MetricError(
                f"smoothing {self.smoothing} is NLTK's corpus_bleu smoothing over the last sample; "
                f"{type(self).name} takes method0-method3"
            )
        self.tokenizer = None if tokenizer is None else self.bleu_tokenizer  # detokenizes token lists
        self.dataloader = dataloader
        settings = {
            "ngram": n,
            "weights": w,
            "smoothing": self.smoothing,
            "tokenizer": self.token_rule,
            "normalize": self.normalize,
        }
        settings.update(_extra or {})
        super().__init__(**settings)

    def forward(self, batch: Mapping[str, Any]) -> None:
        """CoTK style: ``hyps`` (or ``gen``: id lists) and ``refs`` (or ``sent_allvocabs``: one id list each)."""
        hyps = batch["hyps"] if "hyps" in batch else batch.get("gen")
        if hyps is None:
            raise MetricError("a batch needs 'hyps' (strings or token lists) or 'gen' (id lists)")
        refs = batch.get("refs")
        if refs is None and batch.get("sent_allvocabs") is not None:
            refs = [[row] for row in batch["sent_allvocabs"]]
        super().forward({"hyps": list(hyps), "refs": refs})

    def _text(self, item: Any, what: str) -> str:
        return as_text(item, self.tokenizer, self.dataloader, what)

    def _texts_and_tokens(
        self, items: Sequence[Any], what: str, *, texts: bool = True
    ) -> tuple[list[str], list[list[str]]]:
        """The texts (for hashes) and BLEU tokens of ``items``, by the ``retokenize`` rule; without ``texts``, token
        lists scored as given are not joined into texts (an empty list instead: nothing reads them)."""
        norm = self._normalizer
        if self.retokenize:
            strings = list(items) if _all_str(items) else [self._text(x, what) for x in items]
            if norm is not None:
                strings = list(map(norm, strings))
            return strings, self.bleu_tokenizer.tokenize_many(strings)
        if norm is None and set(map(type, items)) <= {list} and set(map(type, chain.from_iterable(items))) <= {str}:
            tokens = list(items)  # token lists, checked in bulk: as the loop below would make them
            return [" ".join(t) for t in tokens] if texts else [], tokens
        tokens = []
        for x in items:
            if isinstance(x, str):
                tokens.append(self.bleu_tokenizer.tokenize(norm(x) if norm is not None else x))
            elif _is_ids(x):
                if self.dataloader is None:
                    raise MetricError(
                        f"a {what} is a list of ids; pass dataloader= so that ids can be turned into words"
                    )
                tokens.append([str(t) for t in self.dataloader.convert_ids_to_tokens([int(i) for i in x], trim=True)])
            elif isinstance(x, (list, tuple, np.ndarray)):
                tokens.append([str(t) for t in x])
            else:
                raise MetricError(
                    f"a {what} must be a string, a list of tokens or a list of ids, not {type(x).__name__}"
                )
        return [" ".join(t) for t in tokens], tokens

    def _digest(self, ref_text: Sequence[Sequence[str]], ref_tok: Sequence[Sequence[Sequence[str]]]) -> ReferenceDigest:
        # tokens of another tokenizer than WordPunct are hashed as they were scored
        return ReferenceDigest(ref_text, ref_tok, given=not self.retokenize or not self.bleu_tokenizer.default)

    def _settings(self) -> list[Setting]:
        """The settings every BLEU-family value has (the hash keeps a default the signature leaves out)."""
        hashed_tok = (
            GIVEN_TOKENS
            if not self.retokenize
            else BLEU_TOKENIZER
            if self.bleu_tokenizer.default
            else self.bleu_tokenizer.spec
        )
        return [
            Setting("ngram", self.ngram, "n"),
            Setting(
                "weights",
                [float(x) for x in self.weights],
                "w",
                shown=[round(x, 6) for x in self.weights],
                elide=[1.0 / self.ngram] * self.ngram,
            ),
            Setting("smoothing", self.smoothing, "smooth", shown="m" + self.smoothing[-1]),
            Setting("tokenizer", hashed_tok, "tok", shown=self.token_rule),
            Setting("normalize", self.normalize, "norm", elide="none"),
        ]

    def _sampling_settings(self, cotk_sampled: bool) -> list[Setting]:
        """The sampling settings of the set-level metrics: none when the whole sets were scored."""
        return [
            Setting("sample", self.sample, "sample", elide=None),
            Setting("seed", self.seed if self.sample else None, "seed", elide=None),
            *([Setting("sample_mode", self.sample_mode, "pick")] if cotk_sampled else []),
        ]


class BleuMetric(_BleuFamily):
    """Corpus BLEU-n (NLTK ``corpus_bleu``, smoothing ``method3`` by default), multi-reference.

    Options: ``ngram`` (4), ``weights`` (uniform 1/n), ``smoothing`` (``method0``-``method7``; 4-7 as NLTK's
    ``corpus_bleu`` computes them, from the corpus' last sample), ``auto_reweigh`` (false; NLTK's),
    ``tokenizer`` (to detokenize token-list inputs), ``dataloader`` (to turn id lists into text).
    Hash: :func:`cotk_repro.text.reference_hashes.bleu_reference_hash` over the reference strings, so the default
    on a dataloader's split equals ``dl.reference_hashes(split)["bleu"]``.
    """

    name = "bleu"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    level = "corpus"
    cost = 1.0

    def __init__(
        self,
        ngram: int = 4,
        weights: Sequence[float] | None = None,
        smoothing: str | None = None,
        tokenizer: Any = None,
        dataloader: Any = None,
        *,
        retokenize: bool = True,
        normalize: str = "none",
        denominators: str = "nltk",
        auto_reweigh: bool = False,
    ):
        #: "nltk" (default): each hypothesis counts max(1, its n-grams) of each order (NLTK's corpus_bleu);
        #: "sacrebleu": the n-grams it has, and an order without any n-gram scores 0 (sacrebleu's corpus_bleu)
        self.denominators = str(denominators).strip().lower()
        if self.denominators not in DENOMINATORS:
            raise MetricError(
                f"unknown denominators {denominators!r}; choose nltk (max(1, n-grams) per "
                f"hypothesis, NLTK's corpus_bleu) or sacrebleu (the n-grams there are)"
            )
        super().__init__(
            ngram,
            weights,
            smoothing,
            tokenizer,
            dataloader,
            retokenize=retokenize,
            normalize=normalize,
            auto_reweigh=auto_reweigh,
            _extra={"denominators": self.denominators} if self.denominators != "nltk" else None,
        )

    def _tokenized(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
    ) -> tuple[list[list[str]], list[list[list[str]]], list[list[str]], list[list[Any]]]:
        """The hypotheses' tokens, the references' tokens and texts (for the hash), and the reference lists."""
        hyps = list(hypotheses)
        if not hyps:
            raise MetricError("bleu needs at least one hypothesis")
        refs = check_references(hyps, references)
        for i, rs in enumerate(refs):
            if not rs:
                raise MetricError(f"hypothesis {i} has no references; bleu needs at least one per hypothesis")
        _, hyp_tok = self._texts_and_tokens(hyps, "hypothesis", texts=False)
        # token lists scored as given are hashed as such (ReferenceDigest(given=True)): no texts to join
        flat_text, flat_tok = self._texts_and_tokens(
            list(chain.from_iterable(refs)), "reference", texts=self.retokenize
        )
        ref_tok = _regroup(flat_tok, refs)
        ref_text = _regroup(flat_text, refs) if self.retokenize else refs
        return hyp_tok, ref_tok, ref_text, refs

    #: a resample's BLEU is NLTK's formula on its sentences' summed counts (docs/metrics.md, "Significance and
    #: intervals")
    resampling = "statistics"

    @without_gc
    def resample_statistics(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None) -> Any:
        """``{"bleu": ItemStatistics}``: per sentence its length, closest reference length, clipped matches and
        denominators per order; a resample's value is :func:`bleu_from_counts` of their sums, as :meth:`compute`'s.
        Smoothings 4-7 and ``auto_reweigh`` read the corpus as a whole (its last sample, its length) and have none."""
        if self.smoothing in CORPUS_ONLY_SMOOTHINGS or self.auto_reweigh:
            why = "auto_reweigh" if self.auto_reweigh else f"smoothing {self.smoothing}"
            raise MetricError(f"bleu with {why} has no interval: it reads the corpus as a whole, not its sentences")
        hyp_tok, ref_tok, _, _ = self._tokenized(hypotheses, references)
        return self._items(sentence_counts(hyp_tok, ref_tok, self.ngram))

    def _items(self, rows: np.ndarray) -> dict[str, Any]:
        """``{"bleu": ItemStatistics}`` of :func:`sentence_counts`' rows, finished by NLTK's formula."""
        from .resampling import ItemStatistics

        m = self.ngram
        if self.denominators == "sacrebleu":
            orders = np.arange(1, m + 1, dtype=np.int64)
            rows[:, 2 + m :] = np.maximum(0, rows[:, :1] - orders[None, :] + 1)
        weights, smoothing, zero_when_empty = list(self.weights), self.smoothing, self.denominators == "sacrebleu"

        def finish(sums: np.ndarray) -> np.ndarray:
            counts = np.rint(sums).astype(np.int64)
            nums, dens = counts[:, 2 : 2 + m], counts[:, 2 + m :]
            empty = (dens == 0).any(axis=1)  # sacrebleu's rule: an order without any n-gram scores 0
            safe = np.where(empty[:, None], 1, dens)
            if len(counts) == 1:  # the whole corpus: compute()'s own arithmetic, to the last bit
                values = np.asarray(_score_rows(nums, safe, counts[:, 0], counts[:, 1], weights, smoothing))
            else:  # resamples: the same formula as arrays (numpy's log and exp, within an ulp of math's)
                values = _score_array(nums, safe, counts[:, 0], counts[:, 1], weights, smoothing)
            if zero_when_empty:
                values[empty] = 0.0
            return values

        return {self.name: ItemStatistics(rows.astype(np.float64), finish)}

    @without_gc
    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        return self._compute(hypotheses, references, with_items=False)[0]

    @without_gc
    def compute_with_statistics(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """:meth:`compute` and :meth:`resample_statistics` in one pass, one tokenization (``compare`` and
        ``evaluate --ci``); no statistics where the value has no interval (smoothings 4-7, ``auto_reweigh``)."""
        return self._compute(hypotheses, references, with_items=True)

    def _compute(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None, *, with_items: bool
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        hyp_tok, ref_tok, ref_text, refs = self._tokenized(hypotheses, references)
        items: dict[str, Any] = {}
        if with_items and self.smoothing not in CORPUS_ONLY_SMOOTHINGS and not self.auto_reweigh:
            items = self._items(sentence_counts(hyp_tok, ref_tok, self.ngram))
            rows = items[self.name].stats.astype(np.int64)
            m = self.ngram
            nums = [int(x) for x in rows[:, 2 : 2 + m].sum(axis=0)]
            dens = [int(x) for x in rows[:, 2 + m :].sum(axis=0)]  # sacrebleu's when asked: recomputed below
            hyp_len, ref_len = int(rows[:, 0].sum()), int(rows[:, 1].sum())
        else:
            nums, dens, hyp_len, ref_len = corpus_counts(hyp_tok, ref_tok, self.ngram)
        weights = self.weights
        if self.auto_reweigh and hyp_len < 4 and weights == [0.25] * 4 and nums[0] != 0:
            weights = [1 / hyp_len] * hyp_len
        if self.denominators == "sacrebleu":
            lengths = np.fromiter(map(len, hyp_tok), np.int64, count=len(hyp_tok))
            dens = [int(np.maximum(0, lengths - n + 1).sum()) for n in range(1, self.ngram + 1)]
        if self.smoothing in CORPUS_ONLY_SMOOTHINGS:
            from .bleu_smoothing import corpus_value

            value = corpus_value(nums, dens, hyp_len, ref_len, weights, self.smoothing, ref_tok[-1], hyp_tok[-1])
        elif min(dens) == 0:  # sacrebleu's rule: an order without any n-gram ends the product at precision 0
            value = 0.0
        else:
            value = bleu_from_counts(nums, dens, hyp_len, ref_len, weights, self.smoothing)
        counts = sorted(set(map(len, refs)))
        decl = Declaration(
            self.name,
            self.version,
            [
                *self._settings(),
                *([Setting("auto_reweigh", True, "reweigh", shown="yes")] if self.auto_reweigh else []),
                *([Setting("denominators", self.denominators, "den")] if self.denominators != "nltk" else []),
                Setting.signature_only(
                    "refs", str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}", why=COUNTED_INPUTS
                ),
            ],
        )
        digest = self._digest(ref_text, ref_tok)
        return decl.entry(self.name, value, lambda settings: digest.hash_of(self.name, settings)), items


@without_gc
def corpus_bleu(
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    ngram: int = 4,
    weights: Sequence[float] | None = None,
    smoothing: str = "method3",
) -> float:
    """Corpus BLEU of hypothesis strings against lists of reference strings (re-tokenized with WordPunct)."""
    n, w = _weights(ngram, weights)
    hyps = tokenize_texts(hypotheses)
    refs = _regroup(tokenize_texts([r for rs in references for r in rs]), references)
    nums, dens, hyp_len, ref_len = corpus_counts(hyps, refs, n)
    smoothing = _smoothing_name(smoothing)
    if smoothing in CORPUS_ONLY_SMOOTHINGS:
        from .bleu_smoothing import corpus_value

        return corpus_value(nums, dens, hyp_len, ref_len, w, smoothing, refs[-1], hyps[-1])
    return bleu_from_counts(nums, dens, hyp_len, ref_len, w, smoothing)


def _sampling(sample: Any, seed: Any) -> tuple[int | None, int]:
    """The validated ``sample`` (None: the whole set) and ``seed`` options of the set-level BLEU metrics."""
    try:
        return _int_or_none(sample, "sample"), int(seed)
    except (TypeError, ValueError):
        raise MetricError(f"seed must be a whole number, got {seed!r}") from None


class SelfBleuMetric(_BleuFamily):
    """Self-BLEU-n: mean NLTK ``sentence_bleu`` (``method1``) of each sentence against all the others.

    Options: ``ngram``, ``weights``, ``smoothing``, ``tokenizer``, ``dataloader``, ``sample`` (None: the whole
    set, the default), ``seed`` (1229, CoTK's), ``sample_mode`` (``subset``; ``cotk``: CoTK 0.1.0's shuffle
    and first ``sample``), ``retokenize`` (True; False: token lists scored as given). References are not
    used. The hash covers n, weights, smoothing, the tokenizer rule, the metric version, the number of
    sentences scored and, when sampling, the sample size asked for, the seed and a ``cotk`` sample mode.
    """

    resampling = "none"
    no_interval = SET_LEVEL  # docs/metrics.md, "Significance and intervals"

    name = "self-bleu"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    default_smoothing = "method1"
    needs_references = False
    higher_is_better = False  # high Self-BLEU = the sentences repeat each other (low diversity)
    level = "sentence"
    cost = 2.0

    def __init__(
        self,
        ngram: int = 4,
        weights: Sequence[float] | None = None,
        smoothing: str | None = None,
        tokenizer: Any = None,
        dataloader: Any = None,
        sample: int | None = None,
        seed: int = 1229,
        sample_mode: str = "subset",
        retokenize: bool = True,
        normalize: str = "none",
    ):
        self.sample, self.seed = _sampling(sample, seed)
        self.sample_mode = _sample_mode(sample_mode)
        super().__init__(
            ngram,
            weights,
            smoothing,
            tokenizer,
            dataloader,
            retokenize=retokenize,
            normalize=normalize,
            _extra={"sample": self.sample, "seed": self.seed, "sample_mode": self.sample_mode},
        )

    @without_gc
    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        items = list(hypotheses)
        idx = _sample_indices(len(items), self.sample, self.seed, self.sample_mode)
        if idx is not None:
            items = [items[i] for i in idx]
        if len(items) < 2:
            raise MetricError(
                f"self-bleu needs at least two sentences (each is scored against the others), got {len(items)}"
            )
        _, tokens = self._texts_and_tokens(items, "hypothesis")
        scores = self_bleu_scores(tokens, self.ngram, self.weights, self.smoothing)
        value = math.fsum(scores) / len(scores)
        cotk_sampled = idx is not None and self.sample_mode == "cotk"  # another subset: never the default's hash
        decl = Declaration(
            self.name,
            self.version,
            [*self._settings(), Setting("sentences", len(items), "size"), *self._sampling_settings(cotk_sampled)],
        )
        return decl.entry(self.name, value, lambda settings: reference_set_hash(self.name, settings, []))


class FwBwBleuMetric(_BleuFamily):
    """Forward, backward and harmonic BLEU-n (Shi et al. 2018): keys ``fw-bleu``, ``bw-bleu``, ``fw-bw-bleu``.

    Forward: mean ``sentence_bleu`` of each generated sentence against the whole reference set; backward: each
    reference against the whole generated set; harmonic: 2 fw bw / (fw + bw). The references are a *set*, not
    paired with the hypotheses: give them as a list of strings, or as reference lists (flattened); their count
    may differ from the hypotheses'. Options: ``ngram``, ``weights``, ``smoothing`` (``method1``),
    ``tokenizer``, ``dataloader``, ``sample`` (None: whole sets), ``seed`` (1229), ``sample_mode``
    (``subset``: a seeded random subset of each set; ``cotk``: the first ``sample`` of each, CoTK 0.1.0's
    rule) and ``retokenize`` (True; False: token lists scored as given).
    """

    resampling = "none"
    no_interval = SET_LEVEL  # docs/metrics.md, "Significance and intervals"

    name = "fw-bw-bleu"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    default_smoothing = "method1"
    paired_references = False
    level = "sentence"
    cost = 3.0
    result_keys = r"fw-bleu|bw-bleu|fw-bw-bleu"

    def __init__(
        self,
        ngram: int = 4,
        weights: Sequence[float] | None = None,
        smoothing: str | None = None,
        tokenizer: Any = None,
        dataloader: Any = None,
        sample: int | None = None,
        seed: int = 1229,
        sample_mode: str = "subset",
        retokenize: bool = True,
        normalize: str = "none",
    ):
        self.sample, self.seed = _sampling(sample, seed)
        self.sample_mode = _sample_mode(sample_mode)
        super().__init__(
            ngram,
            weights,
            smoothing,
            tokenizer,
            dataloader,
            retokenize=retokenize,
            normalize=normalize,
            _extra={"sample": self.sample, "seed": self.seed, "sample_mode": self.sample_mode},
        )

    def forward(self, batch: Mapping[str, Any]) -> None:
        hyps = batch["hyps"] if "hyps" in batch else batch.get("gen")
        if hyps is not None:
            self._hyps.extend(list(hyps))
        refs = batch.get("refs")
        if refs is None and batch.get("sent_allvocabs") is not None:
            refs = [[row] for row in batch["sent_allvocabs"]]
        if refs is not None:
            self._refs = (self._refs or []) + list(refs)

    @without_gc
    def compute(self, hypotheses: Sequence[Any], references: Sequence[Any] | None = None) -> dict[str, Any]:
        if references is None:
            raise MetricError("fw-bw-bleu needs references (the test set)")
        if isinstance(references, str):
            raise MetricError("references must be a list of strings or of reference lists, not one string")
        tokens_mode = self.tokenizer is not None or self.dataloader is not None or not self.retokenize
        references = list(references)
        flat: list[Any] = list(references) if _all_str(references) else []
        for r in references if not flat else ():
            if isinstance(r, str) or _is_ids(r) or (tokens_mode and _is_token_list(r)):
                flat.append(r)  # one reference
            elif isinstance(r, (list, tuple)):
                flat.extend(r)  # a reference list
            else:
                raise MetricError(f"a reference must be a string, a token list or an id list, not {type(r).__name__}")
        hyps = list(hypotheses)
        if not hyps or not flat:
            raise MetricError(f"fw-bw-bleu needs generated sentences and references, got {len(hyps)} and {len(flat)}")
        hidx = _sample_indices(len(hyps), self.sample, self.seed, self.sample_mode, shuffle=False)
        ridx = _sample_indices(len(flat), self.sample, self.seed, self.sample_mode, shuffle=False)
        h_used = hyps if hidx is None else [hyps[i] for i in hidx]
        ref_text, ref_tok = self._texts_and_tokens(flat, "reference")
        r_used = ref_text if ridx is None else [ref_text[i] for i in ridx]
        r_tok = ref_tok if ridx is None else [ref_tok[i] for i in ridx]
        fw, bw = set_bleu_scores(
            self._texts_and_tokens(h_used, "hypothesis")[1], r_tok, self.ngram, self.weights, self.smoothing, both=True
        )
        digest = self._digest([[r] for r in ref_text], [[t] for t in ref_tok])
        fw_v = math.fsum(fw) / len(fw)
        bw_v = math.fsum(bw) / len(bw)
        hm = 2 * fw_v * bw_v / (fw_v + bw_v) if fw_v + bw_v > 0 else 0.0
        out: dict[str, Any] = {}
        # other sentences than the default's subset: never the same hash
        cotk_sampled = self.sample_mode == "cotk" and (hidx is not None or ridx is not None)
        for key, value, with_hyps in (("fw-bleu", fw_v, False), ("bw-bleu", bw_v, True), ("fw-bw-bleu", hm, True)):
            decl = Declaration(
                key,
                self.version,
                [
                    *self._settings(),
                    Setting("references", len(r_used), "refs"),
                    # backward BLEU grows with the generated set's size, as Self-BLEU does
                    *([Setting("hypotheses", len(h_used), "hyps")] if with_hyps else []),
                    *self._sampling_settings(cotk_sampled),
                ],
            )
            out.update(decl.entry(key, value, partial(digest.hash_of, key)))
        return out


def _all_str(items: Sequence[Any]) -> bool:
    """Whether every item is a ``str`` (the common case, checked in bulk)."""
    return set(map(type, items)) <= {str}


def _regroup(flat: list[Any], groups: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Split ``flat`` back into lists shaped like ``groups``."""
    if len(flat) == len(groups) and set(map(len, groups)) <= {1}:
        return [[x] for x in flat]
    out, start = [], 0
    for g in groups:
        out.append(flat[start : start + len(g)])
        start += len(g)
    return out


def _is_token_list(item: Any) -> bool:
    return isinstance(item, (list, tuple)) and all(isinstance(t, str) for t in item)
