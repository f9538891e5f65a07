"""CoTK 0.1.0's ``NgramFwBwPerplexityMetric`` over the native ``fw-rv-ppl`` with ``mode="cotk"``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...metrics.kn_lm import FwRvPplMetric
from .base import CotkMetric, as_list, need, no_tokenizer
from .vocab import as_cotk_loader


class NgramFwBwPerplexityMetric(CotkMetric):
    """CoTK's ``NgramFwBwPerplexityMetric``: CoTK's Kneser-Ney LM trained on the first ``sample`` references,
    scored on as many generated sentences (``fwppl``), and the reverse (``bwppl``)."""

    _name = "NgramFwBwPerplexityMetric"

    def __init__(self, dataloader: Any, reference_test_list: List[Any], ngram: int = 4, *, tokenizer: Any = None,
                 gen_key: str = "gen", sample: int = 10000, seed: int = 1229, cpu_count: Optional[int] = None):
        super().__init__()
        no_tokenizer(tokenizer)
        self.dataloader = as_cotk_loader(dataloader)
        self.reference_test_list = as_list(reference_test_list, "reference_test_list")
        self.ngram, self.gen_key, self.sample, self.seed = ngram, gen_key, sample, seed
        self.cpu_count = cpu_count
        self.hyps: List[Any] = []

    def forward(self, data: Dict[str, Any]) -> None:
        super().forward(data)
        self.hyps.extend(as_list(need(data, self.gen_key), "gen"))

    def close(self) -> Dict[str, Any]:
        res = super().close()
        count = min(self.sample, len(self.reference_test_list), len(self.hyps))
        tokens = self.dataloader.convert_ids_to_tokens
        refs = [tokens(ids) for ids in self.reference_test_list[:count]]
        hyps = [" ".join(tokens(ids)) for ids in self.hyps[:count]]
        # vocabulary tokens hold no space: the space tokenizer gives them back exactly
        native = FwRvPplMetric(self.ngram, mode="cotk", tokenizer="space").compute(
            hyps, [[" ".join(r)] for r in refs])
        res.update(self._native_result(native, {"fwppl": "fw-ppl", "bwppl": "rv-ppl"},
                                       {"fwppl hashvalue": "fw-ppl", "bwppl hashvalue": "rv-ppl"}))
        return res
