"""``coherence`` and ``fluency`` (Pang et al. 2020, "Towards Holistic and Automatic Evaluation of Open-Domain
Dialogue Generation") and ``group-entropy`` (diversity under controlled queries).

* ``fluency-raw`` = mean over responses of ``f_raw(r) = (1/|r|) log P(r)``; ``coherence-raw`` likewise with
  ``c_raw(r|q) = (1/|r|) log P(r | q)``; ``|r|`` counts the model's tokens of ``r`` (natural log).
* ``fluency`` / ``coherence``: each raw score normalized to [0, 1] with a lower bound ``s5``, the 5th
  percentile of raw scores: ``(max(s5, s) - s5) / (-s5)``, then averaged. Fair across systems only when
  ``s5`` is computed once on a declared set and reused: ``reference=FILE`` (e.g. the human responses of the
  test split; for coherence line-aligned with the queries, or with ``reference_queries=FILE``), or
  ``lower_bound=VALUE`` (with ``lower_bound_from=LABEL`` saying where it came from). ``normalize="self"``
  (each system's own outputs) is allowed, named in the hash and signature. With none of them only the raw
  value is reported.
* ``group-entropy``: the n-gram entropy in bits of each group's responses, averaged over groups
  (``ngram-entropy`` with ``log_base=2`` over explicit groups), the augmentation in the hash.

Hashes cover the model's weights and tokenizer files, the input format, the normalization and the scored data
(the queries; the number of responses). The normalization enters the hash by what defines it: a given bound by
its value (declared), a computed bound by the set it came from (the digests of the reference responses and
queries, or of the system's own responses for ``self``) and the percentile. A computed bound's value is shown
in the signature only: it is a float the model produced, whose last bits move with torch's CPU kernels, so
hashing it would give the same declared computation another hash on another machine (docs/metrics.md,
"What a hash may contain").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from cotk_repro.core.canonical import hash_object
from cotk_repro.metrics.base import Metric, MetricError
from cotk_repro.metrics.declaration import (
    COMPUTED_VALUE,
    FIXED_BY_VERSION,
    HASH_ONLY_AS_PUBLISHED,
    NAMED_FIRST,
    PART_OF_HASHED,
    Declaration,
    Setting,
)
from cotk_repro.metrics.diversity import NgramEntropyMetric

from .lm import FORMAT, encode_pairs, load_model, log_likelihoods

PERCENTILE = 5.0
NORMALIZE_MODES = ("reference", "given", "self", "none")


def percentile_bound(raw: Sequence[float], percentile: float = PERCENTILE) -> float:
    """The lower bound: numpy's (linear) ``percentile`` of the raw scores."""
    import numpy as np

    if not len(raw):
        raise MetricError("the lower bound needs at least one raw score")
    return float(np.percentile(np.asarray(raw, dtype=np.float64), percentile))


def normalized(raw: float, bound: float) -> float:
    """``(max(bound, raw) - bound) / (-bound)``: 0 at and below the bound, 1 at log-probability 0."""
    if not bound < 0:
        raise MetricError(f"the lower bound must be negative (a log-probability), not {bound!r}")
    return (max(bound, raw) - bound) / (-bound)


def _texts(value: Any, what: str) -> tuple[list[str], str]:
    """A list of strings, or a UTF-8 file of lines; with a label for signatures."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value), f"list({len(value)})"
    if isinstance(value, (str, Path)):
        from cotk_repro.metrics.files import _read_lines

        return _read_lines(Path(value), what), Path(value).name
    raise MetricError(f"{what} must be a file path or a list of strings, not {type(value).__name__}")


def _texts_hash(texts: Sequence[str]) -> str:
    return hash_object({"cotk-repro-lm/texts": list(texts)})


class _LMScore(Metric):
    """Shared by coherence and fluency: model loading, scoring, normalization, hashes."""

    needs_references = False
    takes_queries = True
    needs_queries = False
    level = "sentence"
    cost = 200.0
    version = "1"

    def __init__(
        self,
        model: Any = None,
        *,
        batch_size: int = 32,
        padding_side: str = "right",
        device: str = "auto",
        per_sentence: bool = False,
        normalize: str | None = None,
        reference: Any = None,
        reference_queries: Any = None,
        lower_bound: float | None = None,
        lower_bound_from: str | None = None,
        progress: bool = False,
    ) -> None:
        if model is None:
            raise MetricError(
                f"{self.name} needs a language model folder: -o {self.name}.model=DIR (e.g. one "
                f"written by `cotk-repro lm finetune`)"
            )
        if normalize is None:
            normalize = "reference" if reference is not None else "given" if lower_bound is not None else "none"
        if normalize not in NORMALIZE_MODES:
            raise MetricError(f"normalize must be one of {', '.join(NORMALIZE_MODES)}, not {normalize!r}")
        if normalize == "reference" and reference is None:
            raise MetricError("normalize=reference needs reference=FILE (e.g. the human responses of the test split)")
        if normalize == "given":
            try:
                lower_bound = float(lower_bound)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise MetricError(f"normalize=given needs a numeric lower_bound, not {lower_bound!r}") from None
            normalized(-1.0, lower_bound)  # checks the sign
        elif lower_bound is not None:
            raise MetricError(f"lower_bound is only used with normalize=given (normalize is {normalize!r})")
        if normalize != "reference" and (reference is not None or reference_queries is not None):
            raise MetricError(f"reference is only used with normalize=reference (normalize is {normalize!r})")
        if reference_queries is not None and not self.needs_queries:
            raise MetricError(f"{self.name} takes no reference_queries")
        self.lm = load_model(model, device)
        self.batch_size, self.padding_side = batch_size, padding_side
        self.per_sentence, self.progress = bool(per_sentence), bool(progress)
        self.normalize = normalize
        self.reference, self.reference_queries = reference, reference_queries
        self.lower_bound, self.lower_bound_from = lower_bound, lower_bound_from or "given"
        super().__init__(model=self.lm.identity, normalize=normalize)
        self._queries: list[str] = []
        self._bounds: dict[tuple[str, str | None], float] = {}

    # -- scoring --------------------------------------------------------------------------------------
    def raw_scores(self, responses: Sequence[str], queries: Sequence[str] | None = None) -> list[float]:
        """``(1/|r|) log P(r [| q])`` of each response."""
        items = encode_pairs(self.lm, queries, responses)
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(items), desc=self.name, unit="resp", leave=False)
        try:
            sums, counts = log_likelihoods(
                self.lm,
                items,
                batch_size=self.batch_size,
                padding_side=self.padding_side,
                progress=bar.update if bar is not None else None,
            )
        finally:
            if bar is not None:
                bar.close()
        return [s / n for s, n in zip(sums, counts)]

    def _bound(
        self, own: list[str], own_raw: list[float], queries: list[str] | None
    ) -> tuple[float | None, dict[str, Any], str]:
        """(bound, its identity for the hash, its signature label); ``own``: the scored responses."""
        if self.normalize == "none":
            return None, {}, "none"
        if self.normalize == "given":
            return (
                self.lower_bound,
                {"given": self.lower_bound, "from": self.lower_bound_from},
                f"given({self.lower_bound_from})",
            )
        if self.normalize == "self":
            bound = percentile_bound(own_raw)
            # the bound's identity: the responses it came from (the system's own), not its value
            return bound, {"self": {"responses": _texts_hash(own)}, "percentile": PERCENTILE}, f"self(p{PERCENTILE:g})"
        refs, label = _texts(self.reference, "reference")
        ref_queries = None
        if self.needs_queries:
            if self.reference_queries is not None:
                ref_queries, _ = _texts(self.reference_queries, "reference_queries")
            else:
                ref_queries = queries
            if ref_queries is None or len(ref_queries) != len(refs):
                have = "no" if ref_queries is None else len(ref_queries)
                raise MetricError(
                    f"the reference set has {len(refs)} responses but {have} queries: give "
                    f"reference_queries=FILE or line-aligned queries"
                )
        responses_hash = _texts_hash(refs)
        queries_hash = _texts_hash(ref_queries) if ref_queries else None
        source = {"responses": responses_hash, "queries": queries_hash, "percentile": PERCENTILE}
        key = (responses_hash, queries_hash)
        if key not in self._bounds:  # computed once per reference set, reused for every system scored
            self._bounds[key] = percentile_bound(self.raw_scores(refs, ref_queries))
        bound = self._bounds[key]
        return bound, {"reference": source}, f"ref({label},p{PERCENTILE:g})"

    def compute(
        self,
        hypotheses: Sequence[str],
        references: Sequence[Sequence[str]] | None = None,
        queries: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        hyps = [str(h) for h in hypotheses]
        if not hyps:
            raise MetricError(f"{self.name} needs at least one response")
        if self.needs_queries:
            if queries is None:
                raise MetricError(f"{self.name} needs the query of each response (--queries FILE)")
            queries = [str(q) for q in queries]
            if len(queries) != len(hyps):
                raise MetricError(f"{len(hyps)} responses but {len(queries)} queries: give one query per response")
        else:
            queries = None
        raw = self.raw_scores(hyps, queries)
        bound, bound_hash, bound_label = self._bound(hyps, raw, queries)
        base = [
            Setting.hash_only("metric", self.name, why=NAMED_FIRST),
            Setting("model", self.lm.identity, "model", shown=self.lm.weights_hash[:12]),
            Setting.signature_only("tok", self.lm.tokenizer_hash[:12], why=PART_OF_HASHED),
            Setting("responses", len(hyps), "n"),
            Setting.hash_only("format", FORMAT, why=FIXED_BY_VERSION),
            Setting.hash_only(
                "queries", _texts_hash(queries) if queries is not None else None, why=HASH_ONLY_AS_PUBLISHED
            ),
        ]
        raw_decl = Declaration(
            f"{self.name}-raw", self.version, [*base, Setting.hash_only("value", "raw", why=NAMED_FIRST)]
        )
        out = raw_decl.entry(f"{self.name}-raw", sum(raw) / len(raw), hash_object)
        scores = None
        if bound is not None:
            scores = [normalized(r, bound) for r in raw]
            decl = Declaration(
                self.name,
                self.version,
                [
                    *base,
                    Setting.hash_only("value", "normalized", why=NAMED_FIRST),
                    Setting("bound", bound_hash, "norm", shown=bound_label),
                    self._bound_value(float(bound)),
                ],
            )
            out.update(decl.entry(self.name, sum(scores) / len(scores), hash_object))
        if self.per_sentence:
            out[f"{self.name}-raw per-sentence"] = raw
            if scores is not None:
                out[f"{self.name} per-sentence"] = scores
        return out

    def _bound_value(self, bound: float) -> Setting:
        """The bound's value: hashed when declared (``given``); shown only when computed (``reference``,
        ``self``), whose identity the ``bound`` setting hashes."""
        if self.normalize == "given":
            return Setting("bound_value", bound, "bound", shown=round(bound, 6))
        return Setting.signature_only("bound", round(bound, 6), why=COMPUTED_VALUE)

    def compute_with_queries(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str]] | None, queries: Sequence[str]
    ) -> dict[str, Any]:
        """:meth:`compute` with the query of each response (fluency takes them and leaves them unread)."""
        return self.compute(hypotheses, references, queries=queries)

    # CoTK-style streaming: forward({"hyps": [...], "queries": [...]}) then close()
    def forward(self, batch: Any) -> None:
        super().forward({"hyps": batch["hyps"]})
        if self.needs_queries:
            if "queries" not in batch:
                raise MetricError(f"a {self.name} batch needs 'queries' beside 'hyps'")
            if len(batch["queries"]) != len(batch["hyps"]):
                raise MetricError("a batch has a different number of queries and hyps")
            self._queries.extend(batch["queries"])

    def close(self) -> dict[str, Any]:
        hyps, queries = self._hyps, self._queries
        self._hyps, self._queries, self._refs = [], [], None
        return self.compute(hyps, None, queries if self.needs_queries else None)


class FluencyMetric(_LMScore):
    """``fluency``: ``(1/|r|) log P(r)`` under a causal LM, raw and normalized (see the module docstring)."""

    name = "fluency"
    #: moved by up to 4.6e-9 (1.1e-6 relative, at 0.0044) on other CPU kernels; the margin of docs/metrics.md
    tolerance = (1e-5, 1e-7)
    result_keys = r"fluency(-raw)?"
    key_facts: ClassVar[dict[str, dict[str, Any]]] = {"fluency-raw": {"value_range": (-math.inf, 0.0)}}


class CoherenceMetric(_LMScore):
    """``coherence``: ``(1/|r|) log P(r | q)`` under a causal LM, raw and normalized (see the module docstring)."""

    name = "coherence"
    #: moved by up to 2.4e-8 (7.9e-6 relative, at 0.003) on other CPU kernels; the margin of docs/metrics.md
    tolerance = (1e-5, 1e-6)
    needs_queries = True
    result_keys = r"coherence(-raw)?"
    key_facts: ClassVar[dict[str, dict[str, Any]]] = {"coherence-raw": {"value_range": (-math.inf, 0.0)}}


class GroupEntropyMetric(NgramEntropyMetric):
    """``group-entropy``: n-gram entropy (bits) of each group of responses, averaged over the groups.

    Options: ``ngram`` (default ``[1, 2, 3]``), ``group_size`` (for :meth:`compute` on a flat list),
    ``tokenizer``, ``augmentation`` (how the groups were made, as written by ``cotk-repro augment``: it enters
    the hash and signature).
    """

    name = "group-entropy"
    version = "1"
    level = "corpus"
    value_range = (0.0, math.inf)
    result_keys = r"group-entropy-\d+"

    def __init__(
        self, ngram: Any = (1, 2, 3), group_size: int | None = None, tokenizer: Any = None, augmentation: Any = None
    ) -> None:
        if augmentation is not None and not isinstance(augmentation, (dict, str)):
            raise MetricError("augmentation must be an object (as cotk-repro augment writes) or a string")
        self.augmentation = augmentation
        super().__init__(ngram=ngram, group_size=group_size, log_base=2, tokenizer=tokenizer)

    def more_settings(self) -> list[Setting]:
        """The augmentation, hashed whole, shown by its method."""
        aug = self.augmentation.get("method", "?") if isinstance(self.augmentation, dict) else self.augmentation
        return [Setting("augmentation", self.augmentation, "aug", shown=aug or "none")]
