"""CoTK 0.1.0's ``NgramFwBwPerplexityMetric`` over the native ``fw-rv-ppl`` with ``mode="cotk"``."""

from __future__ import annotations

from typing import Any

from ...metrics.kn_lm import FwRvPplMetric
from .base import ReferenceSetMetric


class NgramFwBwPerplexityMetric(ReferenceSetMetric):
    """CoTK's ``NgramFwBwPerplexityMetric``: CoTK's Kneser-Ney LM trained on the first ``sample`` references,
    scored on as many generated sentences (``fwppl``), and the reverse (``bwppl``)."""

    _name = "NgramFwBwPerplexityMetric"

    def __init__(
        self,
        dataloader: Any,
        reference_test_list: list[Any],
        ngram: int = 4,
        *,
        tokenizer: Any = None,
        gen_key: str = "gen",
        sample: int = 10000,
        seed: int = 1229,
        cpu_count: int | None = None,
    ):
        super().__init__(
            dataloader,
            reference_test_list,
            ngram,
            tokenizer=tokenizer,
            gen_key=gen_key,
            sample=sample,
            seed=seed,
            cpu_count=cpu_count,
        )

    def close(self) -> dict[str, Any]:
        res = super().close()
        count = min(self.sample, len(self.reference_test_list), len(self.hyps))
        tokens = self.dataloader.convert_ids_to_tokens
        refs = [tokens(ids) for ids in self.reference_test_list[:count]]
        hyps = [" ".join(tokens(ids)) for ids in self.hyps[:count]]
        # vocabulary tokens hold no space: the space tokenizer gives them back exactly
        native = FwRvPplMetric(self.ngram, mode="cotk", tokenizer="space").compute(hyps, [[" ".join(r)] for r in refs])
        res.update(
            self._native_result(
                native,
                {"fwppl": "fw-ppl", "bwppl": "rv-ppl"},
                {"fwppl hashvalue": "fw-ppl", "bwppl hashvalue": "rv-ppl"},
            )
        )
        return res
