"""REINFORCE with Monte-Carlo rollout (SeqGAN's policy gradient), shared by SeqGAN, MaliGAN, RankGAN, LeakGAN.

The reward of token ``t`` of a sentence is the mean reward of ``num`` completions of its first ``t`` tokens,
sampled by the rollout policy (a slowly following copy of the generator, Texygen's ``update_rate`` 0.8); the
last token's reward is the sentence's own. Each model brings its reward function (the discriminator's
probability, MaliGAN's normalised ratio, RankGAN's rank score) and, LeakGAN, its own sampler.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch

from .generator import Generator


class Rollout:
    """The rollout policy: a copy of the generator that follows it at ``update_rate``."""

    def __init__(self, generator: Generator, update_rate: float = 0.8):
        self.policy = copy.deepcopy(generator)
        self.update_rate = update_rate
        for p in self.policy.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def follow(self, generator: Generator) -> None:
        """policy <- rate * policy + (1 - rate) * generator (embeddings copied, as Texygen does)."""
        for (name, mine), theirs in zip(self.policy.named_parameters(), generator.parameters()):
            if name.startswith("emb."):
                mine.copy_(theirs)
            else:
                mine.mul_(self.update_rate).add_(theirs.detach(), alpha=1 - self.update_rate)

    @torch.no_grad()
    def rewards(
        self,
        samples: torch.Tensor,
        reward: Callable[[torch.Tensor], torch.Tensor],
        num: int,
        rng: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Per-token rewards (B, T) of ``samples`` by ``num`` Monte-Carlo completions of every prefix."""
        b, t = samples.shape
        out = torch.zeros(b, t)
        for _ in range(num):
            for i in range(1, t):
                out[:, i - 1] += reward(self.policy.complete(samples[:, :i], rng))
            out[:, t - 1] += reward(samples)
        return out / num


def policy_gradient_step(
    generator: Generator, opt: torch.optim.Optimizer, samples: torch.Tensor, rewards: torch.Tensor, clip: float = 5.0
) -> float:
    """One REINFORCE update: minimise ``-mean(log p(x_t | x_<t) * reward_t)`` (gradient clipped)."""
    loss = -(generator.token_log_probs(samples) * rewards).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(generator.parameters(), clip)
    opt.step()
    return float(loss.detach())
