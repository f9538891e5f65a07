"""METEOR (Lavie & Agarwal 2007) with NLTK's alignment, equal to NLTK's ``meteor_score``.

Per hypothesis/reference pair (tokens lowercased): words are aligned in stages, each on
what the previous left unmatched -- exact match, then Porter-stem match, then (only when
the WordNet data is installed) WordNet-synonym match -- each stage matching, from the last
hypothesis word backwards, the last still-unmatched equal reference word (NLTK's order).
With ``m`` matches, ``P = m/|hyp|``, ``R = m/|ref|``,
``Fmean = P*R / (alpha*P + (1-alpha)*R)``, ``penalty = gamma * (chunks/m)**beta`` and the
score is ``(1 - penalty) * Fmean`` (0 without matches). Several references: the best one;
corpus value: the mean over hypotheses.

Which modules ran is part of the settings, the signature (``mod:exact+stem`` or
``mod:exact+stem+wordnet``) and the hash (with the WordNet version), because synonyms
change the score: a score computed without WordNet never looks comparable to one with it.
WordNet comes from the one loader (:mod:`cotk_repro.data.wordnet`: NLTK's data path, then Debian's
``/usr/share/wordnet``) and is required by default: a machine without it gets one sentence saying what to
install (or ``wordnet=False``, recorded as ``mod:exact+stem``), never a silently different score.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from itertools import chain
from typing import Any

from ..text.reference_hashes import reference_set_hash
from ._text import check_float, check_samples, resolve_tokenizer
from .base import EXACT, Metric, MetricError
from .declaration import COUNTED_INPUTS, FIXED_BY_VERSION, HASH_ONLY_AS_PUBLISHED, Declaration, Setting
from .summation import ordered_sum

Enum = list[tuple[int, str]]


def wordnet_available() -> bool:
    """Whether WordNet 3.0 is found (:mod:`cotk_repro.data.wordnet`: NLTK's data path or Debian's
    ``/usr/share/wordnet``); no download is ever attempted."""
    from ..data.wordnet import wordnet_available as found

    return found()


def _match(hyp: Enum, ref: Enum) -> tuple[list[tuple[int, int]], Enum, Enum]:
    """Exact matching of enumerated words: from the last hypothesis word backwards, each takes the
    last still-unmatched equal reference word."""
    positions: dict[str, list[int]] = defaultdict(list)
    for j, (_, w) in enumerate(ref):
        positions[w].append(j)
    matches, used_h, used_r = [], set(), set()
    for i in range(len(hyp) - 1, -1, -1):
        pos = positions.get(hyp[i][1])
        if pos:
            j = pos.pop()
            used_h.add(i)
            used_r.add(j)
            matches.append((hyp[i][0], ref[j][0]))
    return (
        matches,
        [p for i, p in enumerate(hyp) if i not in used_h],
        [p for j, p in enumerate(ref) if j not in used_r],
    )


def _synonym_match(hyp: Enum, ref: Enum, wordnet: Any) -> tuple[list[tuple[int, int]], Enum, Enum]:
    positions: dict[str, list[int]] = defaultdict(list)
    for j, (_, w) in enumerate(ref):
        positions[w].append(j)
    matches, used_h, used_r = [], set(), set()
    for i in range(len(hyp) - 1, -1, -1):
        syns = set(
            chain.from_iterable(
                (lemma.name() for lemma in synset.lemmas() if lemma.name().find("_") < 0)
                for synset in wordnet.synsets(hyp[i][1])
            )
        ).union({hyp[i][1]})
        best_j, best_word = -1, None
        for syn in syns:
            pos = positions.get(syn)
            if pos and pos[-1] > best_j:
                best_j, best_word = pos[-1], syn
        if best_word is not None:
            positions[best_word].pop()
            used_h.add(i)
            used_r.add(best_j)
            matches.append((hyp[i][0], ref[best_j][0]))
    return (
        matches,
        [p for i, p in enumerate(hyp) if i not in used_h],
        [p for j, p in enumerate(ref) if j not in used_r],
    )


def count_chunks(matches: Sequence[tuple[int, int]]) -> int:
    """Chunks of matches adjacent in both the hypothesis and the reference (matches sorted by hypothesis)."""
    chunks = 1
    for a, b in zip(matches, matches[1:]):
        if not (b[0] == a[0] + 1 and b[1] == a[1] + 1):
            chunks += 1
    return chunks


class MeteorMetric(Metric):
    """``meteor``. Options: ``alpha`` (0.9), ``beta`` (3.0), ``gamma`` (0.5), ``wordnet`` (True, the default:
    WordNet synonyms, refused with one sentence where WordNet is not installed; False: never, ``mod:exact+stem``;
    ``"auto"``: synonyms where installed, the signature saying which; a folder: WordNet's files there),
    ``tokenizer`` (BLEU's WordPunct)."""

    name = "meteor"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = "1"
    level = "sentence"
    cost = 2.5

    def __init__(
        self,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
        wordnet: Any = True,
        tokenizer: Any = None,
        normalize: str = "none",
    ) -> None:
        from ..data.wordnet import WordNetMissing, load_wordnet, wordnet_version

        self.alpha = check_float(alpha, "alpha", 0.0, 1.0)
        self.beta = check_float(beta, "beta", 0.0, 1e6)
        self.gamma = check_float(gamma, "gamma", 0.0, 1.0)
        if isinstance(wordnet, str) and wordnet.strip().lower() in ("true", "false", "yes", "no"):
            wordnet = wordnet.strip().lower() in ("true", "yes")
        if not (wordnet in ("auto", True, False) or (isinstance(wordnet, str) and os.path.isdir(wordnet))):
            raise MetricError(f"wordnet must be true, false, 'auto' or a folder of WordNet files, not {wordnet!r}")
        self._wordnet = None
        self.wordnet_version = None
        if wordnet is not False:
            try:
                self._wordnet = load_wordnet(None if wordnet in ("auto", True) else str(wordnet))
            except WordNetMissing as exc:
                if wordnet != "auto":
                    raise MetricError(
                        f"meteor uses WordNet synonyms by default, but {exc.message[0].lower()}"
                        f"{exc.message[1:]}; or score without synonyms: -o meteor.wordnet=false "
                        f"(signature mod:exact+stem)"
                    ) from None
        if self._wordnet is not None:
            self.wordnet_version = wordnet_version(self._wordnet)
        self.use_wordnet = self._wordnet is not None
        from nltk.stem.porter import PorterStemmer

        self._stemmer = PorterStemmer()
        self.modules = ["exact", "stem"] + (["wordnet"] if self.use_wordnet else [])
        self.tokenizer = resolve_tokenizer(tokenizer, normalize)
        super().__init__(
            alpha=self.alpha,
            beta=self.beta,
            gamma=self.gamma,
            modules=self.modules,
            wordnet_version=self.wordnet_version,
            stemmer="porter",
            tokenizer=self.tokenizer.spec,
        )

    def single(self, ref: Sequence[str], hyp: Sequence[str]) -> float:
        """METEOR of one hypothesis against one reference (token lists)."""
        h: Enum = list(enumerate(w.lower() for w in hyp))
        r: Enum = list(enumerate(w.lower() for w in ref))
        m_exact, h, r = _match(h, r)
        stem = self._stemmer.stem
        m_stem, h, r = _match([(i, stem(w)) for i, w in h], [(j, stem(w)) for j, w in r])
        m_syn: list[tuple[int, int]] = []
        if self._wordnet is not None:
            m_syn, h, r = _synonym_match(h, r, self._wordnet)
        matches = sorted(m_exact + m_stem + m_syn, key=lambda p: p[0])
        m = len(matches)
        if m == 0 or not hyp or not ref:
            return 0.0
        precision, recall = m / len(hyp), m / len(ref)
        fmean = (precision * recall) / (self.alpha * precision + (1 - self.alpha) * recall)
        penalty: float = self.gamma * (count_chunks(matches) / m) ** self.beta  # float ** float: typed Any
        return (1 - penalty) * fmean

    #: a resample's METEOR is the mean of its sentences' (docs/metrics.md, "Significance and intervals")
    resampling = "values"

    def resample_values(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
    ) -> dict[str, list[float]]:
        """Each sentence's METEOR against its best reference: the value is their mean."""
        return self.compute_with_values(hypotheses, references)[1]

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        return self.compute_with_values(hypotheses, references)[0]

    def compute_with_values(
        self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None
    ) -> tuple[dict[str, Any], dict[str, list[float]]]:
        """:meth:`compute` and :meth:`resample_values` in one pass (``compare`` and ``evaluate --ci``)."""
        hyps, refs = check_samples("meteor", hypotheses, references)
        hyp_toks = self.tokenizer.many(hyps)
        ref_toks = [self.tokenizer.many(r) for r in refs]
        each = [max(self.single(r, h) for r in rs) for h, rs in zip(hyp_toks, ref_toks)]
        value = ordered_sum(each) / len(hyps)
        decl = Declaration(
            self.name,
            self.version,
            [
                Setting("modules", self.modules, "mod", shown="+".join(self.modules)),
                Setting("alpha", self.alpha, "a"),
                Setting("beta", self.beta, "b"),
                Setting("gamma", self.gamma, "g"),
                Setting("tokenizer", self.tokenizer.spec, "tok", shown=self.tokenizer.name),
                Setting.signature_only("refs", max(len(r) for r in refs), why=COUNTED_INPUTS),
                Setting.hash_only("stemmer", "porter", why=FIXED_BY_VERSION),
                Setting.hash_only("lowercase", True, why=FIXED_BY_VERSION),
                # the signature's mod: says whether synonyms ran; which WordNet gave them is in the hash only
                Setting.hash_only("wordnet_version", self.wordnet_version, why=HASH_ONLY_AS_PUBLISHED),
            ],
        )
        result = decl.entry(self.name, value, lambda settings: reference_set_hash(self.name, settings, ref_toks))
        return result, {self.name: each}
