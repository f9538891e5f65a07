"""The plugin: registers the six benchmark templates and ``llm-eval`` through ``register_templates``.

Each template is a stack of folders under ``files/`` (later ones override earlier ones):
``common`` (presets, seeding, training loop, .gitignore, README), the task's folder
(data, metric set, cotk-repro.toml), the training entry shared by a model family and the
model itself. ``llm-eval`` (an LLM prompted through a protocol file, scored by an LLM judge) has
one folder of its own. Importing this module imports neither torch nor transformers.
"""

from __future__ import annotations

from pathlib import Path

from cotk_repro.hookspecs import hookimpl
from cotk_repro.scaffold import ProjectTemplate

FILES = Path(__file__).resolve().parent / "files"

LM_METRICS = ("perplexity", "bleu", "self-bleu", "fw-bw-bleu", "fw-rv-ppl", "distinct")
DIALOG_METRICS = ("perplexity", "bleu", "distinct", "coherence (optional)", "fluency (optional)")
LM_DATA = "data/mscoco_{train,dev,test}.txt (sample shipped)"
DIALOG_DATA = "data/opensub_pair_{train,dev,test}.{post,response} (sample shipped)"
TORCH = ("torch",)
GPT2 = ("torch", "transformers", "tokenizers")

#: name -> (description, task, folders after "common", dependencies)
TEMPLATES = {
    "lm-gru": ("GRU language model (CoTK paper: LM-GRU)", "language-generation", ("lm", "lm-scratch", "lm-gru"), TORCH),
    "lm-transformer": (
        "Transformer language model (CoTK paper: LM-Transformer)",
        "language-generation",
        ("lm", "lm-scratch", "transformer", "lm-transformer"),
        TORCH,
    ),
    "lm-gpt2-finetune": (
        "GPT-2 fine-tuned as a language model (CoTK paper: GPT2LM); --model NAME_OR_PATH",
        "language-generation",
        ("lm", "gpt2", "lm-gpt2-finetune"),
        GPT2,
    ),
    "seq2seq-gru": (
        "GRU encoder-decoder with attention (CoTK paper: Seq2Seq-GRU)",
        "single-turn-dialog",
        ("dialog", "seq2seq", "seq2seq-gru"),
        TORCH,
    ),
    "seq2seq-transformer": (
        "Transformer encoder-decoder (CoTK paper: Seq2Seq-Transformer)",
        "single-turn-dialog",
        ("dialog", "seq2seq", "transformer", "seq2seq-transformer"),
        TORCH,
    ),
    "dialog-gpt2-finetune": (
        ("GPT-2 fine-tuned on post/response pairs (CoTK paper: GPT2-dialog); --model NAME_OR_PATH"),
        "single-turn-dialog",
        ("dialog", "gpt2", "dialog-gpt2-finetune"),
        GPT2,
    ),
}


def template(name: str) -> ProjectTemplate:
    """The :class:`ProjectTemplate` of one of :data:`TEMPLATES`."""
    description, task, folders, deps = TEMPLATES[name]
    lm = task == "language-generation"
    metrics = LM_METRICS if lm else DIALOG_METRICS
    return ProjectTemplate(
        name=name,
        description=description,
        task=task,
        folders=tuple(FILES / f for f in ("common", *folders)),
        dataset=LM_DATA if lm else DIALOG_DATA,
        metrics=metrics,
        dependencies=deps,
        context={
            "description": description,
            "metrics": metrics,
            "dependencies": deps,
            "imports": [d for d in deps if d != "tokenizers"],  # modules train.py imports ([run] imports)
            "dataset_name": "mscoco-small" if lm else "opensubtitles-small",
            "gpt2": "gpt2" in folders,
        },
    )


#: every template this plugin registers (the core's FIRST_PARTY_TEMPLATES names them too)
NAMES = (*TEMPLATES, "llm-eval")
LLM_DEPENDENCIES = ("torch", "transformers", "cotk-repro-lm")
LLM_METRICS = ("distinct", "llm-judge")


def llm_template() -> ProjectTemplate:
    """``llm-eval``: a tiny local causal LM as the system, a tiny judge, a protocol file, questions."""
    description = "an LLM prompted through a protocol file, judged by an LLM (tiny local models; docs/llm.md)"
    return ProjectTemplate(
        name="llm-eval",
        description=description,
        task="single-turn-dialog",
        folders=(FILES / "llm-eval",),
        dataset="data/inputs.txt (questions, one a line) + protocol.toml",
        metrics=LLM_METRICS,
        dependencies=LLM_DEPENDENCIES,
        context={
            "description": description,
            "metrics": LLM_METRICS,
            "dependencies": LLM_DEPENDENCIES,
            "imports": ["torch", "transformers", "cotk_repro_lm"],  # modules evaluate.py needs ([run] imports)
            "dataset_name": "llm-eval-questions",
        },
    )


@hookimpl
def register_templates(register):
    for name in TEMPLATES:
        register(name, template(name))
    register("llm-eval", llm_template())
