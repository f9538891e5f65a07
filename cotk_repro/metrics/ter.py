"""TER, the translation edit rate (Snover et al. 2006), sacrebleu's ``TER`` itself, with a comparability hash.

The value is sacrebleu's corpus TER on its 0-100 scale **divided by 100**: the total number of edits
(insertions, deletions, substitutions and block shifts, tercom's rules) over the total average reference
length; 0 is a perfect match and the value has no upper bound (a long hypothesis against a short reference
exceeds 1). Lower is better. With several references, each sentence counts its edits against the closest
reference and the mean length of its references (sacrebleu's rule). ``per_sentence`` adds sacrebleu's
``sentence_score`` values, divided by 100.

The signature names every setting as sacrebleu's does (``ter|case:lc|tok:tercom|norm:no|punct:yes|asian:no|
refs:1|v:1``); the hash covers the reference texts, every setting and the version.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..text.reference_hashes import reference_set_hash
from .base import EXACT, Metric
from .chrf import check_bool, refs_label, text_inputs
from .declaration import COUNTED_INPUTS, FIXED_BY_VERSION, Declaration, Setting

TER_VERSION = "1"


class TerMetric(Metric):
    """``ter``: translation edit rate (sacrebleu ``TER``), sacrebleu's scale divided by 100: [0, inf), lower
    is better.

    Options: ``normalized`` (false: tercom's normalization of punctuation and numbers), ``no_punct`` (false:
    remove punctuation first), ``asian_support`` (false: split CJK characters for ``normalized``),
    ``case_sensitive`` (false: lowercase everything, as tercom does), ``per_sentence`` (false).
    """

    name = "ter"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = TER_VERSION
    higher_is_better = False
    value_range = (0.0, math.inf)
    #: the value's scale (``cotk-repro metrics --json`` shows it)
    scale = "sacrebleu's TER (0-100, unbounded) divided by 100: edits per reference word"
    level = "corpus"
    cost = 5.0
    result_keys = "ter"

    def __init__(
        self,
        normalized: bool = False,
        no_punct: bool = False,
        asian_support: bool = False,
        case_sensitive: bool = False,
        per_sentence: bool = False,
    ) -> None:
        self.normalized = check_bool(normalized, "normalized")
        self.no_punct = check_bool(no_punct, "no_punct")
        self.asian_support = check_bool(asian_support, "asian_support")
        self.case_sensitive = check_bool(case_sensitive, "case_sensitive")
        self.per_sentence = check_bool(per_sentence, "per_sentence")
        super().__init__(
            normalized=self.normalized,
            no_punct=self.no_punct,
            asian_support=self.asian_support,
            case_sensitive=self.case_sensitive,
        )

    def sacrebleu_metric(self) -> Any:
        """sacrebleu's ``TER`` with these settings."""
        from sacrebleu.metrics import TER

        return TER(
            normalized=self.normalized,
            no_punct=self.no_punct,
            asian_support=self.asian_support,
            case_sensitive=self.case_sensitive,
        )

    def declaration(self, refs: Sequence[Sequence[str]]) -> Declaration:
        """The hashed settings and the signature's fields (in sacrebleu's terms) of a score against ``refs``."""
        yes_no = {True: "yes", False: "no"}
        return Declaration(
            self.name,
            self.version,
            [
                Setting("case_sensitive", self.case_sensitive, "case", shown="mixed" if self.case_sensitive else "lc"),
                Setting("tokenizer", "tercom", "tok"),
                Setting("normalized", self.normalized, "norm", shown=yes_no[self.normalized]),
                Setting("no_punct", self.no_punct, "punct", shown=yes_no[not self.no_punct]),
                Setting("asian_support", self.asian_support, "asian", shown=yes_no[self.asian_support]),
                Setting.signature_only("refs", refs_label(refs), why=COUNTED_INPUTS),
                Setting.hash_only("scale", "0-inf", why=FIXED_BY_VERSION),
            ],
        )

    def sentence_scores(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]]) -> list[float]:
        """sacrebleu's ``sentence_score`` of each hypothesis against its references, divided by 100."""
        hyps, refs, _ = text_inputs(self.name, hypotheses, references)
        m = self.sacrebleu_metric()
        return [m.sentence_score(h, rs).score / 100.0 for h, rs in zip(hyps, refs)]

    #: a resample's TER is its sentences' summed edits over their summed reference lengths (docs/metrics.md,
    #: "Significance and intervals")
    resampling = "statistics"

    def resample_statistics(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None) -> Any:
        """``{"ter": ItemStatistics}``: per sentence sacrebleu's ``[edits, mean reference length]``; a resample's
        value is sacrebleu's ``_compute_score_from_stats`` of their sums divided by 100, as :meth:`compute`'s."""
        import numpy as np

        from .resampling import ItemStatistics

        hyps, _, streams = text_inputs(self.name, hypotheses, references)
        stats = np.asarray(self.sacrebleu_metric()._extract_corpus_statistics(hyps, streams), dtype=np.float64)

        def finish(sums: np.ndarray) -> np.ndarray:
            edits, lengths = sums[:, 0], sums[:, 1]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(lengths > 0, edits / np.where(lengths > 0, lengths, 1.0), (edits > 0) * 1.0)
            out: np.ndarray = 100 * ratio / 100.0
            return out

        return {self.name: ItemStatistics(stats.reshape(len(hyps), 2), finish)}

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        hyps, refs, streams = text_inputs(self.name, hypotheses, references)
        m = self.sacrebleu_metric()
        value = m.corpus_score(hyps, streams).score / 100.0
        hashed = ([[r if self.case_sensitive else r.lower()] for r in rs] for rs in refs)
        out = self.declaration(refs).entry(
            self.name, value, lambda settings: reference_set_hash(self.name, settings, hashed)
        )
        if self.per_sentence:
            out[f"{self.name} per-sentence"] = [m.sentence_score(h, rs).score / 100.0 for h, rs in zip(hyps, refs)]
        return out
