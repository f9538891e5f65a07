"""chrF's match statistics for a whole corpus at once, with numpy: the same integers as sacrebleu's ``CHRF``.

sacrebleu builds a ``Counter`` of every character (and word) n-gram of every sentence and intersects them
pair by pair, in Python. Here all texts are one array of integer symbols (Unicode code points, or word ids);
for each order n every n-gram occurrence gets a dense code (the rank of the (n-1)-gram's code and the next
symbol, so nothing overflows), occurrences are counted per (code, text) with one sort, and each reference
meets its own hypothesis' n-grams through a sorted search. The result, per reference and order, is
sacrebleu's ``[hypothesis n-grams (0 when the reference has none), reference n-grams, matches]``, so the
F-scores computed from them (by sacrebleu's own ``_compute_f_score``) are sacrebleu's.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def _symbols_of_text(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Code points of all texts, concatenated, and each text's length in code points."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    cps = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    return cps, lengths


def _symbols_of_words(token_lists: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Dense word ids of all token lists, concatenated, and each list's length."""
    ids: dict[str, int] = {}
    flat = [ids.setdefault(t, len(ids)) for tokens in token_lists for t in tokens]
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    return np.asarray(flat, dtype=np.int64), lengths


def order_statistics(symbols: np.ndarray, lengths: np.ndarray, max_order: int, n_hyps: int,
                     owner: np.ndarray, *, key_limit: int = 2 ** 62) -> np.ndarray:
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
            key = key[:-1] * V + sym[n - 1:]
            bound *= V
        valid = left[:len(key)] >= n
        if not valid.any():
            break
        texts = text_of[:len(key)][valid]
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
            match = np.bincount(r_idx[hit], weights=np.minimum(h_cnt[at[hit]], r_cnt[hit]), minlength=n_refs)
        else:
            match = np.zeros(n_refs)
        ref_total = per_text[n_hyps:]
        out[:, n - 1, 0] = np.where(ref_total > 0, per_text[:n_hyps][ref_owner], 0)
        out[:, n - 1, 1] = ref_total
        out[:, n - 1, 2] = match.astype(np.int64)
    return out


def chrf_statistics(metric, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> np.ndarray:
    """Per reference (flattened in order), the ``3 * (char_order + word_order)`` statistics sacrebleu's ``metric``
    (a ``CHRF``) computes for it against its hypothesis."""
    if metric.lowercase:
        hyps = [h.lower() for h in hyps]
        refs = [[r.lower() for r in rs] for rs in refs]
    flat = [r for rs in refs for r in rs]
    owner = np.repeat(np.arange(len(hyps), dtype=np.int64), [len(rs) for rs in refs])
    texts = list(hyps) + flat
    parts = []
    if metric.char_order:
        chars = texts if metric.whitespace else ["".join(t.split()) for t in texts]
        cps, lengths = _symbols_of_text(chars)
        parts.append(order_statistics(cps, lengths, metric.char_order, len(hyps), owner))
    if metric.word_order:
        ids, lengths = _symbols_of_words([metric._remove_punctuation(t) for t in texts])
        parts.append(order_statistics(ids, lengths, metric.word_order, len(hyps), owner))
    stats = np.concatenate(parts, axis=1)
    return stats.reshape(len(flat), -1)
