"""What every model shares: the generator and its optimiser, MLE epochs, the discriminator's mini-batches, and
the policy-gradient adversarial epoch of the SeqGAN family. A model file overrides only what differs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

from .discriminator import Discriminator, classifier_step
from .generator import GenConfig, Generator
from .reinforce import Rollout, policy_gradient_step


class Model:
    """MLE alone: the generator, trained by maximum likelihood in every epoch (Texygen's ``Mle``)."""

    name = "mle"
    #: MLE pretraining of the generator (and the discriminator) before the adversarial epochs
    pretrain = True
    #: whether the model has a discriminator (pretrained and trained adversarially)
    uses_discriminator = False

    def __init__(self, config: GenConfig, settings: dict[str, Any], rng: torch.Generator):
        self.settings, self.rng = settings, rng
        #: a fresh pass over the training split's batches (set by the protocol; LeakGAN's interleaved MLE)
        self.epoch_batches: Callable[[], Iterator[torch.Tensor]] | None = None
        if self.uses_discriminator:
            self.dis = self.make_discriminator(config)
            self.d_opt = torch.optim.Adam(self.dis.parameters(), lr=settings["dis_lr"])
        torch.manual_seed(settings["seed"] + 2)  # every model starts from the same generator weights
        self.gen = self.make_generator(config)
        self.g_opt = torch.optim.Adam(self.gen.parameters(), lr=settings["gen_lr"])

    def make_generator(self, config: GenConfig) -> Generator:
        return Generator(config)

    def make_discriminator(self, config: GenConfig) -> Discriminator:
        s = self.settings
        return Discriminator(
            config.vocab_size, config.seq_len, s["dis_emb_dim"], s["filter_sizes"], s["num_filters"], s["dis_dropout"]
        )

    # -- what evaluation asks ------------------------------------------------------------------------
    def sample(self, n: int, rng: torch.Generator | None = None) -> torch.Tensor:
        self.gen.eval()
        return self.gen.sample(n, rng if rng is not None else self.rng)

    def embedding(self) -> torch.Tensor:
        """The generator's word embedding table (EmbSim's table, as in Texygen's code)."""
        return self.gen.emb.weight.detach()

    # -- training ----------------------------------------------------------------------------------
    def mle_epoch(self, batches: Iterator[torch.Tensor]) -> float:
        self.gen.train()
        losses = []
        for x in batches:
            loss = self.gen.nll(x)
            self.g_opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.gen.parameters(), self.settings["grad_clip"])
            self.g_opt.step()
            losses.append(float(loss.detach()))
        return sum(losses) / max(len(losses), 1)

    def critic_step(self, real: torch.Tensor) -> float:
        """One discriminator mini-batch against as many fresh samples."""
        self.dis.train()
        return classifier_step(self.dis, self.d_opt, real, self.sample(len(real)))

    def adversarial_epoch(self, real_batches: Iterator[torch.Tensor]) -> dict[str, float]:
        """MLE has no adversary: an adversarial epoch is one more MLE epoch over the training split."""
        assert self.epoch_batches is not None, "the protocol sets epoch_batches before training"
        return {"loss": self.mle_epoch(self.epoch_batches())}


class PolicyGradientGAN(Model):
    """SeqGAN's adversarial epoch: one REINFORCE update with Monte-Carlo rollout, then the critic's mini-batches.

    Subclasses give :meth:`reward` (and may replace the critic)."""

    uses_discriminator = True

    def __init__(self, config, settings, rng):
        super().__init__(config, settings, rng)
        self.rollout = Rollout(self.gen, settings["rollout_update_rate"])

    def reward(self, sentences: torch.Tensor) -> torch.Tensor:  # pragma: no cover - each GAN defines it
        raise NotImplementedError

    def generator_step(self) -> float:
        samples = self.sample(self.settings["batch_size"])
        rewards = self.rollout.rewards(samples, self.reward, self.settings["rollout_num"], self.rng)
        self.gen.train()
        return policy_gradient_step(self.gen, self.g_opt, samples, rewards, self.settings["grad_clip"])

    def adversarial_epoch(self, real_batches):
        g_loss = self.generator_step()
        self.rollout.follow(self.gen)
        d_losses = [self.critic_step(next(real_batches)) for _ in range(self.settings["dis_steps"])]
        return {"g_loss": g_loss, "d_loss": sum(d_losses) / len(d_losses)}
