"""Real-data mode: a corpus folder (``train.txt``, ``test.txt``, one sentence a line) as Texygen reads it.

Words are split on spaces and lowercased; the vocabulary is every word of both files, sorted, then ``<eof>``;
each sentence is cut to ``seq_len`` words and padded with ``<eof>`` (Texygen's ``text_process``). The five hash
codes cover the files' text, the token ids, the vocabulary and the settings.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from cotk_repro.data import hashing
from cotk_repro.errors import CotkError

from .digest import array_digest, canonical

EOF_TOKEN = "<eof>"


class RealData:
    name = "texygen-real"

    def __init__(self, path: str | Path, seq_len: int = 20, lowercase: bool = True):
        self.path = Path(path)
        texts = {}
        for split in ("train", "test"):
            f = self.path / f"{split}.txt"
            if not f.is_file():
                raise CotkError(f"real mode reads {f}, which is missing (one sentence a line)")
            lines = [ln.strip() for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
            if not lines:
                raise CotkError(f"{f} holds no sentence")
            texts[split] = lines
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 2:
            raise CotkError(f"seq_len must be an integer of at least 2, got {seq_len!r}")
        words = {s: [(ln.lower() if lowercase else ln).split()[:seq_len] for ln in lines] for s, lines in texts.items()}
        self.vocab = sorted({w for split in words.values() for sent in split for w in sent}) + [EOF_TOKEN]
        index = {w: i for i, w in enumerate(self.vocab)}
        eof = len(self.vocab) - 1
        self.splits = {
            s: torch.tensor(
                [[index[w] for w in sent] + [eof] * (seq_len - len(sent)) for sent in split], dtype=torch.long
            )
            for s, split in words.items()
        }
        self.texts = {s: [" ".join(sent) for sent in split] for s, split in words.items()}
        self.settings = {"loader": self.name, "seq_len": seq_len, "lowercase": lowercase, "vocab_size": len(self.vocab)}
        raw = {s: hashlib.sha256(canonical(lines)).hexdigest() for s, lines in texts.items()}
        data = {s: array_digest(t.numpy()) for s, t in self.splits.items()}
        self.hash_codes = hashing.hash_codes(raw, data, self.vocab, [], self.settings)

    def decode(self, tokens: torch.Tensor) -> list[str]:
        """Token ids -> sentences, cut at the first ``<eof>``."""
        eof = len(self.vocab) - 1
        out = []
        for row in tokens.tolist():
            words = []
            for t in row:
                if t == eof:
                    break
                words.append(self.vocab[t])
            out.append(" ".join(words))
        return out

    def batches(self, split: str, batch_size: int, shuffle: bool = True, seed: int = 0):
        data = self.splits[split]
        order = (
            torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))
            if shuffle
            else torch.arange(len(data))
        )
        for i in range(0, len(data), batch_size):
            yield data[order[i : i + batch_size]]
