"""Forward and reverse perplexity with an interpolated Kneser-Ney n-gram language model.

``fw-rv-ppl`` (Zhao et al. 2018, ARAE; CoTK used a 5-gram Kneser-Ney model):

* forward perplexity (``fw-ppl``): an n-gram LM trained on the real text (the references),
  evaluated on the generated text: is what the model writes fluent?
* reverse perplexity (``rv-ppl``): an n-gram LM trained on the generated text, evaluated on
  the real text: does the generated text cover the real distribution?

The LM (:class:`KneserNeyLM`) counts n-grams exactly as NLTK's ``nltk.lm`` pipeline does
(each sentence padded with ``order-1`` ``<s>`` and ``</s>``, every n-gram of length
1..order, words seen fewer than ``unk_cutoff`` times mapped to ``<UNK>``) and has two
smoothing modes:

* ``"nltk"``: NLTK's ``KneserNeyInterpolated`` formulas exactly (a fixed discount, the
  continuation counts for the lower orders, the unigram continuation distribution at the
  bottom). A word never seen as a continuation (typically ``<UNK>`` when no training word
  was rare) gets probability 0 there, which makes the perplexity infinite.
* ``"interpolated"`` (default): the textbook interpolated Kneser-Ney (Chen & Goodman) with
  one discount: lower orders discounted too, the back-off weight counting continuation
  types, and the unigram level interpolated with the uniform distribution over the
  vocabulary (``<UNK>`` included), so every word gets a positive probability and every
  conditional distribution sums to 1.

A third mode, ``"cotk"``, is CoTK 0.1.0's own Kneser-Ney variant and its perplexity (which
scores the end symbols but divides by the word count alone): :mod:`cotk_repro.metrics.kn_cotk`.

Perplexity of a sentence set: ``exp(-mean ln p)`` over every word and one ``</s>`` per
sentence, each word given the ``order-1`` previous tokens (``<s>``-padded).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from ..text.reference_hashes import reference_set_hash
from ._text import check_float, check_hypotheses, resolve_tokenizer
from .base import EXACT, Metric, MetricError
from .declaration import COUNTED_INPUTS, SYSTEM_OUTPUT_SIZE, Declaration, Setting
from .resampling import SET_LEVEL
from .summation import ordered_sum

BOS, EOS, UNK = "<s>", "</s>", "<UNK>"
MODES = ("interpolated", "nltk")
#: the modes of ``fw-rv-ppl``: the two above and CoTK 0.1.0's variant
METRIC_MODES = MODES + ("cotk",)


class KneserNeyLM:
    """An interpolated Kneser-Ney n-gram LM (see the module docstring)."""

    def __init__(self, order: int = 5, discount: float = 0.75, unk_cutoff: int = 1, mode: str = "interpolated") -> None:
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise MetricError(f"the n-gram order must be a positive integer, not {order!r}")
        if isinstance(unk_cutoff, bool) or not isinstance(unk_cutoff, int) or unk_cutoff < 1:
            raise MetricError(f"unk_cutoff must be a positive integer, not {unk_cutoff!r}")
        if mode not in MODES:
            raise MetricError(f"unknown Kneser-Ney mode {mode!r}; choose one of {', '.join(MODES)}")
        self.order = order
        self.discount = check_float(discount, "discount", 0.0, 1.0)
        self.unk_cutoff = unk_cutoff
        self.mode = mode
        self._fitted = False

    # -- training ---------------------------------------------------------------------------------
    def fit(self, sentences: Iterable[Sequence[str]]) -> KneserNeyLM:
        n = self.order
        sents = [list(s) for s in sentences]
        if not sents:
            raise MetricError("the n-gram language model needs at least one training sentence")
        pad_l, pad_r = [BOS] * (n - 1), [EOS] * (n - 1)
        word_counts: Counter[str] = Counter()
        for s in sents:
            word_counts.update(s)
        word_counts[BOS] += len(sents) * (n - 1)
        word_counts[EOS] += len(sents) * (n - 1)
        self.vocab = {w for w, c in word_counts.items() if c >= self.unk_cutoff}
        self.vocab.add(UNK)
        counts: list[Counter[tuple[str, ...]]] = [Counter() for _ in range(n + 1)]
        for s in sents:
            padded = tuple(pad_l + [w if w in self.vocab else UNK for w in s] + pad_r)
            for k in range(1, n + 1):
                counts[k].update(padded[i : i + k] for i in range(len(padded) - k + 1))
        self.counts = counts
        # statistics of the formulas, each computed once
        ctx_total: dict[tuple[str, ...], int] = defaultdict(int)  # top order: sum_w c(ctx w)
        raw_types: dict[tuple[str, ...], int] = defaultdict(int)  # |{w: c(ctx w) > 0}|, any order
        for k in range(1, n + 1):
            for g, c in counts[k].items():
                raw_types[g[:-1]] += 1
                if k == n:
                    ctx_total[g[:-1]] += c
        cont: dict[tuple[str, ...], int] = defaultdict(int)  # N1+(. s) for s of length 1..n-1
        cont_total: dict[tuple[str, ...], int] = defaultdict(int)  # N1+(. c .) for c of length 0..n-2
        for k in range(2, n + 1):
            for g in counts[k]:
                cont[g[1:]] += 1
                cont_total[g[1:-1]] += 1
        cont_types: dict[tuple[str, ...], int] = defaultdict(int)  # |{w: N1+(. c w) > 0}|
        for suffix in cont:
            cont_types[suffix[:-1]] += 1
        self._ctx_total, self._raw_types = dict(ctx_total), dict(raw_types)
        self._cont, self._cont_total, self._cont_types = dict(cont), dict(cont_total), dict(cont_types)
        self._fitted = True
        return self

    # -- scoring ----------------------------------------------------------------------------------
    def lookup(self, word: str) -> str:
        return word if word in self.vocab else UNK

    def score(self, word: str, context: Sequence[str] = ()) -> float:
        """P(word | context), OOV words (in the context too) mapped to ``<UNK>``."""
        if not self._fitted:
            raise MetricError("the n-gram language model is not trained yet")
        ctx = tuple(self.lookup(w) for w in context)[-(self.order - 1) :] if self.order > 1 else ()
        return self._score(self.lookup(word), ctx)

    def _score(self, word: str, ctx: tuple[str, ...]) -> float:
        d = self.discount
        if not ctx:
            return self._unigram(word)
        if len(ctx) == self.order - 1:
            total = self._ctx_total.get(ctx, 0)
            if not total:
                return self._score(word, ctx[1:])
            alpha = max(self.counts[self.order].get(ctx + (word,), 0) - d, 0.0) / total
            gamma = d * self._raw_types[ctx] / total
        else:
            total = self._cont_total.get(ctx, 0)
            if self.mode == "nltk":
                if not self._raw_types.get(ctx, 0):
                    return self._score(word, ctx[1:])
                if not total:  # NLTK divides by zero here; this never happens with padded training data
                    raise MetricError("the NLTK Kneser-Ney formulas are undefined for this context")
                gamma = d * self._raw_types[ctx] / total
            else:
                if not total:
                    return self._score(word, ctx[1:])
                gamma = d * self._cont_types[ctx] / total
            alpha = max(self._cont.get(ctx + (word,), 0) - d, 0.0) / total
        return alpha + gamma * self._score(word, ctx[1:])

    def _unigram(self, word: str) -> float:
        total = self._cont_total.get((), 0)
        if self.order == 1 or not total:
            # a unigram model: relative frequencies (NLTK's continuation counts need bigrams)
            if self.mode == "nltk":
                raise MetricError("NLTK's Kneser-Ney needs an order of at least 2")
            return 1.0 / len(self.vocab)
        c = self._cont.get((word,), 0)
        if self.mode == "nltk":
            return c / total
        d = self.discount
        return max(c - d, 0.0) / total + d * self._cont_types[()] / total / len(self.vocab)

    def sentence_log_probs(self, sentence: Sequence[str]) -> list[float]:
        """ln P of each word of ``sentence`` and of the final ``</s>``."""
        padded = [BOS] * (self.order - 1) + list(sentence) + [EOS]
        out = []
        for i in range(self.order - 1, len(padded)):
            p = self.score(padded[i], padded[i - self.order + 1 : i] if self.order > 1 else ())
            out.append(math.log(p) if p > 0 else -math.inf)
        return out

    def perplexity(self, sentences: Iterable[Sequence[str]]) -> float:
        total, count = 0.0, 0
        for i, s in enumerate(sentences):
            lps = self.sentence_log_probs(s)
            if any(lp == -math.inf for lp in lps):
                raise MetricError(
                    f"the n-gram language model gives probability 0 to sentence {i}, so the "
                    f"perplexity is infinite (use mode='interpolated' or a larger unk_cutoff)"
                )
            total += ordered_sum(lps)
            count += len(lps)
        if not count:
            raise MetricError("no sentences to compute a perplexity on")
        return math.exp(-total / count)


class FwRvPplMetric(Metric):
    """``fw-rv-ppl``: forward and reverse perplexity with a Kneser-Ney n-gram LM.

    ``compute(hypotheses, references)``: the references are the real text as a *set* (their
    count need not match the hypotheses'; every reference of every list is used). Options:
    ``ngram`` (5, as CoTK), ``discount`` (0.75), ``unk_cutoff`` (1), ``mode`` (``interpolated``, ``nltk`` or
    ``cotk``: CoTK 0.1.0's own variant, which ignores ``discount``), ``tokenizer`` (BLEU's WordPunct by
    default). Keys ``fw-ppl`` and ``rv-ppl``; the hash covers the tokenized reference set and every LM
    setting (the generated text is what is being scored, so it is not in the hash).
    """

    resampling = "none"
    no_interval = SET_LEVEL  # docs/metrics.md, "Significance and intervals"

    name = "fw-rv-ppl"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    paired_references = False
    higher_is_better = False
    value_range = (1.0, float("inf"))
    level = "corpus"
    cost = 3.0
    result_keys = r"fw-ppl|rv-ppl"

    def __init__(
        self,
        ngram: int = 5,
        discount: float = 0.75,
        unk_cutoff: int = 1,
        mode: str = "interpolated",
        tokenizer: Any = None,
        normalize: str = "none",
    ) -> None:
        self.mode = mode
        self._lm(ngram, discount, unk_cutoff)  # validates the options
        self.ngram, self.discount, self.unk_cutoff, self.mode = ngram, float(discount), unk_cutoff, mode
        self.tokenizer = resolve_tokenizer(tokenizer, normalize)
        super().__init__(
            ngram=ngram, discount=self.discount, unk_cutoff=unk_cutoff, mode=mode, tokenizer=self.tokenizer.spec
        )

    def forward(self, batch: Mapping[str, Any]) -> None:
        self._hyps.extend(check_hypotheses(batch["hyps"]))
        refs = batch.get("refs")
        if refs is not None:
            self._refs = (self._refs or []) + [[r] if isinstance(r, str) else list(r) for r in refs]

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        hyps = check_hypotheses(hypotheses)
        if references is None:
            raise MetricError("fw-rv-ppl needs references (the real text)")
        ref_lists = []
        for i, r in enumerate(references):
            if isinstance(r, str):
                raise MetricError(f"references[{i}] is a string; give a list of reference strings per sample")
            ref_lists.append(list(r))
        real = [t for r in ref_lists for t in self.tokenizer.many(r)]
        gen = self.tokenizer.many(hyps)
        if not real or not gen:
            raise MetricError("fw-rv-ppl needs at least one hypothesis and one reference")
        fw = self._lm(self.ngram, self.discount, self.unk_cutoff).fit(real).perplexity(gen)
        rv = self._lm(self.ngram, self.discount, self.unk_cutoff).fit(gen).perplexity(real)
        ref_tokens = [[t for t in self.tokenizer.many(r)] for r in ref_lists]
        out: dict[str, Any] = {}
        lm = "kn-" + {"nltk": "nltk", "cotk": "cotk"}.get(self.mode, "interp")
        for key, value in (("fw-ppl", fw), ("rv-ppl", rv)):
            decl = Declaration(
                key,
                self.version,
                [
                    Setting("ngram", self.ngram, "n"),
                    Setting("mode", self.mode, "lm", shown=lm),
                    Setting("discount", self.discount, "d"),
                    Setting("unk_cutoff", self.unk_cutoff, "cutoff"),
                    Setting("tokenizer", self.tokenizer.spec, "tok", shown=self.tokenizer.name),
                    Setting.signature_only("refs", len(real), why=COUNTED_INPUTS),
                    Setting.signature_only("hyps", len(gen), why=SYSTEM_OUTPUT_SIZE),
                ],
            )
            out.update(decl.entry(key, value, partial(reference_set_hash, key, references=ref_tokens)))
        return out

    def _lm(self, ngram: int, discount: float, unk_cutoff: int) -> Any:
        if self.mode == "cotk":
            from .kn_cotk import CotkKneserNeyLM

            return CotkKneserNeyLM(ngram, unk_cutoff)
        return KneserNeyLM(ngram, discount, unk_cutoff, self.mode)
