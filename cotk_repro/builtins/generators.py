"""Built-in text generators for ``cotk-repro compare`` (registered like any plugin's).

A generator factory takes its settings as keyword arguments and returns an
object with ``name``, ``version``, ``settings`` (all three go into the output
cache key), ``generate(inputs: list[str]) -> list[str]`` (one output per input)
and optionally ``batch_size`` (``None``: all inputs in one call).

* ``copy``: the identity, optionally lowercased and truncated to ``max_tokens``;
  a baseline (the "copy the source" system) and a deterministic test fixture.
* ``ngram``: an n-gram sampler fitted on the inputs themselves, drawing one
  sentence per input line with a seeded generator: a cheap, reproducible
  "language model" baseline for examples and tests.

This module is imported whenever the plugins load: it stays cheap (stdlib only).
"""

from __future__ import annotations

from typing import Any

from ..hookspecs import hookimpl


def _check_int(name: str, value: Any, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"setting {name!r} must be an integer >= {low}, got {value!r}")
    return value


class CopyGenerator:
    """Returns each input unchanged, optionally lowercased and cut to its first `max_tokens` words."""

    name = "copy"
    version = "1"
    batch_size = 1024

    def __init__(self, lowercase: bool = False, max_tokens: int | None = None):
        if not isinstance(lowercase, bool):
            raise ValueError(f"setting 'lowercase' must be true or false, got {lowercase!r}")
        if max_tokens is not None:
            _check_int("max_tokens", max_tokens, 1)
        self.lowercase = lowercase
        self.max_tokens = max_tokens
        self.settings = {"lowercase": lowercase, "max_tokens": max_tokens}

    def generate(self, inputs: list[str]) -> list[str]:
        out = []
        for text in inputs:
            if self.lowercase:
                text = text.lower()
            if self.max_tokens is not None:
                text = " ".join(text.split()[: self.max_tokens])
            out.append(text)
        return out


class NgramGenerator:
    """Samples sentences from an order-``order`` n-gram model of the (whitespace-tokenized) inputs.

    Deterministic: candidates are kept in sorted order and drawn with
    ``random.Random(seed).random()`` and a cumulative-count search, so the same
    inputs and settings give the same outputs on any platform.
    """

    name = "ngram"
    version = "1"
    batch_size = None  # the model is fitted on all inputs at once

    BOS = "\x02"
    EOS = "\x03"

    def __init__(self, order: int = 2, seed: int = 0, max_length: int = 30):
        self.order = _check_int("order", order, 1)
        self.seed = _check_int("seed", seed, 0)
        self.max_length = _check_int("max_length", max_length, 1)
        self.settings = {"order": self.order, "seed": self.seed, "max_length": self.max_length}

    def _fit(self, inputs: list[str]) -> dict[tuple[str, ...], tuple[list[str], list[int]]]:
        counts: dict[tuple[str, ...], dict[str, int]] = {}
        k = self.order - 1
        for text in inputs:
            tokens = [self.BOS] * k + text.split() + [self.EOS]
            for i in range(k, len(tokens)):
                ctx = tuple(tokens[i - k : i])
                nxt = counts.setdefault(ctx, {})
                nxt[tokens[i]] = nxt.get(tokens[i], 0) + 1
        model = {}
        for ctx, nxt in counts.items():
            words = sorted(nxt)
            cum, total = [], 0
            for w in words:
                total += nxt[w]
                cum.append(total)
            model[ctx] = (words, cum)
        return model

    def generate(self, inputs: list[str]) -> list[str]:
        import bisect
        import random

        model = self._fit(inputs)
        rng = random.Random(self.seed)
        k = self.order - 1
        out = []
        for _ in inputs:
            ctx = [self.BOS] * k
            words: list[str] = []
            while len(words) < self.max_length:
                entry = model.get(tuple(ctx[len(ctx) - k :]) if k else ())
                if entry is None:
                    break
                choices, cum = entry
                w = choices[bisect.bisect_right(cum, int(rng.random() * cum[-1]))]
                if w == self.EOS:
                    break
                words.append(w)
                ctx.append(w)
            out.append(" ".join(words))
        return out


@hookimpl
def register_generators(register):
    """Register the built-in `copy` and `ngram` generators."""
    register("copy", CopyGenerator)
    register("ngram", NgramGenerator)
