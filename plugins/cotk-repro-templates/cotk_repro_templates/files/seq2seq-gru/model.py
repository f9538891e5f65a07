"""A GRU encoder-decoder with dot-product attention (the CoTK paper's Seq2Seq-GRU) on F."""

from __future__ import annotations

import torch
from torch import nn

#: hyper-parameters; ``paper`` is the CoTK benchmark's (embedding 300, encoder and decoder GRU 200,
#: batch 64, Adam 1e-3, gradient clip 5, space tokenizer, min_frequent_vocab_times 10, utterances up to 50)
PRESETS = {
    "tiny": dict(
        data="data",
        tokenizer="space",
        min_frequent_vocab_times=2,
        max_sent_length=30,
        embedding_size=32,
        hidden_size=64,
        dropout=0.0,
        epochs=4,
        batch_size=16,
        lr=5e-3,
        grad_clip=5.0,
        max_gen_length=20,
        top_k=0,
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
        max_gen_length=50,
        top_k=0,
        temperature=1.0,
    ),
}


class Seq2Seq(nn.Module):
    """``forward(post, response_in) -> logits [batch, time, vocab]`` (teacher forcing)."""

    def __init__(self, vocab_size: int, embedding_size: int, hidden_size: int, dropout: float = 0.0, **_):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size)
        self.encoder = nn.GRU(embedding_size, hidden_size, batch_first=True)
        self.decoder = nn.GRU(embedding_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.projection = nn.Linear(2 * hidden_size, vocab_size)

    def forward(self, post: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        memory, last = self.encoder(self.dropout(self.embedding(post)))
        hidden, _ = self.decoder(self.dropout(self.embedding(response)), last)
        scores = hidden @ memory.transpose(1, 2)  # [batch, response time, post time]
        scores = scores.masked_fill((post == 0)[:, None, :], float("-inf"))  # never attend to <pad>
        context = torch.softmax(scores, dim=-1) @ memory
        return self.projection(self.dropout(torch.cat([hidden, context], dim=-1)))
