"""A GRU language model (the CoTK paper's LM-GRU): embedding, one GRU layer, a projection on F."""

from __future__ import annotations

import torch
from torch import nn

#: hyper-parameters; ``paper`` is the CoTK benchmark's (embedding 300, GRU 200, batch 64, Adam 1e-3,
#: gradient clip 5, space tokenizer, min_frequent_vocab_times 10, sentences up to 50 tokens, top-10 sampling)
PRESETS = {
    "tiny": dict(
        data="data",
        tokenizer="space",
        min_frequent_vocab_times=2,
        max_sent_length=50,
        embedding_size=32,
        hidden_size=64,
        dropout=0.0,
        epochs=4,
        batch_size=16,
        lr=5e-3,
        grad_clip=5.0,
        samples=100,
        max_gen_length=30,
        top_k=10,
        temperature=1.0,
    ),
    "paper": dict(
        data="data",
        tokenizer="space",
        min_frequent_vocab_times=10,
        max_sent_length=50,
        embedding_size=300,
        hidden_size=200,
        dropout=0.0,
        epochs=100,
        batch_size=64,
        lr=1e-3,
        grad_clip=5.0,
        samples=5000,
        max_gen_length=50,
        top_k=10,
        temperature=1.0,
    ),
}


class LanguageModel(nn.Module):
    """``forward(ids [batch, time]) -> logits [batch, time, vocab]``: the next token at every position."""

    def __init__(self, vocab_size: int, embedding_size: int, hidden_size: int, dropout: float = 0.0, **_):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size)
        self.gru = nn.GRU(embedding_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.projection = nn.Linear(hidden_size, vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.gru(self.dropout(self.embedding(ids)))
        return self.projection(self.dropout(hidden))
