"""GLEU (Wu et al. 2016, Google's NMT paper), equal to NLTK's ``corpus_gleu`` / ``sentence_gleu``.

For a hypothesis and a reference, every n-gram of orders ``min_len``..``max_len`` counts: the matches are
the clipped overlap, the total is the larger of the hypothesis' and the reference's n-gram counts. With
several references the one with the highest match ratio counts (the first on ties, as NLTK). The corpus
value sums matches and totals over sentences, then divides (``corpus_gleu``); ``per_sentence`` adds each
sentence's own ratio (``sentence_gleu``). Samples whose every reference and hypothesis are empty add
nothing; an all-empty corpus scores 0 (NLTK's corner case).

Text is re-tokenized with BLEU's fixed tokenizer (NLTK's WordPunct regex) unless ``tokenizer`` names
another; the hash covers the references as tokenized, the orders, the tokenizer and the version.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..text.reference_hashes import reference_set_hash
from ._text import as_int_list, check_samples, resolve_tokenizer
from .base import EXACT, Metric, MetricError
from .declaration import COUNTED_INPUTS, SHOWN_WITH_ANOTHER, Declaration, Setting

GLEU_VERSION = "1"


def _everygrams(tokens: Sequence[str], lo: int, hi: int) -> Counter[tuple[str, ...]]:
    out: Counter[tuple[str, ...]] = Counter()
    for n in range(lo, min(hi, len(tokens)) + 1):
        out.update(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return out


def gleu_counts(hyp: Sequence[str], refs: Sequence[Sequence[str]], lo: int = 1, hi: int = 4) -> tuple[int, int] | None:
    """(matches, total) of one sentence against its best reference; None when every total is 0."""
    h = _everygrams(hyp, lo, hi)
    tpfp = sum(h.values())
    best = None
    for ref in refs:
        r = _everygrams(ref, lo, hi)
        n_all = max(tpfp, sum(r.values()))
        if n_all > 0:
            tp = sum((r & h).values())
            if best is None or tp / n_all > best[0] / best[1]:
                best = (tp, n_all)
    return best


class GleuMetric(Metric):
    """``gleu``: corpus GLEU (NLTK ``corpus_gleu``), in [0, 1].

    Options: ``min_len`` (1) and ``max_len`` (4): the n-gram orders; ``tokenizer`` (BLEU's WordPunct; or a
    registered tokenizer); ``per_sentence`` (false: also ``gleu per-sentence``, NLTK's ``sentence_gleu``).
    """

    #: a resample's GLEU is its sentences' summed matches over their summed totals (docs/metrics.md,
    #: "Significance and intervals")
    resampling = "statistics"

    name = "gleu"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = GLEU_VERSION
    higher_is_better = True
    value_range = (0.0, 1.0)
    level = "corpus"
    cost = 1.5
    result_keys = "gleu"

    def __init__(
        self,
        min_len: int = 1,
        max_len: int = 4,
        tokenizer: Any = None,
        per_sentence: bool = False,
        normalize: str = "none",
    ) -> None:
        self.min_len = as_int_list(min_len, "min_len")[0] if isinstance(min_len, int) else None
        self.max_len = as_int_list(max_len, "max_len")[0] if isinstance(max_len, int) else None
        if self.min_len is None or self.max_len is None or isinstance(min_len, bool) or isinstance(max_len, bool):
            raise MetricError(f"min_len and max_len must be whole numbers >= 1, not {min_len!r} and {max_len!r}")
        if self.min_len > self.max_len:
            raise MetricError(f"min_len ({self.min_len}) must not exceed max_len ({self.max_len})")
        if not isinstance(per_sentence, bool):
            raise MetricError(f"per_sentence must be true or false, not {per_sentence!r}")
        self.per_sentence = per_sentence
        self._tok = resolve_tokenizer(tokenizer, normalize)
        super().__init__(min_len=self.min_len, max_len=self.max_len, tokenizer=self._tok.spec)

    def resample_statistics(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None) -> Any:
        """``{"gleu": ItemStatistics}``: per sentence its (matches, total) against its best reference, (0, 0) for
        one that adds nothing; a resample's value is their sums divided, 0 when the total is 0, as :meth:`compute`'s."""
        import numpy as np

        from .resampling import ItemStatistics

        hyps, refs = check_samples("gleu", hypotheses, references)
        ref_tok = [self._tok.many(rs) for rs in refs]
        counts = [gleu_counts(h, rs, self.min_len, self.max_len) for h, rs in zip(self._tok.many(hyps), ref_tok)]
        stats = np.array([c if c is not None else (0, 0) for c in counts], dtype=np.float64).reshape(-1, 2)

        def finish(sums: np.ndarray) -> np.ndarray:
            total = sums[:, 1]
            out: np.ndarray = np.where(total > 0, sums[:, 0] / np.where(total > 0, total, 1.0), 0.0)
            return out

        return {self.name: ItemStatistics(stats, finish)}

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        hyps, refs = check_samples("gleu", hypotheses, references)
        hyp_tok = self._tok.many(hyps)
        ref_tok = [self._tok.many(rs) for rs in refs]
        matches = total = 0
        each: list[float] = []
        for h, rs in zip(hyp_tok, ref_tok):
            c = gleu_counts(h, rs, self.min_len, self.max_len)
            if c is not None:
                matches += c[0]
                total += c[1]
            each.append(c[0] / c[1] if c is not None else 0.0)
        value = matches / total if total else 0.0
        decl = Declaration(
            self.name,
            self.version,
            [
                Setting("min_len", self.min_len, "n", shown=f"{self.min_len}-{self.max_len}"),
                Setting.hash_only("max_len", self.max_len, why=SHOWN_WITH_ANOTHER),
                Setting("tokenizer", self._tok.spec, "tok", shown=self._tok.name),
                Setting.signature_only("refs", max(map(len, refs)), why=COUNTED_INPUTS),
            ],
        )
        out = decl.entry(self.name, value, lambda settings: reference_set_hash(self.name, settings, ref_tok))
        if self.per_sentence:
            out[f"{self.name} per-sentence"] = each
        return out
