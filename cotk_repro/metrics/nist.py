"""NIST-n (Doddington 2002), equal to NLTK's ``corpus_nist``.

Information weights from the reference n-gram counts, ``info(w1..wn) =
log2(count(w1..wn-1) / count(w1..wn))`` (the total number of reference words for
unigrams); per order, each hypothesis takes the reference with the best
(precision, numerator, denominator, length), as NLTK's ``max`` over tuples does; the
score is the sum of the per-order information-weighted precisions times NIST's length
penalty. Text is re-tokenized with one fixed tokenizer (BLEU's WordPunct by default).

NLTK divides by zero when no hypothesis has an n-gram of some order; here that order
contributes 0. The hash covers the re-tokenized references, n, the tokenizer and the
metric version.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..text.reference_hashes import reference_set_hash
from ._text import check_samples, ngrams, resolve_tokenizer
from .base import EXACT, Metric, MetricError
from .declaration import COUNTED_INPUTS, Declaration, Setting
from .resampling import REFERENCE_WEIGHTED
from .summation import ordered_sum


def nist_length_penalty(ref_len: int, hyp_len: int) -> float:
    """NIST's length penalty: 1 at ratio >= 1, decaying as exp(beta * log(ratio)^2) below."""
    ratio = hyp_len / ref_len
    if 0 < ratio < 1:
        ratio_x, score_x = 1.5, 0.5
        beta = math.log(score_x) / math.log(ratio_x) ** 2
        return math.exp(beta * math.log(ratio) ** 2)
    return max(min(ratio, 1.0), 0.0)


def corpus_nist(
    list_of_references: Sequence[Sequence[Sequence[str]]], hypotheses: Sequence[Sequence[str]], n: int = 5
) -> float:
    """NIST of token lists, with NLTK's arithmetic (see the module docstring)."""
    ngram_freq: Counter[tuple[str, ...]] = Counter()
    total_reference_words = 0
    for references in list_of_references:
        for reference in references:
            for i in range(1, n + 1):
                ngram_freq.update(ngrams(reference, i))
            total_reference_words += len(reference)
    info: dict[tuple[str, ...], float] = {}
    for gram, count in ngram_freq.items():
        mgram = gram[:-1]
        numerator: float = ngram_freq[mgram] if mgram and mgram in ngram_freq else total_reference_words
        info[gram] = math.log(numerator / count, 2)
    hyp_counts = [[Counter(ngrams(h, i)) for i in range(1, n + 1)] for h in hypotheses]
    ref_counts = [[[Counter(ngrams(r, i)) for i in range(1, n + 1)] for r in refs] for refs in list_of_references]
    nums: dict[int, float] = {}
    dens: dict[int, int] = {}
    l_ref = l_sys = 0
    for i in range(1, n + 1):
        num_i: float = 0
        den_i = 0
        for refs, rcs, hyp, hcs in zip(list_of_references, ref_counts, hypotheses, hyp_counts):
            hyp_ngrams = hcs[i - 1]
            best: tuple[float, float, int, int] | None = None
            for reference, rc in zip(refs, rcs):
                overlaps = hyp_ngrams & rc[i - 1]
                numerator = ordered_sum((info[g] * c for g, c in overlaps.items()), 0)
                denominator = sum(hyp_ngrams.values())
                precision = 0 if denominator == 0 else numerator / denominator
                cand = (precision, numerator, denominator, len(reference))
                if best is None or cand > best:
                    best = cand
            if best is None:  # what check_samples refuses, for a direct caller
                raise MetricError("nist needs at least one reference per hypothesis")
            num_i += best[1]
            den_i += best[2]
            l_ref += best[3]
            l_sys += len(hyp)
        nums[i], dens[i] = num_i, den_i
    precision_sum: float = 0
    for i in nums:
        if dens[i]:
            precision_sum += nums[i] / dens[i]
    if l_ref == 0:
        raise MetricError("nist needs at least one non-empty reference")
    return precision_sum * nist_length_penalty(l_ref, l_sys)


class NistMetric(Metric):
    """``nist``. Options: ``ngram`` (5, as NLTK), ``tokenizer`` (BLEU's WordPunct)."""

    resampling = "none"
    no_interval = REFERENCE_WEIGHTED  # docs/metrics.md, "Significance and intervals"

    name = "nist"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    value_range = (0.0, float("inf"))
    level = "corpus"
    cost = 1.0

    def __init__(self, ngram: int = 5, tokenizer: Any = None, normalize: str = "none") -> None:
        if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 1:
            raise MetricError(f"ngram must be a positive integer, not {ngram!r}")
        self.ngram = ngram
        self.tokenizer = resolve_tokenizer(tokenizer, normalize)
        super().__init__(ngram=ngram, tokenizer=self.tokenizer.spec)

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        hyps, refs = check_samples("nist", hypotheses, references)
        hyp_toks = self.tokenizer.many(hyps)
        ref_toks = [self.tokenizer.many(r) for r in refs]
        value = corpus_nist(ref_toks, hyp_toks, self.ngram)
        decl = Declaration(
            self.name,
            self.version,
            [
                Setting("ngram", self.ngram, "n"),
                Setting("tokenizer", self.tokenizer.spec, "tok", shown=self.tokenizer.name),
                Setting.signature_only("refs", max(len(r) for r in refs), why=COUNTED_INPUTS),
            ],
        )
        return decl.entry(self.name, value, lambda settings: reference_set_hash(self.name, settings, ref_toks))
