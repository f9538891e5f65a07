"""Precision and recall over several responses per context (Zhao et al. 2017, as CoTK computes them).

For each context, every generated response is scored against every reference response
(a matrix ``score[ref, gen]``); precision is the mean over generated responses of their best
score, recall the mean over references of theirs; both are averaged over contexts.

* ``bleu-precision-recall``: the score is NLTK ``sentence_bleu`` (BLEU-``ngram``, uniform
  weights, ``method1``) of the response against the one reference; ``<unk>`` never matches.
* ``embedding-precision-recall``: the score is (cos + 1) / 2 between bag-of-words embeddings
  (``mode``: the element-wise ``avg`` or ``extrema`` (maximum) of the word vectors of the
  words that have one; 0 when a side has none). Word vectors come from a file in word2vec text
  format (an optional ``count dim`` header line, then ``word v1 .. vd`` per line; GloVe files
  are the same without the header) or a mapping word -> vector; the hash covers the vectors.

Inputs: ``compute(hypotheses, references)`` with, per context, a list of generated responses
(or one string: a single response) and a list of reference responses (strings, token lists,
or id lists with ``dataloader=``). Strings are split with BLEU's WordPunct tokenizer (``bleu-precision-recall``:
its ``tokenizer`` option, the BLEU family's, and ``normalize``); token lists are taken as given.

CoTK rule (a named setting): ``score_dtype="float32"`` stores each pair's score as a 32-bit
float before the means, as CoTK 0.1.0 does (default ``float64``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..text.reference_hashes import BLEU_TOKENIZER, reference_set_hash
from .base import EXACT, Metric, MetricError, check_references
from .bleu import _is_ids, _weights, bleu_from_counts
from .bleu_tokenizers import get_bleu_tokenizer
from .declaration import COUNTED_INPUTS, HASH_ONLY_AS_PUBLISHED, PART_OF_HASHED, Declaration, Setting, with_settings
from .ngrams import UNK, tokenize_text
from .normalization import normalization, normalizer
from .resampling import SET_LEVEL

SCORE_DTYPES = ("float64", "float32")


def pair_bleu(
    hyp: Sequence[str], ref: Sequence[str], ngram: int, weights: Sequence[float], smoothing: str = "method1"
) -> float:
    """NLTK ``sentence_bleu([ref], hyp)``; an n-gram holding ``<unk>`` never matches."""
    nums, dens = [], []
    for n in range(1, ngram + 1):
        h = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        nums.append(sum(min(c, r[g]) for g, c in h.items() if UNK not in g))
        dens.append(max(1, len(hyp) - n + 1))
    return bleu_from_counts(nums, dens, len(hyp), len(ref), weights, smoothing)


def load_vectors(source: Any) -> dict[str, np.ndarray]:
    """Word vectors from a word2vec-text / GloVe file (path) or a mapping word -> vector."""
    if isinstance(source, Mapping):
        vectors = {str(w): np.asarray(v, dtype=np.float64) for w, v in source.items()}
    else:
        path = Path(source)
        if not path.is_file():
            raise MetricError(f"word vector file {str(path)!r} does not exist")
        vectors = {}
        with path.open(encoding="utf-8") as f:
            for i, line in enumerate(f):
                parts = line.rstrip("\n").split(" ")
                parts = [p for p in parts if p]
                if not parts:
                    continue
                if i == 0 and len(parts) == 2 and all(p.isdigit() for p in parts):
                    continue  # word2vec header: count dim
                try:
                    vectors[parts[0]] = np.asarray([float(x) for x in parts[1:]], dtype=np.float64)
                except ValueError:
                    raise MetricError(f"{path}:{i + 1}: a word vector line must be a word and numbers") from None
    dims = {v.shape for v in vectors.values()}
    if len(dims) > 1 or any(len(d) != 1 or d[0] == 0 for d in dims):
        raise MetricError("word vectors must all have the same non-zero dimension")
    return vectors


def vectors_digest(vectors: Mapping[str, np.ndarray]) -> str:
    """SHA-256 over the words and their float64 vectors, in word order."""
    h = hashlib.sha256()
    for w in sorted(vectors):
        h.update(w.encode("utf-8") + b"\0" + np.ascontiguousarray(vectors[w], dtype="<f8").tobytes())
    return h.hexdigest()


def embedding_similarity(hyp: Sequence[str], ref: Sequence[str], vectors: Mapping[str, np.ndarray], mode: str) -> float:
    """(cos + 1) / 2 of the bag-of-words embeddings (0 when a side has no word with a vector)."""
    g = [vectors[w] for w in hyp if w in vectors]
    r = [vectors[w] for w in ref if w in vectors]
    if not g or not r:
        return 0.0
    if mode == "avg":
        ge, re_ = np.average(g, 0), np.average(r, 0)
    else:
        ge, re_ = np.max(g, 0), np.max(r, 0)
    cos = np.sum(ge * re_) / np.sqrt(np.sum(ge * ge) * np.sum(re_ * re_))
    return float((cos + 1) / 2)


class _PrecisionRecall(Metric):
    """Shared plumbing: the per-context matrices, the means, the hash."""

    resampling = "none"
    no_interval = SET_LEVEL  # docs/metrics.md, "Significance and intervals"

    needs_references = True
    higher_is_better = True
    value_range = (0.0, 1.0)
    level = "sentence"
    #: the result keys' prefix (``bleu-4``, ``avg-bow``...): each subclass's __init__ sets it
    key_prefix: str

    def __init__(self, dataloader: Any = None, score_dtype: str = "float64", **settings: Any) -> None:
        self.dataloader = dataloader
        self.score_dtype = str(score_dtype)
        if self.score_dtype not in SCORE_DTYPES:
            raise MetricError(f"unknown score_dtype {score_dtype!r}; choose one of {', '.join(SCORE_DTYPES)}")
        super().__init__(score_dtype=self.score_dtype, **settings)

    def _tokens(self, item: Any) -> list[str]:
        if isinstance(item, str):
            return tokenize_text(item)
        if _is_ids(item):
            if self.dataloader is None:
                raise MetricError("a response is a list of ids; pass dataloader= so that ids can be turned into words")
            return [str(t) for t in self.dataloader.convert_ids_to_tokens([int(i) for i in item])]
        if isinstance(item, (list, tuple, np.ndarray)):
            return [str(t) for t in item]
        raise MetricError(f"a response must be a string, a token list or an id list, not {type(item).__name__}")

    def _score(self, hyp: list[str], ref: list[str]) -> float:
        raise NotImplementedError

    def _settings(self) -> list[Setting]:
        """The settings of this kind of similarity (hashed and shown in the signature)."""
        raise NotImplementedError

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        contexts = list(hypotheses)
        refs = check_references(contexts, references)
        if not contexts:
            raise MetricError(f"{self.name} needs at least one context")
        dtype = np.float32 if self.score_dtype == "float32" else np.float64
        prec, rec, ref_tokens = [], [], []
        for i, (gens, rs) in enumerate(zip(contexts, refs)):
            if isinstance(gens, str):  # one response for this context (e.g. `evaluate --hyps` lines)
                gens = [gens]
            if not len(gens) or not rs:
                raise MetricError(f"context {i} needs a list of generated responses and a list of references")
            g_tok = [self._tokens(g) for g in gens]
            r_tok = [self._tokens(r) for r in rs]
            matrix = np.zeros((len(r_tok), len(g_tok)), dtype=dtype)
            for a, r in enumerate(r_tok):
                for b, g in enumerate(g_tok):
                    matrix[a, b] = self._score(g, r)
            prec.append(float(np.sum(np.max(matrix, 0))) / len(g_tok))
            rec.append(float(np.sum(np.max(matrix, 1))) / len(r_tok))
            ref_tokens.append(r_tok)
        decl = Declaration(
            self.name,
            self.version,
            [
                *self._settings(),
                *([Setting("score_dtype", self.score_dtype, "dtype")] if self.score_dtype != "float64" else []),
                Setting.signature_only("ctx", len(contexts), why=COUNTED_INPUTS),
            ],
        )
        out: dict[str, Any] = {}
        for part, values in (("precision", prec), ("recall", rec)):
            key = f"{self.key_prefix}-{part}"
            out.update(
                with_settings(decl, [], name=key).entry(
                    key,
                    float(np.average(values)),
                    partial(_hash_of, key, ref_tokens),
                )
            )
        return out


class BleuPrecisionRecallMetric(_PrecisionRecall):
    """``bleu-precision-recall``: keys ``bleu-N-precision`` and ``bleu-N-recall`` (options ``ngram`` (2),
    ``score_dtype``, ``dataloader``, ``tokenizer`` and ``normalize``: the BLEU family's (bleu_tokenizers.py), strings
    only; token lists are scored as given)."""

    name = "bleu-precision-recall"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    cost = 2.0
    result_keys = r"bleu-\d+-(precision|recall)"
    key_facts: ClassVar[dict[str, dict[str, Any]]] = {}
    takes_shared_tokenizer = False  # the BLEU family's own option, never evaluate()'s shared tokenizer

    def __init__(
        self,
        ngram: int = 2,
        dataloader: Any = None,
        score_dtype: str = "float64",
        tokenizer: Any = None,
        normalize: str = "none",
    ) -> None:
        self.ngram, self.weights = _weights(ngram, None)
        self.key_prefix = f"bleu-{self.ngram}"
        #: the BLEU family's tokenizer for strings (WordPunct by default) and Unicode normalisation before it
        self.bleu_tokenizer = get_bleu_tokenizer(tokenizer)
        self.normalize = normalization(normalize)
        self._normalizer = normalizer(self.normalize)
        extra: dict[str, Any] = {}
        if not self.bleu_tokenizer.default:
            extra["tokenizer"] = self.bleu_tokenizer.spec
        if self.normalize != "none":
            extra["normalize"] = self.normalize
        super().__init__(dataloader, score_dtype, ngram=self.ngram, **extra)

    def _tokens(self, item: Any) -> list[str]:
        if isinstance(item, str) and (self._normalizer is not None or not self.bleu_tokenizer.default):
            text = self._normalizer(item) if self._normalizer is not None else item
            return self.bleu_tokenizer.tokenize(text)
        return super()._tokens(item)

    def _score(self, hyp: list[str], ref: list[str]) -> float:
        return pair_bleu(hyp, ref, self.ngram, self.weights)

    def _settings(self) -> list[Setting]:
        if self.bleu_tokenizer.default:  # the default's hash and signature stay the ones they were
            tokenizer = Setting.hash_only("tokenizer", BLEU_TOKENIZER + "-or-given", why=HASH_ONLY_AS_PUBLISHED)
        else:
            tokenizer = Setting(
                "tokenizer",
                {"strings": self.bleu_tokenizer.spec, "token lists": "given"},
                "tok",
                shown=self.bleu_tokenizer.name,
            )
        return [
            Setting("ngram", self.ngram, "n"),
            Setting("smoothing", "method1", "smooth", shown="m1"),
            tokenizer,
            *([Setting("normalize", self.normalize, "norm")] if self.normalize != "none" else []),
        ]


class EmbSimilarityPrecisionRecallMetric(_PrecisionRecall):
    """``embedding-precision-recall``: keys ``avg-bow-precision``/``-recall`` or ``extrema-bow-...`` (options
    ``vectors``: a word2vec-text/GloVe file or a mapping, ``mode``: ``avg`` or ``extrema``, ``score_dtype``,
    ``dataloader``)."""

    name = "embedding-precision-recall"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    cost = 2.0
    result_keys = r"(avg|extrema)-bow-(precision|recall)"
    key_facts: ClassVar[dict[str, dict[str, Any]]] = {}

    def __init__(
        self, vectors: Any = None, mode: str = "avg", dataloader: Any = None, score_dtype: str = "float64"
    ) -> None:
        if vectors is None:
            raise MetricError(
                "embedding-precision-recall needs word vectors: vectors= a word2vec-text or GloVe "
                "file, or a mapping word -> vector"
            )
        if mode not in ("avg", "extrema"):
            raise MetricError(f"mode must be 'avg' or 'extrema', not {mode!r}")
        self.vectors = load_vectors(vectors)
        self.mode = mode
        self.digest = vectors_digest(self.vectors)
        self.key_prefix = f"{mode}-bow"
        super().__init__(dataloader, score_dtype, mode=mode, vectors=self.digest)

    def _score(self, hyp: list[str], ref: list[str]) -> float:
        return embedding_similarity(hyp, ref, self.vectors, self.mode)

    def _settings(self) -> list[Setting]:
        return [
            Setting("mode", self.mode, "mode"),
            Setting("vectors", self.digest, "vectors", shown=self.digest[:12]),
            Setting.signature_only("dim", len(next(iter(self.vectors.values()), [])), why=PART_OF_HASHED),
            Setting.hash_only("tokenizer", BLEU_TOKENIZER + "-or-given", why=HASH_ONLY_AS_PUBLISHED),
        ]


def _hash_of(key: str, ref_tokens: Any, settings: dict[str, Any]) -> str:
    """The reference-set hash of ``key`` (a declaration's hasher, bound per result key)."""
    return reference_set_hash(key, settings, ref_tokens)
