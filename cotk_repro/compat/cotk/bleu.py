"""CoTK 0.1.0's BLEU family over the native BLEU engine (:mod:`cotk_repro.metrics.bleu`).

CoTK scores the vocabulary's tokens as they are (``retokenize=False``: ``<pad>`` inside a sentence is one
token), never matches ``<unk>``, and samples by its own rule (``sample_mode="cotk"``).
"""

from __future__ import annotations

from typing import Any

from ...metrics.base import MetricError
from ...metrics.bleu import BleuMetric, FwBwBleuMetric, SelfBleuMetric
from .base import CotkMetric, ReferenceSetMetric, as_list, need, no_tokenizer
from .vocab import as_cotk_loader


class BleuCorpusMetric(CotkMetric):
    """CoTK's ``BleuCorpusMetric``: corpus BLEU-n (NLTK ``corpus_bleu``, ``method3``)."""

    _name = "BleuCorpusMetric"

    def __init__(
        self,
        dataloader: Any,
        ngram: int = 4,
        *,
        tokenizer: Any = None,
        reference_num: int | None = 1,
        ignore_smoothing_error: bool = False,
        reference_allvocabs_key: str = "ref_allvocabs",
        gen_key: str = "gen",
        reference_str_key: str = "ref_str",
    ):
        super().__init__()
        no_tokenizer(tokenizer)
        self.dataloader = as_cotk_loader(dataloader)
        self.ngram = ngram
        self.reference_num = reference_num
        self.ignore_smoothing_error = ignore_smoothing_error
        self.reference_allvocabs_key = reference_allvocabs_key
        self.reference_str_key = reference_str_key
        self.gen_key = gen_key
        self.hyps: list[list[str]] = []
        self.refs: list[list[list[str]]] = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        gen = as_list(need(data, self.gen_key), "gen")
        resp = as_list(need(data, self.reference_allvocabs_key), "resp")
        if len(resp) != len(gen):
            raise ValueError("Batch num is not matched.")
        tokens = self.dataloader.convert_ids_to_tokens
        for gen_sen, resp_sen in zip(gen, resp):
            if self.reference_num == 1:
                refs = [tokens(resp_sen)]
            else:
                if self.reference_num is not None and len(resp_sen) != self.reference_num:
                    raise RuntimeError(f"Require {self.reference_num} references but get {len(resp_sen)}")
                refs = [tokens(r) for r in resp_sen]
            self.hyps.append(tokens(gen_sen))
            self.refs.append(refs)

    def close(self) -> dict[str, Any]:
        result = super().close()
        if not self.hyps or not self.refs:
            raise RuntimeError("The metric has not been forwarded data correctly.")
        native = BleuMetric(self.ngram, retokenize=False).compute(self.hyps, self.refs)
        result.update(self._native_result(native, {"bleu": "bleu"}, {"bleu hashvalue": "bleu"}))
        return result


class MultiTurnBleuCorpusMetric(CotkMetric):
    """CoTK's ``MultiTurnBleuCorpusMetric``: corpus BLEU-4 over every turn (ids trimmed, the reference's
    first id, ``<go>``, dropped; the hypothesis keeps a leading ``<go>``, as CoTK does)."""

    _name = "MultiTurnBleuCorpusMetric"

    def __init__(
        self,
        dataloader: Any,
        ignore_smoothing_error: bool = False,
        multi_turn_reference_allvocabs_key: str = "reference_allvocabs",
        multi_turn_gen_key: str = "multi_turn_gen",
        turn_len_key: str = "turn_length",
    ):
        super().__init__()
        self.dataloader = as_cotk_loader(dataloader)
        self.ignore_smoothing_error = ignore_smoothing_error
        self.multi_turn_reference_allvocabs_key = multi_turn_reference_allvocabs_key
        self.multi_turn_gen_key = multi_turn_gen_key
        self.turn_len_key = turn_len_key
        self.hyps: list[list[str]] = []
        self.refs: list[list[list[str]]] = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        reference = as_list(need(data, self.multi_turn_reference_allvocabs_key), "reference_allvocabs")
        length = as_list(need(data, self.turn_len_key), "length")
        gen = as_list(need(data, self.multi_turn_gen_key), "gen")
        if len(length) != len(reference) or len(length) != len(gen):
            raise ValueError("Batch num is not matched.")
        dl = self.dataloader
        for i, turns in enumerate(length):
            for j in range(int(turns)):
                self.hyps.append(dl.ids_to_tokens(dl.trim_in_ids(gen[i][j])))
                self.refs.append([dl.ids_to_tokens(dl.trim_in_ids(reference[i][j])[1:])])

    def close(self) -> dict[str, Any]:
        result = super().close()
        if not self.hyps or not self.refs:
            raise RuntimeError("The metric has not been forwarded data correctly.")
        native = BleuMetric(4, retokenize=False).compute(self.hyps, self.refs)
        result.update(self._native_result(native, {"bleu": "bleu"}, {"bleu hashvalue": "bleu"}))
        return result


class SelfBleuCorpusMetric(CotkMetric):
    """CoTK's ``SelfBleuCorpusMetric``: native Self-BLEU with ``sample_mode="cotk"`` (shuffle with ``seed``,
    keep the first ``sample``)."""

    _name = "SelfBleuCorpusMetric"

    def __init__(
        self,
        dataloader: Any,
        ngram: int = 4,
        *,
        tokenizer: Any = None,
        gen_key: str = "gen",
        sample: int = 1000,
        seed: int = 1229,
        cpu_count: int | None = None,
    ):
        super().__init__()
        no_tokenizer(tokenizer)
        self.dataloader = as_cotk_loader(dataloader)
        self.ngram, self.gen_key, self.sample, self.seed = ngram, gen_key, sample, seed
        self.cpu_count = cpu_count  # accepted for CoTK compatibility: the native engine needs no pool
        self.hyps: list[Any] = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        self.hyps.extend(as_list(need(data, self.gen_key), "gen"))

    def close(self) -> dict[str, Any]:
        res = super().close()
        if not self.hyps:
            raise RuntimeError("The metric has not been forwarded data correctly.")
        if len(self.hyps) == 1:
            raise RuntimeError("Self-Bleu can't be computed because there is only 1 generated sentence.")
        if self.sample <= 1:
            raise RuntimeError(f"`self.sample` should be more than 1, whose value is `{self.sample}`")
        tokens = [self.dataloader.convert_ids_to_tokens(ids) for ids in self.hyps]
        native = SelfBleuMetric(
            self.ngram, sample=self.sample, seed=self.seed, sample_mode="cotk", retokenize=False
        ).compute(tokens)
        res.update(self._native_result(native, {"self-bleu": "self-bleu"}, {"self-bleu hashvalue": "self-bleu"}))
        return res


class FwBwBleuCorpusMetric(ReferenceSetMetric):
    """CoTK's ``FwBwBleuCorpusMetric``: native forward/backward BLEU with ``sample_mode="cotk"`` (the first
    ``sample`` generated sentences and the first ``sample`` references)."""

    _name = "FwBwBleuCorpusMetric"

    def __init__(
        self,
        dataloader: Any,
        reference_test_list: list[Any],
        ngram: int = 4,
        *,
        tokenizer: Any = None,
        gen_key: str = "gen",
        sample: int = 1000,
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
        if not self.hyps:
            raise RuntimeError("The metric has not been forwarded data correctly.")
        if not self.reference_test_list:
            raise RuntimeError("Reference cannot be empty")
        for what, count in (("sample_hyps", len(self.hyps)), ("sample_refs", len(self.reference_test_list))):
            if min(self.sample, count) <= 1:
                raise RuntimeError(f"`{what}` should be more than 1, whose value is `{min(self.sample, count)}`")
        tokens = self.dataloader.convert_ids_to_tokens  # it trims each id list first, as CoTK's forward does
        refs = [r if isinstance(r, str) else tokens(r) for r in self.reference_test_list]
        if any(isinstance(r, str) for r in refs):
            raise MetricError("reference_test_list must hold id lists (CoTK's tokenizer=None form)")
        native = FwBwBleuMetric(
            self.ngram, sample=self.sample, seed=self.seed, sample_mode="cotk", retokenize=False
        ).compute([tokens(h) for h in self.hyps], refs)
        res.update(
            self._native_result(
                native, {k: k for k in ("fw-bleu", "bw-bleu", "fw-bw-bleu")}, {"fw-bw-bleu hashvalue": "fw-bw-bleu"}
            )
        )
        return res
