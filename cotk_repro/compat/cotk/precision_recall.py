"""CoTK 0.1.0's precision/recall metrics over the native ``bleu-precision-recall`` and
``embedding-precision-recall`` with ``score_dtype="float32"`` (CoTK keeps the pair scores in 32 bits)."""

from __future__ import annotations

from typing import Any

from ...metrics.precision_recall import BleuPrecisionRecallMetric as NativeBleuPR
from ...metrics.precision_recall import EmbSimilarityPrecisionRecallMetric as NativeEmbPR
from .base import CotkMetric, as_list, need
from .vocab import as_cotk_loader


class _PrecisionRecallMetric(CotkMetric):
    """CoTK's ``_PrecisionRecallMetric``: references are ``candidate[1:]`` trimmed, responses trimmed."""

    def __init__(
        self, dataloader: Any, generated_num_per_context: int, candidates_allvocabs_key: str, multiple_gen_key: str
    ):
        super().__init__()
        self.dataloader = as_cotk_loader(dataloader)
        self.generated_num_per_context = generated_num_per_context
        self.candidates_allvocabs_key = candidates_allvocabs_key
        self.multiple_gen_key = multiple_gen_key
        self.gens: list[list[list[str]]] = []
        self.refs: list[list[list[str]]] = []

    def _tokens(self, ids: list[int]) -> list[str]:
        raise NotImplementedError

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        dl = self.dataloader
        candidates = as_list(need(data, self.candidates_allvocabs_key), "candidate_allvocabs")
        multiple_gen = as_list(need(data, self.multiple_gen_key), "multiple_gen")
        references = [[dl.trim_in_ids(c[1:]) for c in inst] for inst in candidates]
        gens = [[dl.trim_in_ids(g) for g in inst] for inst in multiple_gen]
        if len(references) != len(gens):
            raise ValueError("Batch num is not matched.")
        for line in gens:
            if len(line) != self.generated_num_per_context:
                raise ValueError(
                    "Number of geneated sentences per context does not equal to the specified "
                    "`generated_num_per_context`"
                )
        self.refs.extend([[self._tokens(r) for r in inst] for inst in references])
        self.gens.extend([[self._tokens(g) for g in inst] for inst in gens])

    def _result(self, native: Any, prefix: str) -> dict[str, Any]:
        res = super().close()
        if not self.gens:
            raise RuntimeError("The metric has not been forwarded data correctly.")
        out = native.compute(self.gens, self.refs)
        key = native.key_prefix
        res.update(
            self._native_result(
                out,
                {f"{prefix} precision": f"{key}-precision", f"{prefix} recall": f"{key}-recall"},
                {f"{prefix} hashvalue": f"{key}-precision"},
            )
        )
        return res


class BleuPrecisionRecallMetric(_PrecisionRecallMetric):
    """CoTK's ``BleuPrecisionRecallMetric`` (BLEU-``ngram`` of each response against each reference; the ids
    are the tokens, ``<go>`` and ``<pad>`` included)."""

    _name = "BleuPrecisionRecallMetric"

    def __init__(
        self,
        dataloader: Any,
        ngram: int,
        generated_num_per_context: int,
        candidates_allvocabs_key: str = "candidate_allvocabs",
        multiple_gen_key: str = "multiple_gen",
    ):
        super().__init__(dataloader, generated_num_per_context, candidates_allvocabs_key, multiple_gen_key)
        self.ngram = ngram

    def _tokens(self, ids: list[int]) -> list[str]:
        return self.dataloader.ids_to_tokens(ids)

    def close(self) -> dict[str, Any]:
        return self._result(NativeBleuPR(self.ngram, score_dtype="float32"), f"BLEU-{self.ngram}")


class EmbSimilarityPrecisionRecallMetric(_PrecisionRecallMetric):
    """CoTK's ``EmbSimilarityPrecisionRecallMetric`` (``word2vec``: a dict word -> vector)."""

    _name = "EmbSimilarityPrecisionRecallMetric"

    def __init__(
        self,
        dataloader: Any,
        word2vec: dict[str, Any],
        mode: str,
        generated_num_per_context: int,
        candidates_allvocabs_key: str = "candidate_allvocabs",
        multiple_gen_key: str = "multiple_gen",
    ):
        if not isinstance(word2vec, dict):
            raise ValueError("word2vec has invalid type")
        if mode not in ("avg", "extrema"):
            raise ValueError("mode should be 'avg' or 'extrema'.")
        super().__init__(dataloader, generated_num_per_context, candidates_allvocabs_key, multiple_gen_key)
        self.native = NativeEmbPR(word2vec, mode, score_dtype="float32") if word2vec else None
        self.mode = mode

    def _tokens(self, ids: list[int]) -> list[str]:
        return self.dataloader.convert_ids_to_tokens(ids)

    def close(self) -> dict[str, Any]:
        if self.native is None:
            raise ValueError("word embeddings are empty")
        return self._result(self.native, f"{self.mode}-bow")
