"""The vocabulary: special tokens, the frequent part F and the rare part R.

* Ids: ``<pad>`` 0, ``<unk>`` 1, ``<go>`` 2, ``<eos>`` 3, then F, then R.
* F = tokens of the training split seen at least ``min_frequent_vocab_times`` times.
* R = the other tokens of all splits seen at least ``min_rare_vocab_times`` times
  (counted over all splits; 0 or 1: every token). F and R are disjoint.
* Order: by count (descending), then by token (code points), so the vocabulary and
  its hash never depend on the order of the samples.

Two views of the ids: *frequent* (what a model sees: a rare token becomes ``<unk>``)
and *all vocab* (F ∪ R: what evaluation sees).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from .errors import DataError

SPECIAL_TOKENS = ("<pad>", "<unk>", "<go>", "<eos>")
PAD_ID, UNK_ID, GO_ID, EOS_ID = 0, 1, 2, 3


def order_by_count(tokens: Sequence[str], counts: npt.ArrayLike) -> list[str]:
    """Tokens by count descending, then by token."""
    negated = (-np.asarray(counts, np.int64)).tolist()
    return [t for _, t in sorted(zip(negated, tokens))]


class Vocab:
    """Special tokens + F + R with id lookups in both views."""

    special_tokens: ClassVar[list[str]] = list(SPECIAL_TOKENS)
    pad_id, unk_id, go_id, eos_id = PAD_ID, UNK_ID, GO_ID, EOS_ID

    def __init__(self, frequent: Sequence[str], rare: Sequence[str]):
        frequent, rare = list(frequent), list(rare)
        clash = set(frequent) & set(rare)
        if clash:
            raise DataError(f"frequent and rare vocabularies overlap ({sorted(clash)[0]!r})")
        specials = set(SPECIAL_TOKENS) & (set(frequent) | set(rare))
        if specials:
            raise DataError(
                f"the data holds the special token {sorted(specials)[0]!r}; "
                f"special tokens are {', '.join(SPECIAL_TOKENS)}"
            )
        self.frequent: list[str] = frequent
        self.rare: list[str] = rare
        self.all_tokens: list[str] = [*SPECIAL_TOKENS, *frequent, *rare]
        self._ids: dict[str, int] = dict(zip(self.all_tokens, range(len(self.all_tokens))))

    @classmethod
    def from_counts(
        cls,
        tokens: Sequence[str],
        train_counts: Sequence[int] | np.ndarray,
        all_counts: Sequence[int] | np.ndarray,
        min_frequent_vocab_times: int,
        min_rare_vocab_times: int,
    ) -> Vocab:
        """Build F and R from per-token counts (``tokens[i]`` seen ``train_counts[i]`` times in
        the training split and ``all_counts[i]`` times in all splits)."""
        train = np.asarray(train_counts)
        every = np.asarray(all_counts)
        in_f = (train >= max(1, min_frequent_vocab_times)) & (train > 0)
        in_r = ~in_f & (every >= max(1, min_rare_vocab_times))
        f_idx = np.flatnonzero(in_f)
        r_idx = np.flatnonzero(in_r)
        frequent = order_by_count([tokens[i] for i in f_idx.tolist()], train[f_idx])
        rare = order_by_count([tokens[i] for i in r_idx.tolist()], every[r_idx])
        return cls(frequent, rare)

    # -- sizes ----------------------------------------------------------------------
    @property
    def frequent_vocab_size(self) -> int:
        return len(SPECIAL_TOKENS) + len(self.frequent)

    @property
    def all_vocab_size(self) -> int:
        return len(self.all_tokens)

    def __len__(self) -> int:
        return self.all_vocab_size

    def __contains__(self, token: object) -> bool:
        return token in self._ids

    # -- lookups --------------------------------------------------------------------
    def token_to_id(self, token: str, only_frequent: bool = False) -> int:
        """All-vocab id of ``token`` (unknown -> ``unk_id``); with ``only_frequent``, rare -> ``unk_id``."""
        i = self._ids.get(token, UNK_ID)
        if only_frequent and i >= self.frequent_vocab_size:
            return UNK_ID
        return i

    def tokens_to_ids(self, tokens: Iterable[str], only_frequent: bool = False) -> list[int]:
        get = self._ids.get
        ids = [get(t, UNK_ID) for t in tokens]
        if only_frequent:
            n = self.frequent_vocab_size
            ids = [i if i < n else UNK_ID for i in ids]
        return ids

    def id_to_token(self, i: int) -> str:
        return self.all_tokens[int(i)]

    def ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        at = self.all_tokens
        return [at[int(i)] for i in ids]

    def is_frequent(self, token: str) -> bool:
        return len(SPECIAL_TOKENS) <= self._ids.get(token, 0) < self.frequent_vocab_size

    def is_rare(self, token: str) -> bool:
        return self._ids.get(token, 0) >= self.frequent_vocab_size

    def as_dict(self) -> dict:
        return {"special_tokens": list(SPECIAL_TOKENS), "frequent": self.frequent, "rare": self.rare}

    def __repr__(self) -> str:
        return f"<Vocab |F|={len(self.frequent)} |R|={len(self.rare)}>"
