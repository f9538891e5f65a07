"""Reference-side comparability hashes, shared by dataloaders and metrics (docs/spec.md section 5).

A dataloader's ``reference_hashes(split)`` and the metrics fed from it must produce
the *same* hash for the same references, so both call these functions.

* Order never matters: samples are hashed as a sorted multiset; within a sample,
  the order of several references does not matter either.
* BLEU-family hashes cover the references **re-tokenized by BLEU's own fixed
  tokenizer** (:func:`bleu_tokenize`, NLTK's WordPunct: :mod:`cotk_repro.core.wordpunct`, named with its engine
  and Unicode version, ``wordpunct-u18``) plus every setting
  that changes the score, so they do not depend on the model's tokenizer or
  vocabulary.
* The perplexity hash covers the references as tokenized by the dataloader and
  the whole vocabulary F ∪ R (a set: not how it is split into F and R).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..core import wordpunct
from ..core.canonical import StreamHasher, frame_bytes, token_list_items

#: BLEU's fixed tokenizer in signatures and hashes: WordPunct with its engine's Unicode version (``wordpunct-u18``)
BLEU_TOKENIZER = wordpunct.tokenizer_id()
BLEU_VERSION = "1"
PERPLEXITY_VERSION = "1"
# canonical_json's encoder without its per-value walk: for lists of token lists the bytes are the same (the
# walk only refuses NaN, infinities and non-JSON types, which this encoder refuses too), at a fraction of the
# cost on large reference sets. Tested against canonical_json in tests/test_metrics_cider.py.
_ITEMS = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
#: the containers a sample and a reference may be for the bulk path (anything else: the generic one)
_SEQUENCES = (list, tuple)
#: below this many one-reference samples the generic path is as fast
_BULK_FROM = 16


def bleu_tokenize(text: str) -> list[str]:
    """BLEU's fixed tokenizer: exactly NLTK's ``WordPunctTokenizer`` (``\\w+|[^\\w\\s]+`` through ``regex``)."""
    return wordpunct.findall(text)


def reference_set_hash(metric: str, settings: Mapping[str, Any], references: Iterable[Sequence[Sequence[str]]]) -> str:
    """Order-independent hash of tokenized references with the metric's name and settings.

    ``references``: for each sample, its references, each a list of tokens.
    """
    items = _sample_items(list(references))
    items.sort()
    h = StreamHasher("cotk-repro/reference-set/v1")
    h.update({"metric": metric, "settings": dict(settings)})
    h.update(len(items))
    h.update_framed(frame_bytes(items))
    return h.hexdigest()


def _generic_item(refs: Iterable[Sequence[str]]) -> bytes:
    """The hashed bytes of one sample: the canonical JSON of its sorted references (token lists)."""
    return _ITEMS.encode(sorted(list(r) for r in refs)).encode("utf-8")


def _sample_items(samples: list[Any]) -> list[bytes]:
    """:func:`_generic_item` of each sample, the samples holding one reference (a list or tuple of strings) in bulk
    through :func:`cotk_repro.core.canonical.token_list_items`, the same bytes (tested against the generic path in
    tests/test_reference_hash_bulk.py): a sample of one reference is ``[[tokens]]`` either way."""
    single = [
        i
        for i, refs in enumerate(samples)
        if type(refs) in _SEQUENCES and len(refs) == 1 and type(refs[0]) in _SEQUENCES
    ]
    if len(single) < _BULK_FROM:
        return [_generic_item(refs) for refs in samples]
    try:  # a token that is not a string (a number, a list) makes the bulk join raise: the generic path decides
        bulk = token_list_items(
            [samples[i][0] for i in single] if len(single) < len(samples) else [refs[0] for refs in samples]
        )
    except TypeError:
        return [_generic_item(refs) for refs in samples]
    if len(single) == len(samples):
        return bulk
    items: list[bytes] = [b""] * len(samples)
    for i, item in zip(single, bulk):
        items[i] = item
    done = set(single)
    for i, refs in enumerate(samples):
        if i not in done:
            items[i] = _generic_item(refs)
    return items


def bleu_reference_hash(
    references: Iterable[Sequence[str]],
    *,
    metric: str = "bleu",
    ngram: int = 4,
    weights: Sequence[float] | None = None,
    smoothing: str = "method3",
    version: str = BLEU_VERSION,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """Hash of a BLEU reference set. ``references``: for each sample, its reference strings."""
    if weights is None:
        weights = [1.0 / ngram] * ngram
    settings = {
        "ngram": ngram,
        "weights": [float(w) for w in weights],
        "smoothing": smoothing,
        "tokenizer": BLEU_TOKENIZER,
        "normalize": "none",
        "version": version,
        **(extra or {}),
    }
    groups = [list(refs) for refs in references]
    flat = wordpunct.tokenize_many([r for refs in groups for r in refs])  # in bulk: bleu_tokenize of each
    tokens, start = [], 0
    for refs in groups:
        tokens.append(flat[start : start + len(refs)])
        start += len(refs)
    return reference_set_hash(metric, settings, tokens)


def perplexity_reference_hash(
    references: Iterable[Sequence[str]],
    all_vocab: Iterable[str],
    *,
    version: str = PERPLEXITY_VERSION,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """Hash of a perplexity reference set: tokenized references (one token list per sample) and F ∪ R."""
    settings = {"vocab": sorted(set(all_vocab)), "version": version, **(extra or {})}
    return reference_set_hash("perplexity", settings, ([list(tokens)] for tokens in references))
