"""``mauve``: MAUVE (Pillutla et al. 2021), the value of the ``mauve-text`` package, hashed down to the
featurizer's weights.

MAUVE compares two **sets** of texts: the generations (Q) and human text (P, the references of the corpus,
all of them, unpaired; their number may differ from the generations'). Each text is featurized as
``mauve.compute_mauve(p_text=..., q_text=...)`` does it: the featurizer's tokenizer (truncated to
``max_text_length`` tokens) and the final hidden state of the last token of a ``transformers.AutoModel``;
here batched by exact token length, so no padding is computed. The features then go to
``mauve.compute_mauve(p_features=..., q_features=...)`` itself (PCA, k-means with faiss into ``num_buckets``
clusters, the divergence curve and its area), so on the same features the value is the package's.

The hash covers the featurizer's weights, config and tokenizer files (their content, not the name), every
MAUVE setting and the human texts (as a set, not their order); not ``batch_size`` or the device.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from cotk_repro.core.canonical import hash_object
from cotk_repro.metrics.base import Metric, MetricError
from cotk_repro.metrics.declaration import COUNTED_INPUTS, FIXED_BY_VERSION, READABLE_NAME, Declaration, Setting

from .encoders import ModelFolder, check_batch_size, quiet_hf, resolve_model, torch_device

_LOADED: dict[tuple, Any] = {}


def _int_option(value: Any, what: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise MetricError(f"{what} must be an integer >= {low}, not {value!r}")
    return value


def _float_option(value: Any, what: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < float(value) <= high:
        raise MetricError(f"{what} must be a number in ({low}, {high}], not {value!r}")
    return float(value)


class MauveMetric(Metric):
    """``mauve``: MAUVE of the generations against the human texts (the references, as one unpaired set),
    equal to ``mauve.compute_mauve``; a corpus-level comparison of two distributions, in [0, 1].

    Options: ``featurizer`` (a model folder or ``hf:NAME``; required), ``max_text_length`` (1024 tokens),
    ``num_buckets`` (``auto``: a tenth of the smaller set, at least 2), ``scaling_factor`` (5), ``kmeans_num_redo``
    (5), ``kmeans_max_iter`` (500), ``seed`` (25), ``kmeans_explained_var`` (0.9), ``pca_max_data`` (-1: all),
    ``divergence_curve_discretization_size`` (25), ``batch_size`` (32: changes neither value nor hash),
    ``device`` (auto).
    """

    name = "mauve"
    version = "1"
    higher_is_better = True
    value_range = (0.0, 1.0)
    level = "corpus"  # one value for two whole sets of texts, never a mean over sentences
    #: did not move in our matrix; the float-kernel floor of docs/metrics.md, "Tolerances" (a point k-means moves
    #: to another cluster on another machine shows as "differs", as it should)
    tolerance = (1e-6, 1e-9)
    needs_references = True
    paired_references = False  # human texts as a set: any number, no pairing with the generations
    cost = 300.0
    result_keys = "mauve"

    def __init__(
        self,
        featurizer: Any = None,
        max_text_length: int = 1024,
        num_buckets: Any = "auto",
        scaling_factor: float = 5.0,
        kmeans_num_redo: int = 5,
        kmeans_max_iter: int = 500,
        seed: int = 25,
        kmeans_explained_var: float = 0.9,
        pca_max_data: int = -1,
        divergence_curve_discretization_size: int = 25,
        batch_size: int = 32,
        device: str = "auto",
    ) -> None:
        try:
            import mauve  # noqa: F401
        except ImportError:
            raise MetricError("mauve needs the mauve-text package (pip install mauve-text)") from None
        if featurizer is None:
            raise MetricError(
                "mauve needs a featurizer: -o mauve.featurizer=DIR (a model folder) or hf:NAME "
                "(the paper uses hf:gpt2-large)"
            )
        self.folder: ModelFolder = resolve_model(featurizer, "featurizer")
        self.max_text_length = _int_option(max_text_length, "max_text_length", 1)
        if num_buckets != "auto":
            num_buckets = _int_option(num_buckets, "num_buckets", 2)
        self.num_buckets = num_buckets
        self.scaling_factor = _float_option(scaling_factor, "scaling_factor", 0.0, float("inf"))
        self.kmeans_num_redo = _int_option(kmeans_num_redo, "kmeans_num_redo", 1)
        self.kmeans_max_iter = _int_option(kmeans_max_iter, "kmeans_max_iter", 1)
        self.seed = _int_option(seed, "seed", 0)
        self.kmeans_explained_var = _float_option(kmeans_explained_var, "kmeans_explained_var", 0.0, 1.0)
        if pca_max_data != -1:
            pca_max_data = _int_option(pca_max_data, "pca_max_data", 1)
        self.pca_max_data = pca_max_data
        self.discretization = _int_option(
            divergence_curve_discretization_size, "divergence_curve_discretization_size", 2
        )
        self.batch_size = check_batch_size(batch_size)
        self.device = torch_device(device)
        key = (str(self.folder.path.resolve()), self.folder.weights_hash, self.folder.tokenizer_hash, str(self.device))
        if key not in _LOADED:
            from transformers import AutoModel, AutoTokenizer

            try:
                with quiet_hf():
                    tok = AutoTokenizer.from_pretrained(str(self.folder.path))
                    net = AutoModel.from_pretrained(str(self.folder.path), pad_token_id=tok.eos_token_id)
            except (OSError, ValueError, KeyError) as exc:
                raise MetricError(
                    f"cannot load the featurizer in {self.folder.path}: "
                    f"{(str(exc).splitlines() or [type(exc).__name__])[0]}"
                ) from None
            net.to(self.device).eval()
            _LOADED.clear()
            _LOADED[key] = (tok, net)
        self.tokenizer, self.model = _LOADED[key]
        super().__init__(
            featurizer=self.folder.identity,
            max_text_length=self.max_text_length,
            num_buckets=self.num_buckets,
            scaling_factor=self.scaling_factor,
            kmeans_num_redo=self.kmeans_num_redo,
            kmeans_max_iter=self.kmeans_max_iter,
            seed=self.seed,
            kmeans_explained_var=self.kmeans_explained_var,
            pca_max_data=self.pca_max_data,
            divergence_curve_discretization_size=self.discretization,
        )

    def features(self, texts: Sequence[str], what: str = "text") -> Any:
        """The (n, d) float32 features of ``texts``: the final hidden state of each text's last token, as
        mauve featurizes, computed in batches of equal token length."""
        import numpy as np
        import torch

        ids_list = []
        for i, t in enumerate(texts):
            ids = self.tokenizer.encode(t, truncation=True, max_length=self.max_text_length)
            if not ids:
                raise MetricError(f"{what} {i + 1} is empty: MAUVE featurizes the last token of each text")
            ids_list.append(ids)
        by_len: dict[int, list[int]] = defaultdict(list)
        for i, ids in enumerate(ids_list):
            by_len[len(ids)].append(i)
        out: list[Any] = [None] * len(texts)
        with torch.inference_mode():
            for length in sorted(by_len, reverse=True):
                idx = by_len[length]
                for start in range(0, len(idx), self.batch_size):
                    chunk = idx[start : start + self.batch_size]
                    x = torch.tensor([ids_list[i] for i in chunk], dtype=torch.long, device=self.device)
                    outs = self.model(
                        input_ids=x, attention_mask=torch.ones_like(x), output_hidden_states=True, return_dict=True
                    )
                    last = outs.hidden_states[-1][:, -1].float().cpu()
                    for row, i in enumerate(chunk):
                        out[i] = last[row]
        return torch.stack(out).numpy().astype(np.float32, copy=False)

    def buckets(self, n_p: int, n_q: int) -> int:
        """mauve's number of clusters: ``num_buckets`` or, for ``auto``, ``max(2, round(min(n_p, n_q) / 10))``."""
        return max(2, int(round(min(n_p, n_q) / 10))) if self.num_buckets == "auto" else int(self.num_buckets)

    def check_buckets(self, n_p: int, n_q: int) -> int:
        """The number of clusters for sets of ``n_p`` and ``n_q`` texts; one sentence when the smaller set has
        fewer texts than that."""
        k = self.buckets(n_p, n_q)
        smaller = min(n_p, n_q)
        if k > smaller:
            raise MetricError(
                f"MAUVE needs at least as many texts as clusters: {smaller} texts in the smaller set "
                f"but {k} clusters (give more texts or a smaller num_buckets)"
            )
        return k

    def mauve_of_features(self, p_features: Any, q_features: Any) -> Any:
        """``mauve.compute_mauve`` on the features with these settings (P: human texts, Q: generations)."""
        import mauve

        k = self.check_buckets(len(p_features), len(q_features))
        return mauve.compute_mauve(
            p_features=p_features,
            q_features=q_features,
            num_buckets=k,
            pca_max_data=self.pca_max_data,
            kmeans_explained_var=self.kmeans_explained_var,
            kmeans_num_redo=self.kmeans_num_redo,
            kmeans_max_iter=self.kmeans_max_iter,
            divergence_curve_discretization_size=self.discretization,
            mauve_scaling_factor=self.scaling_factor,
            seed=self.seed,
            verbose=False,
        )

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Any] | None = None) -> dict[str, Any]:
        from cotk_repro.metrics._text import as_text, check_hypotheses

        hyps = [as_text(h, index=i) for i, h in enumerate(check_hypotheses(hypotheses))]
        if references is None:
            raise MetricError("mauve needs human texts to compare with: give references")
        human: list[str] = []
        for i, r in enumerate(references):
            if isinstance(r, str):
                human.append(r)
            else:
                human.extend(as_text(x, index=i) for x in r)
        if not hyps or not human:
            raise MetricError("mauve needs at least one generation and one human text")
        self.check_buckets(len(human), len(hyps))  # before featurizing: one text per row, so the counts are known
        out = self.mauve_of_features(self.features(human, "reference"), self.features(hyps, "hypothesis"))
        decl = Declaration(
            self.name,
            self.version,
            [
                Setting.signature_only("feat", self.folder.label, why=READABLE_NAME),
                Setting("featurizer", self.folder.identity, "w", shown=self.folder.weights_hash[:12]),
                Setting("max_text_length", self.max_text_length, "len"),
                Setting("num_buckets", self.num_buckets, "k"),
                Setting("scaling_factor", self.scaling_factor, "c"),
                Setting("kmeans_num_redo", self.kmeans_num_redo, "redo"),
                Setting("kmeans_max_iter", self.kmeans_max_iter, "iter"),
                Setting("seed", self.seed, "seed"),
                Setting("kmeans_explained_var", self.kmeans_explained_var, "var"),
                Setting("pca_max_data", self.pca_max_data, "pca"),
                Setting("divergence_curve_discretization_size", self.discretization, "disc"),
                Setting.signature_only("human", len(human), why=COUNTED_INPUTS),
                Setting.hash_only("p", "references", why=FIXED_BY_VERSION),
                Setting.hash_only("q", "hypotheses", why=FIXED_BY_VERSION),
                Setting.hash_only("feature", "last token, final layer", why=FIXED_BY_VERSION),
            ],
        )
        return decl.entry(
            self.name,
            float(out.mauve),
            lambda settings: hash_object({"cotk-repro-lm/mauve": settings, "human": sorted(human)}),
        )
