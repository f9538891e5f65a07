"""The input layer of the Transformer models: token embedding projected to the model size, plus learned positions."""

from __future__ import annotations

import torch
from torch import nn


class InputEmbedding(nn.Module):
    """``forward(ids [batch, time]) -> [batch, time, model_size]``, with input dropout."""

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        model_size: int,
        input_dropout: float = 0.0,
        max_positions: int = 128,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size)
        self.positions = nn.Embedding(max_positions, model_size)
        self.inp = nn.Linear(embedding_size, model_size)
        self.dropout = nn.Dropout(input_dropout)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.dropout(self.inp(self.embedding(ids)) + self.positions(positions))
