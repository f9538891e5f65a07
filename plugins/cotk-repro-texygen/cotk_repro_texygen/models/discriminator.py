"""The one CNN discriminator (Texygen's, after Kim 2014): embedding, convolutions of several widths with max
pooling over time, a highway layer, dropout, one logit "real". It reads token ids (B, T) or soft one-hot
sentences (B, T, V), so the relaxed generators (TextGAN, GSGAN) stay differentiable through it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Discriminator(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        seq_len: int,
        emb_dim: int = 64,
        filter_sizes=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20),
        num_filters=(100, 200, 200, 200, 200, 100, 100, 100, 100, 100, 160, 160),
        dropout: float = 0.25,
    ):
        super().__init__()
        pairs = [(k, n) for k, n in zip(filter_sizes, num_filters) if k <= seq_len]
        self.emb = nn.Embedding(vocab_size, emb_dim)
        self.convs = nn.ModuleList(nn.Conv1d(emb_dim, n, k) for k, n in pairs)
        self.feature_dim = sum(n for _, n in pairs)
        self.highway = nn.Linear(self.feature_dim, 2 * self.feature_dim)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(self.feature_dim, 1)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.emb.weight if x.is_floating_point() else self.emb(x)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Sentence features (B, F): max-pooled convolutions and a highway layer."""
        e = self.embed(x).transpose(1, 2)
        h = torch.cat([F.relu(conv(e)).max(dim=2).values for conv in self.convs], dim=1)
        t, g = self.highway(h).chunk(2, dim=1)
        g = torch.sigmoid(g)
        return g * F.relu(t) + (1 - g) * h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The logit of "real" for each sentence (B,)."""
        return self.head(self.dropout(self.features(x))).squeeze(1)

    @torch.no_grad()
    def prob_real(self, x: torch.Tensor) -> torch.Tensor:
        was = self.training
        self.eval()
        p = torch.sigmoid(self(x))
        self.train(was)
        return p


def classifier_step(dis: Discriminator, opt: torch.optim.Optimizer, real: torch.Tensor, fake: torch.Tensor) -> float:
    """One mini-batch of binary cross-entropy: real sentences 1, generated 0."""
    logits = torch.cat([dis(real), dis(fake)])
    target = torch.cat([torch.ones(len(real)), torch.zeros(len(fake))])
    loss = F.binary_cross_entropy_with_logits(logits, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss.detach())
