"""A causal language model folder and exact, batched log-likelihoods of responses (given a context or not).

The format shared by scoring and :mod:`cotk_repro_lm.finetune`: ``<bos> response`` without a context
(fluency), ``<bos> query <eos> response`` with one (coherence); only the response's tokens are scored.
Batches are length-sorted (sequences of similar length share a batch, so little padding is computed),
padded on either side with the attention mask and explicit position ids, so padding never changes a
score; the output layer is applied to the scored positions only where the architecture allows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cotk_repro.metrics.base import MetricError

from .fileshash import files_hash, tokenizer_files, weight_files

FORMAT = {
    "fluency": "<bos> response",
    "coherence": "<bos> query <eos> response",
    "scored": "response tokens",
    "length": "response tokens",
}
#: architectures whose output layer is ``get_output_embeddings()`` applied to ``base_model``'s last hidden state
_HEAD_ONLY_ON_SCORED = {"gpt2", "gpt_neo", "llama", "mistral", "qwen2"}


@dataclass
class LanguageModel:
    """A loaded causal LM with its tokenizer and identity (weights and tokenizer file hashes)."""

    path: Path
    model: Any
    tokenizer: Any
    device: Any
    weights_hash: str
    tokenizer_hash: str
    bos_id: int
    eos_id: int
    max_length: int

    @property
    def identity(self) -> dict[str, str]:
        return {"weights": self.weights_hash, "tokenizer": self.tokenizer_hash}


_LOADED: dict[tuple[str, str, str, str], LanguageModel] = {}


def load_model(path: str | Path, device: str = "auto") -> LanguageModel:
    """Load a model folder saved with ``save_pretrained`` (safetensors weights and a tokenizer); cached per process."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise MetricError(
            f"model folder {folder} does not exist"
            if not folder.exists()
            else f"{folder} is not a folder; give a folder saved with save_pretrained"
        )
    weights = weight_files(folder)
    if not weights:
        raise MetricError(
            f"{folder} has no *.safetensors weights; save the model with "
            f"save_pretrained(folder, safe_serialization=True)"
        )
    toks = tokenizer_files(folder)
    if not toks:
        raise MetricError(
            f"{folder} has no tokenizer files; save the tokenizer into the model folder too "
            f"(tokenizer.save_pretrained(folder))"
        )
    weights_hash = files_hash("weights", weights)
    tokenizer_hash = files_hash("tokenizer", toks)
    import torch

    dev = torch.device(
        "cuda" if device == "auto" and torch.cuda.is_available() else ("cpu" if device == "auto" else device)
    )
    key = (str(folder.resolve()), weights_hash, tokenizer_hash, str(dev))
    if key in _LOADED:
        return _LOADED[key]
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar for a local folder
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise MetricError(f"cannot load the model in {folder}: {str(exc).splitlines()[0]}") from None
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    # transformers types PreTrainedModel.to by @wraps(nn.Module.to), whose signature is the unbound one (self first)
    model.to(dev).eval()  # type: ignore[arg-type]
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else bos
    if bos is None:
        raise MetricError(f"the tokenizer in {folder} has neither a bos nor an eos token; scoring needs one")
    # a missing (0 default) or None n_positions falls back alike; a 0 default keeps the type int | Any
    max_length = int(getattr(model.config, "n_positions", 0) or getattr(model.config, "max_position_embeddings", 1024))
    lm = LanguageModel(folder, model, tokenizer, dev, weights_hash, tokenizer_hash, int(bos), int(eos), max_length)
    _LOADED[key] = lm
    return lm


def encode_pairs(
    lm: LanguageModel, contexts: Sequence[str] | None, responses: Sequence[str]
) -> list[tuple[list[int], int]]:
    """For each item, its input ids in the shared format and the number of leading context ids (``<bos>``
    and the query with its ``<eos>``). Empty responses and responses longer than the model are errors;
    a long query is cut from the left."""
    enc = lm.tokenizer(list(responses), add_special_tokens=False)["input_ids"]
    ctx_ids = (
        lm.tokenizer(list(contexts), add_special_tokens=False)["input_ids"]
        if contexts is not None
        else [[] for _ in responses]
    )
    out = []
    for i, (c, r) in enumerate(zip(ctx_ids, enc)):
        if not r:
            raise MetricError(f"response {i + 1} is empty: a language model cannot score an empty response")
        if len(r) + 1 > lm.max_length:
            raise MetricError(f"response {i + 1} has {len(r)} tokens, more than the model's {lm.max_length - 1}")
        prefix = [lm.bos_id] + (list(c) + [lm.eos_id] if contexts is not None else [])
        room = lm.max_length - len(r)
        if len(prefix) > room:
            prefix = [lm.bos_id] + prefix[len(prefix) - room + 1 :]
        out.append((prefix + list(r), len(prefix)))
    return out


def log_likelihoods(
    lm: LanguageModel,
    items: Sequence[tuple[list[int], int]],
    *,
    batch_size: int = 32,
    padding_side: str = "right",
    progress: Callable[[int], None] | None = None,
) -> tuple[list[float], list[int]]:
    """Sum of the log-probabilities of each item's scored tokens (natural log) and their count."""
    import torch

    if padding_side not in ("left", "right"):
        raise MetricError(f"padding_side must be 'left' or 'right', not {padding_side!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise MetricError(f"batch_size must be a positive integer, not {batch_size!r}")
    order = sorted(range(len(items)), key=lambda i: (-len(items[i][0]), i))
    sums = [0.0] * len(items)
    counts = [0] * len(items)
    pad = lm.eos_id
    head_only = getattr(lm.model.config, "model_type", "") in _HEAD_ONLY_ON_SCORED
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            width = max(len(items[i][0]) for i in idx)
            ids = torch.full((len(idx), width), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            scored = torch.zeros((len(idx), width), dtype=torch.bool)  # positions whose NEXT token is scored
            for row, i in enumerate(idx):
                seq, n_ctx = items[i]
                off = width - len(seq) if padding_side == "left" else 0
                ids[row, off : off + len(seq)] = torch.tensor(seq)
                mask[row, off : off + len(seq)] = 1
                scored[row, off + n_ctx - 1 : off + len(seq) - 1] = True
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            ids, mask, positions = ids.to(lm.device), mask.to(lm.device), positions.to(lm.device)
            targets = torch.roll(ids, -1, dims=1)[scored.to(lm.device)]
            if head_only:
                hidden = lm.model.base_model(
                    input_ids=ids, attention_mask=mask, position_ids=positions
                ).last_hidden_state
                logits = lm.model.get_output_embeddings()(hidden[scored.to(lm.device)])
            else:
                logits = lm.model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
                logits = logits[scored.to(lm.device)]
            logp = torch.log_softmax(logits.float(), dim=-1).gather(1, targets[:, None])[:, 0].double().cpu()
            per_row = scored.sum(1).tolist()
            pos = 0
            for row, i in enumerate(idx):
                n = per_row[row]
                sums[i] = float(logp[pos : pos + n].sum())
                counts[i] = n
                pos += n
            if progress is not None:
                progress(len(idx))
    return sums, counts
