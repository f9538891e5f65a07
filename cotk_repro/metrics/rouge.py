"""ROUGE-N and ROUGE-L F-measures, equal to google's ``rouge-score`` package.

Per sample: the tokenizer of ``rouge-score`` (lowercase, every run of characters other
than ``[a-z0-9]`` is a separator; with ``stemmer=True`` NLTK's Porter stemmer on tokens
longer than 3 characters), n-gram overlap (ROUGE-N) or longest common subsequence
(ROUGE-L) precision P and recall R, and

    F = P * R / (alpha * R + (1 - alpha) * P)     (Lin 2004; alpha = 0.5 is F1)

With several references the best F counts (``RougeScorer.score_multi``); the corpus
value is the mean over samples. Keys ``rouge-1``, ``rouge-2``, ``rouge-l`` (``types``
picks others: ``rouge1``..``rouge9``, ``rougeL``, ``rougeLsum``). Hashes cover the references as
ROUGE tokenizes them, the type, alpha, stemming and the metric version.

``rougeLsum`` (key ``rouge-lsum``) is rouge-score's summary-level LCS (Lin 2004, section 3.2): each text is
split into sentences at newlines (empty ones dropped), every reference sentence's union LCS with the
hypothesis sentences counts its tokens at most as often as both sides have them. For files with one text
per line, ``sentence_separator`` (e.g. ``<n>``) names the string that separates sentences inside a line;
it is turned into a newline before tokenizing, for every type.

``tokenizer``: rouge-score's own tokenizer by default (hashed and signed as ``rouge-score``, as always). It keeps
ASCII letters and digits only, so Chinese or Russian text has no token and scores 0: a corpus where most
hypotheses (or references) are left with no token gets a :class:`~cotk_repro.errors.CotkWarning` naming the
option. Another tokenizer is used as ``RougeScorer(tokenizer=...)`` uses one: ``tokenize(text)`` on the text as
it is (no lowercasing, no stemming: ``stemmer`` is refused with it): ``char`` (every character but whitespace),
``space``, ``nltk`` (NLTK's WordPunct), sacrebleu's ``zh`` and ``intl``, or any registered tokenizer or
tokenizer object; its name and settings are hashed and its name signed (``tok:space``).
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Sequence
from functools import partial
from typing import Any

from ..errors import CotkWarning
from ..text.reference_hashes import reference_set_hash
from ._text import TextTokenizer, as_text, check_float, check_samples, resolve_tokenizer
from .base import EXACT, Metric, MetricError
from .declaration import COUNTED_INPUTS, DERIVED_LABEL, NAMED_FIRST, Declaration, Setting
from .normalization import normalization, normalizer

_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_VALID = re.compile(r"^[a-z0-9]+$")
_TYPE = re.compile(r"^rouge([1-9]|L|Lsum)$")
#: the names of rouge-score's own tokenizer (the default)
_OWN = (None, "rouge-score", "default")
#: the tokenizers the warning suggests (docs/metrics.md, ROUGE)
_SUGGESTED = "char, nltk, space, zh or intl"


def rouge_tokenize(text: str, stemmer: Any = None) -> list[str]:
    """``rouge_score.tokenize.tokenize``: the original ROUGE's tokenization."""
    tokens = re.split(r"\s+", _NON_ALNUM.sub(" ", text.lower()))
    if stemmer is not None:
        tokens = [stemmer.stem(t) if len(t) > 3 else t for t in tokens]
    return [t for t in tokens if _VALID.match(t)]


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Return the length of the longest common subsequence of two token sequences."""
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else (cur[j] if cur[j] > prev[j + 1] else prev[j + 1]))
        prev = cur
    return prev[-1]


def _lcs_table(ref: Sequence[str], can: Sequence[str]) -> list[list[int]]:
    rows, cols = len(ref), len(can)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        row, up, r = table[i], table[i - 1], ref[i - 1]
        for j in range(1, cols + 1):
            row[j] = up[j - 1] + 1 if r == can[j - 1] else (up[j] if up[j] > row[j - 1] else row[j - 1])
    return table


def lcs_indices(ref: Sequence[str], can: Sequence[str]) -> list[int]:
    """Indices into ``ref`` of one longest common subsequence: rouge-score's ``lcs_ind`` (same tie-breaking)."""
    t = _lcs_table(ref, can)
    i, j = len(ref), len(can)
    out: list[int] = []
    while i > 0 and j > 0:
        if ref[i - 1] == can[j - 1]:
            out.append(i - 1)
            i -= 1
            j -= 1
        elif t[i][j - 1] > t[i - 1][j]:
            j -= 1
        else:
            i -= 1
    out.reverse()
    return out


def summary_lcs(ref_sents: Sequence[Sequence[str]], hyp_sents: Sequence[Sequence[str]]) -> tuple[float, float]:
    """(precision, recall) of summary-level LCS (rouge-score's ``_summary_level_lcs``) of sentence token lists."""
    if not ref_sents or not hyp_sents:
        return 0.0, 0.0
    m = sum(map(len, ref_sents))
    n = sum(map(len, hyp_sents))
    if not n or not m:
        return 0.0, 0.0
    cnt_r: Counter[str] = Counter()
    cnt_c: Counter[str] = Counter()
    for sent in ref_sents:
        cnt_r.update(sent)
    for sent in hyp_sents:
        cnt_c.update(sent)
    hits = 0
    for r in ref_sents:
        union = sorted(set().union(*(lcs_indices(r, c) for c in hyp_sents)))
        for t in (r[i] for i in union):  # each token counted at most as often as both sides have it
            if cnt_c[t] > 0 and cnt_r[t] > 0:
                hits += 1
                cnt_c[t] -= 1
                cnt_r[t] -= 1
    return hits / n, hits / m


def f_measure(p: float, r: float, alpha: float) -> float:
    """Combine precision and recall into ROUGE's F-measure weighted by `alpha` (0.5: F1)."""
    if alpha == 0.5:  # rouge-score's own arithmetic, bit for bit
        return 2 * p * r / (p + r) if p + r > 0 else 0.0
    den = alpha * r + (1 - alpha) * p
    return p * r / den if den > 0 else 0.0


def _ngram_counts(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def score_pair(rtype: str, ref: Sequence[Any], hyp: Sequence[Any]) -> tuple[float, float]:
    """(precision, recall) of one hypothesis against one reference (token lists; for ``rougeLsum`` lists of
    sentence token lists)."""
    if rtype == "rougeLsum":
        return summary_lcs(ref, hyp)
    if rtype == "rougeL":
        if not ref or not hyp:
            return 0.0, 0.0
        lcs = lcs_length(ref, hyp)
        return lcs / len(hyp), lcs / len(ref)
    n = int(rtype[5:])
    rc, hc = _ngram_counts(ref, n), _ngram_counts(hyp, n)
    overlap = sum(min(c, hc[g]) for g, c in rc.items())
    return overlap / max(sum(hc.values()), 1), overlap / max(sum(rc.values()), 1)


class RougeMetric(Metric):
    """``rouge``. Options: ``types`` (default ``["rouge1", "rouge2", "rougeL"]``; also ``rouge3``..``rouge9``
    and ``rougeLsum``), ``alpha`` (0.5: F1; the weight of precision, in [0, 1]), ``stemmer`` (False),
    ``sentence_separator`` (none: sentences are split at newlines only; e.g. ``<n>`` for one-line texts),
    ``normalize`` (none; nfc, nfkc: Unicode normalisation first), ``tokenizer`` (rouge-score's own, ASCII letters
    and digits only; ``char``, ``space``, ``nltk``, ``zh``, ``intl`` or a registered one for other scripts)."""

    name = "rouge"
    #: ``evaluate --tokenizer`` (for token-list inputs) does not change ROUGE's tokenizer: only its own option does
    takes_shared_tokenizer = False
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    level = "sentence"
    cost = 1.5
    result_keys = r"rouge-([1-9]|l|lsum)"

    def __init__(
        self,
        types: Sequence[str] = ("rouge1", "rouge2", "rougeL"),
        alpha: float = 0.5,
        stemmer: bool = False,
        sentence_separator: str | None = None,
        normalize: str = "none",
        tokenizer: Any = None,
    ) -> None:
        types = [types] if isinstance(types, str) else list(types)
        if not types or any(not isinstance(t, str) or not _TYPE.match(t) for t in types):
            raise MetricError(f"ROUGE types must be rouge1..rouge9, rougeL or rougeLsum, not {types!r}")
        if sentence_separator is not None and (
            not isinstance(sentence_separator, str) or not sentence_separator or sentence_separator.isspace()
        ):
            raise MetricError(
                f"sentence_separator must be a non-blank string such as '<n>', not {sentence_separator!r}"
            )
        self.sentence_separator = sentence_separator
        self.types = list(dict.fromkeys(types))
        self.alpha = check_float(alpha, "alpha", 0.0, 1.0)
        self.use_stemmer = bool(stemmer)
        #: None: rouge-score's own tokenizer; else the one ``RougeScorer(tokenizer=...)`` would be given
        self._tokenizer: TextTokenizer | None = None
        if not (tokenizer is None or (isinstance(tokenizer, str) and tokenizer in _OWN)):
            if self.use_stemmer:
                raise MetricError(
                    "stemmer=True applies to rouge-score's own tokenizer only (as in rouge-score); "
                    f"drop it or the tokenizer {tokenizer!r}"
                )
            self._tokenizer = resolve_tokenizer(tokenizer)
        self._stemmer = None
        if self.use_stemmer:
            from nltk.stem import porter

            self._stemmer = porter.PorterStemmer()
        #: Unicode normalisation before rouge-score's tokenizer (normalization.py): NFKC folds full-width letters,
        #: which that tokenizer (ASCII letters and digits only) otherwise drops
        self.normalize = normalization(normalize)
        self._normalizer = normalizer(self.normalize)
        extra: dict[str, Any] = {} if sentence_separator is None else {"sentence_separator": sentence_separator}
        if self.normalize != "none":
            extra["normalize"] = self.normalize
        if self._tokenizer is not None:
            extra["tokenizer"] = self._tokenizer.spec
        super().__init__(types=self.types, alpha=self.alpha, stemmer=self.use_stemmer, **extra)

    def _tokens(self, text: str) -> list[str]:
        if self._tokenizer is None:
            return rouge_tokenize(text, self._stemmer)
        return list(self._tokenizer.tokenize(text))

    def _tokenizer_setting(self) -> Setting:
        if self._tokenizer is None:
            return Setting("tokenizer", "rouge-score", "tok")  # as published: the default's hash never changes
        return Setting("tokenizer", self._tokenizer.spec, "tok", shown=self._tokenizer.name)

    def _warn_if_dropped(self, sides: Sequence[tuple[str, Sequence[str], Sequence[Sequence[str]]]]) -> None:
        """rouge-score's tokenizer drops every character outside ASCII letters and digits: say so (once) when most
        texts of a side (hypotheses, first references) that have letters or digits are left with no token and so
        score 0, naming the option."""
        if self._tokenizer is not None:
            return
        for what, texts, tokens in sides:
            worded = [not toks for t, toks in zip(texts, tokens) if any(c.isalnum() for c in t)]
            written, dropped = len(worded), sum(worded)  # texts with letters or digits; those left with no token
            if written and dropped * 2 > written:
                warnings.warn(
                    f"rouge: {dropped} of {written} {what} have no token that rouge-score's default tokenizer "
                    "keeps (ASCII letters and digits only), so they score 0; for other scripts set the option "
                    f"tokenizer ({_SUGGESTED}; on the command line -o rouge.tokenizer=char)",
                    CotkWarning,
                    stacklevel=4,
                )
                return

    @staticmethod
    def key(rtype: str) -> str:
        return {"rougeL": "rouge-l", "rougeLsum": "rouge-lsum"}.get(rtype, f"rouge-{rtype[5:]}")

    def _text(self, item: Any, index: int) -> str:
        text = as_text(item, index=index)
        if self._normalizer is not None:
            text = self._normalizer(text)
        return text.replace(self.sentence_separator, "\n") if self.sentence_separator else text

    def _sentences(self, text: str) -> list[list[str]]:
        """rouge-score's ``rougeLsum`` sentences: split at newlines, empty ones dropped, each tokenized."""
        return [self._tokens(s) for s in text.split("\n") if s]

    #: a resample's ROUGE is the mean of its sentences' F-measures (docs/metrics.md, "Significance and intervals")
    resampling = "values"

    def _prepared(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
    ) -> tuple[list[Any], list[str], list[list[str]], list[list[str]], list[list[list[str]]]]:
        hyps, refs = check_samples("rouge", hypotheses, references)
        hyp_texts = [self._text(h, i) for i, h in enumerate(hyps)]
        ref_texts = [[self._text(r, i) for r in rs] for i, rs in enumerate(refs)]
        hyp_toks = [self._tokens(h) for h in hyp_texts]
        ref_toks = [[self._tokens(r) for r in rs] for rs in ref_texts]
        self._warn_if_dropped(
            [
                ("hypotheses", hyp_texts, hyp_toks),
                ("first references", [rs[0] for rs in ref_texts], [rs[0] for rs in ref_toks]),
            ]
        )
        return refs, hyp_texts, ref_texts, hyp_toks, ref_toks

    def _inputs(
        self,
        rtype: str,
        hyp_texts: list[str],
        ref_texts: list[list[str]],
        hyp_toks: list[list[str]],
        ref_toks: list[list[list[str]]],
    ) -> tuple[list[Any], list[Any], list[Any]]:
        """What ``rtype`` compares (tokens, or sentences of tokens for rougeLsum) and what its hash covers."""
        if rtype == "rougeLsum":
            hyp_in: list[Any] = [self._sentences(h) for h in hyp_texts]
            ref_in: list[Any] = [[self._sentences(r) for r in rs] for rs in ref_texts]
            # sentence boundaries change the score: a newline token (never a ROUGE token) marks them
            hashed = [
                [[t for k, sent in enumerate(r) for t in ([] if k == 0 else ["\n"]) + sent] for r in rs]
                for rs in ref_in
            ]
            return hyp_in, ref_in, hashed
        return hyp_toks, ref_toks, ref_toks

    def _item_scores(self, rtype: str, hyp_in: list[Any], ref_in: list[Any]) -> list[float]:
        """Each hypothesis' F-measure against its best reference (the first with the largest, as numpy.argmax in
        rouge-score's score_multi)."""
        out = []
        for h, rs in zip(hyp_in, ref_in):
            best = None
            for r in rs:
                f = f_measure(*score_pair(rtype, r, h), self.alpha)
                if best is None or f > best:
                    best = f
            assert best is not None  # check_samples refused a sample without references
            out.append(best)
        return out

    def resample_values(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
    ) -> dict[str, list[float]]:
        """Per result key, each sentence's F-measure against its best reference: the value is their mean."""
        _, hyp_texts, ref_texts, hyp_toks, ref_toks = self._prepared(hypotheses, references)
        out = {}
        for rtype in self.types:
            hyp_in, ref_in, _ = self._inputs(rtype, hyp_texts, ref_texts, hyp_toks, ref_toks)
            out[self.key(rtype)] = self._item_scores(rtype, hyp_in, ref_in)
        return out

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        return self.compute_with_values(hypotheses, references)[0]

    def compute_with_values(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
    ) -> tuple[dict[str, Any], dict[str, list[float]]]:
        """:meth:`compute` and :meth:`resample_values` in one pass (``compare`` and ``evaluate --ci``)."""
        refs, hyp_texts, ref_texts, hyp_toks, ref_toks = self._prepared(hypotheses, references)
        hyps = hyp_texts
        out: dict[str, Any] = {}
        values: dict[str, list[float]] = {}
        for rtype in self.types:
            hyp_in, ref_in, hashed = self._inputs(rtype, hyp_texts, ref_texts, hyp_toks, ref_toks)
            total = 0.0
            key = self.key(rtype)
            values[key] = self._item_scores(rtype, hyp_in, ref_in)
            for best in values[key]:
                total += best
            decl = Declaration(
                key,
                self.version,
                [
                    Setting.hash_only("type", rtype, why=NAMED_FIRST),
                    Setting("alpha", self.alpha, "alpha"),
                    Setting("stemmer", self.use_stemmer, "stem", shown="yes" if self.use_stemmer else "no"),
                    self._tokenizer_setting(),
                    *([Setting.signature_only("split", "newline", why=DERIVED_LABEL)] if rtype == "rougeLsum" else []),
                    *(
                        [Setting("sentence_separator", self.sentence_separator, "sep")]
                        if self.sentence_separator is not None
                        else []
                    ),
                    *([Setting("normalize", self.normalize, "norm")] if self.normalize != "none" else []),
                    Setting.signature_only("refs", max(len(r) for r in refs), why=COUNTED_INPUTS),
                ],
            )
            out.update(decl.entry(key, total / len(hyps), partial(reference_set_hash, key, references=hashed)))
        return out, values
