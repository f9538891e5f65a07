"""The ``normalize`` option of every metric that tokenizes text: Unicode normalisation of each text before it is
tokenized, ``none`` (the default, NLTK's and sacrebleu's), ``nfc`` or ``nfkc``.

One mechanism for all of them: the BLEU family applies it before its tokenizer (bleu_tokenizers.py, named
``norm:nfc`` in its signature and ``normalize`` in its hash, as it always was); the metrics that resolve their
tokenizer through :func:`cotk_repro.metrics._text.resolve_tokenizer` (distinct, ngram-entropy, NIST, METEOR,
GLEU, CIDEr, the KN language models) get a tokenizer that normalises first, whose name carries the form
(``tok:wordpunct-u18+nfc``) and whose settings carry ``normalize``, so that hashes and signatures with ``none``
are the ones they were.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

from .base import MetricError

#: the forms, ``none`` first (the default)
NORMALIZATIONS = ("none", "nfc", "nfkc")


def normalization(value: Any) -> str:
    """The validated ``normalize`` option: ``none``, ``nfc`` or ``nfkc`` (case-insensitive; None/False: none)."""
    form = "none" if value is None or value is False else str(value).strip().lower()
    if form not in NORMALIZATIONS:
        raise MetricError(
            f"unknown normalize {value!r}; choose one of {', '.join(NORMALIZATIONS)} (Unicode "
            f"normalisation before tokenizing; none is NLTK's and sacrebleu's default)"
        )
    return form


def normalizer(form: str) -> Callable[[str], str] | None:
    """The function applying ``form`` to a text; None for ``none``."""
    if form == "none":
        return None
    if form == "nfc":
        return lambda text: unicodedata.normalize("NFC", text)
    if form == "nfkc":
        return lambda text: unicodedata.normalize("NFKC", text)
    raise MetricError(f"unknown normalize {form!r}; choose one of {', '.join(NORMALIZATIONS)}")


__all__ = ["NORMALIZATIONS", "normalization", "normalizer"]
