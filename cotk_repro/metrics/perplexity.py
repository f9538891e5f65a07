"""Perplexity with the paper's rare-word redistribution (docs/spec.md section 5, CoTK paper Table 6).

A model sees the frequent vocabulary F (plus the special tokens); evaluation is over
F ∪ R. A reference token ``w`` contributes

* ``log p(w)`` when ``w`` is in F (or is ``<eos>``, or is ``<unk>`` in the all-vocab
  view: a token outside F ∪ R);
* ``log(p(<unk>) / |R|)`` when ``w`` is in R: the probability of ``<unk>`` is spread
  evenly over the rare words.

So two models with different F but the same F ∪ R give comparable perplexities, and
the comparability hash covers the tokenized references and the set F ∪ R, not how it
is split: :func:`cotk_repro.text.reference_hashes.perplexity_reference_hash`. Fed from a
dataloader, the hash is exactly ``dl.reference_hashes(split)["perplexity"]``.

Two ways to feed it:

* CoTK style arrays: ``forward({"sent_allvocabs": ids, "sent_length": lens,
  "gen_log_prob": logp})`` with ``ids`` ``[batch, len]`` all-vocab ids ``<go> w1 .. wn <eos>``,
  ``lens`` counting ``<go>`` and ``<eos>``, and ``logp`` ``[batch, >= len-1, V]`` where
  ``logp[b, t]`` is the model's log-distribution of token ``t+1``; ``V`` is the frequent
  vocabulary size (the redistribution applies) or the all-vocab size (a model that
  generates rare words: its own probabilities are used). Multi-turn (``multi_turn=True``):
  ``ids`` ``[batch, turn, len]``, ``lens`` ``[batch, turn]``, ``logp`` ``[batch, turn, len, V]``.
* lists, for hand computation: ``forward({"tokens": [["a", "b"], ...], "log_probs":
  [[lp_a, lp_b, lp_eos], ...]})`` where ``log_probs[i][t]`` is the log-probability the model
  gave to target ``t`` as it sees it (the token itself when in F, ``<unk>`` otherwise,
  ``<eos>`` last).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from ..text.reference_hashes import PERPLEXITY_VERSION, reference_set_hash
from .base import EXACT, Metric, MetricError
from .declaration import COUNTED_INPUTS, FIXED_BY_VERSION, UNSET, Declaration, Setting
from .resampling import NOT_YET

SPECIALS = ("<pad>", "<unk>", "<go>", "<eos>")
PAD_ID, UNK_ID, GO_ID, EOS_ID = 0, 1, 2, 3

#: CoTK 0.1.0's rules, each a named setting (the first value is the fair default):
#: ``unk_targets``: "score" charges log p(<unk>) for an ``<unk>`` target; "skip" (CoTK) leaves it out of the
#: sum and the count.
UNK_TARGETS = ("score", "skip")
#: ``rare_words`` with log-probabilities over the whole vocabulary: "model" scores a rare word w as log p(w);
#: "cotk" as log(p(<unk>)/|R| + p(w)).
RARE_WORDS = ("model", "cotk")
#: ``reference_check``: "strict" refuses a reference that is not ``<go> tokens <eos>`` within its length;
#: "cotk" scores whatever ids lie within the length (``<pad>`` included, no ``<eos>`` needed).
REFERENCE_CHECKS = ("strict", "cotk")


def _choice(value: Any, name: str, choices: Sequence[str]) -> str:
    v = str(value).strip().lower()
    if v not in choices:
        raise MetricError(f"unknown {name} {value!r}; choose one of {', '.join(choices)}")
    return v


class PerplexityMetric(Metric):
    """Perplexity over F ∪ R (see the module docstring).

    Vocabulary: ``dataloader=dl`` (uses ``dl.vocab``), ``vocab=`` (an object with
    ``frequent``/``rare``) or ``frequent=[...]`` + ``rare=[...]``.
    Options: ``multi_turn`` (False), ``skip_first_turn`` (True: in multi-turn batches the first
    turn of each session is context, as the multi-turn loader's references are the responses),
    ``check_probabilities`` (True: each distribution must sum to 1 within ``1e-3``), the CoTK
    batch keys ``reference_allvocabs_key``, ``reference_len_key``, ``gen_log_prob_key``, and CoTK 0.1.0's
    rules as named settings: ``unk_targets`` (``score``/``skip``), ``rare_words`` (``model``/``cotk``) and
    ``reference_check`` (``strict``/``cotk``); a non-default rule enters the hash and the signature.
    """

    resampling = "none"
    no_interval = NOT_YET  # docs/metrics.md, "Significance and intervals"

    name = "perplexity"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    version = PERPLEXITY_VERSION
    needs_references = False
    higher_is_better = False
    value_range = (1.0, float("inf"))
    level = "corpus"
    cost = 0.5

    def __init__(
        self,
        dataloader: Any = None,
        *,
        vocab: Any = None,
        frequent: Sequence[str] | None = None,
        rare: Sequence[str] | None = None,
        multi_turn: bool = False,
        skip_first_turn: bool = True,
        check_probabilities: bool = True,
        reference_allvocabs_key: str = "sent_allvocabs",
        reference_len_key: str = "sent_length",
        gen_log_prob_key: str = "gen_log_prob",
        key: str = "perplexity",
        unk_targets: str = "score",
        rare_words: str = "model",
        reference_check: str = "strict",
    ) -> None:
        self.unk_targets = _choice(unk_targets, "unk_targets", UNK_TARGETS)
        self.rare_words = _choice(rare_words, "rare_words", RARE_WORDS)
        self.reference_check = _choice(reference_check, "reference_check", REFERENCE_CHECKS)
        if vocab is None and dataloader is not None:
            vocab = getattr(dataloader, "vocab", None)
            if vocab is None:
                raise MetricError("the dataloader given to perplexity has no vocab")
        if vocab is not None:
            if frequent is not None or rare is not None:
                raise MetricError("give the vocabulary once: a dataloader/vocab, or frequent= and rare=")
            frequent, rare = getattr(vocab, "frequent", None), getattr(vocab, "rare", None)
        if frequent is None or rare is None:
            raise MetricError(
                "perplexity needs a vocabulary (dataloader=, vocab=, or frequent= and rare=) and the "
                "model's log-probabilities, so it cannot be computed from generated text alone"
            )
        frequent, rare = [str(t) for t in frequent], [str(t) for t in rare]
        clash = (set(frequent) & set(rare)) or (set(SPECIALS) & (set(frequent) | set(rare)))
        if clash:
            raise MetricError(
                f"the vocabulary is inconsistent: {sorted(clash)[0]!r} is listed twice "
                f"(F and R must be disjoint and hold no special token)"
            )
        if len(set(frequent)) != len(frequent) or len(set(rare)) != len(rare):
            raise MetricError("the vocabulary lists a token twice")
        self.frequent, self.rare = frequent, rare
        self.all_tokens = [*SPECIALS, *frequent, *rare]
        self.frequent_vocab_size = len(SPECIALS) + len(frequent)
        self.all_vocab_size = len(self.all_tokens)
        self._frequent_set, self._rare_set = set(frequent), set(rare)
        self._log_r = math.log(len(rare)) if rare else 0.0
        self.multi_turn = bool(multi_turn)
        self.skip_first_turn = bool(skip_first_turn)
        self.check_probabilities = bool(check_probabilities)
        self.keys = (reference_allvocabs_key, reference_len_key, gen_log_prob_key)
        self.key = key
        super().__init__(
            multi_turn=self.multi_turn,
            skip_first_turn=self.skip_first_turn,
            frequent_vocab_size=self.frequent_vocab_size,
            all_vocab_size=self.all_vocab_size,
            **self.rules(),
        )
        self._reset()

    def rules(self) -> dict[str, str]:
        """The CoTK rules in force that differ from the fair defaults (empty for the defaults)."""
        chosen = {
            "unk_targets": self.unk_targets,
            "rare_words": self.rare_words,
            "reference_check": self.reference_check,
        }
        defaults = {"unk_targets": UNK_TARGETS[0], "rare_words": RARE_WORDS[0], "reference_check": REFERENCE_CHECKS[0]}
        return {k: v for k, v in chosen.items() if v != defaults[k]}

    # -- accumulation -----------------------------------------------------------------------------
    def _reset(self) -> None:
        self._loss = 0.0  # -sum of log-probabilities (natural log)
        self._count = 0  # number of predicted tokens (words + <eos>)
        self._refs: list[list[str]] = []

    def target_log_prob(self, token: str, model_log_prob: float) -> float:
        """The contribution of reference ``token`` given the log-probability the model gave to it
        (to ``<unk>`` when the token is not in F)."""
        if token in self._rare_set:
            return float(model_log_prob) - self._log_r
        return float(model_log_prob)

    def forward(self, batch: Mapping[str, Any]) -> None:
        if "tokens" in batch:
            self._forward_lists(batch["tokens"], batch.get("log_probs"))
            return
        ids_key, len_key, lp_key = self.keys
        missing = [k for k in (ids_key, len_key, lp_key) if k not in batch]
        if missing:
            raise MetricError(
                f"the perplexity batch has no {missing[0]!r} (it needs {ids_key!r}, {len_key!r} "
                f"and {lp_key!r}, or 'tokens' and 'log_probs')"
            )
        ids = np.asarray(batch[ids_key])
        lens = np.asarray(batch[len_key])
        logp = np.asarray(batch[lp_key], dtype=np.float64)
        if self.multi_turn:
            if ids.ndim != 3 or lens.ndim != 2 or logp.ndim != 4:
                raise MetricError(
                    f"multi-turn perplexity needs {ids_key!r} [batch, turn, len], {len_key!r} "
                    f"[batch, turn] and {lp_key!r} [batch, turn, len, vocab]; got shapes "
                    f"{ids.shape}, {lens.shape}, {logp.shape}"
                )
            turns = np.asarray(batch.get("turn_length", (lens > 0).sum(axis=1)))
            for b in range(ids.shape[0]):
                first = 1 if self.skip_first_turn else 0
                for t in range(first, int(turns[b])):
                    self._forward_one(
                        ids[b, t], int(lens[b, t]), logp[b, t] if t < logp.shape[1] else None, f"session {b} turn {t}"
                    )
            return
        if ids.ndim != 2 or lens.ndim != 1 or logp.ndim != 3:
            raise MetricError(
                f"perplexity needs {ids_key!r} [batch, len], {len_key!r} [batch] and {lp_key!r} "
                f"[batch, len, vocab]; got shapes {ids.shape}, {lens.shape}, {logp.shape}"
                + (" (use multi_turn=True for sessions)" if ids.ndim == 3 else "")
            )
        if not (ids.shape[0] == lens.shape[0] == logp.shape[0]):
            raise MetricError(
                f"batch sizes differ: {ids.shape[0]} references, {lens.shape[0]} lengths, "
                f"{logp.shape[0]} log-probability rows"
            )
        for b in range(ids.shape[0]):
            self._forward_one(ids[b], int(lens[b]), logp[b], f"sample {b}")

    def _forward_one(self, ids: np.ndarray, length: int, logp: np.ndarray | None, where: str) -> None:
        if length < 2:
            raise MetricError(f"{where}: length {length} is too short (lengths count <go> and <eos>)")
        if length > ids.shape[0]:
            raise MetricError(f"{where}: length {length} is longer than its {ids.shape[0]} ids")
        target = ids[1:length].astype(np.int64)
        if logp is None or logp.shape[0] < length - 1:
            have = 0 if logp is None else logp.shape[0]
            raise MetricError(f"{where}: {length - 1} tokens to predict but only {have} log-probability rows")
        vocab = logp.shape[-1]
        if vocab not in (self.frequent_vocab_size, self.all_vocab_size):
            raise MetricError(
                f"log-probabilities have {vocab} columns; expected the frequent vocabulary size "
                f"{self.frequent_vocab_size} or the all-vocab size {self.all_vocab_size}"
            )
        if target.min() < 0 or target.max() >= self.all_vocab_size:
            raise MetricError(f"{where}: a reference id is outside the vocabulary (0..{self.all_vocab_size - 1})")
        if self.reference_check == "strict" and (
            int(target[-1]) != EOS_ID or (target[:-1] == EOS_ID).any() or (target == PAD_ID).any()
        ):
            raise MetricError(f"{where}: the reference must be <go> tokens <eos> within its length")
        rows = logp[: length - 1]
        if self.check_probabilities:
            with np.errstate(over="ignore"):
                sums = np.exp(rows).sum(axis=-1)
            bad = np.flatnonzero(~(np.abs(sums - 1.0) <= 1e-3))
            if bad.size:
                raise MetricError(
                    f"{where}: the log-probabilities at position {int(bad[0])} are not a "
                    f"distribution (probabilities sum to {float(sums[bad[0]]):.6g}, not 1)"
                )
        if vocab == self.frequent_vocab_size:
            rare = target >= self.frequent_vocab_size
            seen = np.where(rare, UNK_ID, target)
            lp = rows[np.arange(length - 1), seen] - np.where(rare, self._log_r, 0.0)
        else:
            lp = rows[np.arange(length - 1), target]
            if self.rare_words == "cotk" and self.rare:
                rare = target >= self.frequent_vocab_size
                with np.errstate(divide="ignore"):  # CoTK's arithmetic, exactly
                    mixed = np.log(np.exp(rows[np.arange(length - 1), UNK_ID] - self._log_r) + np.exp(lp))
                lp = np.where(rare, mixed, lp)
        if self.unk_targets == "skip":
            lp = lp[target != UNK_ID]
        self._add(lp, where)
        words = target[:-1] if int(target[-1]) == EOS_ID else target
        self._refs.append([self.all_tokens[i] for i in words.tolist()])

    def _forward_lists(self, tokens: Any, log_probs: Any) -> None:
        if log_probs is None:
            raise MetricError("a 'tokens' batch needs 'log_probs' too")
        tokens, log_probs = list(tokens), list(log_probs)
        if len(tokens) != len(log_probs):
            raise MetricError(f"{len(tokens)} token lists but {len(log_probs)} log-probability lists")
        for i, (toks, lps) in enumerate(zip(tokens, log_probs)):
            if isinstance(toks, str):
                raise MetricError(f"tokens[{i}] is a string; give a list of tokens")
            toks, lps = [str(t) for t in toks], [float(x) for x in lps]
            if len(lps) != len(toks) + 1:
                raise MetricError(
                    f"sentence {i}: {len(toks)} tokens need {len(toks) + 1} log-probabilities "
                    f"(one per token and one for <eos>), got {len(lps)}"
                )
            if any(x > 1e-9 for x in lps):
                raise MetricError(f"sentence {i}: a log-probability is positive")
            contrib = [
                self.target_log_prob(t, x)
                for t, x in zip(toks, lps)
                if self.unk_targets == "score" or t in self._frequent_set or t in self._rare_set
            ] + [lps[-1]]
            self._add(np.asarray(contrib, dtype=np.float64), f"sentence {i}")
            self._refs.append(toks)

    def _add(self, lp: np.ndarray, where: str) -> None:
        if not np.all(np.isfinite(lp)):
            pos = int(np.flatnonzero(~np.isfinite(lp))[0])
            raise MetricError(
                f"{where}: the model gave probability 0 to the reference token at position {pos}, "
                f"so the perplexity is infinite"
            )
        self._loss -= float(lp.sum())
        self._count += int(lp.size)

    # -- results ----------------------------------------------------------------------------------
    def declaration(self) -> Declaration:
        """The hashed settings and the signature of the references seen so far. The hash equals
        :func:`cotk_repro.text.reference_hashes.perplexity_reference_hash` (a dataloader's) for the fair rules: a
        CoTK rule's default is left out of the hash, and the signature shows every rule once one is in force."""
        rules = bool(self.rules())
        vocab = self.frequent + self.rare
        return Declaration(
            self.name,
            self.version,
            [
                Setting("vocab", sorted(set(vocab)), "vocab", shown=len(vocab)),
                Setting(
                    "rare_words",
                    self.rare_words,
                    "unk",
                    hash_elide=RARE_WORDS[0],
                    shown="spread" if self.rare_words == "model" else "spread+model",
                ),
                Setting.signature_only("eos", "yes", why=FIXED_BY_VERSION),
                Setting.signature_only("refs", len(self._refs), why=COUNTED_INPUTS),
                *(
                    [
                        Setting(
                            "first_turn_scored",
                            not self.skip_first_turn,
                            "turns",
                            hash_elide=False,
                            shown="responses" if self.skip_first_turn else "all",
                        )
                    ]
                    if self.multi_turn
                    else []
                ),
                Setting(
                    "unk_targets",
                    self.unk_targets,
                    "unk-target",
                    hash_elide=UNK_TARGETS[0],
                    elide=UNSET if rules else self.unk_targets,
                ),
                Setting(
                    "reference_check",
                    self.reference_check,
                    "check",
                    hash_elide=REFERENCE_CHECKS[0],
                    elide=UNSET if rules else self.reference_check,
                ),
            ],
        )

    def _hash(self, settings: dict[str, Any]) -> str:
        return reference_set_hash("perplexity", settings, ([list(tokens)] for tokens in self._refs))

    def close(self) -> dict[str, Any]:
        if self._count == 0:
            raise MetricError("perplexity got no tokens: call forward with at least one sentence before close")
        value = math.exp(self._loss / self._count)
        out = self.declaration().entry(self.key, value, self._hash)
        self._reset()
        return out

    def compute(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
        raise MetricError(
            "perplexity is computed from the model's log-probabilities, not from generated text: "
            "feed it with forward() (see docs/metrics.md)"
        )

    def compute_lists(self, tokens: Iterable[Sequence[str]], log_probs: Iterable[Sequence[float]]) -> dict[str, Any]:
        """Perplexity of whole lists at once (see the module docstring for ``log_probs``)."""
        self._reset()
        self._forward_lists(list(tokens), list(log_probs))
        return self.close()


class MultiTurnPerplexityMetric(PerplexityMetric):
    """``multi-turn-perplexity``: :class:`PerplexityMetric` over sessions (``multi_turn=True``).

    Batches: ``ids`` ``[batch, turn, len]``, ``lens`` ``[batch, turn]``, ``logp`` ``[batch, turn, len, V]``
    (keys ``multi_turn_ref_allvocabs``, ``multi_turn_ref_length``, ``multi_turn_gen_log_prob`` by default, as
    CoTK's); ``skip_first_turn`` (True: the first turn is context) and every option of ``perplexity``.
    """

    name = "multi-turn-perplexity"
    tolerance = EXACT  # the same to the last bit on every machine measured (docs/metrics.md, "Tolerances")
    higher_is_better = False
    value_range = (1.0, float("inf"))
    level = "corpus"
    cost = 1.0
    result_keys = "multi-turn-perplexity"
    key_facts: ClassVar[dict[str, dict[str, Any]]] = {}

    def __init__(
        self,
        dataloader: Any = None,
        *,
        vocab: Any = None,
        frequent: Sequence[str] | None = None,
        rare: Sequence[str] | None = None,
        skip_first_turn: bool = True,
        check_probabilities: bool = True,
        reference_allvocabs_key: str = "multi_turn_ref_allvocabs",
        reference_len_key: str = "multi_turn_ref_length",
        gen_log_prob_key: str = "multi_turn_gen_log_prob",
        key: str = "multi-turn-perplexity",
        unk_targets: str = "score",
        rare_words: str = "model",
        reference_check: str = "strict",
    ) -> None:
        super().__init__(
            dataloader,
            vocab=vocab,
            frequent=frequent,
            rare=rare,
            multi_turn=True,
            skip_first_turn=skip_first_turn,
            check_probabilities=check_probabilities,
            reference_allvocabs_key=reference_allvocabs_key,
            reference_len_key=reference_len_key,
            gen_log_prob_key=gen_log_prob_key,
            key=key,
            unk_targets=unk_targets,
            rare_words=rare_words,
            reference_check=reference_check,
        )
