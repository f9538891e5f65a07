"""Vanilla MLE (Texygen's ``Mle``): the shared generator trained by maximum likelihood, nothing else."""

from .base import Model


class MLE(Model):
    name = "mle"
