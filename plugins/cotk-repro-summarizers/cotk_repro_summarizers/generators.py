"""Extractive summarizers as ``cotk-repro compare`` generators: one document in, one summary out.

``lexrank``, ``textrank``, ``lsa``, ``luhn`` and ``random`` are sumy's summarizers; ``lead`` takes the first
sentences; ``smmry`` is a SMMRY-style frequency summarizer (stem the words, count the non-stop words of
the document, rate a sentence by the sum of its words' counts). Every one returns the chosen sentences in
document order, joined by ``joiner``.

Settings (all go into the generator's cache key, with the resolved sentence splitter and sumy's version):

==================== ========== ============================================================================
``sentences``        ``3``      how many sentences a summary has
``words``            none       a word budget instead: the best-rated sentences while the summary's
                                whitespace-separated words stay within it (at least one sentence)
``language``         english    stemmer and stop-word language
``stemmer``          true       stem words (NLTK's Snowball through sumy; no data downloads)
``stop_words``       true       leave out sumy's stop words for the language
``tokenizer``        ``nltk``   the cotk-repro tokenizer that finds the words of a sentence
``sentence_separator`` none     a declared marker between sentences (e.g. ``"</s>"``)
``sentence_splitter`` ``auto``  without a separator: ``punkt`` (NLTK's model, when installed), ``rule``
``joiner``           ``" "``    what joins the chosen sentences
``seed``             ``0``      ``random`` only: the summaries are a function of the seed and the document
==================== ========== ============================================================================
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, overload

from .sentences import SumyTokenizer, make_splitter

GENERATOR_VERSION = "2"  # 2: lexrank, textrank and lsa in exact arithmetic (issue 38)


def _check_int(name: str, value: Any, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"setting {name!r} must be an integer >= {low}, got {value!r}")
    return value


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"setting {name!r} must be true or false, got {value!r}")
    return value


@overload
def _check_str(name: str, value: Any) -> str: ...
@overload
def _check_str(name: str, value: Any, *, optional: bool) -> str | None: ...
def _check_str(name: str, value: Any, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not value and not optional):
        raise ValueError(f"setting {name!r} must be a non-empty string, got {value!r}")
    return value


def word_budget(words: int) -> Callable[[list], list]:
    """A sumy ``sentences_count`` callable: the best-rated sentences while the words stay within ``words``."""

    def take(infos: list) -> list:
        out: list[Any] = []
        used = 0
        for info in infos:
            n = len(str(info.sentence).split())
            if out and used + n > words:
                break
            out.append(info)
            used += n
        return out

    return take


class ExtractiveSummarizer:
    """Base class: settings, sentence splitting and the sumy document; subclasses pick the sentences."""

    name = "extractive"
    batch_size = 64
    uses_stop_words = True

    def __init__(
        self,
        sentences: int = 3,
        words: int | None = None,
        language: str = "english",
        stemmer: bool = True,
        stop_words: bool = True,
        tokenizer: str = "nltk",
        sentence_separator: str | None = None,
        sentence_splitter: str = "auto",
        joiner: str = " ",
        **extra: Any,
    ) -> None:
        import sumy

        from cotk_repro.plugins import get_component

        if extra:
            raise ValueError(f"unknown setting(s) {', '.join(sorted(extra))} for generator {self.name!r}")
        self.count: Any = (
            word_budget(_check_int("words", words, 1)) if words is not None else _check_int("sentences", sentences, 1)
        )
        self.language = _check_str("language", language)
        self.stemmer = _check_bool("stemmer", stemmer)
        self.stop_words = _check_bool("stop_words", stop_words)
        _check_str("tokenizer", tokenizer)
        _check_str("sentence_separator", sentence_separator, optional=True)
        _check_str("sentence_splitter", sentence_splitter)
        if not isinstance(joiner, str):
            raise ValueError(f"setting 'joiner' must be a string, got {joiner!r}")
        self.joiner = joiner
        splitter_name, self._split = make_splitter(sentence_splitter, sentence_separator, self.language)
        word_tok = get_component("tokenizer", tokenizer)()
        self._tokenizer = SumyTokenizer(self.language, self._split, word_tok)
        self.version = f"{GENERATOR_VERSION}+sumy{sumy.__version__}"
        tok_settings = getattr(word_tok, "settings", {})
        self.settings = {
            "sentences": None if words is not None else sentences,
            "words": words,
            "language": self.language,
            "stemmer": self.stemmer,
            "stop_words": self.stop_words if self.uses_stop_words else None,
            "tokenizer": tok_settings() if callable(tok_settings) else tok_settings,
            "sentence_separator": sentence_separator,
            "sentence_splitter": splitter_name,
            "joiner": joiner,
        }

    def _sumy_stemmer(self):
        from sumy.nlp.stemmers import Stemmer, null_stemmer

        return Stemmer(self.language) if self.stemmer else null_stemmer

    def _stop_word_list(self) -> frozenset:
        from sumy.utils import get_stop_words

        return frozenset(get_stop_words(self.language)) if self.stop_words else frozenset()

    def document(self, text: str):
        """The sumy document of one input line: one paragraph of its sentences."""
        from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence

        sentences = [Sentence(s, self._tokenizer) for s in self._split(text)]
        return ObjectDocumentModel([Paragraph(sentences)] if sentences else [])

    def select(self, document: Any, text: str) -> tuple:
        """The chosen sumy sentences of ``document`` in document order."""
        raise NotImplementedError

    def summarize(self, text: str) -> str:
        """The summary of one document."""
        document = self.document(text)
        if not document.sentences:
            return ""
        return self.joiner.join(str(s) for s in self.select(document, text))

    def generate(self, inputs: list[str]) -> list[str]:
        """One summary per input document."""
        return [self.summarize(text) for text in inputs]


class SumySummarizer(ExtractiveSummarizer):
    """A sumy summarizer (``sumy_class``: module and class under ``sumy.summarizers``) with the stemmer and
    stop words of the settings."""

    sumy_class: tuple[str, str] = ("", "")

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._summarizer = self.make_summarizer()

    def make_summarizer(self):
        import importlib

        module, cls = self.sumy_class
        summarizer = getattr(importlib.import_module(f"sumy.summarizers.{module}"), cls)(self._sumy_stemmer())
        if self.uses_stop_words:
            summarizer.stop_words = self._stop_word_list()
        return summarizer

    def select(self, document: Any, text: str) -> tuple:
        return self._summarizer(document, self.count)


def ordered_cosine(sentence1: Any, sentence2: Any, tf1: dict, tf2: dict, idf: dict) -> float:
    """sumy's idf-modified cosine with every sum correctly rounded (``math.fsum``), so that it does not depend on
    the iteration order of a frozenset (Python's string hashing) at the ``threshold`` comparison."""
    words1, words2 = set(sentence1), set(sentence2)
    numerator = math.fsum(tf1[t] * tf2[t] * idf[t] ** 2 for t in words1 & words2)
    d1 = math.fsum((tf1[t] * idf[t]) ** 2 for t in words1)
    d2 = math.fsum((tf2[t] * idf[t]) ** 2 for t in words2)
    return numerator / (math.sqrt(d1) * math.sqrt(d2)) if d1 > 0 and d2 > 0 else 0.0


def _dot(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def _step(columns: list[list[Fraction]], p: list[Fraction]) -> list[Fraction]:
    """``matrix.T @ p`` in exact arithmetic (``columns``: the matrix's columns)."""
    return [_dot(col, p) for col in columns]


MAX_ITERATIONS = 1000


def lexrank_power_method(matrix: Any, epsilon: float) -> list[Fraction]:
    """sumy's LexRank power method in exact rational arithmetic: the same iterations (stop when the normalized
    vectors move by at most ``epsilon``), with no BLAS and no rounding, so equal centralities are exactly equal
    and a tie goes to the earlier sentence on every machine. Returns the scores up to a positive factor (the
    ranking is what counts). The matrix's entries are 0 or 1/degree (degree <= the sentence count)."""
    n = len(matrix)
    columns = [[Fraction(float(matrix[r][c])).limit_denominator(n) for r in range(n)] for c in range(n)]
    eps2 = Fraction(epsilon) ** 2
    prev = [Fraction(1, n)] * n
    q = _step(columns, prev)
    # first step: the uniform start is not a unit vector; |q/|q| - p0|^2 = 1 + 1/n - 2 (q.p0)/|q|
    for i in range(MAX_ITERATIONS):
        qq = _dot(q, q)
        if qq == 0:
            return [Fraction(0)] * n
        d = _dot(q, prev)
        if i == 0:
            r, scale = 1 + Fraction(1, n) - eps2, qq
        else:  # |a/|a| - b/|b||^2 = 2 - 2 (a.b)/(|a||b|)
            r, scale = 2 - eps2, qq * _dot(prev, prev)
        if r <= 0 or r * r * scale <= 4 * d * d:  # the move is at most epsilon: converged
            return q
        prev, q = q, _step(columns, q)
    return q


def textrank_power_method(matrix: Any, epsilon: float) -> list[Fraction]:
    """sumy's TextRank power method (no normalization; stop when the vector moves by at most ``epsilon``) in
    exact rational arithmetic over the matrix's float entries: no BLAS, the same result on every machine."""
    n = len(matrix)
    columns = [[Fraction(float(matrix[r][c])) for r in range(n)] for c in range(n)]
    eps2 = Fraction(epsilon) ** 2
    p = [Fraction(1, n)] * n
    for _ in range(MAX_ITERATIONS):
        nxt = _step(columns, p)
        moved = sum(((a - b) ** 2 for a, b in zip(nxt, p)), Fraction(0))
        p = nxt
        if moved <= eps2:
            break
    return p


class LexRank(SumySummarizer):
    """sumy's LexRank (Erkan and Radev 2004): sentence centrality in a TF-IDF cosine graph.

    sumy runs the power method with numpy's ``dot``: its last bits follow the BLAS kernel (OpenBLAS picks one
    per CPU), and sentences of equal centrality, common in short documents, then rank by those bits, so another
    machine chose other sentences. Here the power method is exact (:func:`lexrank_power_method`) and the cosine
    sums are correctly rounded (:func:`ordered_cosine`): a tie goes to the earlier sentence everywhere.
    """

    name = "lexrank"
    sumy_class = ("lex_rank", "LexRankSummarizer")

    def make_summarizer(self):
        summarizer = super().make_summarizer()
        summarizer.cosine_similarity = ordered_cosine
        summarizer.power_method = lexrank_power_method
        return summarizer


class TextRank(SumySummarizer):
    """sumy's TextRank (Mihalcea and Tarau 2004): PageRank over word-overlap similarity.

    As for LexRank, the power method is exact (:func:`textrank_power_method`) instead of numpy's BLAS ``dot``.
    """

    name = "textrank"
    sumy_class = ("text_rank", "TextRankSummarizer")

    def make_summarizer(self):
        summarizer = super().make_summarizer()
        summarizer.power_method = textrank_power_method
        return summarizer


class Lsa(SumySummarizer):
    """sumy's LSA summarizer (Steinberger and Jezek 2004): sentences by their weight in the top topics.

    sumy keeps every dimension (``REDUCTION_RATIO`` 1), so a sentence's rank ``sqrt(sum_i s_i^2 v_ij^2)`` is the
    norm of its column of the smoothed term-frequency matrix (``A^T A = V S^2 V^T``). sumy gets it from LAPACK's
    SVD, whose last bits follow the BLAS kernel (and the term rows' order, a frozenset's, with Python's string
    hashing), and sentences of equal rank then ranked by those bits: another machine chose other sentences. Here
    the squared column norms are summed in exact rational arithmetic (:func:`lsa_ranks`): equal ranks are equal,
    and a tie goes to the earlier sentence on every machine. (Were sumy to keep fewer dimensions, its SVD runs,
    with the term rows in sorted order.)
    """

    name = "lsa"
    sumy_class = ("lsa", "LsaSummarizer")

    def make_summarizer(self):
        summarizer = super().make_summarizer()
        create = summarizer._create_dictionary

        def sorted_dictionary(document):
            return {w: i for i, w in enumerate(sorted(create(document)))}

        summarizer._create_dictionary = sorted_dictionary
        return summarizer

    def select(self, document: Any, text: str) -> tuple:
        summarizer = self._summarizer
        if type(summarizer).REDUCTION_RATIO < 1:  # sumy keeps fewer dimensions than sentences: its SVD
            return summarizer(document, self.count)
        dictionary = summarizer._create_dictionary(document)
        if not dictionary:
            return ()
        ranks = iter(lsa_ranks(summarizer._create_matrix(document, dictionary)))
        return summarizer._get_best_sentences(document.sentences, self.count, lambda s: next(ranks))


def lsa_ranks(counts: Any, smooth: Fraction = Fraction(2, 5)) -> list[Fraction]:
    """Each sentence's squared LSA rank with every dimension kept: the squared norm of its column of sumy's
    smoothed term frequencies (``smooth + (1 - smooth) * count / the column's largest count``, every row, as
    sumy's ``_compute_term_frequency`` with its default 0.4), in exact rational arithmetic."""
    rows, cols = counts.shape
    out = []
    for col in range(cols):
        column = [int(counts[r, col]) for r in range(rows)]
        top = max(column, default=0)
        if top == 0:
            out.append(Fraction(0))
            continue
        out.append(sum(((smooth + (1 - smooth) * Fraction(c, top)) ** 2 for c in column), Fraction(0)))
    return out


class Luhn(SumySummarizer):
    """sumy's Luhn summarizer (Luhn 1958): clusters of significant words."""

    name = "luhn"
    sumy_class = ("luhn", "LuhnSummarizer")


class RandomSentences(SumySummarizer):
    """sumy's random summarizer, seeded: the ratings are a shuffle drawn from ``random.Random`` seeded with
    the seed and the document text, so a summary never depends on the batch or the process."""

    name = "random"
    uses_stop_words = False

    def __init__(self, seed: int = 0, **settings: Any) -> None:
        self.seed = _check_int("seed", seed, 0)
        super().__init__(**settings)
        self.settings["seed"] = self.seed

    def make_summarizer(self):
        from sumy.summarizers.random import RandomSummarizer

        outer = self

        class Seeded(RandomSummarizer):
            def __call__(self, document, sentences_count):
                sentences = document.sentences
                ratings = list(range(len(sentences)))
                random.Random(f"{outer.seed}\x00{outer._current}").shuffle(ratings)
                return self._get_best_sentences(sentences, sentences_count, dict(zip(sentences, ratings)))

        return Seeded(self._sumy_stemmer())

    def select(self, document: Any, text: str) -> tuple:
        self._current = text
        return self._summarizer(document, self.count)


class Lead(ExtractiveSummarizer):
    """The lead baseline: the first ``sentences`` sentences (or the first ones within ``words``)."""

    name = "lead"
    uses_stop_words = False

    def select(self, document: Any, text: str) -> tuple:
        from sumy.summarizers._summarizer import AbstractSummarizer

        sentences = document.sentences
        ratings = {s: -i for i, s in reversed(list(enumerate(sentences)))}  # a repeated sentence: its first place
        return AbstractSummarizer._get_best_sentences(sentences, self.count, ratings)


class Smmry(SumySummarizer):
    """SMMRY-style (smmry.com's published algorithm): stem the words, count each non-stop word in the
    document, rate a sentence by the sum of its words' counts, keep the best-rated sentences."""

    name = "smmry"

    def make_summarizer(self):
        from sumy.summarizers._summarizer import AbstractSummarizer

        stop = self._stop_word_list()

        class SmmrySummarizer(AbstractSummarizer):
            def __call__(self, document, sentences_count):
                def stems(sentence):
                    return [self.stem_word(w) for w in sentence.words if self.normalize_word(w) not in stop]

                counts: dict[str, int] = {}
                for sentence in document.sentences:
                    for w in stems(sentence):
                        counts[w] = counts.get(w, 0) + 1
                ratings = {s: sum(counts[w] for w in stems(s)) for s in document.sentences}
                return self._get_best_sentences(document.sentences, sentences_count, ratings)

        return SmmrySummarizer(self._sumy_stemmer())


#: generator name -> class
GENERATORS = {cls.name: cls for cls in (LexRank, TextRank, Lsa, Luhn, RandomSentences, Lead, Smmry)}
