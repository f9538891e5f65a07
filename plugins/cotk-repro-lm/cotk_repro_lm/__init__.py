"""cotk-repro-lm: model-based evaluation for cotk-repro (coherence, fluency, group entropy, ``hf:`` tokenizers).

Importing this package is cheap: torch and transformers are imported only when a model or a
Hugging Face tokenizer is actually built.
"""

__version__ = "0.1.0"
