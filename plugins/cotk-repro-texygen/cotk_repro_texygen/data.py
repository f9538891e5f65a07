"""The ``oracle-lstm`` dataloader: an oracle LSTM from a seed and its sizes, and the sentences it generates.

Sentences are token ids (``0`` .. ``vocab_size - 1``) written as space-separated text, so every metric of
the toolkit reads them as words. The five hash codes (as every cotk-repro loader has them) cover the seed,
the sizes, the oracle's weights and the generated splits.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cotk_repro.data import hashing

from .digest import array_digest
from .oracle import OracleError, build_oracle, check_sizes, oracle_info, save_oracle

#: the paper's synthetic benchmark (Texygen's defaults)
PAPER = {"vocab_size": 5000, "seq_len": 20, "emb_dim": 32, "hidden_dim": 32, "n_train": 10000, "n_test": 10000}


def to_text(tokens: Any) -> list[str]:
    """Token id rows -> space-separated sentences."""
    return [" ".join(map(str, row)) for row in np.asarray(tokens).tolist()]


def from_text(lines: list[str], vocab_size: int, seq_len: int) -> torch.Tensor:
    """Space-separated token ids -> a (n, seq_len) tensor; a line of another length or an unknown id is refused."""
    rows = []
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) != seq_len or not all(p.isdigit() and int(p) < vocab_size for p in parts):
            raise OracleError(f"sentence {i + 1} is not {seq_len} token ids below {vocab_size}: {line[:60]!r}")
        rows.append([int(p) for p in parts])
    return torch.tensor(rows, dtype=torch.long).reshape(len(rows), seq_len)


class OracleData:
    """The oracle and its generated ``train`` / ``test`` splits (in memory; :meth:`write` saves them)."""

    name = "oracle-lstm"

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        seed: int = 0,
        vocab_size: int = 5000,
        seq_len: int = 20,
        emb_dim: int = 32,
        hidden_dim: int = 32,
        n_train: int = 10000,
        n_test: int = 10000,
        **options: Any,
    ):
        if options:
            raise OracleError(
                f"the oracle-lstm loader has no option {min(options)!r}; it takes seed, "
                "vocab_size, seq_len, emb_dim, hidden_dim, n_train, n_test"
            )
        check_sizes(vocab_size, seq_len, emb_dim, hidden_dim)
        for what, n in (("n_train", n_train), ("n_test", n_test)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise OracleError(f"the oracle-lstm loader's {what} must be a positive integer, got {n!r}")
        self.path = Path(path) if path is not None else None
        self.oracle = build_oracle(seed, vocab_size, emb_dim, hidden_dim, seq_len)
        self.seed = seed
        self.settings = {
            "loader": self.name,
            "seed": seed,
            "vocab_size": vocab_size,
            "seq_len": seq_len,
            "emb_dim": emb_dim,
            "hidden_dim": hidden_dim,
            "n_train": n_train,
            "n_test": n_test,
            "oracle_weights": oracle_info(self.oracle, seed)["weights"],
        }
        with torch.random.fork_rng(devices=[]):  # the global RNG is the caller's; ours is our own
            rng = torch.Generator().manual_seed(seed + 1)
            self.splits = {"train": self.oracle.sample(n_train, rng), "test": self.oracle.sample(n_test, rng)}
        self.vocab = [str(i) for i in range(vocab_size)]
        raw = {s: array_digest(t.numpy()) for s, t in self.splits.items()}
        self.hash_codes = hashing.hash_codes(raw, raw, self.vocab, [], self.settings)

    def sentences(self, split: str) -> list[str]:
        """The split's sentences as space-separated token ids."""
        return to_text(self.splits[split].numpy())

    def batches(self, split: str, batch_size: int, shuffle: bool = True, seed: int = 0) -> Iterator[torch.Tensor]:
        """(B, T) token batches of a split, shuffled with ``seed``."""
        data = self.splits[split]
        order = (
            torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))
            if shuffle
            else torch.arange(len(data))
        )
        for i in range(0, len(data), batch_size):
            yield data[order[i : i + batch_size]]

    def write(self, folder: str | Path | None = None) -> Path:
        """Write ``train.txt``, ``test.txt`` and ``oracle.pt`` into ``folder`` (default: the loader's path)."""
        target = folder if folder is not None else self.path
        if target is None:
            raise ValueError("give write() a folder: this loader was built without a path")
        folder = Path(target)
        folder.mkdir(parents=True, exist_ok=True)
        for split in self.splits:
            (folder / f"{split}.txt").write_text("\n".join(self.sentences(split)) + "\n", encoding="utf-8")
        save_oracle(self.oracle, folder / "oracle.pt", self.seed)
        return folder

    def summary(self, reference_split: str | None = None) -> dict[str, Any]:
        """What ``cotk-repro data hashes`` shows for a loader."""
        return {
            "loader": self.name,
            "path": str(self.path),
            "tokenizer": "space",
            "hash_codes": dict(self.hash_codes),
            "vocab": {
                "frequent": len(self.vocab),
                "rare": 0,
                "frequent_vocab_size": len(self.vocab),
                "all_vocab_size": len(self.vocab),
            },
            "splits": {s: {"samples": len(t), "tokens": int(t.numel()), "files": []} for s, t in self.splits.items()},
            "settings": self.settings,
        }


def oracle_lstm(path=None, **options: Any) -> OracleData:
    """The ``oracle-lstm`` loader factory (``cotk_repro.data.load("oracle-lstm", path, seed=..., ...)``)."""
    return OracleData(path, **options)
