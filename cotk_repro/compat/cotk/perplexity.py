"""CoTK 0.1.0's perplexity metrics over the native perplexity (:mod:`cotk_repro.metrics.perplexity`).

CoTK's rules, as native settings: ``unk_targets="skip"``, ``rare_words="cotk"``, ``reference_check="cotk"``.
Sentences are fed one at a time, so jagged (unpadded) CoTK batches work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...metrics.perplexity import MultiTurnPerplexityMetric as NativeMultiTurn
from ...metrics.perplexity import PerplexityMetric as NativePerplexity
from .base import CotkMetric, as_list, need
from .vocab import as_cotk_loader

COTK_RULES: dict[str, Any] = {"unk_targets": "skip", "rare_words": "cotk", "reference_check": "cotk"}


def _check_width(logp: np.ndarray, dl: Any, generate_rare_vocab: bool) -> None:
    want = dl.all_vocab_size if generate_rare_vocab else dl.frequent_vocab_size
    if logp.shape[-1] != want:
        raise ValueError(
            f"The third dimension gen_log_prob should be equals to "
            f"{'all_vocab_size' if generate_rare_vocab else 'frequent_vocab_size'} when "
            f"generate_rare_vocab = {generate_rare_vocab}, but {logp.shape[-1]} != {want}"
        )


class PerplexityMetric(CotkMetric):
    """CoTK's ``PerplexityMetric``."""

    _name = "PerplexityMetric"

    def __init__(
        self,
        dataloader: Any,
        reference_allvocabs_key: str = "ref_allvocabs",
        reference_len_key: str = "ref_length",
        gen_log_prob_key: str = "gen_log_prob",
        generate_rare_vocab: bool = False,
        full_check: bool = False,
    ):
        super().__init__()
        self.dataloader = as_cotk_loader(dataloader)
        self.reference_allvocabs_key = reference_allvocabs_key
        self.reference_len_key = reference_len_key
        self.gen_log_prob_key = gen_log_prob_key
        self.generate_rare_vocab = bool(generate_rare_vocab)
        self.full_check = bool(full_check)
        self.native = self._native()

    def _native(self) -> NativePerplexity:
        return NativePerplexity(self.dataloader, check_probabilities=self.full_check, **COTK_RULES)

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        self._feed(
            as_list(need(data, self.reference_allvocabs_key), "resp_allvocabs"),
            as_list(need(data, self.reference_len_key), "resp_length"),
            as_list(need(data, self.gen_log_prob_key), "gen_log_prob"),
        )

    def _feed(self, ids: list, lengths: list, logp: list) -> None:
        if len(ids) != len(lengths) or len(ids) != len(logp):
            raise ValueError("Batch num of arguments is not matched.")
        for ref, length, lp in zip(ids, lengths, logp):
            length = int(length)
            if length < 2:
                raise ValueError("resp_length must no less than 2, because <go> and <eos> are always included.")
            rows = np.asarray(lp, dtype=np.float64)
            _check_width(rows, self.dataloader, self.generate_rare_vocab)
            self._one(np.asarray(ref[:length], dtype=np.int64), length, rows[: length - 1])

    def _one(self, ref: np.ndarray, length: int, rows: np.ndarray) -> None:
        self.native.forward({"sent_allvocabs": ref[None], "sent_length": [length], "gen_log_prob": rows[None]})

    def close(self) -> dict[str, Any]:
        res = super().close()
        if self.native._count == 0:
            raise RuntimeError("The metric has not been forwarded data correctly.")
        key = self.native.key
        res.update(self._native_result(self.native.close(), {"perplexity": key}, {"perplexity hashvalue": key}))
        return res


class MultiTurnPerplexityMetric(PerplexityMetric):
    """CoTK's ``MultiTurnPerplexityMetric``: every turn up to the first of length 0 (none skipped)."""

    _name = "MultiTurnPerplexityMetric"

    def __init__(
        self,
        dataloader: Any,
        multi_turn_reference_allvocabs_key: str = "multi_turn_ref_allvocabs",
        multi_turn_reference_len_key: str = "multi_turn_ref_length",
        multi_turn_gen_log_prob_key: str = "multi_turn_gen_log_prob",
        generate_rare_vocab: bool = False,
        full_check: bool = False,
    ):
        super().__init__(
            dataloader,
            multi_turn_reference_allvocabs_key,
            multi_turn_reference_len_key,
            multi_turn_gen_log_prob_key,
            generate_rare_vocab,
            full_check,
        )

    def _native(self) -> NativeMultiTurn:
        return NativeMultiTurn(
            self.dataloader, skip_first_turn=False, check_probabilities=self.full_check, key="perplexity", **COTK_RULES
        )

    def forward(self, data: dict[str, Any]) -> None:
        CotkMetric.forward(self, data)
        ids = as_list(need(data, self.reference_allvocabs_key), "reference_allvocabs")
        lengths = as_list(need(data, self.reference_len_key), "length")
        logp = as_list(need(data, self.gen_log_prob_key), "gen_log_prob")
        if len(lengths) != len(ids) or len(lengths) != len(logp):
            raise ValueError("Batch num is not matched.")
        for session, lens, lps in zip(ids, lengths, logp):
            lens = [int(x) for x in lens]
            turns = lens.index(0) if 0 in lens else len(lens)
            if len(session) < turns or len(lps) < turns:
                raise ValueError("Turn num is not matched.")
            self._feed(session[:turns], lens[:turns], lps[:turns])

    def _one(self, ref: np.ndarray, length: int, rows: np.ndarray) -> None:
        self.native.forward(
            {
                self.native.keys[0]: ref[None, None],
                self.native.keys[1]: [[length]],
                self.native.keys[2]: rows[None, None],
            }
        )
