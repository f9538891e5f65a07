"""NLTK's ``SmoothingFunction`` ``method4``-``method7`` (Chen & Cherry 2014) for corpus BLEU, reproduced with
NLTK's own arithmetic (exact fractions where NLTK keeps them, floats where it makes them).

These methods read more than the summed counts: ``method4`` the hypothesis length (the corpus' total in
``corpus_bleu``), ``method5`` a 5-gram precision and ``method6`` a hypothesis' n-gram counts. NLTK's
``corpus_bleu`` hands them the references and hypothesis **of the last sample of the corpus** (the loop
variables left over after counting); so does this module, so values equal NLTK's, quirk included
(docs/metrics.md lists it). ``sentence_bleu`` is the one-sample case, where the quirk disappears.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from .base import MetricError

#: the smoothing methods this module computes
EXTRA_SMOOTHINGS = ("method4", "method5", "method6", "method7")
K = 5  # SmoothingFunction's k (method4)
ALPHA = 5  # SmoothingFunction's alpha (method6)
Precision = Fraction | float  # an n-gram precision: NLTK's Fractions, floats once a method smooths one


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)) if len(tokens) >= n else Counter()


def modified_precision(references: Sequence[Sequence[str]], hypothesis: Sequence[str], n: int) -> Fraction:
    """NLTK's ``modified_precision`` (its value; NLTK keeps it unnormalized, which changes no value)."""
    counts = _ngrams(hypothesis, n)
    max_counts: dict[tuple[str, ...], int] = {}
    for ref in references:
        rc = _ngrams(ref, n)
        for g in counts:
            max_counts[g] = max(max_counts.get(g, 0), rc[g])
    num = sum(min(c, max_counts[g]) for g, c in counts.items())
    return Fraction(num, max(1, sum(counts.values())))


def _method4(p_n: list[Precision], raw: Sequence[tuple[int, int]], hyp_len: int) -> list[Precision]:
    inc = 1
    for i, (num, den) in enumerate(raw):
        if num == 0 and hyp_len > 1:
            p_n[i] = (1 / (2**inc * K / math.log(hyp_len))) / den
            inc += 1
    return p_n


def _method5(p_n: list[Precision], references: Sequence[Sequence[str]], hypothesis: Sequence[str]) -> list[Precision]:
    plus1 = p_n + [modified_precision(references, hypothesis, 5)]
    m = {-1: p_n[0] + 1}
    for i, p_i in enumerate(p_n):
        p_n[i] = (m[i - 1] + p_i + plus1[i + 1]) / 3
        m[i] = p_n[i]
    return p_n


def _method6(p_n: list[Precision], raw: Sequence[tuple[int, int]], hypothesis: Sequence[str]) -> list[Precision]:
    if len(p_n) < 3 or not p_n[2]:
        raise MetricError(
            "smoothing method6 needs a non-zero trigram precision (NLTK refuses it too): use "
            "ngram >= 3 and hypotheses that share trigrams with their references"
        )
    for i in range(2, len(p_n)):
        pi0 = 0 if p_n[i - 2] == 0 else p_n[i - 1] ** 2 / p_n[i - 2]
        m = raw[i][0]
        length = max(0, len(hypothesis) - i)
        p_n[i] = (m + ALPHA * pi0) / (length + ALPHA)
    return p_n


def smoothed(
    nums: Sequence[int],
    dens: Sequence[int],
    smoothing: str,
    hyp_len: int,
    last_refs: Sequence[Sequence[str]],
    last_hyp: Sequence[str],
) -> list[Any]:
    """The modified precisions after ``SmoothingFunction().<smoothing>`` (``method4``-``method7``), as NLTK's
    ``corpus_bleu`` computes them: ``hyp_len`` the corpus' hypothesis length, ``last_refs``/``last_hyp`` the
    last sample's token lists."""
    raw = list(zip(nums, dens))
    p_n: list[Any] = [Fraction(n, d) for n, d in raw]
    if smoothing in ("method4", "method7"):
        p_n = _method4(p_n, raw, hyp_len)
    if smoothing in ("method5", "method7"):
        p_n = _method5(p_n, last_refs, last_hyp)
    if smoothing == "method6":
        p_n = _method6(p_n, raw, last_hyp)
    return p_n


def brevity_penalty(closest_ref_len: int, hyp_len: int) -> float:
    """BLEU's brevity penalty: 1 if the hypothesis is longer, else exp(1 - ref_len / hyp_len)."""
    if hyp_len > closest_ref_len:
        return 1
    if hyp_len == 0:
        return 0
    return math.exp(1 - closest_ref_len / hyp_len)


def corpus_value(
    nums: Sequence[int],
    dens: Sequence[int],
    hyp_len: int,
    ref_len: int,
    weights: Sequence[float],
    smoothing: str,
    last_refs: Sequence[Sequence[str]],
    last_hyp: Sequence[str],
) -> float:
    """NLTK ``corpus_bleu`` from the summed counts with ``method4``-``method7``."""
    if nums[0] == 0:
        return 0.0
    p_n = smoothed(nums, dens, smoothing, hyp_len, last_refs, last_hyp)
    bp = brevity_penalty(ref_len, hyp_len)
    return float(bp * math.exp(math.fsum(w * math.log(p) for w, p in zip(weights, p_n) if p > 0)))
