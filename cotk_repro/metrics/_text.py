"""Shared helpers for the string metrics (distinct, n-gram entropy, NIST, METEOR, fw/rv perplexity).

These metrics re-tokenize hypotheses and references with one fixed tokenizer, by
default BLEU's (NLTK's WordPunct regex), so that a score never depends on the
model's own tokenizer; the tokenizer's name and settings go into every hash.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..core import wordpunct
from ..text.reference_hashes import BLEU_TOKENIZER, bleu_tokenize
from .base import MetricError, check_references
from .normalization import normalization, normalizer


class TextTokenizer:
    """A resolved tokenizer: ``tokenize(text)``, ``name`` and ``spec`` (what goes into hashes)."""

    def __init__(
        self,
        name: str,
        tokenize: Callable[[str], list[str]],
        settings: dict[str, Any] | None = None,
        detokenize: Callable[[Sequence[str]], str] | None = None,
    ):
        self.name = name
        self.tokenize = tokenize
        self.settings = dict(settings or {})
        self.detokenize = detokenize or " ".join

    @property
    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "settings": self.settings}

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokenize each text; a token list is detokenized first, then re-tokenized (one fixed tokenizer)."""
        out = []
        for i, t in enumerate(texts):
            out.append(self.tokenize(as_text(t, self.detokenize, i)))
        return out


def as_text(item: Any, detokenize: Callable[[Sequence[str]], str] = " ".join, index: int = 0) -> str:
    """Return a hypothesis/reference as a string, joining a token list with `detokenize`."""
    if isinstance(item, str):
        return item
    if isinstance(item, (list, tuple)) and all(isinstance(t, str) for t in item):
        return detokenize(list(item))
    raise MetricError(f"text {index} is a {type(item).__name__}, not a string or a list of tokens")


def resolve_tokenizer(tokenizer: Any = None, normalize: Any = "none") -> TextTokenizer:
    """The tokenizer, normalising each text first when ``normalize`` (the metric's option of that name:
    :mod:`cotk_repro.metrics.normalization`) is ``nfc`` or ``nfkc``; see :func:`_resolve` for ``tokenizer``."""
    tok = _resolve(tokenizer)
    form = normalization(normalize)
    norm = normalizer(form)
    if norm is None:
        return tok
    plain = tok.tokenize
    return TextTokenizer(
        f"{tok.name}+{form}", lambda text: plain(norm(text)), {**tok.settings, "normalize": form}, tok.detokenize
    )


def _resolve(tokenizer: Any = None) -> TextTokenizer:
    """``None``/``"wordpunct"``/``"nltk"``: BLEU's fixed tokenizer (named ``wordpunct-u18``: NLTK's WordPunct through
    ``regex`` with its Unicode data); another name: a registered
    tokenizer (``space``, ``punkt`` ...); or a Tokenizer object with ``name``/``tokenize``/``settings``."""
    if tokenizer is None or tokenizer in (BLEU_TOKENIZER, "wordpunct", "nltk"):
        return TextTokenizer(
            BLEU_TOKENIZER, bleu_tokenize, {"engine": wordpunct.ENGINE, "unicode": wordpunct.unicode_version()}
        )
    if isinstance(tokenizer, TextTokenizer):
        return tokenizer
    if isinstance(tokenizer, str):
        if tokenizer == "space":
            return TextTokenizer("space", str.split)
        try:
            from ..data.tokenizers import get_tokenizer

            tok = get_tokenizer(tokenizer)
        except Exception as exc:  # unknown name, or the data package is unavailable
            from ..plugins import get_plugins

            refused = get_plugins().refusal("tokenizer", tokenizer)  # a plugin's, refused: its own sentence
            said = str(exc)  # get_tokenizer's own sentence already names the tokenizer: say it once
            raise MetricError(
                refused
                or (said if said.startswith("unknown tokenizer") else f"unknown tokenizer {tokenizer!r} ({said})")
            ) from None
        tokenizer = tok
    if not callable(getattr(tokenizer, "tokenize", None)):
        raise MetricError(f"tokenizer {tokenizer!r} has no tokenize(text) method")
    settings = getattr(tokenizer, "settings", {}) or {}
    if callable(settings):
        settings = settings()
    detok = getattr(tokenizer, "detokenize", None)
    name = getattr(tokenizer, "signature", None) or getattr(tokenizer, "name", type(tokenizer).__name__)
    return TextTokenizer(str(name), tokenizer.tokenize, dict(settings), detok if callable(detok) else None)


T = TypeVar("T")


def ngrams(tokens: Sequence[T], n: int) -> list[tuple[T, ...]]:
    """Return the list of n-grams (tuples of n tokens) of `tokens`, in order."""
    if n == 1:
        return [(t,) for t in tokens]
    return list(zip(*(tokens[i:] for i in range(n))))


def as_int_list(value: Any, what: str, *, minimum: int = 1) -> list[int]:
    """``2`` or ``[1, 2]`` -> a sorted list of distinct ints >= minimum."""
    values = [value] if isinstance(value, int) else list(value) if isinstance(value, (list, tuple)) else None
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in values):
        raise MetricError(f"{what} must be an integer >= {minimum} or a list of them, not {value!r}")
    return sorted(set(values))


def check_float(value: Any, what: str, low: float, high: float, *, low_open: bool = False) -> float:
    """Return `value` as a float, or raise MetricError if it is not a number in the given range."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise MetricError(f"{what} must be a number, not {value!r}") from None
    if not (low < v <= high if low_open else low <= v <= high):
        raise MetricError(f"{what} must be in {'(' if low_open else '['}{low}, {high}], not {value!r}")
    return v


def check_hypotheses(hypotheses: Any) -> list[Any]:
    """Return the hypotheses as a list; raise MetricError if a single string was given."""
    if isinstance(hypotheses, str):
        raise MetricError("hypotheses is a single string; give a list of strings")
    return list(hypotheses)


def check_samples(metric: str, hypotheses: Any, references: Any) -> tuple[list[Any], list[Any]]:
    """The hypotheses and references of a corpus metric, checked: at least one hypothesis, each sample with a
    reference (:func:`check_hypotheses`, :func:`~cotk_repro.metrics.base.check_references`); ``metric`` names
    the metric in the sentence."""
    hyps = check_hypotheses(hypotheses)
    if references is None:
        raise MetricError(f"{metric} needs references: give one list of reference strings per hypothesis")
    refs = check_references(hyps, references)
    if not hyps:
        raise MetricError(f"{metric} needs at least one hypothesis")
    for i, r in enumerate(refs):
        if not r:
            raise MetricError(f"sample {i} has no reference; {metric} needs at least one per hypothesis")
    return hyps, refs
