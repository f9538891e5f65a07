"""The data side of fair evaluation: tokenizers, vocabularies, dataloaders and their hash codes.

>>> from cotk_repro import data
>>> dl = data.load("language-generation", "path/to/coco", tokenizer="nltk", min_frequent_vocab_times=10)
>>> dl.hash_codes  # {"raw", "data", "vocab", "setting", "general"}

Tokenizers and dataloaders are looked up by name through the plugin hooks
(``register_tokenizers`` / ``register_dataloaders``), so plugins add their own. See
``docs/data.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import DataError
from .tokenizers import Tokenizer, get_tokenizer
from .vocab import SPECIAL_TOKENS, Vocab

__all__ = [
    "DataError",
    "SPECIAL_TOKENS",
    "Tokenizer",
    "Vocab",
    "get_tokenizer",
    "load",
    "loader_names",
    "tokenizer_names",
]


def loader_names() -> list[str]:
    """Names of the registered dataloaders."""
    from ..plugins import registry

    return sorted(registry("dataloader"))


def tokenizer_names() -> list[str]:
    """Names of the registered tokenizers."""
    from ..plugins import registry

    return sorted(registry("tokenizer"))


def load(name: str, path: str | Path, **options: Any) -> Any:
    """Load the dataset folder ``path`` with the dataloader registered as ``name``.

    Common options: ``tokenizer`` (a registered name or a Tokenizer object; default ``"nltk"``),
    ``min_frequent_vocab_times`` (10), ``min_rare_vocab_times`` (0: every other token),
    ``lowercase`` (False), ``max_sent_length`` (None), ``splits`` (train, dev, test),
    ``progress`` (a callable receiving the number of bytes read), ``workers`` (processes that
    tokenize and digest, this one included; None: one forked helper from 512 KiB of input with a
    built-in tokenizer, a CPU idle and no other thread; never in a hash). A built-in loader or
    tokenizer name loads no plugins.
    """
    from ..plugins import get_component

    factory = get_component("dataloader", name)
    return factory(path, **options)
