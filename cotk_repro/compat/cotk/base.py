"""The shared shape of the CoTK adapters: ``forward(data)`` many times, then ``close()``.

An adapter converts CoTK's inputs (id arrays, CoTK's trimming) and hands them to a native metric set
to the CoTK rule; ``close()`` returns CoTK's keys with this library's hashes in the ``hashvalue`` keys
(never CoTK's, which miss settings). The native signatures, which name each CoTK rule used, are in
:attr:`CotkMetric.signatures` after ``close()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...metrics.base import HASH_SUFFIX, SIGNATURE_SUFFIX, MetricError


class CotkMetric:
    """Base of the adapters (CoTK's ``MetricBase``)."""

    _name = "MetricBase"
    _version = 2

    def __init__(self) -> None:
        self.closed = False
        #: result key -> native signature, filled by close()
        self.signatures: dict[str, str] = {}

    def forward(self, data: dict[str, Any]) -> None:
        if self.closed:
            raise ValueError("The metric has been closed.")
        if not isinstance(data, dict):
            raise TypeError("Data must be a dict.")

    def close(self) -> dict[str, Any]:
        if self.closed:
            raise ValueError("The metric has been closed.")
        self.closed = True
        return {}

    def _native_result(
        self, native: Mapping[str, Any], keys: Mapping[str, str], hashes: Mapping[str, str]
    ) -> dict[str, Any]:
        """CoTK's keys from a native result: ``keys`` CoTK key -> native key, ``hashes`` CoTK hash key -> native
        key whose hash it carries."""
        out: dict[str, Any] = {}
        for cotk_key, key in keys.items():
            out[cotk_key] = native[key]
            if key + SIGNATURE_SUFFIX in native:
                self.signatures[cotk_key] = native[key + SIGNATURE_SUFFIX]
        for cotk_key, key in hashes.items():
            out[cotk_key] = native[key + HASH_SUFFIX]
        return out


class ReferenceSetMetric(CotkMetric):
    """CoTK's metrics that compare the generated set with ``reference_test_list`` (Fw/Bw-BLEU, n-gram
    fw/bw perplexity): the shared constructor and ``forward``; each subclass states CoTK's defaults."""

    def __init__(
        self,
        dataloader: Any,
        reference_test_list: Any,
        ngram: int,
        *,
        tokenizer: Any,
        gen_key: str,
        sample: int,
        seed: int,
        cpu_count: Any,
    ):
        from .vocab import as_cotk_loader

        super().__init__()
        no_tokenizer(tokenizer)
        self.dataloader = as_cotk_loader(dataloader)
        self.reference_test_list = as_list(reference_test_list, "reference_test_list")
        self.ngram, self.gen_key, self.sample, self.seed = ngram, gen_key, sample, seed
        self.cpu_count = cpu_count  # accepted for CoTK compatibility: the native engines need no pool
        self.hyps: list = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        self.hyps.extend(as_list(need(data, self.gen_key), "gen"))


def as_list(value: Any, what: str) -> list:
    """A batch entry as a list (CoTK accepts lists and numpy arrays)."""
    if isinstance(value, np.ndarray) or (not isinstance(value, (list, tuple)) and hasattr(value, "tolist")):
        return value.tolist()  # numpy arrays, torch tensors
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"Unknown type for {what}.")
    return [v.tolist() if hasattr(v, "tolist") and not isinstance(v, (str, bytes)) else v for v in value]


def need(data: Mapping[str, Any], key: str) -> Any:
    """Return `data[key]`, or raise MetricError naming the key the batch lacks."""
    if key not in data:
        raise MetricError(f"the batch has no {key!r}")
    return data[key]


def no_tokenizer(tokenizer: Any) -> None:
    """Raise MetricError unless `tokenizer` is None (the compat layer scores CoTK's own tokens)."""
    if tokenizer is not None:
        raise MetricError(
            "tokenizer= is not supported by the compat layer: CoTK scores the vocabulary's tokens "
            "with tokenizer=None; for re-tokenized BLEU use the native metrics"
        )
