"""Shared by train.py: presets and arguments, seeding, the training loop, checkpoints.

Edit freely: this is your project's code, not a library.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

import numpy as np
import torch

CHECKPOINTS = Path("checkpoints")  # in .gitignore: never committed, never recorded
OUTPUTS = Path("outputs")  # generated text, likewise ignored


def parse_args(description: str, presets: dict[str, dict], extra=None) -> argparse.Namespace:
    """``--preset NAME`` (default ``tiny``), then every preset value as ``--key VALUE`` on top of it.

    ``cotk-repro.toml``'s ``[run] args`` passes these, e.g. ``["--preset", "paper", "--epochs", "20"]``.
    """
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "--preset",
        choices=sorted(presets),
        default="tiny",
        help="hyper-parameters: tiny (CPU, minutes) or paper (the CoTK paper's appendix)",
    )
    parser.add_argument("--data", help="dataset folder (default: the preset's)")
    parser.add_argument("--seed", type=int, default=1229)
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1 ...")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads; fixed so that numbers do not depend on the machine's core count",
    )
    parser.add_argument("--result", default="result.json")
    if extra is not None:
        extra(parser)
    for key, value in presets["tiny"].items():
        if key == "data":
            continue
        kind = type(value) if not isinstance(value, bool) else (lambda s: s.lower() in ("1", "true", "yes"))
        parser.add_argument(
            "--" + key.replace("_", "-"),
            dest=key,
            type=kind,
            default=None,
            help=f"tiny: {value!r}, paper: {presets.get('paper', {}).get(key)!r}",
        )
    args = parser.parse_args()
    settings = dict(presets[args.preset])
    for key in presets["tiny"]:
        if getattr(args, key, None) is not None:
            settings[key] = getattr(args, key)
    if args.data:
        settings["data"] = args.data
    args.settings = settings
    return args


def seed_everything(seed: int, threads: int) -> None:
    """Python, numpy and torch seeded; deterministic kernels only; a fixed number of threads."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS on a GPU
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)


def progress():
    """A rich progress bar on a terminal; disabled under `cotk-repro run` (no terminal: ``fit`` prints lines)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f}"),
        TimeRemainingColumn(),
        disable=not os.isatty(1),
    )


def fit(model, loss_fn, batches, settings: dict, device: str, name: str = "model") -> dict:
    """Train with Adam and gradient clipping; a checkpoint after every epoch.

    ``loss_fn(batch) -> (summed loss, number of target tokens)``; ``batches(epoch)`` yields the
    epoch's batches (shuffled with a seed, so the order is the same everywhere). Returns the
    number of target tokens trained on and the seconds it took.
    """
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings["lr"])
    tokens, seconds = 0, 0.0
    CHECKPOINTS.mkdir(exist_ok=True)
    with progress() as bar:
        task = bar.add_task("training", total=settings["epochs"], loss=float("nan"))
        for epoch in range(settings["epochs"]):
            model.train()
            start, total_loss, epoch_tokens = time.perf_counter(), 0.0, 0
            for batch in batches(epoch):
                loss, count = loss_fn(batch)
                optimizer.zero_grad()
                (loss / count).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings["grad_clip"])
                optimizer.step()
                total_loss += loss.item()
                epoch_tokens += int(count)
            seconds += time.perf_counter() - start
            tokens += epoch_tokens
            mean = total_loss / max(epoch_tokens, 1)
            bar.update(task, advance=1, loss=mean)
            if bar.disable:
                print(f"epoch {epoch + 1}/{settings['epochs']}: loss {mean:.4f} ({epoch_tokens} tokens)", flush=True)
            torch.save(
                {
                    "epoch": epoch + 1,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "settings": settings,
                },
                CHECKPOINTS / f"{name}-last.pt",
            )
    return {"tokens": tokens, "seconds": seconds}


def save_samples(lines: list[str], name: str = "samples.txt") -> Path:
    """Write generated text, one line each, under ``outputs/`` (for reading; the record keeps the scores)."""
    OUTPUTS.mkdir(exist_ok=True)
    path = OUTPUTS / name
    path.write_text("".join(line.replace("\n", " ") + "\n" for line in lines), encoding="utf-8")
    return path


def top_k_choice(logits: torch.Tensor, top_k: int, temperature: float, generator: torch.Generator) -> torch.Tensor:
    """One token per row: sampled from the ``top_k`` best (``top_k`` 0: greedy)."""
    if top_k <= 0:
        return logits.argmax(dim=-1)
    values, indices = torch.topk(logits / temperature, min(top_k, logits.shape[-1]), dim=-1)
    picked = torch.multinomial(torch.softmax(values, dim=-1), 1, generator=generator)
    return indices.gather(-1, picked).squeeze(-1)
