"""CoTK 0.1.0's ``AccuracyMetric`` over the native ``accuracy``."""

from __future__ import annotations

from typing import Any

from ...metrics.accuracy import AccuracyMetric as NativeAccuracy
from .base import CotkMetric, as_list, need


class AccuracyMetric(CotkMetric):
    """CoTK's ``AccuracyMetric`` (``dataloader`` may be None)."""

    _name = "AccuracyMetric"

    def __init__(self, dataloader: Any, label_key: str = "label", prediction_key: str = "prediction"):
        super().__init__()
        self.dataloader = dataloader
        self.label_key, self.prediction_key = label_key, prediction_key
        self.hyps: list[Any] = []
        self.refs: list[Any] = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        preds = as_list(need(data, self.prediction_key), "prediction")
        labels = as_list(need(data, self.label_key), "label")
        if len(preds) != len(labels):
            raise ValueError("Batch num is not matched.")
        self.hyps.extend(preds)
        self.refs.extend(labels)

    def close(self) -> dict[str, Any]:
        res = super().close()
        if not self.hyps:
            raise RuntimeError("The metric has not been forwarded data correctly.")
        native = NativeAccuracy().compute(self.hyps, [[label] for label in self.refs])
        res.update(self._native_result(native, {"accuracy": "accuracy"}, {"accuracy hashvalue": "accuracy"}))
        return res
