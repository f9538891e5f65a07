"""Texygen's metrics: ``nll-oracle``, ``nll-test`` and ``embsim`` (docs/texygen.md).

* ``nll-oracle``: the mean per-token negative log-likelihood of the hypotheses (a model's samples, written
  as token ids) under the oracle LSTM. Lower is better. Its hash covers the oracle (seed, sizes, weight
  digest), the number and length of the samples and the metric's version.
* ``nll-test``: the evaluated model's mean per-token NLL of held-out sentences (the hypotheses are the test
  sentences). Lower is better. Its hash covers the test sentences, the model's sizes and vocabulary; the
  model's own weight digest is in the signature (a hash over it would put every model in a group of its own).
* ``embsim``: Texygen's EmbSim, ``log10`` of the mean over words of the cosine between the word's rows of two
  word-similarity matrices (each ``E_n E_n^T`` of a row-normalised embedding table). Higher is better, at most
  0. The tables come from two saved files (Texygen's code: the oracle's and the generator's embeddings,
  ``tables=files``) or from gensim Word2Vec trained on the hypotheses and on the references
  (``tables=word2vec``, the default; its settings and gensim's version are in the hash).

Cheap to import (no torch): ``cotk-repro metrics`` reads these classes' facts, and every command that lists or
looks up metrics loads them; torch and the models are imported when a value is computed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from cotk_repro.metrics import Metric, MetricError
from cotk_repro.metrics.declaration import (
    COUNTED_INPUTS,
    EVALUATED_MODEL_SIGNED,
    HASH_ONLY_AS_PUBLISHED,
    NAMED_FIRST,
    PART_OF_HASHED,
    REFERENCES_DIGEST,
    Declaration,
    Setting,
)

from .digest import array_digest, canonical, hash_settings, state_digest
from .errors import OracleError

if TYPE_CHECKING:
    import torch

    from .models.generator import Generator

VERSION = "1"


# -- the computations (the templates and benchmarks call these on tensors) ---------------------------------
def mean_nll(model: Generator, tokens: torch.Tensor, batch_size: int = 500) -> float:
    """Mean per-token NLL of ``tokens`` (n, T) under ``model``, summed in float64 over batches."""
    import torch

    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(tokens), batch_size):
            x = tokens[i : i + batch_size]
            logits = model.logits(x)
            total += float(
                torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), x.reshape(-1), reduction="sum"
                ).double()
            )
            count += x.numel()
    if count == 0:
        raise MetricError("NLL needs at least one sentence")
    return total / count


def embsim(reference: np.ndarray, table: np.ndarray, rows: int | None = None) -> float:
    """EmbSim of two embedding tables with the same rows (words): log10 of the mean row cosine of their
    word-similarity matrices; ``rows``: only the first ``rows`` words' rows are compared (Texygen's
    ``valid_examples``), against every word."""
    a, b = np.asarray(reference, dtype=np.float64), np.asarray(table, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise MetricError(f"EmbSim needs two tables with one row per word alike, got shapes {a.shape} and {b.shape}")
    if a.shape[0] < 2:
        raise MetricError("EmbSim needs at least two words in the tables")
    k = a.shape[0] if rows is None else int(rows)
    if not 1 <= k <= a.shape[0]:
        raise MetricError(f"EmbSim rows must be between 1 and {a.shape[0]}, got {rows!r}")

    def sim(e):
        norm = np.linalg.norm(e, axis=1, keepdims=True)
        if np.any(norm == 0):
            raise MetricError("EmbSim cannot normalise a table with an all-zero row")
        en = e / norm
        return en[:k] @ en.T

    sa, sb = sim(a), sim(b)
    cos = np.einsum("ij,ij->i", sa, sb) / (np.linalg.norm(sa, axis=1) * np.linalg.norm(sb, axis=1))
    mean = float(cos.mean())
    if not mean > 0:
        raise MetricError(f"EmbSim is undefined here: the mean cosine is {mean:.4g}, not positive")
    return float(np.log10(mean))


def word2vec_table(sentences: Sequence[Sequence[str]], settings: dict[str, Any]):
    """A gensim Word2Vec model trained on ``sentences`` with ``settings`` (one worker: deterministic)."""
    try:
        from gensim.models import Word2Vec
    except ImportError:
        raise MetricError("embsim with tables=word2vec needs gensim (pip install gensim)") from None
    return Word2Vec(
        sentences=[list(s) for s in sentences],
        vector_size=settings["vector_size"],
        window=settings["window"],
        min_count=settings["min_count"],
        sg=settings["sg"],
        epochs=settings["epochs"],
        seed=settings["seed"],
        workers=1,
    )


def _load_table(path: str) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise MetricError(f"no embedding table at {p}")
    if p.suffix == ".npy":
        try:
            return np.load(p, allow_pickle=False)
        except ValueError as exc:
            raise MetricError(f"{p} is not a numpy table ({exc})") from None
    from .oracle import load_model_file

    try:
        model, _ = load_model_file(p, "generator or oracle")
    except OracleError as exc:
        raise MetricError(exc.message) from None
    return model.emb.weight.detach().numpy()


def _oracle_from(settings: dict[str, Any]) -> tuple[Generator, dict[str, Any]]:
    from .oracle import build_oracle, load_model_file, oracle_info

    try:
        if settings.get("oracle"):
            model, blob = load_model_file(settings["oracle"], "oracle")
            return model, oracle_info(model, blob.get("seed"))
        oracle = build_oracle(
            settings["seed"], settings["vocab_size"], settings["emb_dim"], settings["hidden_dim"], settings["seq_len"]
        )
        return oracle, oracle_info(oracle, settings["seed"], built=True)
    except OracleError as exc:
        raise MetricError(exc.message) from None


def _tokens(hyps: Sequence[str], model: Generator, vocab: list[str] | None = None) -> torch.Tensor:
    cfg = model.config
    if vocab is not None:  # a real-data model: words -> ids, padded with its end token
        index = {w: i for i, w in enumerate(vocab)}
        lines = []
        for i, h in enumerate(hyps):
            words = h.split()
            if len(words) > cfg.seq_len:
                raise MetricError(f"sentence {i + 1} has {len(words)} words, more than the model's {cfg.seq_len}")
            missing = [w for w in words if w not in index]
            if missing:
                raise MetricError(f"sentence {i + 1} has a word outside the model's vocabulary: {missing[0]!r}")
            ids = [index[w] for w in words] + [len(vocab) - 1] * (cfg.seq_len - len(words))
            lines.append(" ".join(map(str, ids)))
        hyps = lines
    from .data import from_text

    try:
        return from_text(list(hyps), cfg.vocab_size, cfg.seq_len)
    except OracleError as exc:
        raise MetricError(exc.message) from None


class NllOracle(Metric):
    """``nll-oracle``: mean per-token NLL of the hypotheses (token ids) under the oracle LSTM (lower is better)."""

    name = "nll-oracle"
    version = VERSION
    higher_is_better = False
    value_range = (0.0, float("inf"))
    needs_references = False
    level = "corpus"
    tolerance = (1e-6, 1e-9)  # torch / numpy float kernels: see docs/metrics.md, "Tolerances"
    cost = 0.5

    def __init__(
        self,
        seed: int = 0,
        vocab_size: int = 5000,
        emb_dim: int = 32,
        hidden_dim: int = 32,
        seq_len: int = 20,
        oracle: str | None = None,
        batch_size: int = 500,
    ):
        super().__init__(
            seed=seed, vocab_size=vocab_size, emb_dim=emb_dim, hidden_dim=hidden_dim, seq_len=seq_len, oracle=oracle
        )
        self.batch_size = batch_size

    def compute(self, hypotheses, references=None):
        oracle, info = _oracle_from(self.settings)
        tokens = _tokens(hypotheses, oracle)
        value = mean_nll(oracle, tokens, self.batch_size)
        return nll_oracle_entry(value, info, len(tokens))


def nll_oracle_entry(value: float, info: dict[str, Any], n: int) -> dict[str, Any]:
    """The ``nll-oracle`` result entry for a value computed under the oracle ``info`` over ``n`` samples."""
    from .oracle import hashed_identity

    decl = Declaration(
        "nll-oracle",
        VERSION,
        [
            Setting.hash_only("metric", "nll-oracle", why=NAMED_FIRST),
            # hashed by what defines it (a file's digest, or a built oracle's recipe); shown by its weights
            Setting("oracle", hashed_identity(info), "oracle", shown=info["weights"][:16]),
            Setting.signature_only("seed", info["seed"], why=PART_OF_HASHED),
            Setting.signature_only("V", info["vocab_size"], why=PART_OF_HASHED),
            Setting.signature_only("T", info["seq_len"], why=PART_OF_HASHED),
            Setting("samples", n, "n"),
        ],
    )
    return decl.entry("nll-oracle", value, lambda settings: hash_settings("nll-oracle", settings))


class NllTest(Metric):
    """``nll-test``: the model's mean per-token NLL of the test sentences given as hypotheses (lower is better)."""

    name = "nll-test"
    version = VERSION
    higher_is_better = False
    value_range = (0.0, float("inf"))
    needs_references = False
    level = "corpus"
    tolerance = (1e-6, 1e-9)  # torch / numpy float kernels: see docs/metrics.md, "Tolerances"
    cost = 0.5

    def __init__(self, model: str | None = None, batch_size: int = 500):
        super().__init__(model=model)
        self.batch_size = batch_size

    def compute(self, hypotheses, references=None):
        if not self.settings.get("model"):
            raise MetricError(
                "nll-test needs the model: -o nll-test.model=PATH (a generator file of a texygen template)"
            )
        from .oracle import load_model_file

        try:
            model, blob = load_model_file(self.settings["model"], "generator")
        except OracleError as exc:
            raise MetricError(exc.message) from None
        tokens = _tokens(hypotheses, model, blob.get("vocab"))
        return nll_test_entry(mean_nll(model, tokens, self.batch_size), model, tokens, blob.get("vocab"))


def nll_test_entry(value: float, model: Generator, tokens: torch.Tensor, vocab: list[str] | None) -> dict[str, Any]:
    """The ``nll-test`` result entry: hash over the test tokens, the model's sizes and vocabulary."""
    test = array_digest(tokens.numpy())
    decl = Declaration(
        "nll-test",
        VERSION,
        [
            Setting.hash_only("metric", "nll-test", why=NAMED_FIRST),
            Setting("test", test, "test", shown=test[:16]),
            Setting.signature_only("n", len(tokens), why=COUNTED_INPUTS),
            Setting.signature_only("model", state_digest(model.state_dict())[:16], why=EVALUATED_MODEL_SIGNED),
            Setting.hash_only("model", model.config.as_dict(), why=HASH_ONLY_AS_PUBLISHED),
            Setting.hash_only(
                "vocab",
                hashlib.sha256(canonical(vocab)).hexdigest() if vocab is not None else None,
                why=HASH_ONLY_AS_PUBLISHED,
            ),
        ],
    )
    return decl.entry("nll-test", value, lambda settings: hash_settings("nll-test", settings))


W2V_DEFAULTS = {"vector_size": 32, "window": 5, "min_count": 1, "sg": 0, "epochs": 5, "seed": 0}


class EmbSim(Metric):
    """``embsim``: Texygen's embedding similarity of two embedding tables (higher is better, at most 0)."""

    name = "embsim"
    version = VERSION
    higher_is_better = True
    value_range = (float("-inf"), 0.0)
    needs_references = True
    paired_references = False
    level = "corpus"
    tolerance = (1e-6, 1e-9)  # torch / numpy float kernels: see docs/metrics.md, "Tolerances"
    cost = 2.0

    def __init__(
        self,
        tables: str = "word2vec",
        table: str | None = None,
        reference_table: str | None = None,
        rows: int | None = None,
        vector_size: int = 32,
        window: int = 5,
        min_count: int = 1,
        sg: int = 0,
        epochs: int = 5,
        seed: int = 0,
    ):
        if tables not in ("word2vec", "files"):
            raise MetricError(f"embsim tables must be 'word2vec' or 'files', got {tables!r}")
        w2v = {
            "vector_size": vector_size,
            "window": window,
            "min_count": min_count,
            "sg": sg,
            "epochs": epochs,
            "seed": seed,
        }
        super().__init__(tables=tables, table=table, reference_table=reference_table, rows=rows, **w2v)
        self.tables, self.rows, self.w2v = tables, rows, w2v

    def compute(self, hypotheses, references=None):
        if self.tables == "files":
            if not self.settings["table"] or not self.settings["reference_table"]:
                raise MetricError(
                    "embsim with tables=files needs -o embsim.table=PATH and -o embsim.reference_table=PATH"
                )
            ref, gen = _load_table(self.settings["reference_table"]), _load_table(self.settings["table"])
            value = embsim(ref, gen, self.rows)
            return embsim_entry(value, ref, gen, self.rows)
        refs = [r for group in (references or []) for r in ([group] if isinstance(group, str) else group)]
        if not hypotheses or not refs:
            raise MetricError("embsim with tables=word2vec needs hypotheses and reference sentences")
        import gensim

        gen_model = word2vec_table([h.split() for h in hypotheses], self.w2v)
        ref_model = word2vec_table([r.split() for r in refs], self.w2v)
        words = sorted(set(gen_model.wv.index_to_key) & set(ref_model.wv.index_to_key))
        if len(words) < 2:
            raise MetricError("embsim with tables=word2vec needs at least two words common to both corpora")
        ref = np.stack([ref_model.wv[w] for w in words])
        gen = np.stack([gen_model.wv[w] for w in words])
        value = embsim(ref, gen, self.rows)
        decl = Declaration(
            "embsim",
            VERSION,
            [
                Setting.hash_only("metric", "embsim", why=NAMED_FIRST),
                Setting("tables", "word2vec", "tables"),
                Setting("word2vec", self.w2v, "dim", shown=self.w2v["vector_size"]),
                Setting.signature_only("win", self.w2v["window"], why=PART_OF_HASHED),
                Setting.signature_only("ep", self.w2v["epochs"], why=PART_OF_HASHED),
                Setting.signature_only("seed", self.w2v["seed"], why=PART_OF_HASHED),
                Setting.signature_only("words", len(words), why=COUNTED_INPUTS),
                Setting("gensim", gensim.__version__, "gensim"),
                Setting.hash_only("rows", self.rows, why=HASH_ONLY_AS_PUBLISHED),
                Setting.hash_only("hypotheses", len(hypotheses), why=HASH_ONLY_AS_PUBLISHED),
                Setting.hash_only(
                    "references", hashlib.sha256(canonical(sorted(refs))).hexdigest(), why=REFERENCES_DIGEST
                ),
            ],
        )
        return decl.entry("embsim", value, lambda settings: hash_settings("embsim", settings))


def embsim_entry(value: float, reference: np.ndarray, table: np.ndarray, rows: int | None) -> dict[str, Any]:
    """The ``embsim`` entry for two given tables: hash over the reference table, the shapes and ``rows``."""
    ref_digest = hashlib.sha256(np.ascontiguousarray(reference, dtype="<f4").tobytes()).hexdigest()
    gen_digest = hashlib.sha256(np.ascontiguousarray(table, dtype="<f4").tobytes()).hexdigest()
    decl = Declaration(
        "embsim",
        VERSION,
        [
            Setting.hash_only("metric", "embsim", why=NAMED_FIRST),
            Setting("tables", "files", "tables"),
            Setting("reference", ref_digest, "ref", shown=ref_digest[:16]),
            Setting.signature_only("table", gen_digest[:16], why=EVALUATED_MODEL_SIGNED),
            Setting("rows", rows, "rows"),
            Setting.hash_only("shape", list(np.shape(table)), why=HASH_ONLY_AS_PUBLISHED),
        ],
    )
    return decl.entry("embsim", value, lambda settings: hash_settings("embsim", settings))
