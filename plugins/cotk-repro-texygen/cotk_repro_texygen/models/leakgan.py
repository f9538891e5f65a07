"""LeakGAN (Guo et al. 2018): the discriminator leaks its features of the sentence so far to a manager LSTM,
which sets a goal vector every step; the worker (the shared generator LSTM) adds a goal-conditioned term to
its logits. The worker is trained by REINFORCE on the Monte-Carlo rollout reward plus an intrinsic reward
(how well the features moved toward the recent goals), the manager to point its goals where the features
go (weighted by the reward). Every ``leak_interleave`` adversarial epochs, ``leak_mle_epochs`` MLE epochs.

Simplified against the paper: the worker's goal term is low-rank (``out_goal(proj(h) * w)``) and the
features of a prefix are the discriminator's features of it padded with the start token.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .base import PolicyGradientGAN
from .generator import START, Generator, draw


class LeakGenerator(Generator):
    """The worker (the shared generator) with a manager; ``leak`` maps token ids (B, T) to features (B, F)."""

    def __init__(self, config, feature_dim: int, goal_dim: int = 16, step_size: int = 4):
        super().__init__(config)
        self.step_size = step_size
        self.manager = nn.LSTMCell(feature_dim, config.hidden_dim)
        self.goal = nn.Linear(config.hidden_dim, feature_dim)  # goals live in the feature space
        self.psi = nn.Linear(feature_dim, goal_dim, bias=False)
        self.proj = nn.Linear(config.hidden_dim, goal_dim)
        self.out_goal = nn.Linear(goal_dim, config.vocab_size, bias=False)
        #: set by LeakGAN: a plain function, so deepcopy (the rollout) shares it
        self.leak: Callable[[torch.Tensor], torch.Tensor] | None = None

    def _prefix_features(self, prefix: torch.Tensor) -> torch.Tensor:
        pad = torch.full((prefix.shape[0], self.config.seq_len - prefix.shape[1]), START, dtype=torch.long)
        assert self.leak is not None, "LeakGAN.make_generator sets leak"
        with torch.no_grad():
            return self.leak(torch.cat([prefix, pad], dim=1))

    def run(self, x: torch.Tensor | None, n: int, rng=None, prefix: torch.Tensor | None = None):
        """Teacher-forced over ``x`` (B, T) or sampled (``n`` sentences continuing ``prefix``): the tokens, the
        logits (B, T, V), the prefix features (B, T+1, F) and the goals (B, T, F)."""
        b = x.shape[0] if x is not None else n
        tokens = torch.empty((b, 0), dtype=torch.long)
        inp = torch.full((b,), START, dtype=torch.long)
        state, mstate = None, None
        logits_all, feats, goals = [], [], []
        for t in range(self.config.seq_len):
            f = self._prefix_features(tokens)
            feats.append(f)
            mstate = self.manager(f, mstate)
            g = F.normalize(self.goal(mstate[0]), dim=1)
            goals.append(g)
            w = self.psi(torch.stack(goals[-self.step_size :]).sum(0).detach())
            out, state = self.lstm(self.emb(inp).unsqueeze(1), state)
            h = out.squeeze(1)
            logits = self.out(h) + self.out_goal(self.proj(h) * w)
            logits_all.append(logits)
            if x is not None:
                tok = x[:, t]
            elif prefix is not None and t < prefix.shape[1]:
                tok = prefix[:, t]
            else:
                with torch.no_grad():
                    tok = draw(logits, rng)
            tokens = torch.cat([tokens, tok.unsqueeze(1)], dim=1)
            inp = tok
        feats.append(self._prefix_features(tokens))
        return tokens, torch.stack(logits_all, 1), torch.stack(feats, 1), torch.stack(goals, 1)

    def logits(self, x):
        return self.run(x, len(x))[1]

    @torch.no_grad()
    def complete(self, prefix, rng=None):
        return self.run(None, prefix.shape[0], rng, prefix=prefix)[0]


def manager_cosines(feats: torch.Tensor, goals: torch.Tensor, c: int) -> torch.Tensor:
    """cos(f_{t+c} - f_t, g_t) for every step (B, T), the feature index clipped at the sentence's end."""
    t = goals.shape[1]
    ahead = feats[:, torch.clamp(torch.arange(t) + c, max=t)]
    return F.cosine_similarity(ahead - feats[:, :t], goals, dim=2)


def intrinsic_rewards(feats: torch.Tensor, goals: torch.Tensor, c: int) -> torch.Tensor:
    """The worker's intrinsic reward (B, T): the mean of cos(f_t - f_{t-i}, g_{t-i}) over the last ``c`` steps."""
    b, t, _ = goals.shape
    out = torch.zeros(b, t)
    for i in range(1, c + 1):
        if i > t:
            break
        out[:, i:] += F.cosine_similarity(feats[:, i:t] - feats[:, : t - i], goals[:, : t - i], dim=2)
    return out / c


class LeakGAN(PolicyGradientGAN):
    name = "leakgan"

    def __init__(self, config, settings, rng):
        self.adversarial_epochs = 0
        super().__init__(config, settings, rng)

    def make_generator(self, config):
        gen = LeakGenerator(
            config, self.dis.feature_dim, self.settings["leak_goal_dim"], self.settings["leak_step_size"]
        )
        dis = self.dis

        def leak(x):
            was = dis.training
            dis.eval()
            f = dis.features(x)
            dis.train(was)
            return f

        gen.leak = leak
        return gen

    def reward(self, sentences):
        return self.dis.prob_real(sentences)

    def mle_epoch(self, batches):
        """The worker's MLE and the manager's goal loss on real sentences (LeakGAN's pretraining)."""
        self.gen.train()
        losses = []
        c = self.gen.step_size
        for x in batches:
            _, logits, feats, goals = self.gen.run(x, len(x))
            nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x.reshape(-1))
            loss = nll - manager_cosines(feats, goals, c).mean()
            self.g_opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.gen.parameters(), self.settings["grad_clip"])
            self.g_opt.step()
            losses.append(float(nll.detach()))
        return sum(losses) / max(len(losses), 1)

    def generator_step(self):
        samples = self.sample(self.settings["batch_size"])
        q = self.rollout.rewards(samples, self.reward, self.settings["rollout_num"], self.rng)
        self.gen.train()
        _, logits, feats, goals = self.gen.run(samples, len(samples))
        c = self.gen.step_size
        logp = F.log_softmax(logits, -1).gather(2, samples.unsqueeze(2)).squeeze(2)
        worker = -(logp * (q + self.settings["leak_alpha"] * intrinsic_rewards(feats, goals, c).detach())).mean()
        manager = -(q * manager_cosines(feats, goals, c)).mean()
        loss = worker + manager
        self.g_opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.gen.parameters(), self.settings["grad_clip"])
        self.g_opt.step()
        return float(loss.detach())

    def adversarial_epoch(self, real_batches):
        out = super().adversarial_epoch(real_batches)
        self.adversarial_epochs += 1
        if self.adversarial_epochs % self.settings["leak_interleave"] == 0:
            for _ in range(self.settings["leak_mle_epochs"]):
                out["mle_loss"] = self.mle_epoch(self.epoch_batches())
        return out
