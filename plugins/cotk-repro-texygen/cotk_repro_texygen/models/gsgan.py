"""GSGAN (Kusner & Hernández-Lobato 2016): the generator's sentences are Gumbel-softmax relaxations of its
samples, so the discriminator's loss back-propagates into the generator directly. No MLE pretraining."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import Model


class GSGAN(Model):
    name = "gsgan"
    pretrain = False
    uses_discriminator = True

    def relaxed(self, n: int) -> torch.Tensor:
        return self.gen.relaxed(n, self.settings["gumbel_tau"], rng=self.rng, gumbel=True)

    def critic_step(self, real):
        self.dis.train()
        with torch.no_grad():
            fake = self.relaxed(len(real))
        logits = torch.cat([self.dis(real), self.dis(fake)])
        target = torch.cat([torch.ones(len(real)), torch.zeros(len(real))])
        loss = F.binary_cross_entropy_with_logits(logits, target)
        self.d_opt.zero_grad()
        loss.backward()
        self.d_opt.step()
        return float(loss.detach())

    def adversarial_epoch(self, real_batches):
        self.gen.train()
        fake = self.relaxed(self.settings["batch_size"])
        g_loss = F.binary_cross_entropy_with_logits(self.dis(fake), torch.ones(len(fake)))  # non-saturating
        self.g_opt.zero_grad()
        g_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.gen.parameters(), self.settings["grad_clip"])
        self.g_opt.step()
        d_losses = [self.critic_step(next(real_batches)) for _ in range(self.settings["dis_steps"])]
        return {"g_loss": float(g_loss.detach()), "d_loss": sum(d_losses) / len(d_losses)}
