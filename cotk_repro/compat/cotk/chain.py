"""CoTK's ``MetricChain``: several metrics fed the same batches, their results merged."""

from __future__ import annotations

from typing import Any

from .base import CotkMetric


class MetricChain(CotkMetric):
    """CoTK's ``MetricChain`` (``add_metric``, then ``forward``/``close`` as one metric)."""

    _name = "MetricChain"

    def __init__(self) -> None:
        super().__init__()
        self.metric_list: list[CotkMetric] = []

    def add_metric(self, metric: CotkMetric) -> None:
        if not isinstance(metric, CotkMetric):
            raise TypeError("Metric must be a subclass of MetricBase")
        self.metric_list.append(metric)

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        for metric in self.metric_list:
            metric.forward(data)

    def close(self) -> dict[str, Any]:
        res = super().close()
        for metric in self.metric_list:
            res.update(metric.close())
            self.signatures.update(metric.signatures)
        return res
