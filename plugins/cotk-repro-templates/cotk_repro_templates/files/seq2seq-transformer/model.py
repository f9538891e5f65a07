"""A Transformer encoder-decoder (the CoTK paper's Seq2Seq-Transformer) on F."""

from __future__ import annotations

import torch
from embedding import InputEmbedding
from torch import nn

#: hyper-parameters; ``paper`` is the CoTK benchmark's (embedding 300, model size 256, feed-forward 512,
#: 4 heads, 5 layers each side, input dropout 0.1, dropout 0.25, batch 64, Adam 1e-3, gradient clip 5)
PRESETS = {
    "tiny": dict(
        data="data",
        tokenizer="space",
        min_frequent_vocab_times=2,
        max_sent_length=30,
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
        model_size=256,
        feedforward_size=512,
        heads=4,
        layers=5,
        input_dropout=0.1,
        dropout=0.25,
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
        encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(model_size, heads, feedforward_size, dropout, batch_first=True),
            layers,
            norm=nn.LayerNorm(model_size),
            enable_nested_tensor=False,
        )
        self.transformer = nn.Transformer(
            model_size, heads, layers, layers, feedforward_size, dropout, custom_encoder=encoder, batch_first=True
        )
        self.projection = nn.Linear(model_size, vocab_size)

    def forward(self, post: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(response.shape[1], device=response.device)
        hidden = self.transformer(
            self.embed(post),
            self.embed(response),
            tgt_mask=causal,
            tgt_is_causal=True,
            src_key_padding_mask=post == 0,
            memory_key_padding_mask=post == 0,
        )
        return self.projection(hidden)
