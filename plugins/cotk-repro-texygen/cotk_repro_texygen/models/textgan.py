"""TextGAN (Zhang et al. 2017): the generator feeds back soft words (softmax at an annealed temperature) and
is trained to match the discriminator's features of real sentences by the maximum mean discrepancy (a sum
of Gaussian kernels); the discriminator classifies real against soft generated sentences."""

from __future__ import annotations

import torch

from .gsgan import GSGAN


def mmd2(x: torch.Tensor, y: torch.Tensor, bandwidths=(1.0, 2.0, 4.0, 8.0, 16.0)) -> torch.Tensor:
    """The (biased) squared MMD of two feature sets with a sum of Gaussian kernels."""
    xy = torch.cat([x, y])
    d2 = torch.cdist(xy, xy).pow(2)
    # a zero tensor start (not sum's 0) types k as a tensor; 0.0 + x is exactly x, so k is unchanged
    k = sum((torch.exp(-d2 / (2 * s * s)) for s in bandwidths), torch.zeros_like(d2))
    n = len(x)
    return k[:n, :n].mean() + k[n:, n:].mean() - 2 * k[:n, n:].mean()


class TextGAN(GSGAN):
    name = "textgan"
    pretrain = True

    def relaxed(self, n: int) -> torch.Tensor:
        return self.gen.relaxed(n, self.settings["textgan_tau"], rng=self.rng, gumbel=False)

    def adversarial_epoch(self, real_batches):
        self.gen.train()
        real = next(real_batches)
        fake = self.relaxed(len(real))
        self.dis.eval()
        with torch.no_grad():
            real_f = self.dis.features(real)
        g_loss = mmd2(self.dis.features(fake), real_f)
        self.g_opt.zero_grad()
        g_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.gen.parameters(), self.settings["grad_clip"])
        self.g_opt.step()
        d_losses = [self.critic_step(next(real_batches)) for _ in range(self.settings["dis_steps"])]
        return {"g_loss": float(g_loss.detach()), "d_loss": sum(d_losses) / len(d_losses)}
