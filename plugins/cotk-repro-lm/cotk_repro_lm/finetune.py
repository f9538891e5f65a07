"""``lm finetune``: fine-tune a causal LM on a dialogue loader's (query, response) pairs, the loss on the
response tokens only, in the format coherence scores with (``<bos> query <eos> response``).

Deterministic on CPU: seeded torch and data order, deterministic algorithms, one thread per op order; the
same inputs give bit-identical weights. The output folder (weights as safetensors, the tokenizer, and
``cotk_repro_lm.json`` with the settings and losses) is what ``-o coherence.model=`` accepts.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cotk_repro.errors import CotkError

from .lm import FORMAT, encode_pairs, load_model


class FinetuneError(CotkError):
    """Bad input to ``lm finetune`` (one sentence)."""


def dialogue_pairs(
    data: str | Path, loader: str = "single-turn-dialog", split: str = "train", max_pairs: int | None = None
) -> list[tuple[str, str]]:
    """(query, response) pairs of a dialogue dataset folder, in file order (multi-turn: consecutive turns)."""
    from cotk_repro.data import load

    splits = ["train"] + ([split] if split != "train" else [])
    dl = load(loader, data, min_frequent_vocab_times=1, splits=splits, tokenizer="space")
    pairs: list[tuple[str, str]] = []
    for batch in dl.batches(split, batch_size=256):
        if "post_str" in batch:
            pairs.extend(zip(batch["post_str"], batch["resp_str"]))
        elif "sent_str" in batch:
            for session in batch["sent_str"]:
                pairs.extend(zip(session[:-1], session[1:]))
        else:
            raise FinetuneError(
                f"dataloader {loader!r} gives no dialogue pairs; use single-turn-dialog or multi-turn-dialog"
            )
    pairs = [(q, r) for q, r in pairs if r.strip()]
    if max_pairs is not None:
        pairs = pairs[:max_pairs]
    if not pairs:
        raise FinetuneError(f"{data} has no (query, response) pairs in its {split} split")
    return pairs


def finetune(
    model: str | Path,
    data: str | Path,
    out: str | Path,
    *,
    loader: str = "single-turn-dialog",
    epochs: int = 1,
    lr: float = 5e-5,
    batch_size: int = 8,
    seed: int = 0,
    max_pairs: int | None = None,
    device: str = "cpu",
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fine-tune and save; returns the settings and the mean response loss before and after."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FinetuneError(f"output folder {out} exists and is not empty")
    for name, v, low in (("epochs", epochs, 1), ("batch_size", batch_size, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise FinetuneError(f"{name} must be an integer >= {low}, not {v!r}")
    pairs = dialogue_pairs(data, loader, "train", max_pairs)
    import torch  # after the checks of the arguments and the data: a refusal costs no torch start-up (seconds)

    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        return _finetune(
            model,
            data,
            out,
            pairs,
            loader=loader,
            epochs=epochs,
            lr=lr,
            batch_size=batch_size,
            seed=seed,
            device=device,
            log=log,
        )
    finally:
        torch.use_deterministic_algorithms(deterministic)


def _finetune(model, data, out: Path, pairs, *, loader, epochs, lr, batch_size, seed, device, log) -> dict[str, Any]:
    import copy

    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    lm = load_model(model, device)
    net = copy.deepcopy(lm.model)  # never train the cached instance
    net.to(lm.device)
    items = encode_pairs(lm, [q for q, _ in pairs], [r for _, r in pairs])

    def batches(order):
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            width = max(len(items[i][0]) for i in idx)
            ids = torch.full((len(idx), width), lm.eos_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            labels = torch.full_like(ids, -100)
            for row, i in enumerate(idx):
                seq, n_ctx = items[i]
                ids[row, : len(seq)] = torch.tensor(seq)
                mask[row, : len(seq)] = 1
                labels[row, n_ctx : len(seq)] = torch.tensor(seq[n_ctx:])
            yield ids.to(lm.device), mask.to(lm.device), labels.to(lm.device)

    def mean_loss() -> float:
        net.eval()
        total, count = 0.0, 0
        with torch.inference_mode():
            for ids, mask, labels in batches(list(range(len(items)))):
                logits = net(input_ids=ids, attention_mask=mask).logits[:, :-1]
                tgt = labels[:, 1:]
                loss = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100, reduction="sum"
                )
                total += float(loss)
                count += int((tgt != -100).sum())
        return total / count

    before = mean_loss()
    opt = torch.optim.AdamW(net.parameters(), lr=lr)
    rng = random.Random(seed)
    for epoch in range(epochs):
        net.train()
        order = list(range(len(items)))
        rng.shuffle(order)
        for ids, mask, labels in batches(order):
            loss = net(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        if log is not None:
            log(f"epoch {epoch + 1}/{epochs} done")
    net.eval()
    after = mean_loss()
    out.mkdir(parents=True, exist_ok=True)
    net.save_pretrained(out, safe_serialization=True)
    lm.tokenizer.save_pretrained(out)
    info = {
        "base_model": lm.identity,
        "data": str(Path(data).name),
        "loader": loader,
        "pairs": len(pairs),
        "format": FORMAT,
        "loss": "response tokens only",
        "epochs": epochs,
        "lr": lr,
        "batch_size": batch_size,
        "seed": seed,
        "optimizer": "AdamW",
        "loss_before": before,
        "loss_after": after,
    }
    (out / "cotk_repro_lm.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return info
