"""CIDEr-D (Vedantam et al. 2015), equal to ``pycocoevalcap``'s ``Cider`` and linear in the corpus.

For each hypothesis and order n = 1..``ngram``, the hypothesis and each of its references are
TF-IDF vectors of their n-grams, with the IDF computed from the **reference set**: for an n-gram
g, ``log(N) - log(max(1, df(g)))`` where N is the number of hypotheses (images) and df(g) the number
of hypotheses whose references contain g. CIDEr-D (the ``-D`` variant that pycocoevalcap and the COCO
server compute) clips the hypothesis weights by the reference's, multiplies each order's similarity by
a Gaussian length penalty ``exp(-(l_h - l_r)**2 / (2 * sigma**2))`` and scales by 10::

    cider(h) = 10 / |refs| * sum over r in refs of mean over n of
               sum_g min(v_h(g), v_r(g)) * v_r(g) / (|v_h| * |v_r|) * penalty(h, r)

The corpus value is the mean over hypotheses; it lies in [0, 10]. As in pycocoevalcap, the length
``l`` of a sentence is its number of bigrams (``max(0, tokens - 1)``; 0 when ``ngram`` is 1, which
turns the penalty off), and text is split on
whitespace by default (give ``tokenizer`` to tokenize raw text first; pycocoevalcap's own pipeline
runs the PTB tokenizer before).

pycocoevalcap compares every hypothesis with each reference in Python dictionaries; here every
n-gram occurrence of the corpus is coded once (:class:`~cotk_repro.metrics.ngrams.NgramIndex`) and
the document frequencies, norms and clipped dot products are numpy group sums, so the time is linear
in the number of tokens (with a sort). The hash covers the reference set as tokenized, the orders,
sigma, the tokenizer and the version: the IDF depends on the whole reference set, so two CIDEr values
are comparable exactly when their reference sets are equal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..text.reference_hashes import reference_set_hash
from ._text import as_int_list, check_float, check_hypotheses, resolve_tokenizer
from .base import EXACT, Metric, MetricError, check_references
from .declaration import COUNTED_INPUTS, FIXED_BY_VERSION, Declaration, Setting
from .ngrams import NgramIndex
from .resampling import REFERENCE_WEIGHTED

CIDER_VERSION = "1"


def cider_scores(
    hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[Sequence[str]]], max_n: int = 4, sigma: float = 6.0
) -> np.ndarray:
    """Per-hypothesis CIDEr-D of token lists ``hyps`` against ``refs`` (for each hypothesis, its reference
    token lists), with the IDF from ``refs``; pycocoevalcap's ``CiderScorer`` values."""
    H = len(hyps)
    if H == 0:
        return np.zeros(0)
    ref_counts = np.fromiter(map(len, refs), dtype=np.int64, count=H)
    if (ref_counts == 0).any():
        raise MetricError(f"hypothesis {int(np.argmax(ref_counts == 0))} has no reference; CIDEr needs at least one")
    flat = [r for rs in refs for r in rs]
    R = len(flat)
    owner = np.repeat(np.arange(H, dtype=np.int64), ref_counts)
    index = NgramIndex(list(hyps) + flat, max_n)
    log_n = math.log(float(H))
    # pycocoevalcap's "length" is the number of bigram occurrences counted (none when max_n is 1)
    lengths = np.maximum(index.lengths - 1, 0).astype(np.float64) * (max_n >= 2)
    delta = lengths[H:] - lengths[owner]
    penalty = np.e ** (-(delta**2) / (2 * sigma**2))
    total = np.zeros(R)  # per (hypothesis, reference) pair: the sum over orders
    for n in range(1, max_n + 1):
        code, sent, cnt = index.counts(n)  # unique (code, sentence), sorted by code then sentence
        is_ref = sent >= H
        # document frequency: the number of hypotheses whose references contain the n-gram
        r_code, r_owner = code[is_ref], owner[sent[is_ref] - H]
        pairs = np.sort(r_code * H + r_owner)  # sort-based distinct values (numpy's hash-based unique is slower)
        pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
        df = np.bincount(pairs // H, minlength=index.n_codes[n]).astype(np.float64)
        weight = log_n - np.log(np.maximum(1.0, df))
        vec = cnt * weight[code]
        norm = np.sqrt(np.bincount(sent, weights=vec * vec, minlength=H + R).astype(np.float64, copy=False))
        # clipped dot products: each reference n-gram meets the same n-gram of its own hypothesis
        h_key = code[~is_ref] * H + sent[~is_ref]  # sorted (code-major, then sentence)
        h_vec = vec[~is_ref]
        r_key = r_code * H + r_owner
        r_vec = vec[is_ref]
        pos = np.minimum(np.searchsorted(h_key, r_key), max(len(h_key) - 1, 0))
        if len(h_key):
            matched = h_key[pos] == r_key
            dot = np.where(matched, np.minimum(h_vec[pos], r_vec) * r_vec, 0.0)
        else:
            dot = np.zeros(len(r_key))
        # float even when no reference has an n-gram of this order (numpy's bincount of empty weights is int64)
        val = np.bincount(sent[is_ref] - H, weights=dot, minlength=R).astype(np.float64, copy=False)
        nh, nr = norm[owner], norm[H:]
        both = (nh != 0) & (nr != 0)
        val[both] /= nh[both] * nr[both]
        total += val * penalty
    per_hyp = np.bincount(owner, weights=total / max_n, minlength=H)
    return per_hyp / ref_counts * 10.0


class CiderMetric(Metric):
    """``cider``: CIDEr-D, the mean over hypotheses (pycocoevalcap ``Cider``).

    Options: ``ngram`` (4: orders 1..n), ``sigma`` (6.0: the length penalty's width), ``tokenizer``
    (``space``: split on whitespace as pycocoevalcap does; or a registered tokenizer name such as
    ``nltk``). References: several per hypothesis; the IDF comes from all of them.
    """

    resampling = "none"
    no_interval = REFERENCE_WEIGHTED  # docs/metrics.md, "Significance and intervals"

    name = "cider"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = CIDER_VERSION
    higher_is_better = True
    value_range = (0.0, 10.0)  # each order's clipped cosine <= 1, the penalty <= 1, times 10
    level = "sentence"  # a mean of per-sentence scores (with a corpus-wide IDF)
    cost = 1.0
    result_keys = "cider"
    key_facts: ClassVar[dict[str, dict[str, Any]]] = {}

    def __init__(self, ngram: int = 4, sigma: float = 6.0, tokenizer: Any = "space", normalize: str = "none") -> None:
        orders = as_int_list(ngram, "ngram")
        if len(orders) != 1:
            raise MetricError(f"ngram must be one integer (the largest order), not {ngram!r}")
        self.ngram = orders[0]
        self.sigma = check_float(sigma, "sigma", 0.0, math.inf, low_open=True)
        self._tok = resolve_tokenizer(tokenizer, normalize)
        super().__init__(ngram=self.ngram, sigma=self.sigma, tokenizer=self._tok.spec)

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        """CIDEr-D of ``hypotheses`` (strings or token lists) against ``references`` (a list of references
        per hypothesis)."""
        hyps = check_hypotheses(hypotheses)
        refs = check_references(hyps, references)
        if not hyps:
            raise MetricError("cider needs at least one hypothesis")
        if (
            self._tok.name == "space"
            and all(type(h) is str for h in hyps)
            and all(type(r) is str for rs in refs for r in rs)
        ):  # the common case, without per-text checks
            hyp_toks = [h.split() for h in hyps]
            ref_toks = [[r.split() for r in rs] for rs in refs]
        else:
            hyp_toks = self._tok.many(hyps)
            ref_toks = [self._tok.many(rs) for rs in refs]
        score = float(np.mean(cider_scores(hyp_toks, ref_toks, self.ngram, self.sigma)))
        decl = Declaration(
            "cider-d",
            self.version,
            [
                Setting("ngram", self.ngram, "n"),
                Setting("sigma", self.sigma, "sigma"),
                Setting("tokenizer", self._tok.spec, "tok", shown=self._tok.name),
                Setting.signature_only("idf", "refs", why=FIXED_BY_VERSION),
                Setting.signature_only("refs", max(len(r) for r in refs), why=COUNTED_INPUTS),
            ],
        )
        return decl.entry(self.name, score, lambda settings: reference_set_hash(self.name, settings, ref_toks))
