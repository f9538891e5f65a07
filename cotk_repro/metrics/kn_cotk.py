"""CoTK 0.1.0's Kneser-Ney n-gram language model (``fw-rv-ppl`` with ``mode="cotk"``).

CoTK's ``NgramFwBwPerplexityMetric`` trains its own variant of interpolated Kneser-Ney
(``cotk.models.ngram_language_model``); this module computes the same numbers, re-derived
from its definition, with the statistics indexed so that a probability costs no scan of
the vocabulary:

* sentences padded on both sides with ``order-1`` copies of one pad symbol (``None``), every
  n-gram of length 1..order counted; ``<unk>`` for words never seen in training;
* three discounts per order from the counts-of-counts (Chen & Goodman's D1, D2, D3+), each
  falling back to 0.1 together when a count-of-counts is zero;
* top order: raw counts over the (order-1)-gram count; lower orders: left-continuation
  counts over the middle-continuation counts; a context never seen backs off; the back-off
  weight sums the discounts of the words seen after the context (in first-seen order of the
  vocabulary, as CoTK sums them), and is 1 when that sum is 0; the bottom is uniform over the
  vocabulary (``<unk>`` included);
* perplexity = exp(-sum of ln p over every word and one end symbol per sentence / number of
  words): the end symbols are scored but not counted (for n = 1 every word has p = 1/|V|,
  so the value is |V|^((N+S)/N)).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from .base import MetricError
from .summation import ordered_sum

UNK = "<unk>"
PAD = None
DEFAULT_DISCOUNT = 0.1

Word = str | None  # a word, or the pad symbol
Gram = tuple[Word, ...]


class CotkKneserNeyLM:
    """CoTK 0.1.0's Kneser-Ney LM (see the module docstring)."""

    def __init__(self, order: int = 4, unk_cutoff: int = 1, unk: str = UNK) -> None:
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise MetricError(f"the n-gram order must be a positive integer, not {order!r}")
        self.order, self.cutoff, self.unk = order, unk_cutoff, unk

    def fit(self, corpus: Iterable[Sequence[str]]) -> CotkKneserNeyLM:
        n = self.order
        sentences = [list(s) for s in corpus]
        if not sentences:
            raise MetricError("the n-gram language model needs at least one training sentence")
        self.word_count: Counter[Word] = Counter(w for s in sentences for w in s)
        self.word_count[PAD] = len(sentences) * (n - 1)
        counts: list[dict[Gram, int]] = [{} for _ in range(n + 1)]
        left: dict[Gram, set[Word]] = defaultdict(set)  # suffix -> words seen before it
        around: dict[Gram, set[tuple[Word, Word]]] = defaultdict(set)  # middle -> (before, after) pairs
        for s in sentences:
            padded: list[Word] = [PAD] * (n - 1) + s + [PAD] * (n - 1)
            for i in range(len(padded)):  # every n-gram of length 1..n, unigrams in first-seen order
                for k in range(1, min(n, len(padded) - i) + 1):
                    g = tuple(self._mask(w) for w in padded[i : i + k])
                    counts[k][g] = counts[k].get(g, 0) + 1
                    if k >= 2:
                        left[g[1:]].add(g[0])
                        around[g[1:-1]].add((g[0], g[-1]))
        self.counts = counts
        self.suffix_cont = {g: len(v) for g, v in left.items()}
        self.mid_cont = {g: len(v) for g, v in around.items()}
        self.discounts = [self._discounts(counts[k]) for k in range(n + 1)]
        self.rank = {g[0]: r for r, g in enumerate(counts[1])}
        self.vocab_size = len(counts[1]) + (0 if (self.unk,) in counts[1] else 1)
        # for each table, context -> [(rank of the next word, count)] (the back-off weight's terms)
        self._followers: dict[int, dict[Gram, list[tuple[int, int, int]]]] = {}
        self._gamma: dict[tuple[int | Word, ...], float] = {}
        return self

    def _mask(self, word: Word) -> Word:
        return self.unk if self.word_count.get(word, 0) < self.cutoff and word is not PAD else word

    @staticmethod
    def _discounts(table: dict[Gram, int]) -> list[float]:
        n = [0] * 4
        for c in table.values():
            if c < 5:
                n[c - 1] += 1
        try:
            y = n[0] / (n[0] + 2 * n[1])
            return [
                0,
                max(1 - 2 * y * n[1] / n[0], 0),
                max(2 - 3 * y * n[2] / n[1], 0),
                max(3 - 4 * y * n[3] / n[2], 0),
            ]
        except ZeroDivisionError:
            return [0, DEFAULT_DISCOUNT, DEFAULT_DISCOUNT, DEFAULT_DISCOUNT]

    def _discount(self, order: int, count: int) -> float:
        return self.discounts[order][min(count, 3)]

    def _table(self, length: int) -> dict[Gram, int]:
        return self.counts[self.order] if length == self.order else self.suffix_cont

    def _back_off_weight(self, context: Gram, length: int) -> float:
        key = (length,) + context
        if key not in self._gamma:
            table_id = self.order if length == self.order else 0
            if table_id not in self._followers:
                followers: dict[Gram, list[tuple[int, int, int]]] = defaultdict(list)
                for g, c in self._table(length).items():
                    if len(g) >= 1 and g[-1] in self.rank:
                        followers[g[:-1]].append((self.rank[g[-1]], c, len(g)))
                for v in followers.values():
                    v.sort()
                self._followers[table_id] = followers
            gamma: float = 0
            for _, c, glen in self._followers[table_id].get(context, ()):
                if glen == length:  # zero counts add exactly nothing; every seen count exceeds its discount
                    gamma += self._discount(length, c)
            self._gamma[key] = gamma
        return self._gamma[key]

    def _word_prob(self, word: Word, context: Gram) -> float:
        length = len(context) + 1
        if length == self.order:
            if self.order == 1:
                return 1 / self.vocab_size
            top, below = self.counts[self.order], self.counts[self.order - 1]
        else:
            top, below = self.suffix_cont, self.mid_cont
        count = top.get(context + (word,), 0)
        total = below.get(context, 0)
        if total == 0:
            return self._word_prob(word, context[1:])
        alpha = max(0, count - self._discount(length, count)) / total
        gamma = self._back_off_weight(context, length) / total
        if gamma == 0:
            gamma = 1
        return alpha + gamma * (self._word_prob(word, context[1:]) if context else 1 / self.vocab_size)

    def score(self, word: Word, context: Sequence[Word]) -> float:
        """P(word | context), with ``order-1`` context symbols."""
        if self.word_count.get(word, 0) < self.cutoff:
            word = self.unk
        return self._word_prob(word, tuple(self._mask(w) for w in context))

    def sentence_log_prob(self, sentence: Sequence[str]) -> float:
        padded = [PAD] * self.order + list(sentence) + [PAD]
        total = 0
        for i in range(len(sentence) + 1):
            total += np.log(self.score(padded[i + self.order], tuple(padded[i + 1 : i + self.order])))
        return total

    def perplexity(self, corpus: Sequence[Sequence[str]]) -> float:
        words = sum(map(len, corpus))
        if not words:
            raise MetricError("CoTK's n-gram perplexity divides by the number of words, and there are none")
        return float(np.exp(-ordered_sum(self.sentence_log_prob(s) for s in corpus) / words))
