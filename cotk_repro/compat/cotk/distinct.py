"""CoTK's ``DistinctNgrams`` (``DistinctNgramsCorpus``) over the native ``distinct`` with ``padded=True``.

CoTK 0.1.0's own class raises a ``TypeError`` in ``close()`` (it calls its ``replace_unk`` helper with a
keyword the helper does not take); this adapter computes what that code describes: a sample of ``sample``
sentences (shuffled with ``seed``, the first ``sample`` kept), the vocabulary's tokens, and n-grams over
each sentence padded with ``n-1`` pad symbols on both sides.
"""

from __future__ import annotations

import random
from typing import Any

from ...metrics.diversity import DistinctMetric
from .base import CotkMetric, as_list, need, no_tokenizer
from .vocab import as_cotk_loader


class DistinctNgramsCorpus(CotkMetric):
    """CoTK's ``DistinctNgramsCorpus`` (key ``distinct``)."""

    _name = "DistinctNgrams"
    _version = 1

    def __init__(
        self,
        dataloader: Any,
        ngram: int = 3,
        *,
        tokenizer: Any = None,
        sample: int = 10000,
        seed: int = 1234,
        gen_key: str = "gen",
    ):
        super().__init__()
        no_tokenizer(tokenizer)
        self.dataloader = as_cotk_loader(dataloader)
        self.ngram, self.sample, self.seed, self.gen_key = ngram, sample, seed, gen_key
        self.hyps: list[list[str]] = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        for ids in as_list(need(data, self.gen_key), "gen"):
            self.hyps.append(self.dataloader.convert_ids_to_tokens(ids))

    def close(self) -> dict[str, Any]:
        res = super().close()
        if not self.hyps:
            raise RuntimeError("The metric has not been forwarded data correctly.")
        order = list(range(len(self.hyps)))
        random.Random(self.seed).shuffle(order)
        picked = [self.hyps[i] for i in order[: min(self.sample, len(self.hyps))]]
        # vocabulary tokens hold no space: the space tokenizer gives them back exactly
        native = DistinctMetric(self.ngram, tokenizer="space", padded=True).compute([" ".join(t) for t in picked])
        key = f"distinct-{self.ngram}"
        res.update(self._native_result(native, {"distinct": key}, {"distinct hashvalue": key}))
        return res


DistinctNgrams = DistinctNgramsCorpus
