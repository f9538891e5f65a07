"""RankGAN (Lin et al. 2017): a ranker in place of the discriminator. A sentence's rank score is its softmax
share, over a comparison set, of the cosine similarity (times ``gamma``) of its features to reference
sentences, averaged over the references; the ranker learns to rank real sentences above generated ones, and
the generator's reward is its sentences' rank score."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import PolicyGradientGAN


def rank_log_scores(features: torch.Tensor, ref_features: torch.Tensor, gamma: float) -> torch.Tensor:
    """log P(candidate | reference, comparison set) averaged over the references: (C,) for C candidates."""
    sims = F.normalize(features, dim=1) @ F.normalize(ref_features, dim=1).T  # C x U
    return F.log_softmax(gamma * sims, dim=0).mean(dim=1)


class RankGAN(PolicyGradientGAN):
    name = "rankgan"

    def __init__(self, config, settings, rng):
        super().__init__(config, settings, rng)
        self.references = None

    def critic_step(self, real):
        """The ranker's mini-batch: the comparison set is the real half and generated half; references another
        real half. Real sentences' log rank scores up, generated ones' down."""
        self.dis.train()
        half = max(len(real) // 2, 1)
        refs, cand_real = real[:half], real[half:] if len(real) > 1 else real
        fake = self.sample(len(cand_real))
        scores = rank_log_scores(
            self.dis.features(torch.cat([cand_real, fake])), self.dis.features(refs), self.settings["rank_gamma"]
        )
        loss = -(scores[: len(cand_real)].mean() - scores[len(cand_real) :].mean())
        self.d_opt.zero_grad()
        loss.backward()
        self.d_opt.step()
        self.references = refs.detach()
        return float(loss.detach())

    @torch.no_grad()
    def reward(self, sentences):
        if self.references is None:
            raise RuntimeError("the ranker has seen no references yet")
        self.dis.eval()
        refs = self.references
        scores = rank_log_scores(
            self.dis.features(torch.cat([sentences, refs])), self.dis.features(refs), self.settings["rank_gamma"]
        )
        return scores[: len(sentences)].exp() * (len(sentences) + len(refs))
