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

import random
from collections.abc import Callable
from typing import Any, overload

from .sentences import SumyTokenizer, make_splitter

GENERATOR_VERSION = "1"


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


class LexRank(SumySummarizer):
    """sumy's LexRank (Erkan and Radev 2004): sentence centrality in a TF-IDF cosine graph."""

    name = "lexrank"
    sumy_class = ("lex_rank", "LexRankSummarizer")


class TextRank(SumySummarizer):
    """sumy's TextRank (Mihalcea and Tarau 2004): PageRank over word-overlap similarity."""

    name = "textrank"
    sumy_class = ("text_rank", "TextRankSummarizer")


class Lsa(SumySummarizer):
    """sumy's LSA summarizer (Steinberger and Jezek 2004): sentences by their weight in the top topics.

    sumy numbers the term rows in the iteration order of a frozenset, which changes with Python's string
    hashing from one process to the next, and the SVD's last bits (and so near-tied choices) with it;
    here the rows are in sorted order, so a summary is the same in every process.
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
