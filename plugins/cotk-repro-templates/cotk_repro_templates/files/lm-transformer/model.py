"""A Transformer language model (the CoTK paper's LM-Transformer): a causal Transformer decoder on F."""

from __future__ import annotations

import torch
from embedding import InputEmbedding
from torch import nn

#: hyper-parameters; ``paper`` is the CoTK benchmark's (embedding 300, model size 256, feed-forward 512,
#: 4 heads, 5 layers, input dropout 0.1, dropout 0.25, batch 128, Adam 1e-3, gradient clip 5, top-10 sampling)
PRESETS = {
    "tiny": dict(
        data="data",
        tokenizer="space",
        min_frequent_vocab_times=2,
        max_sent_length=50,
        embedding_size=32,
        model_size=32,
        feedforward_size=64,
        heads=2,
        layers=1,
        input_dropout=0.0,
        dropout=0.0,
        epochs=4,
        batch_size=16,
        lr=3e-3,
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
        model_size=256,
        feedforward_size=512,
        heads=4,
        layers=5,
        input_dropout=0.1,
        dropout=0.25,
        epochs=100,
        batch_size=128,
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

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        model_size: int,
        feedforward_size: int,
        heads: int,
        layers: int,
        input_dropout: float = 0.0,
        dropout: float = 0.0,
        max_positions: int = 128,
        **_,
    ):
        super().__init__()
        self.embed = InputEmbedding(vocab_size, embedding_size, model_size, input_dropout, max_positions)
        layer = nn.TransformerEncoderLayer(model_size, heads, feedforward_size, dropout, batch_first=True)
        self.decoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.projection = nn.Linear(model_size, vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(ids.shape[1], device=ids.device)
        return self.projection(self.decoder(self.embed(ids), mask=causal, is_causal=True))
