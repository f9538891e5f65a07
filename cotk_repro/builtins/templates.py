"""Built-in project templates for ``cotk-repro init`` (registered like any plugin's).

* ``minimal``: ``cotk-repro.toml``, an entry that evaluates fixed sentences, ``.gitignore``.
* ``demo``: the demo's smoothed bigram language model on a small sample corpus.

The PyTorch benchmark models of the CoTK paper (``lm-gru``, ``seq2seq-transformer`` ...)
come from the first-party plugin ``cotk-repro-templates`` (``plugins/``).
"""

from __future__ import annotations

from ..hookspecs import hookimpl


@hookimpl
def register_templates(register):
    """Register the built-in project templates that `init` scaffolds from."""
    from ..core.templating import templates_dir
    from ..scaffold import ProjectTemplate  # imported here: a data load imports this module and needs neither

    root = templates_dir() / "project"
    register(
        "minimal",
        ProjectTemplate(
            name="minimal",
            description="an entry that evaluates fixed sentences with BLEU and Distinct; start here",
            folders=(root / "minimal",),
            dataset="-",
            metrics=("bleu", "distinct"),
        ),
    )
    register(
        "demo",
        ProjectTemplate(
            name="demo",
            description="a smoothed bigram language model on a small sample corpus (the demo)",
            folders=(root / "demo",),
            task="language-generation",
            dataset="data/{train,dev,test}.txt (sample shipped)",
            metrics=("perplexity", "bleu", "self-bleu", "distinct"),
        ),
    )
