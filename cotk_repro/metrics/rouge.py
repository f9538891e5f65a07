"""ROUGE-N and ROUGE-L F-measures, equal to google's ``rouge-score`` package.

Per sample: the tokenizer of ``rouge-score`` (lowercase, every run of characters other
than ``[a-z0-9]`` is a separator; with ``stemmer=True`` NLTK's Porter stemmer on tokens
longer than 3 characters), n-gram overlap (ROUGE-N) or longest common subsequence
(ROUGE-L) precision P and recall R, and

    F = P * R / (alpha * R + (1 - alpha) * P)     (Lin 2004; alpha = 0.5 is F1)

With several references the best F counts (``RougeScorer.score_multi``); the corpus
value is the mean over samples. Keys ``rouge-1``, ``rouge-2``, ``rouge-l`` (``types``
picks others: ``rouge1``..``rouge9``, ``rougeL``). Hashes cover the references as
ROUGE tokenizes them, the type, alpha, stemming and the metric version.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

from .reference_hashes import reference_set_hash
from .base import Metric, MetricError, check_references, result_entry, signature
from ._text import as_text, check_float, check_hypotheses

_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_VALID = re.compile(r"^[a-z0-9]+$")
_TYPE = re.compile(r"^rouge([1-9]|L)$")


def rouge_tokenize(text: str, stemmer: Any = None) -> list[str]:
    """``rouge_score.tokenize.tokenize``: the original ROUGE's tokenization."""
    tokens = re.split(r"\s+", _NON_ALNUM.sub(" ", text.lower()))
    if stemmer is not None:
        tokens = [stemmer.stem(t) if len(t) > 3 else t for t in tokens]
    return [t for t in tokens if _VALID.match(t)]


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Return the length of the longest common subsequence of two token sequences."""
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else (cur[j] if cur[j] > prev[j + 1] else prev[j + 1]))
        prev = cur
    return prev[-1]


def f_measure(p: float, r: float, alpha: float) -> float:
    """Combine precision and recall into ROUGE's F-measure weighted by `alpha` (0.5: F1)."""
    if alpha == 0.5:  # rouge-score's own arithmetic, bit for bit
        return 2 * p * r / (p + r) if p + r > 0 else 0.0
    den = alpha * r + (1 - alpha) * p
    return p * r / den if den > 0 else 0.0


def _ngram_counts(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def score_pair(rtype: str, ref: Sequence[str], hyp: Sequence[str]) -> tuple[float, float]:
    """(precision, recall) of one hypothesis against one reference (token lists)."""
    if rtype == "rougeL":
        if not ref or not hyp:
            return 0.0, 0.0
        lcs = lcs_length(ref, hyp)
        return lcs / len(hyp), lcs / len(ref)
    n = int(rtype[5:])
    rc, hc = _ngram_counts(ref, n), _ngram_counts(hyp, n)
    overlap = sum(min(c, hc[g]) for g, c in rc.items())
    return overlap / max(sum(hc.values()), 1), overlap / max(sum(rc.values()), 1)


class RougeMetric(Metric):
    """``rouge``. Options: ``types`` (default ``["rouge1", "rouge2", "rougeL"]``), ``alpha`` (0.5: F1;
    the weight of precision, in [0, 1]), ``stemmer`` (False)."""

    name = "rouge"
    version = "1"
    level = "sentence"
    cost = 1.5
    result_keys = r"rouge-([1-9]|l)"

    def __init__(self, types: Sequence[str] = ("rouge1", "rouge2", "rougeL"), alpha: float = 0.5,
                 stemmer: bool = False) -> None:
        types = [types] if isinstance(types, str) else list(types)
        if not types or any(not isinstance(t, str) or not _TYPE.match(t) for t in types):
            raise MetricError(f"ROUGE types must be rouge1..rouge9 or rougeL, not {types!r}")
        self.types = list(dict.fromkeys(types))
        self.alpha = check_float(alpha, "alpha", 0.0, 1.0)
        self.use_stemmer = bool(stemmer)
        self._stemmer = None
        if self.use_stemmer:
            from nltk.stem import porter

            self._stemmer = porter.PorterStemmer()
        super().__init__(types=self.types, alpha=self.alpha, stemmer=self.use_stemmer)

    @staticmethod
    def key(rtype: str) -> str:
        return "rouge-l" if rtype == "rougeL" else f"rouge-{rtype[5:]}"

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None
                ) -> dict[str, Any]:
        hyps = check_hypotheses(hypotheses)
        refs = check_references(hyps, references)
        if not hyps:
            raise MetricError("rouge needs at least one hypothesis")
        for i, r in enumerate(refs):
            if not r:
                raise MetricError(f"sample {i} has no reference")
        tok = lambda t, i=0: rouge_tokenize(as_text(t, index=i), self._stemmer)  # noqa: E731
        hyp_toks = [tok(h, i) for i, h in enumerate(hyps)]
        ref_toks = [[tok(r, i) for r in rs] for i, rs in enumerate(refs)]
        out: dict[str, Any] = {}
        for rtype in self.types:
            total = 0.0
            for h, rs in zip(hyp_toks, ref_toks):
                best = None
                for r in rs:  # the first reference with the largest F, as numpy.argmax in score_multi
                    f = f_measure(*score_pair(rtype, r, h), self.alpha)
                    if best is None or f > best:
                        best = f
                total += best
            settings = {"type": rtype, "alpha": self.alpha, "stemmer": self.use_stemmer,
                        "tokenizer": "rouge-score", "version": self.version}
            sig = signature(self.key(rtype), {"alpha": self.alpha, "stem": "yes" if self.use_stemmer else "no",
                                              "tok": "rouge-score", "refs": max(len(r) for r in refs)},
                            self.version)
            out.update(result_entry(self.key(rtype), total / len(hyps),
                                    reference_set_hash(self.key(rtype), settings, ref_toks), sig))
        return out
