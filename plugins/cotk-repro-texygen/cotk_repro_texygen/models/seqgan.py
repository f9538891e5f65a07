"""SeqGAN (Yu et al. 2017): the reward of a sentence is the discriminator's probability that it is real."""

from .base import PolicyGradientGAN


class SeqGAN(PolicyGradientGAN):
    name = "seqgan"

    def reward(self, sentences):
        return self.dis.prob_real(sentences)
