"""Diversity metrics: Distinct-n and n-gram entropy.

* ``distinct`` (Li et al. 2016, "A Diversity-Promoting Objective Function for Neural
  Conversation Models"): the number of distinct n-grams in all generated sentences
  divided by the total number of n-grams in them. Keys ``distinct-<n>`` for each n.
* ``ngram-entropy`` (Pang et al. 2020, "Towards Holistic and Automatic Evaluation of
  Open-Domain Dialogue Generation", eq. 5-6): for a group of responses with n-gram
  frequencies F(w), ``H = -sum_w F(w)/Z * log(F(w)/Z)`` with ``Z = sum_w F(w)`` (eq. 5);
  the score is the mean of H over the groups (eq. 6). Keys ``ngram-entropy-<n>``.

Both re-tokenize text with one fixed tokenizer (BLEU's WordPunct unless ``tokenizer``
says otherwise). Neither needs references; their hashes cover every setting (n, the
tokenizer and its settings, grouping, log base, version), the number of hypotheses
(Distinct falls as the set grows) and, when references are given, the reference set
the hypotheses answer, so two scores on different test sets never look comparable.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..core.canonical import hash_object
from ..text.reference_hashes import reference_set_hash
from ._text import as_int_list, check_hypotheses, ngrams, resolve_tokenizer
from .base import EXACT, Metric, MetricError, check_references
from .declaration import COUNTED_INPUTS, NAMED_FIRST, Declaration, Setting
from .resampling import SET_LEVEL
from .summation import ordered_sum


def distinct_n(token_lists: Sequence[Sequence[str]], n: int, padded: bool = False) -> float:
    """Distinct-n over all sentences: distinct n-grams / all n-grams (0.0 when there is no n-gram).

    ``padded`` (CoTK's rule): each sentence gets ``n-1`` pad symbols on both sides first (NLTK's
    ``ngrams(s, n, pad_left=True, pad_right=True)``), so the n-grams at its edges count too."""
    seen: set[tuple[str | None, ...]] = set()
    total = 0
    pad: list[str | None] = [None] * (n - 1)
    for toks in token_lists:
        grams = ngrams(pad + list(toks) + pad if padded and n > 1 else toks, n)
        total += len(grams)
        seen.update(grams)
    return len(seen) / total if total else 0.0


def ngram_entropy(token_lists: Sequence[Sequence[str]], n: int, log_base: float | None = None) -> float:
    """Eq. 5: entropy of the n-gram frequency distribution of one group (0.0 when it has no n-gram)."""
    counts = Counter(g for toks in token_lists for g in ngrams(toks, n))
    z = sum(counts.values())
    if not z:
        return 0.0
    h = -ordered_sum(c / z * math.log(c / z) for c in counts.values())
    return h / math.log(log_base) if log_base else h


class _ReferenceFree(Metric):
    """Shared plumbing: tokenization, the optional reference set in the hash."""

    resampling = "none"
    no_interval = SET_LEVEL  # docs/metrics.md, "Significance and intervals"

    needs_references = False
    key_prefix = ""

    def __init__(self, ngram: Any, tokenizer: Any, normalize: Any = "none", **settings: Any) -> None:
        self.ngrams = as_int_list(ngram, "ngram")
        self.tokenizer = resolve_tokenizer(tokenizer, normalize)
        super().__init__(ngram=self.ngrams, tokenizer=self.tokenizer.spec, **settings)

    def more_settings(self) -> list[Setting]:
        """Settings a subclass adds after the metric's own (group-entropy's augmentation)."""
        return []

    def _entry(
        self, key: str, value: float, n: int, n_hyps: int, refs: list[list[Any]] | None, extra: Sequence[Setting]
    ) -> dict[str, Any]:
        decl = Declaration(
            self.name,
            self.version,
            [
                Setting.hash_only("metric", self.name, why=NAMED_FIRST),
                Setting("ngram", n, "n"),
                *extra,
                *self.more_settings(),
                Setting("tokenizer", self.tokenizer.spec, "tok", shown=self.tokenizer.name),
                Setting("hypotheses", n_hyps, "hyps"),
                Setting.signature_only("refs", "none" if refs is None else len(refs), why=COUNTED_INPUTS),
            ],
        )
        return decl.entry(key, value, lambda settings: self._hash(settings, refs))

    def _hash(self, settings: dict[str, Any], refs: list[list[Any]] | None) -> str:
        if refs is None:
            return hash_object({"cotk-repro/reference-free": settings, "references": None})
        return reference_set_hash(self.name, settings, [self.tokenizer.many(r) for r in refs])


class DistinctMetric(_ReferenceFree):
    """``distinct``: Distinct-n (``ngram``: an int or a list, default ``[1, 2]``; ``tokenizer``; ``padded``:
    False, True is CoTK's rule of padding each sentence before taking its n-grams)."""

    name = "distinct"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    level = "corpus"
    cost = 0.5
    result_keys = r"distinct-[0-9]+"

    def __init__(
        self, ngram: Any = (1, 2), tokenizer: Any = None, padded: bool = False, normalize: str = "none"
    ) -> None:
        self.padded = bool(padded)
        super().__init__(
            list(ngram) if isinstance(ngram, tuple) else ngram,
            tokenizer,
            normalize,
            **({"padded": True} if self.padded else {}),
        )

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        hyps = check_hypotheses(hypotheses)
        if not hyps:
            raise MetricError("distinct needs at least one hypothesis")
        refs = check_references(hyps, references, required=False)
        toks = self.tokenizer.many(hyps)
        out: dict[str, Any] = {}
        extra = [Setting("padded", True, "padded")] if self.padded else []
        for n in self.ngrams:
            out.update(self._entry(f"distinct-{n}", distinct_n(toks, n, self.padded), n, len(hyps), refs, extra))
        return out


class NgramEntropyMetric(_ReferenceFree):
    """``ngram-entropy``: eq. 5 per group, eq. 6 the mean over groups.

    Options: ``ngram`` (int or list, default ``[1, 2, 3]``), ``group_size`` (None: all hypotheses are one
    group; k: consecutive groups of k responses, e.g. the responses to one query's augmentations; the
    count must divide evenly), ``log_base`` (None: natural log; 2: bits), ``tokenizer``.
    :meth:`compute_groups` takes explicit groups.
    """

    name = "ngram-entropy"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    value_range = (0.0, float("inf"))
    level = "corpus"
    cost = 0.5
    result_keys = r"ngram-entropy-[0-9]+"

    def __init__(
        self,
        ngram: Any = (1, 2, 3),
        group_size: int | None = None,
        log_base: float | None = None,
        tokenizer: Any = None,
        normalize: str = "none",
    ) -> None:
        if group_size is not None and (
            isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1
        ):
            raise MetricError(f"group_size must be a positive integer or None, not {group_size!r}")
        if log_base is not None:
            try:
                log_base = float(log_base)
            except (TypeError, ValueError):
                raise MetricError(f"log_base must be a number > 1 or None, not {log_base!r}") from None
            if not (log_base > 1 and math.isfinite(log_base)):
                raise MetricError(f"log_base must be a number > 1 or None, not {log_base!r}")
        self.group_size = group_size
        self.log_base = log_base
        super().__init__(
            list(ngram) if isinstance(ngram, tuple) else ngram,
            tokenizer,
            normalize,
            group_size=group_size,
            log_base=log_base,
        )

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        hyps = check_hypotheses(hypotheses)
        if not hyps:
            raise MetricError("ngram-entropy needs at least one hypothesis")
        refs = check_references(hyps, references, required=False)
        if self.group_size is None:
            groups = [hyps]
        else:
            if len(hyps) % self.group_size:
                raise MetricError(f"{len(hyps)} hypotheses do not split into groups of {self.group_size}")
            groups = [hyps[i : i + self.group_size] for i in range(0, len(hyps), self.group_size)]
        return self._score(groups, refs, [Setting("group", self.group_size or "all", "group")])

    takes_groups = True

    def compute_groups(
        self, groups: Sequence[Sequence[Any]], references: Sequence[Sequence[Any]] | None = None
    ) -> dict[str, Any]:
        """Explicit groups of responses (``references``, optional: one list per group)."""
        checked = [check_hypotheses(g) for g in groups]
        if not checked or any(not g for g in checked):
            raise MetricError("ngram-entropy needs at least one group, and no empty group")
        refs = check_references(checked, references, required=False, what="reference lists, one per group")
        sizes = [len(g) for g in checked]
        return self._score(
            checked, refs, [Setting("group", "given", "group")], [Setting("groups", sizes, "groups", shown=len(sizes))]
        )

    def _score(
        self, groups: list[list[Any]], refs: Any, grouping: list[Setting], given: Sequence[Setting] = ()
    ) -> dict[str, Any]:
        tok_groups = [self.tokenizer.many(g) for g in groups]
        n_hyps = sum(len(g) for g in groups)
        extra = [*grouping, Setting("log", "e" if self.log_base is None else self.log_base, "log"), *given]
        out: dict[str, Any] = {}
        for n in self.ngrams:
            value = ordered_sum(ngram_entropy(g, n, self.log_base) for g in tok_groups) / len(tok_groups)
            out.update(self._entry(f"{self.name}-{n}", value, n, n_hyps, refs, extra))
        return out
