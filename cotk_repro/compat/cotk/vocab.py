"""What a CoTK metric needs of its ``dataloader``: CoTK 0.1.0's id conventions over one vocabulary.

CoTK's rules, which differ from this library's loaders only in corner cases:

* ``trim_in_ids``: cut at the first ``<eos>`` (excluded), then drop the *trailing* ``<pad>`` only (a
  ``<pad>`` inside a sentence stays, and is scored as one token);
* ``remove_special``: drop a leading ``<go>`` and a trailing ``<eos>``;
* the frequent vocabulary is the first ``valid_vocab_len`` tokens (special tokens included).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...metrics.base import MetricError

SPECIAL_TOKENS = {"pad": "<pad>", "unk": "<unk>", "go": "<go>", "eos": "<eos>"}


class _Vocab:
    """``frequent``/``rare`` word lists (no special tokens), as the native perplexity metric reads them."""

    def __init__(self, all_vocab_list: Sequence[str], valid_vocab_len: int):
        specials = set(SPECIAL_TOKENS.values())
        self.frequent = [t for t in all_vocab_list[:valid_vocab_len] if t not in specials]
        self.rare = [t for t in all_vocab_list[valid_vocab_len:] if t not in specials]


class CotkVocabLoader:
    """A CoTK-style dataloader view of one vocabulary (see the module docstring)."""

    def __init__(
        self,
        all_vocab_list: Sequence[str],
        valid_vocab_len: int,
        detokenize: Callable[[Sequence[str]], str] | None = None,
    ):
        self.all_vocab_list = [str(t) for t in all_vocab_list]
        valid_vocab_len = int(valid_vocab_len)
        if not 0 < valid_vocab_len <= len(self.all_vocab_list):
            raise MetricError(
                f"valid_vocab_len must be between 1 and the vocabulary size "
                f"{len(self.all_vocab_list)}, not {valid_vocab_len}"
            )
        missing = [t for t in SPECIAL_TOKENS.values() if t not in self.all_vocab_list[:valid_vocab_len]]
        if missing:
            raise MetricError(f"the vocabulary has no {missing[0]} among its first {valid_vocab_len} tokens")
        self.frequent_vocab_size = valid_vocab_len
        self.all_vocab_size = len(self.all_vocab_list)
        ids = {t: i for i, t in enumerate(self.all_vocab_list)}
        self.pad_id, self.unk_id = ids["<pad>"], ids["<unk>"]
        self.go_id, self.eos_id = ids["<go>"], ids["<eos>"]
        self.vocab = _Vocab(self.all_vocab_list, valid_vocab_len)
        self._detokenize = detokenize or " ".join

    @property
    def frequent_vocab_list(self) -> list[str]:
        return self.all_vocab_list[: self.frequent_vocab_size]

    def get_special_tokens_mapping(self) -> dict[str, str]:
        return dict(SPECIAL_TOKENS)

    def trim_in_ids(self, ids: Sequence[int]) -> list[int]:
        """Cut at the first ``<eos>``, then drop trailing ``<pad>``."""
        ids = [int(i) for i in ids]
        if self.eos_id in ids:
            ids = ids[: ids.index(self.eos_id)]
        end = len(ids)
        while end and ids[end - 1] == self.pad_id:
            end -= 1
        return ids[:end]

    def remove_special_in_ids(self, ids: Sequence[int], remove_special: bool = True, trim: bool = True) -> list[int]:
        ids = self.trim_in_ids(ids) if trim else [int(i) for i in ids]
        if remove_special and ids:
            start = 1 if ids[0] == self.go_id else 0
            end = len(ids) - 1 if ids[-1] == self.eos_id else len(ids)
            ids = ids[start:end]
        return ids

    def ids_to_tokens(self, ids: Sequence[int]) -> list[str]:
        """Each id's token, nothing removed."""
        try:
            return [self.all_vocab_list[int(i)] for i in ids]
        except IndexError:
            raise MetricError(f"an id is outside the vocabulary (0..{self.all_vocab_size - 1})") from None

    def convert_ids_to_tokens(self, ids: Sequence[int], remove_special: bool = True, trim: bool = True) -> list[str]:
        return self.ids_to_tokens(self.remove_special_in_ids(ids, remove_special, trim))

    def convert_tokens_to_sentence(self, tokens: Sequence[str]) -> str:
        return self._detokenize(list(tokens))

    def convert_ids_to_sentence(self, ids: Sequence[int], remove_special: bool = True, trim: bool = True) -> str:
        return self.convert_tokens_to_sentence(self.convert_ids_to_tokens(ids, remove_special, trim))

    def convert_multi_turn_ids_to_tokens(
        self, session: Sequence[Sequence[int]], remove_special: bool = True, trim: bool = True
    ) -> list[list[str]]:
        """Each turn's tokens (CoTK's ``Session`` rule: every turn, converted alone)."""
        return [self.convert_ids_to_tokens(turn, remove_special, trim) for turn in session]


def vocab_dataloader(all_vocab_list: Sequence[str], valid_vocab_len: int) -> CotkVocabLoader:
    """The dataloader CoTK's tests build with ``GeneralVocab.from_predefined(all_vocab_list, valid_vocab_len)``."""
    return CotkVocabLoader(all_vocab_list, valid_vocab_len)


def as_cotk_loader(dataloader: Any) -> CotkVocabLoader:
    """A :class:`CotkVocabLoader` from one, from this library's dataloaders, or from CoTK's test dict form."""
    if isinstance(dataloader, CotkVocabLoader):
        return dataloader
    if isinstance(dataloader, dict) and "all_vocab_list" in dataloader:
        return vocab_dataloader(dataloader["all_vocab_list"], dataloader["valid_vocab_len"])
    vocab = getattr(dataloader, "vocab", None)
    if vocab is not None and hasattr(vocab, "all_tokens") and hasattr(vocab, "frequent_vocab_size"):
        detok = getattr(dataloader, "convert_tokens_to_sentence", None)
        return CotkVocabLoader(vocab.all_tokens, vocab.frequent_vocab_size, detok)
    raise MetricError(
        "dataloader must be one of this library's dataloaders or "
        "cotk_repro.compat.cotk.vocab_dataloader(all_vocab_list, valid_vocab_len)"
    )
