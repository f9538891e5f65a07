"""Accuracy: the share of predictions equal to their label."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..text.reference_hashes import reference_set_hash
from .base import EXACT, Metric, MetricError
from .declaration import COUNTED_INPUTS, Declaration, Setting


class AccuracyMetric(Metric):
    """``accuracy``: ``compute(predictions, labels)``; each label a value or a one-element list (the one
    reference layout). Labels compare by equality (ints, strings, ...). The hash covers the labels."""

    name = "accuracy"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    higher_is_better = True
    value_range = (0.0, 1.0)
    level = "sentence"
    cost = 0.01
    result_keys = "accuracy"
    key_facts: ClassVar[dict[str, dict[str, Any]]] = {}

    #: a resample's accuracy is the share of its items that are right (docs/metrics.md, "Significance and
    #: intervals")
    resampling = "values"

    def resample_values(self, hypotheses: Sequence[Any], references: Sequence[Any] | None) -> dict[str, list[float]]:
        """1.0 for each right prediction, 0.0 for each wrong one: the value is their mean."""
        preds = list(hypotheses)
        labels = self._labels(preds, references)
        return {self.name: [1.0 if p == label else 0.0 for p, label in zip(preds, labels)]}

    @staticmethod
    def _labels(preds: list[Any], references: Sequence[Any] | None) -> list[Any]:
        if references is None:
            raise MetricError("accuracy needs the labels as references")
        labels = [r[0] if isinstance(r, (list, tuple)) and len(r) == 1 else r for r in references]
        if len(labels) != len(preds):
            raise MetricError(f"{len(preds)} predictions but {len(labels)} labels: give one label per prediction")
        if not preds:
            raise MetricError("accuracy needs at least one prediction")
        return labels

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Any] | None = None) -> dict[str, Any]:
        preds = list(hypotheses)
        labels = self._labels(preds, references)
        value = sum(1 for p, label in zip(preds, labels) if p == label) / len(preds)
        decl = Declaration(self.name, self.version, [Setting.signature_only("n", len(preds), why=COUNTED_INPUTS)])
        return decl.entry(
            self.name,
            value,
            lambda settings: reference_set_hash(self.name, settings, [[[repr(label)]] for label in labels]),
        )
