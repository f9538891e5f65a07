"""MaliGAN (Che et al. 2017): the reward is the normalised likelihood ratio ``r = D / (1 - D)``, each
sentence's share of the batch's total, less the mean share (the baseline), times the batch size."""

from .base import PolicyGradientGAN


class MaliGAN(PolicyGradientGAN):
    name = "maligan"

    def reward(self, sentences):
        d = self.dis.prob_real(sentences).clamp(1e-6, 1 - 1e-6)
        r = d / (1 - d)
        return r / r.sum() * len(r) - 1.0
