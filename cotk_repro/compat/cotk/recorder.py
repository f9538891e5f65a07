"""CoTK's recorders: they keep the generated sentences (and references) as text, no score."""

from __future__ import annotations

from typing import Any

from .base import CotkMetric, as_list, need
from .vocab import as_cotk_loader


class SingleTurnDialogRecorder(CotkMetric):
    """CoTK's ``SingleTurnDialogRecorder``: ``post``, ``resp`` and ``gen`` sentences."""

    _name = "SingleTurnDialogRecorder"

    def __init__(
        self,
        dataloader: Any,
        post_allvocabs_key: str = "post_allvocabs",
        resp_allvocabs_key: str = "resp_allvocabs",
        gen_key: str = "gen",
    ):
        super().__init__()
        self.dataloader = as_cotk_loader(dataloader)
        self.post_allvocabs_key, self.resp_allvocabs_key, self.gen_key = post_allvocabs_key, resp_allvocabs_key, gen_key
        self.post_list: list[str] = []
        self.resp_list: list[str] = []
        self.gen_list: list[str] = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        post = as_list(need(data, self.post_allvocabs_key), "post_allvocabs")
        resp = as_list(need(data, self.resp_allvocabs_key), "resp_allvocabs")
        gen = as_list(need(data, self.gen_key), "gen")
        if len(post) != len(resp) or len(resp) != len(gen):
            raise ValueError("Batch num is not matched.")
        sentence = self.dataloader.convert_ids_to_sentence
        for p, r, g in zip(post, resp, gen):
            self.post_list.append(sentence(p[1:]))
            self.resp_list.append(sentence(r[1:]))
            self.gen_list.append(sentence(g))

    def close(self) -> dict[str, Any]:
        res = super().close()
        res.update({"post": self.post_list, "resp": self.resp_list, "gen": self.gen_list})
        return res


class MultiTurnDialogRecorder(CotkMetric):
    """CoTK's ``MultiTurnDialogRecorder``: ``reference`` and ``gen`` sessions (a list of turns each)."""

    _name = "MultiTurnDialogRecorder"

    def __init__(
        self,
        dataloader: Any,
        multi_turn_reference_allvocabs_key: str = "multi_turn_ref_allvocabs",
        multi_turn_gen_key: str = "multi_turn_gen",
        turn_len_key: str = "turn_length",
    ):
        super().__init__()
        self.dataloader = as_cotk_loader(dataloader)
        self.multi_turn_reference_allvocabs_key = multi_turn_reference_allvocabs_key
        self.multi_turn_gen_key, self.turn_len_key = multi_turn_gen_key, turn_len_key
        self.reference_list: list[list[str]] = []
        self.gen_list: list[list[str]] = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        reference = as_list(need(data, self.multi_turn_reference_allvocabs_key), "reference_allvocabs")
        gen = as_list(need(data, self.multi_turn_gen_key), "gen")
        turns = as_list(need(data, self.turn_len_key), "turn_length")
        if len(turns) != len(reference) or len(turns) != len(gen):
            raise ValueError("Batch num is not matched.")
        convert = self.dataloader.convert_multi_turn_ids_to_tokens
        for ref_session, gen_session in zip(reference, gen):
            refs = [" ".join(t) for t in convert(ref_session)]
            gens = [" ".join(t) for t in convert(gen_session)]
            if len(refs) != len(gens):
                raise ValueError(f"Reference turn num {len(refs)} != gen turn num {len(gens)}.")
            self.reference_list.append(refs)
            self.gen_list.append(gens)

    def close(self) -> dict[str, Any]:
        res = super().close()
        res.update({"reference": self.reference_list, "gen": self.gen_list})
        return res


class LanguageGenerationRecorder(CotkMetric):
    """CoTK's ``LanguageGenerationRecorder``: the ``gen`` sentences."""

    _name = "LanguageGenerationRecorder"

    def __init__(self, dataloader: Any, gen_key: str = "gen"):
        super().__init__()
        self.dataloader = as_cotk_loader(dataloader)
        self.gen_key = gen_key
        self.gen_list: list[str] = []

    def forward(self, data: dict[str, Any]) -> None:
        super().forward(data)
        for ids in as_list(need(data, self.gen_key), "gen"):
            self.gen_list.append(self.dataloader.convert_ids_to_sentence(ids))

    def close(self) -> dict[str, Any]:
        res = super().close()
        res.update({"gen": self.gen_list})
        return res
