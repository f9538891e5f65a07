"""Controlled queries: each query augmented into a group of close variants (Pang et al. 2020, section 3.3).

* ``wordnet``: POS-tag the query's words, then substitute WordNet synonyms for the verbs, the nouns, the
  adjectives and adverbs, or all of them: the group is the query followed by these four variants (more
  variants: further seeded draws substituting all of them). Seeded and deterministic: the synonym of a word
  is drawn with ``random.Random("<seed>|<variant>|<query>")`` from its sorted candidates.
  POS tags come from NLTK's perceptron tagger when its data is installed (``tagger="nltk"``), else from
  WordNet itself (``tagger="wordnet"``: the part of speech of the word's most frequent synset).
* ``ctg``: a conditional text generator: the top beams of a causal LM given the dialogue history before
  the query (``<bos> history <eos>``), with ``transformers``' ``generate``.

Each group records how it was made (``augmentation``: method, seed, WordNet version, tagger, ...), which
``group-entropy`` puts into its hash.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from cotk_repro.data.tokenizers import wordpunct_detokenize, wordpunct_tokenize
from cotk_repro.errors import CotkError

from .wordnet import load_wordnet, wordnet_version

VERSION = "1"
CATEGORIES = ("verbs", "nouns", "adjectives-adverbs", "all")
_CATEGORY_POS = {
    "verbs": {"v"},
    "nouns": {"n"},
    "adjectives-adverbs": {"a", "s", "r"},
    "all": {"v", "n", "a", "s", "r"},
}
_PENN = {"V": "v", "N": "n", "J": "a", "R": "r"}


class AugmentError(CotkError):
    """Bad input to an augmentation (one sentence)."""


def _nltk_tagger():
    try:
        import nltk

        nltk.pos_tag(["test"])
        return lambda words: [_PENN.get(tag[:1]) for _, tag in nltk.pos_tag(list(words))]
    except LookupError:
        return None


def _wordnet_tagger(wn):
    def tag(words: Sequence[str]) -> list[str | None]:
        out = []
        for w in words:
            syns = wn.synsets(w.lower()) if w.isalpha() else []
            out.append(syns[0].pos() if syns else None)
        return out

    return tag


class WordNetAugmenter:
    """WordNet substitution (see the module docstring)."""

    method = "wordnet"

    def __init__(self, seed: int = 0, variants: int = 5, wordnet: str | None = None, tagger: str = "auto"):
        if isinstance(variants, bool) or not isinstance(variants, int) or variants < 1:
            raise AugmentError(f"variants must be a positive integer, not {variants!r}")
        self.wn = load_wordnet(wordnet)
        self.seed, self.variants = int(seed), variants
        if tagger not in ("auto", "nltk", "wordnet"):
            raise AugmentError(f"tagger must be auto, nltk or wordnet, not {tagger!r}")
        tag = _nltk_tagger() if tagger in ("auto", "nltk") else None
        if tag is None and tagger == "nltk":
            raise AugmentError(
                "NLTK's perceptron tagger data is not installed "
                "(python -m nltk.downloader averaged_perceptron_tagger_eng); use --tagger wordnet"
            )
        self.tagger = "nltk-perceptron" if tag is not None else "wordnet-most-frequent-synset"
        self._tag = tag or _wordnet_tagger(self.wn)

    @property
    def info(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "version": VERSION,
            "seed": self.seed,
            "variants": self.variants,
            "wordnet": wordnet_version(self.wn),
            "tagger": self.tagger,
        }

    def synonyms(self, word: str, pos: str) -> list[str]:
        """Sorted single-word synonyms of ``word`` in its ``pos`` synsets (without the word itself)."""
        poses = {"a", "s"} if pos in ("a", "s") else {pos}
        names: set[str] = set()
        for syn in self.wn.synsets(word.lower()):
            if syn.pos() in poses:
                names.update(n for n in syn.lemma_names() if "_" not in n and n.lower() != word.lower())
        return sorted(names)

    def variant(self, query: str, category: str, draw: int = 0) -> str:
        words = wordpunct_tokenize(query)
        tags = self._tag(words)
        rng = random.Random(f"{self.seed}|{category}|{draw}|{query}")
        out = []
        for w, t in zip(words, tags):
            cands = self.synonyms(w, t) if t in _CATEGORY_POS[category] else []
            out.append(rng.choice(cands) if cands else w)
        return wordpunct_detokenize(out)

    def augment(self, query: str) -> list[str]:
        """The group: the query, then its variants (verbs, nouns, adjectives/adverbs, all, more draws of all)."""
        group = [query]
        draw = 0
        while len(group) < self.variants:
            k = len(group) - 1
            if k < len(CATEGORIES):
                group.append(self.variant(query, CATEGORIES[k]))
            else:
                draw += 1
                group.append(self.variant(query, "all", draw))
        return group


class GeneratorAugmenter:
    """Conditional text generation: the top beams of a causal LM given the history before the query."""

    method = "ctg"

    def __init__(self, model: str, seed: int = 0, variants: int = 5, max_new_tokens: int = 30):
        from .lm import load_model

        self.lm = load_model(model)
        self.seed, self.variants, self.max_new_tokens = int(seed), int(variants), int(max_new_tokens)

    @property
    def info(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "version": VERSION,
            "seed": self.seed,
            "variants": self.variants,
            "model": self.lm.identity,
            "beams": self.variants,
            "max_new_tokens": self.max_new_tokens,
        }

    def augment(self, query: str, history: str = "") -> list[str]:
        import torch

        torch.manual_seed(self.seed)
        ids = [self.lm.bos_id] + (
            self.lm.tokenizer(history, add_special_tokens=False)["input_ids"] + [self.lm.eos_id] if history else []
        )
        inp = torch.tensor([ids], device=self.lm.device)
        with torch.inference_mode():
            out = self.lm.model.generate(
                inp,
                attention_mask=torch.ones_like(inp),
                num_beams=self.variants,
                num_return_sequences=self.variants,
                do_sample=False,
                max_new_tokens=self.max_new_tokens,
                eos_token_id=self.lm.eos_id,
                pad_token_id=self.lm.eos_id,
            )
        return [self.lm.tokenizer.decode(o[len(ids) :], skip_special_tokens=True).strip() for o in out]


def augment_queries(
    queries: Sequence[str],
    method: str = "wordnet",
    *,
    seed: int = 0,
    variants: int = 5,
    wordnet: str | None = None,
    tagger: str = "auto",
    model: str | None = None,
    histories: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """One record per query: ``{"query", "variants", "augmentation"}`` (JSONL lines of ``cotk-repro augment``)."""
    if method == "wordnet":
        aug: Any = WordNetAugmenter(seed=seed, variants=variants, wordnet=wordnet, tagger=tagger)
        groups = [aug.augment(q) for q in queries]
    elif method == "ctg":
        if model is None:
            raise AugmentError("--method ctg needs --model DIR (a causal LM folder)")
        if histories is not None and len(histories) != len(queries):
            raise AugmentError(f"{len(queries)} queries but {len(histories)} histories: give one history per query")
        aug = GeneratorAugmenter(model, seed=seed, variants=variants)
        groups = [aug.augment(q, histories[i] if histories is not None else "") for i, q in enumerate(queries)]
    else:
        raise AugmentError(f"unknown augmentation method {method!r}; use wordnet or ctg")
    info = aug.info
    return [{"query": q, "variants": g, "augmentation": info} for q, g in zip(queries, groups)]
