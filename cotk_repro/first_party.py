"""cotk-repro's first-party plugins and what each brings: a name here that is not registered is a plugin to
install, not a typo, and the error says which and how.

They live in ``plugins/<distribution>/`` of cotk-repro's source and are not published on PyPI yet: the install
they need is from a checkout (a package of the same name on PyPI would be somebody else's). tests/test_init.py
and tests/test_plugins.py check these tables against what the installed plugins register.
"""

from __future__ import annotations

#: distribution -> component kind -> the names it registers
PLUGINS: dict[str, dict[str, tuple[str, ...]]] = {
    "cotk-repro-lm": {
        "generator": ("hf", "openai"),
        "metric": ("coherence", "fluency", "group-entropy", "bertscore", "mauve", "llm-judge", "llm-pairwise"),
    },
    "cotk-repro-summarizers": {
        "generator": ("lexrank", "textrank", "lsa", "luhn", "random", "lead", "smmry"),
    },
    "cotk-repro-templates": {
        "template": (
            "lm-gru",
            "lm-transformer",
            "lm-gpt2-finetune",
            "seq2seq-gru",
            "seq2seq-transformer",
            "dialog-gpt2-finetune",
            "llm-eval",
        ),
    },
    "cotk-repro-texygen": {
        "dataloader": ("oracle-lstm",),
        "generator": ("texygen",),
        "metric": ("nll-oracle", "nll-test", "embsim"),
        "template": (
            "texygen-mle",
            "texygen-seqgan",
            "texygen-maligan",
            "texygen-rankgan",
            "texygen-leakgan",
            "texygen-textgan",
            "texygen-gsgan",
        ),
    },
}


def provider(kind: str, name: str) -> str | None:
    """The first-party distribution that registers ``kind`` ``name``, or None."""
    for distribution, kinds in PLUGINS.items():
        if name in kinds.get(kind, ()):
            return distribution
    return None


def install_hint(distribution: str) -> str:
    """How to install a first-party plugin (from cotk-repro's source: it is not on PyPI)."""
    return f"pip install ./plugins/{distribution} in a checkout of cotk-repro's source (it is not on PyPI)"


def missing_sentence(kind: str, name: str) -> str | None:
    """The sentence for a first-party ``kind`` ``name`` whose plugin is not installed, or None."""
    distribution = provider(kind, name)
    if distribution is None:
        return None
    return (
        f"the {kind.replace('_', ' ')} {name!r} comes with the plugin {distribution}, which is not installed: "
        f"{install_hint(distribution)}"
    )
