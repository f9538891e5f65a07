"""``bertscore``: BERTScore (Zhang et al. 2020), the values of the ``bert-score`` package, hashed down to the
model's weights.

Each text is encoded as ``bert_score`` encodes it (its own ``get_tokenizer``/``sent_encode`` and
``get_model``, so the token ids, the truncation and the layer cut are the package's), embedded with the
model cut after ``num_layers`` layers, and every hypothesis token is matched with its most similar reference
token (cosine) and vice versa:

    P = sum_h w(h) max_r cos(h, r) / sum_h w(h),   R likewise over reference tokens,   F = 2PR / (P + R)

with weights w = 1 (``idf=false``; 0 for the special tokens) or the idf ``log((N + 1) / (df + 1))`` of a
corpus of N texts (``idf=true``: the references, as ``bert_score.score(idf=True)``; ``idf=FILE``: the lines of a
file). With several references each of P, R, F is its best over them (the package's rule); with
``rescale_with_baseline`` each becomes ``(x - b) / (1 - b)`` with ``b`` the baseline file's row for the layer.
The corpus values are means over hypotheses: keys ``bertscore`` (F1), ``bertscore-precision``,
``bertscore-recall``.

Where this differs from the package (docs/metrics.md): texts are batched by exact token length (no padding
is computed), and a token's best match is the maximum over the other text's real tokens; the package
computes it over a padded batch where padding counts as similarity 0, so when every real similarity of a
token is negative its value depends on the batch (``batch_size``). Here it never does. Empty texts score 0
as in the package (whose ``sent_encode`` of an empty text fails under transformers 5).

The hash covers the content of the model's weights, config and tokenizer files (not its name), the layer,
the idf mode and the idf corpus, the baseline file's content, and the references; not ``batch_size`` or the
device.
"""

from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cotk_repro.core.canonical import hash_object
from cotk_repro.metrics.base import Metric, MetricError, check_references
from cotk_repro.metrics.declaration import (
    COUNTED_INPUTS,
    FIXED_BY_VERSION,
    HASH_ONLY_AS_PUBLISHED,
    READABLE_NAME,
    Declaration,
    Setting,
    with_settings,
)
from cotk_repro.text.reference_hashes import reference_set_hash

from .encoders import ModelFolder, check_batch_size, quiet_hf, resolve_model, torch_device

KEYS = {"f1": "bertscore", "precision": "bertscore-precision", "recall": "bertscore-recall"}
_LOADED: dict[tuple, Any] = {}


def _bert_score() -> Any:
    try:
        import bert_score  # noqa: F401
        from bert_score import utils
    except ImportError:
        raise MetricError("bertscore needs the bert-score package (pip install bert-score)") from None
    return utils


def read_baseline(path: Any, num_layers: int, depth: int | None) -> tuple[list[float], str]:
    """The (P, R, F) baseline row for ``num_layers`` of a bert-score baseline file (CSV, ``LAYER,P,R,F``) and
    the file's SHA-256; one sentence when the file does not fit the model."""
    import hashlib

    p = Path(path).expanduser()
    if not p.is_file():
        raise MetricError(f"baseline file {p} does not exist")
    raw = p.read_bytes()
    try:
        rows = list(csv.reader(raw.decode("utf-8").splitlines()))
    except UnicodeDecodeError:
        raise MetricError(f"baseline file {p} is not UTF-8 text") from None
    rows = [r for r in rows if r]
    if len(rows) < 2 or [c.strip() for c in rows[0][1:4]] != ["P", "R", "F"]:
        raise MetricError(f"baseline file {p} is not a bert-score baseline (a CSV with the header LAYER,P,R,F)")
    data = rows[1:]
    if depth is not None and len(data) != depth + 1:
        raise MetricError(
            f"baseline file {p} has rows for {len(data)} layers but the model has {depth} (and its "
            f"embeddings): it was computed for another model"
        )
    if num_layers >= len(data):
        raise MetricError(f"baseline file {p} has no row for layer {num_layers}")
    try:
        values = [float(v) for v in data[num_layers][1:4]]
    except ValueError:
        raise MetricError(f"baseline file {p}: the row of layer {num_layers} is not numeric") from None
    if len(values) != 3 or any(not math.isfinite(v) or v >= 1 for v in values):
        raise MetricError(f"baseline file {p}: the row of layer {num_layers} must hold three numbers below 1")
    return values, hashlib.sha256(raw).hexdigest()


def idf_weights(encoded: Sequence[Sequence[int]]) -> dict[int, float]:
    """bert-score's ``get_idf_dict`` over encoded texts: ``log((N + 1) / (df + 1))``, ``log(N + 1)`` unseen."""
    counts: Counter = Counter()
    for ids in encoded:
        counts.update(set(ids))
    n = len(encoded)
    out: dict[int, float] = defaultdict(lambda: math.log(n + 1))
    out.update({i: math.log((n + 1) / (c + 1)) for i, c in counts.items()})
    return out


class BertScoreMetric(Metric):
    """``bertscore``: BERTScore P/R/F1 equal to ``bert_score.score`` (keys ``bertscore`` = F1,
    ``bertscore-precision``, ``bertscore-recall``; means over hypotheses).

    Options: ``model`` (a model folder or ``hf:NAME``; default from ``lang`` as the package chooses),
    ``num_layers`` (the layer whose output is used; required unless the package knows the model),
    ``idf`` (false; true: idf from the references; a file: idf from its lines), ``rescale_with_baseline``
    (false) with ``baseline_path`` (a bert-score baseline CSV; for an ``hf:`` model the package's own file
    for ``lang`` when not given), ``lang``, ``batch_size`` (64: changes neither value nor hash), ``device``
    (auto), ``per_sentence`` (false), ``progress`` (false).
    """

    name = "bertscore"
    version = "1"
    higher_is_better = True
    value_range = (-math.inf, 1.0)  # cosines in [-1, 1]; a rescaled value can fall below -1
    level = "sentence"
    #: moved by up to 2.7e-8 (4e-8 relative) on other CPU kernels; atol for a rescaled value near 0 (docs/metrics.md)
    tolerance = (1e-6, 1e-7)
    cost = 300.0
    result_keys = r"bertscore(-precision|-recall)?"

    def __init__(
        self,
        model: Any = None,
        num_layers: int | None = None,
        idf: Any = False,
        rescale_with_baseline: bool = False,
        baseline_path: Any = None,
        lang: str | None = None,
        batch_size: int = 64,
        device: str = "auto",
        per_sentence: bool = False,
        progress: bool = False,
    ) -> None:
        # bert_score (with torch and transformers: seconds) is imported once the options that need no model are
        # checked, so a wrong num_layers is refused at once
        if model is None:
            if lang is None:
                raise MetricError("bertscore needs a model: -o bertscore.model=DIR (or hf:NAME), or a lang")
            lang2model = _bert_score().lang2model
            if str(lang).lower() not in lang2model:
                raise MetricError(f"bert-score has no default model for lang {lang!r}; give model=DIR or hf:NAME")
            model = "hf:" + lang2model[str(lang).lower()]
        self.folder: ModelFolder = resolve_model(model, "model")
        depth = self.folder.depth()
        if num_layers is None:
            model2layers = _bert_score().model2layers
            known = self.folder.label[3:] if self.folder.label.startswith("hf:") else None
            if known not in model2layers:
                raise MetricError(
                    f"bertscore needs num_layers for the model {self.folder.label} (the layer whose "
                    f"output is used; it has {depth if depth is not None else 'an unknown number of'} "
                    f"layers)"
                )
            num_layers = model2layers[known]
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 0:
            raise MetricError(f"num_layers must be a non-negative integer, not {num_layers!r}")
        if depth is not None and num_layers > depth:
            raise MetricError(
                f"num_layers={num_layers} is beyond the model's depth: {self.folder.label} has {depth} layers"
            )
        utils = _bert_score()
        self.num_layers = num_layers
        self.batch_size = check_batch_size(batch_size)
        if not isinstance(rescale_with_baseline, bool):
            raise MetricError(f"rescale_with_baseline must be true or false, not {rescale_with_baseline!r}")
        self.rescale = rescale_with_baseline
        if baseline_path is not None and not self.rescale:
            raise MetricError("baseline_path is only used with rescale_with_baseline=true")
        self.baseline: list[float] | None = None
        self.baseline_hash: str | None = None
        if self.rescale:
            if baseline_path is None:
                import bert_score

                name = self.folder.label[3:] if self.folder.label.startswith("hf:") else None
                bundled = (
                    (Path(bert_score.__file__).parent / "rescale_baseline" / str(lang or "").lower() / f"{name}.tsv")
                    if name and lang
                    else None
                )
                if bundled is None or not bundled.is_file():
                    raise MetricError(
                        "rescale_with_baseline needs baseline_path=FILE (bert-score ships baselines "
                        "only for its hub models, found by lang)"
                    )
                baseline_path = bundled
            self.baseline, self.baseline_hash = read_baseline(baseline_path, num_layers, depth)
        self.idf_mode, self.idf_corpus, self.idf_hash = self._idf_option(idf)
        self.device = torch_device(device)
        if not isinstance(per_sentence, bool):
            raise MetricError(f"per_sentence must be true or false, not {per_sentence!r}")
        self.per_sentence, self.progress = per_sentence, bool(progress)
        self.lang = lang
        key = (
            str(self.folder.path.resolve()),
            self.folder.weights_hash,
            self.folder.tokenizer_hash,
            num_layers,
            str(self.device),
        )
        if key not in _LOADED:
            try:
                with quiet_hf():
                    tok = utils.get_tokenizer(str(self.folder.path), False)
                    net = utils.get_model(str(self.folder.path), num_layers)
            except (OSError, ValueError, AssertionError, KeyError) as exc:
                raise MetricError(
                    f"cannot load the model in {self.folder.path}: {(str(exc).splitlines() or [type(exc).__name__])[0]}"
                ) from None
            net.to(self.device).eval()
            _LOADED.clear()  # one model at a time per process
            _LOADED[key] = (tok, net)
        self.tokenizer, self.model = _LOADED[key]
        super().__init__(
            model=self.folder.identity,
            num_layers=num_layers,
            idf=self.idf_mode,
            idf_corpus=self.idf_hash,
            rescale_with_baseline=self.rescale,
            baseline=self.baseline_hash,
        )

    @staticmethod
    def _idf_option(idf: Any) -> tuple[str, list[str] | None, str | None]:
        if idf is False or idf is None:
            return "none", None, None
        if idf is True:
            return "references", None, None
        if isinstance(idf, (str, Path)):
            from cotk_repro.metrics.files import _read_lines

            lines = _read_lines(Path(idf), "idf corpus")
            return "corpus", lines, hash_object({"cotk-repro-lm/idf-corpus": lines})
        raise MetricError(f"idf must be true, false or a file of texts (the idf corpus), not {idf!r}")

    # -- encoding ------------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """The token ids bert-score gives ``text`` (its ``sent_encode``; special tokens only for an empty one)."""
        from bert_score.utils import sent_encode

        if not text.strip():
            return list(self.tokenizer.encode("", add_special_tokens=True))
        return list(sent_encode(self.tokenizer, text))

    def encode_many(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of each text; one batched tokenizer call where that gives the same ids (every
        tokenizer but the GPT-2 / RoBERTa ones, which ``sent_encode`` calls with ``add_prefix_space``)."""
        from bert_score.utils import GPT2Tokenizer, RobertaTokenizer

        if isinstance(self.tokenizer, (GPT2Tokenizer, RobertaTokenizer)):
            return [self.encode(t) for t in texts]
        stripped = [t.strip() for t in texts]
        todo = [i for i, t in enumerate(stripped) if t]
        out: list[list[int]] = [[] for _ in texts]
        if todo:
            ids = self.tokenizer(
                [stripped[i] for i in todo],
                add_special_tokens=True,
                max_length=self.tokenizer.model_max_length,
                truncation=True,
            )["input_ids"]
            for i, row in zip(todo, ids):
                out[i] = list(row)
        for i, t in enumerate(stripped):
            if not t:
                out[i] = self.encode("")
        return out

    def _embed(self, ids_list: Sequence[Sequence[int]]) -> list[Any]:
        """Unit-normalized last-layer embeddings of each id list, batched by exact length (no padding)."""
        import torch

        out: list[Any] = [None] * len(ids_list)
        by_len: dict[int, list[int]] = defaultdict(list)
        for i, ids in enumerate(ids_list):
            by_len[len(ids)].append(i)
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(ids_list), desc="bertscore", unit="text", leave=False)
        with torch.inference_mode():
            for length in sorted(by_len, reverse=True):
                idx = by_len[length]
                for start in range(0, len(idx), self.batch_size):
                    chunk = idx[start : start + self.batch_size]
                    x = torch.tensor([list(ids_list[i]) for i in chunk], dtype=torch.long, device=self.device)
                    emb = self.model(x)[0].float()  # no padding, so no mask: the fast attention path
                    emb = emb / torch.norm(emb, dim=-1, keepdim=True)
                    for row, i in enumerate(chunk):
                        out[i] = emb[row]
                    if bar is not None:
                        bar.update(len(chunk))
        if bar is not None:
            bar.close()
        return out

    def sentence_scores(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]
    ) -> tuple[list[float], list[float], list[float]]:
        """Per-hypothesis (P, R, F), each the best over its references, rescaled when asked."""
        import torch

        hyps = [str(h) for h in hypotheses]
        refs = [[str(r) for r in rs] for rs in references]
        texts = list(dict.fromkeys(hyps + [r for rs in refs for r in rs]))
        encoded = self.encode_many(texts)
        pos = {t: i for i, t in enumerate(texts)}
        if self.idf_mode == "none":
            special = {self.tokenizer.sep_token_id, self.tokenizer.cls_token_id}
            weights = [torch.tensor([0.0 if i in special else 1.0 for i in ids]) for ids in encoded]
        else:
            corpus = (
                self.encode_many(self.idf_corpus)
                if self.idf_corpus is not None  # idf_mode "corpus"
                else [encoded[pos[r]] for rs in refs for r in rs]
            )
            idf = idf_weights(corpus)
            weights = [torch.tensor([idf[i] for i in ids], dtype=torch.float32) for ids in encoded]
        embs = self._embed(encoded)
        pairs = [(pos[h], pos[r], k) for k, (h, rs) in enumerate(zip(hyps, refs)) for r in rs]
        best = torch.full((len(hyps), 3), -math.inf)
        pairs.sort(key=lambda p: (len(encoded[p[0]]), len(encoded[p[1]])))
        with torch.inference_mode():
            for start in range(0, len(pairs), 256):
                chunk = pairs[start : start + 256]
                scores = self._match(
                    [embs[h] for h, _, _ in chunk],
                    [embs[r] for _, r, _ in chunk],
                    [weights[h] for h, _, _ in chunk],
                    [weights[r] for _, r, _ in chunk],
                    [len(encoded[h]) == 2 or len(encoded[r]) == 2 for h, r, _ in chunk],
                )
                owners = torch.tensor([k for _, _, k in chunk])[:, None].expand(-1, 3)
                best.scatter_reduce_(0, owners, scores, "amax")
        if self.baseline is not None:
            b = torch.tensor(self.baseline, dtype=torch.float32)
            best = (best - b) / (1 - b)
        return best[:, 0].tolist(), best[:, 1].tolist(), best[:, 2].tolist()

    def _match(self, h_embs: list, r_embs: list, h_w: list, r_w: list, empty: list) -> Any:
        """(P, R, F) of each pair, greedy cosine matching over real tokens only."""
        import torch
        from torch.nn.utils.rnn import pad_sequence

        dev = self.device
        h = pad_sequence(h_embs, batch_first=True).to(dev)
        r = pad_sequence(r_embs, batch_first=True).to(dev)
        hl = torch.tensor([len(e) for e in h_embs], device=dev)
        rl = torch.tensor([len(e) for e in r_embs], device=dev)
        hmask = torch.arange(h.shape[1], device=dev)[None, :] < hl[:, None]
        rmask = torch.arange(r.shape[1], device=dev)[None, :] < rl[:, None]
        sim = torch.bmm(h, r.transpose(1, 2))
        sim = sim.masked_fill(~(hmask[:, :, None] & rmask[:, None, :]), -math.inf)
        wp = sim.max(dim=2)[0].masked_fill(~hmask, 0.0)
        wr = sim.max(dim=1)[0].masked_fill(~rmask, 0.0)
        hw = pad_sequence(h_w, batch_first=True).to(dev)
        rw = pad_sequence(r_w, batch_first=True).to(dev)
        hw = hw / hw.sum(dim=1, keepdim=True)
        rw = rw / rw.sum(dim=1, keepdim=True)
        p = (wp * hw).sum(dim=1)
        rr = (wr * rw).sum(dim=1)
        f = 2 * p * rr / (p + rr)
        zero = torch.tensor(empty, device=dev)
        p = p.masked_fill(zero, 0.0)
        rr = rr.masked_fill(zero, 0.0)
        f = f.masked_fill(torch.isnan(f), 0.0)
        return torch.stack((p, rr, f), dim=-1).float().cpu()

    def compute(self, hypotheses: Sequence[Any], references: Sequence[Sequence[Any]] | None = None) -> dict[str, Any]:
        from cotk_repro.metrics._text import as_text, check_hypotheses

        hyps_in = check_hypotheses(hypotheses)
        refs_in = check_references(hyps_in, references)
        if not hyps_in:
            raise MetricError("bertscore needs at least one hypothesis")
        hyps = [as_text(h, index=i) for i, h in enumerate(hyps_in)]
        refs = [[as_text(r, index=i) for r in rs] for i, rs in enumerate(refs_in)]
        for i, rs in enumerate(refs):
            if not rs:
                raise MetricError(f"sample {i} has no reference; bertscore needs at least one per hypothesis")
        p, r, f = self.sentence_scores(hyps, refs)
        per = {"precision": p, "recall": r, "f1": f}
        decl = Declaration(
            self.name,
            self.version,
            [
                Setting.signature_only("model", self.folder.label, why=READABLE_NAME),
                Setting("model", self.settings["model"], "w", shown=self.folder.weights_hash[:12]),
                Setting("num_layers", self.settings["num_layers"], "layer", shown=self.num_layers),
                Setting(
                    "idf",
                    self.idf_mode,
                    "idf",
                    shown={"none": "no", "references": "refs", "corpus": "corpus"}[self.idf_mode],
                ),
                Setting("rescale_with_baseline", self.rescale, "rescale", shown="yes" if self.rescale else "no"),
                Setting.signature_only("refs", max(map(len, refs)), why=COUNTED_INPUTS),
                Setting.hash_only("idf_corpus", self.idf_hash, why=HASH_ONLY_AS_PUBLISHED),
                Setting.hash_only("baseline", self.baseline_hash, why=HASH_ONLY_AS_PUBLISHED),
                Setting.hash_only("encoding", "bert_score.sent_encode", why=FIXED_BY_VERSION),
                Setting.hash_only("match", "real tokens", why=FIXED_BY_VERSION),
            ],
        )
        out: dict[str, Any] = {}
        for part, key in KEYS.items():
            values = per[part]

            def hasher(settings: dict[str, Any], key: str = key) -> str:
                return reference_set_hash(key, settings, ([[x] for x in rs] for rs in refs))

            out.update(with_settings(decl, [], name=key).entry(key, math.fsum(values) / len(values), hasher))
            if self.per_sentence:
                out[f"{key} per-sentence"] = values
        return out
