"""The seven ``texygen-*`` project templates (``cotk-repro init NAME --template texygen-seqgan``).

Every template renders the same small project from ``files/``: ``train.py`` (presets, the model's name)
drives :func:`cotk_repro_texygen.protocol.run`, which trains with Texygen's protocol and writes the result
file with every metric and its hash, per epoch and final. Importing this module imports no torch.
"""

from __future__ import annotations

from pathlib import Path

from cotk_repro.scaffold import ProjectTemplate

FILES = Path(__file__).resolve().parent / "files"

#: template name -> (model, description)
TEMPLATES = {
    "texygen-mle": ("mle", "Texygen: MLE-trained LSTM generator (the baseline)"),
    "texygen-seqgan": ("seqgan", "Texygen: SeqGAN (CNN discriminator, REINFORCE with Monte-Carlo rollout)"),
    "texygen-maligan": ("maligan", "Texygen: MaliGAN (normalised maximum-likelihood reward D/(1-D))"),
    "texygen-rankgan": ("rankgan", "Texygen: RankGAN (a ranker scores sentences against references)"),
    "texygen-leakgan": ("leakgan", "Texygen: LeakGAN (manager/worker, leaked discriminator features)"),
    "texygen-textgan": ("textgan", "Texygen: TextGAN (feature matching by MMD on soft sentences)"),
    "texygen-gsgan": ("gsgan", "Texygen: GSGAN (Gumbel-softmax relaxation, no pretraining)"),
}
METRICS = ("nll-oracle", "nll-test", "embsim", "bleu", "self-bleu")
DEPENDENCIES = ("torch", "numpy", "scipy", "gensim", "cotk-repro-texygen")


def template(name: str) -> ProjectTemplate:
    """The :class:`ProjectTemplate` of one of :data:`TEMPLATES`."""
    model, description = TEMPLATES[name]
    return ProjectTemplate(
        name=name,
        description=description,
        task="language-generation",
        folders=(FILES,),
        dataset="synthetic: the oracle-lstm loader (no files); real: data/{train,test}.txt (COCO sample shipped)",
        metrics=METRICS,
        dependencies=DEPENDENCIES,
        context={"model": model, "description": description, "metrics": METRICS},
    )
