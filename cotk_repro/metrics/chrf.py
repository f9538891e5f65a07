"""chrF and chrF++ (Popović 2015, 2017), sacrebleu's ``CHRF`` itself, with a comparability hash.

The value is sacrebleu's corpus chrF on its 0-100 scale **divided by 100** (so it lies in [0, 1] like BLEU
here), from the same integer statistics as sacrebleu's, counted for the whole corpus at once with numpy
(:mod:`cotk_repro.metrics.chrf_stats`) and turned into F-scores by sacrebleu's own ``_compute_f_score``: character n-gram orders 1..``char_order`` and word n-gram orders 1..``word_order`` (``word_order=2``
is chrF++), F-beta of the averaged n-gram precision and recall. Corpus statistics are sums over sentences of
each sentence's statistics against its best-matching reference (sacrebleu's multi-reference rule). With
``per_sentence`` the sentence-level values (sacrebleu's ``sentence_score``, divided by 100) come beside it.

References: several per hypothesis, their number may differ between hypotheses (sacrebleu's variable
reference streams). The signature names every setting as sacrebleu's does
(``chrf|nc:6|nw:2|beta:2|case:mixed|eff:yes|ws:no|refs:1|v:1``); the hash covers the reference texts
(as sacrebleu reads them: untokenized, lowercased when ``lowercase``), every setting and the version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..text.reference_hashes import reference_set_hash
from ._text import as_text, check_samples
from .base import EXACT, Metric, MetricError
from .declaration import COUNTED_INPUTS, FIXED_BY_VERSION, Declaration, Setting

CHRF_VERSION = "1"


def check_bool(value: Any, what: str) -> bool:
    """A bool option: True/False (JSON ``true``/``false`` from the command line), never a truthy string."""
    if isinstance(value, bool):
        return value
    raise MetricError(f"{what} must be true or false, not {value!r}")


def check_int(value: Any, what: str, low: int, high: int) -> int:
    """An integer option in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise MetricError(f"{what} must be an integer in [{low}, {high}], not {value!r}")
    return value


def text_inputs(
    name: str, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
) -> tuple[list[str], list[list[str]], list[list[str | None]]]:
    """Hypothesis strings, reference lists and sacrebleu's reference streams (padded with None where a
    hypothesis has fewer references). A token list is joined with spaces; an empty corpus or a hypothesis
    without a reference is refused."""
    hyps_in, refs_in = check_samples(name, hypotheses, references)
    hyps = [as_text(h, index=i) for i, h in enumerate(hyps_in)]
    refs = [[as_text(r, index=i) for r in rs] for i, rs in enumerate(refs_in)]
    width = max(map(len, refs))
    streams = [[rs[k] if k < len(rs) else None for rs in refs] for k in range(width)]
    return hyps, refs, streams


def refs_label(refs: Sequence[Sequence[str]]) -> str:
    """sacrebleu's ``nrefs``: the count when every hypothesis has as many references, else ``var``."""
    counts = set(map(len, refs))
    return str(counts.pop()) if len(counts) == 1 else "var"


class ChrfMetric(Metric):
    """``chrf``: chrF / chrF++ (sacrebleu ``CHRF``), on sacrebleu's scale divided by 100: [0, 1].

    Options: ``char_order`` (6), ``word_order`` (0; 2 is chrF++), ``beta`` (2: recall twice as important),
    ``whitespace`` (false: spaces are not part of character n-grams), ``lowercase`` (false),
    ``eps_smoothing`` (false: sacrebleu's effective-order default; true: the chrF++.py / NLTK / Moses
    epsilon smoothing), ``per_sentence`` (false: also report ``chrf per-sentence``).
    """

    name = "chrf"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = CHRF_VERSION
    higher_is_better = True
    value_range = (0.0, 1.0)
    #: the value's scale (``cotk-repro metrics --json`` shows it)
    scale = "sacrebleu's chrF (0-100) divided by 100"
    level = "corpus"
    cost = 3.0
    result_keys = "chrf"

    def __init__(
        self,
        char_order: int = 6,
        word_order: int = 0,
        beta: int = 2,
        whitespace: bool = False,
        lowercase: bool = False,
        eps_smoothing: bool = False,
        per_sentence: bool = False,
    ) -> None:
        self.char_order = check_int(char_order, "char_order", 0, 100)
        self.word_order = check_int(word_order, "word_order", 0, 100)
        if self.char_order + self.word_order == 0:
            raise MetricError("chrf needs char_order or word_order above 0")
        self.beta = check_int(beta, "beta", 0, 1000)
        self.whitespace = check_bool(whitespace, "whitespace")
        self.lowercase = check_bool(lowercase, "lowercase")
        self.eps_smoothing = check_bool(eps_smoothing, "eps_smoothing")
        self.per_sentence = check_bool(per_sentence, "per_sentence")
        super().__init__(
            char_order=self.char_order,
            word_order=self.word_order,
            beta=self.beta,
            whitespace=self.whitespace,
            lowercase=self.lowercase,
            eps_smoothing=self.eps_smoothing,
        )

    def sacrebleu_metric(self) -> Any:
        """sacrebleu's ``CHRF`` with these settings."""
        from sacrebleu.metrics import CHRF

        return CHRF(
            char_order=self.char_order,
            word_order=self.word_order,
            beta=self.beta,
            lowercase=self.lowercase,
            whitespace=self.whitespace,
            eps_smoothing=self.eps_smoothing,
        )

    def declaration(self, refs: Sequence[Sequence[str]]) -> Declaration:
        """The hashed settings and the signature's fields (in sacrebleu's terms) of a score against ``refs``."""
        return Declaration(
            self.name,
            self.version,
            [
                Setting("char_order", self.char_order, "nc"),
                Setting("word_order", self.word_order, "nw"),
                Setting("beta", self.beta, "beta"),
                Setting("lowercase", self.lowercase, "case", shown="lc" if self.lowercase else "mixed"),
                Setting("eps_smoothing", self.eps_smoothing, "eff", shown="no" if self.eps_smoothing else "yes"),
                Setting("whitespace", self.whitespace, "ws", shown="yes" if self.whitespace else "no"),
                Setting.signature_only("refs", refs_label(refs), why=COUNTED_INPUTS),
                Setting.hash_only("scale", "0-1", why=FIXED_BY_VERSION),
            ],
        )

    def sentence_scores(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]]) -> list[float]:
        """sacrebleu's ``sentence_score`` of each hypothesis against its references, divided by 100."""
        hyps, refs, _ = text_inputs(self.name, hypotheses, references)
        m = self.sacrebleu_metric()
        return [m.sentence_score(h, rs).score / 100.0 for h, rs in zip(hyps, refs)]

    def best_statistics(self, hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> Any:
        """Per hypothesis (rows of an int64 array), sacrebleu's match statistics against its best reference (the
        first with the highest sentence F-score, sacrebleu's rule), computed for the whole corpus at once
        (:mod:`cotk_repro.metrics.chrf_stats`)."""
        from .chrf_stats import best_statistics

        return best_statistics(self.sacrebleu_metric(), hyps, refs)

    #: a resample's chrF is sacrebleu's F-score of its sentences' summed statistics (docs/metrics.md,
    #: "Significance and intervals")
    resampling = "statistics"

    def resample_statistics(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None) -> Any:
        """``{"chrf": ItemStatistics}``: per sentence its statistics against its best reference (sacrebleu's
        ``_extract_corpus_statistics``); a resample's value is :func:`f_scores` of their sums divided by 100, as
        :meth:`compute`'s."""
        from .resampling import ItemStatistics

        hyps, refs, _ = text_inputs(self.name, hypotheses, references)
        best = self.best_statistics(hyps, refs)
        m = self.sacrebleu_metric()
        return {self.name: ItemStatistics(best.astype(np.float64), lambda sums: f_scores(m, sums) / 100.0)}

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        hyps, refs, _ = text_inputs(self.name, hypotheses, references)
        m = self.sacrebleu_metric()
        best = self.best_statistics(hyps, refs)
        value = m._compute_f_score(best.sum(axis=0).tolist()) / 100.0
        hashed = ([[r.lower() if self.lowercase else r] for r in rs] for rs in refs)
        out = self.declaration(refs).entry(
            self.name, value, lambda settings: reference_set_hash(self.name, settings, hashed)
        )
        if self.per_sentence:
            out[f"{self.name} per-sentence"] = [m._compute_f_score(row) / 100.0 for row in best.tolist()]
        return out


def f_scores(metric: Any, sums: np.ndarray) -> np.ndarray:
    """sacrebleu's ``CHRF._compute_f_score`` (0-100) of every row of summed statistics at once: the same operations
    in the same order, as arrays (one step per n-gram order, never per row), so each value is sacrebleu's float."""
    eps = 1e-16
    rows = len(sums)
    factor = metric.beta**2
    score = np.zeros(rows)
    avg_prec, avg_rec = np.zeros(rows), np.zeros(rows)
    effective = np.zeros(rows, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(metric.order):
            n_hyp, n_ref, n_match = sums[:, 3 * i], sums[:, 3 * i + 1], sums[:, 3 * i + 2]
            prec = np.where(n_hyp > 0, n_match / n_hyp, eps)
            rec = np.where(n_ref > 0, n_match / n_ref, eps)
            denom = factor * prec + rec
            score = score + np.where(denom > 0, (1 + factor) * prec * rec / denom, eps)
            both = (n_hyp > 0) & (n_ref > 0)
            avg_prec = np.where(both, avg_prec + prec, avg_prec)
            avg_rec = np.where(both, avg_rec + rec, avg_rec)
            effective += both
        if metric.eps_smoothing:
            out: np.ndarray = 100 * score / metric.order
            return out
        some = effective > 0
        avg_prec = np.where(some, avg_prec / np.where(some, effective, 1), 0.0)
        avg_rec = np.where(some, avg_rec / np.where(some, effective, 1), 0.0)
        nonzero = (avg_prec + avg_rec) != 0
        f = (1 + factor) * avg_prec * avg_rec
        f = f / np.where(nonzero, (factor * avg_prec) + avg_rec, 1.0)
        out = np.where(nonzero, 100 * f, 0.0)
    return out
