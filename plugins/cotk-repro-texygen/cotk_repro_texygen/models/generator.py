"""The one generator LSTM: embedding, one LSTM layer, a projection to the vocabulary (Texygen's generator).

Every sentence is exactly ``seq_len`` tokens (the synthetic benchmark has no end token); the first input
is the start token (id 0, as in Texygen). The oracle is this same network with N(0, 1) parameters
(:mod:`cotk_repro_texygen.oracle`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

START = 0


@dataclass(frozen=True)
class GenConfig:
    vocab_size: int
    emb_dim: int = 32
    hidden_dim: int = 32
    seq_len: int = 20

    def as_dict(self) -> dict:
        return asdict(self)


class Generator(nn.Module):
    """An LSTM language model over fixed-length sentences with step-wise sampling and rollout."""

    def __init__(self, config: GenConfig):
        super().__init__()
        self.config = config
        self.emb = nn.Embedding(config.vocab_size, config.emb_dim)
        self.lstm = nn.LSTM(config.emb_dim, config.hidden_dim, batch_first=True)
        self.out = nn.Linear(config.hidden_dim, config.vocab_size)

    # -- teacher forcing ---------------------------------------------------------------------------
    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        """The input tokens for targets ``x`` (B, T): the start token, then ``x`` shifted right."""
        start = torch.full((x.shape[0], 1), START, dtype=x.dtype, device=x.device)
        return torch.cat([start, x[:, :-1]], dim=1)

    def hidden(self, x: torch.Tensor, state=None):
        """LSTM outputs (B, T, H) over the inputs of targets ``x``, and the final state."""
        return self.lstm(self.emb(self.inputs(x)), state)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """Next-token logits (B, T, V) for targets ``x`` under teacher forcing."""
        return self.out(self.hidden(x)[0])

    def token_log_probs(self, x: torch.Tensor) -> torch.Tensor:
        """log p(x_t | x_<t) for every position (B, T)."""
        logp = F.log_softmax(self.logits(x), dim=-1)
        return logp.gather(-1, x.unsqueeze(-1)).squeeze(-1)

    def nll(self, x: torch.Tensor) -> torch.Tensor:
        """Mean per-token negative log-likelihood of ``x`` (a scalar; the MLE loss and Texygen's NLL)."""
        return F.cross_entropy(self.logits(x).reshape(-1, self.config.vocab_size), x.reshape(-1))

    # -- sampling ------------------------------------------------------------------------------------
    def step(self, tokens: torch.Tensor, state):
        """One step from input tokens (B,): logits (B, V) and the new state."""
        out, state = self.lstm(self.emb(tokens).unsqueeze(1), state)
        return self.out(out.squeeze(1)), state

    @torch.no_grad()
    def sample(self, n: int, rng: torch.Generator | None = None, batch_size: int = 1024) -> torch.Tensor:
        """``n`` sentences (n, T) sampled token by token (multinomial, temperature 1)."""
        parts = []
        for start in range(0, n, batch_size):
            b = min(batch_size, n - start)
            prefix = torch.empty((b, 0), dtype=torch.long, device=self.out.weight.device)
            parts.append(self.complete(prefix, rng))
        return torch.cat(parts) if parts else torch.empty((0, self.config.seq_len), dtype=torch.long)

    @torch.no_grad()
    def complete(self, prefix: torch.Tensor, rng: torch.Generator | None = None) -> torch.Tensor:
        """Sentences that start with ``prefix`` (B, t) and go on by sampling to ``seq_len`` tokens (a rollout)."""
        b, t = prefix.shape
        start = torch.full((b, 1), START, dtype=torch.long, device=prefix.device)
        state = None
        if t > 0:
            _, state = self.lstm(self.emb(torch.cat([start, prefix[:, :-1]], dim=1)), None)
            tok = prefix[:, -1]
        else:
            tok = start[:, 0]
        out = [prefix]
        for _ in range(t, self.config.seq_len):
            logits, state = self.step(tok, state)
            tok = draw(logits, rng)
            out.append(tok.unsqueeze(1))
        return torch.cat(out, dim=1)

    def relaxed(
        self, n: int, tau: float, hard: bool = False, rng: torch.Generator | None = None, gumbel: bool = True
    ) -> torch.Tensor:
        """Differentiable sentences (n, T, V): each step feeds the soft token's embedding back.

        ``gumbel``: Gumbel-softmax samples at temperature ``tau`` (GSGAN); otherwise the softmax of the
        logits at ``tau`` (TextGAN's annealed soft-argmax).
        """
        dev = self.out.weight.device
        tok_emb = self.emb(torch.full((n,), START, dtype=torch.long, device=dev))
        state, outs = None, []
        for _ in range(self.config.seq_len):
            h, state = self.lstm(tok_emb.unsqueeze(1), state)
            logits = self.out(h.squeeze(1))
            if gumbel:
                u = torch.rand(logits.shape, generator=rng, device=dev).clamp_(1e-10, 1.0 - 1e-10)
                logits = logits - torch.log(-torch.log(u))
            y = F.softmax(logits / tau, dim=-1)
            if hard:
                y = (F.one_hot(y.argmax(-1), y.shape[-1]).to(y.dtype) - y).detach() + y
            outs.append(y)
            tok_emb = y @ self.emb.weight
        return torch.stack(outs, dim=1)


def draw(logits: torch.Tensor, rng: torch.Generator | None = None) -> torch.Tensor:
    """One token per row from softmax(logits), by the inverse CDF (one uniform a row; much faster than
    ``torch.multinomial`` over a large vocabulary on a CPU, and the same distribution)."""
    cdf = F.softmax(logits, dim=-1).cumsum(-1)
    u = torch.rand((logits.shape[0], 1), generator=rng, device=logits.device) * cdf[:, -1:]
    return torch.searchsorted(cdf, u).squeeze(1).clamp_(max=logits.shape[-1] - 1)


def build(config: GenConfig, seed: int) -> Generator:
    """A generator with torch's default initialisation drawn from ``seed``."""
    torch.manual_seed(seed)
    return Generator(config)
