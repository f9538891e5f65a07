"""The oracle LSTM: the generator network with every parameter drawn from N(0, 1) by a seeded generator.

Texygen's synthetic benchmark takes it as the true model of the data: it generates the training and test
sentences, and NLL-oracle scores a model's samples under it. Building it from the same seed and sizes gives
the same weights on any machine with the same torch CPU kernels; under others (``ATEN_CPU_CAPABILITY=default``,
ARM) torch's normal draws differ in their last bits, so a hash names a built oracle by its recipe (seed and
sizes), never by its weights' digest (docs/metrics.md, "What a hash may contain").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from .digest import state_digest
from .errors import OracleError
from .models.generator import GenConfig, Generator


def check_sizes(vocab_size: Any, seq_len: Any, emb_dim: Any = 1, hidden_dim: Any = 1) -> None:
    """Refuse sizes that cannot make an oracle benchmark, in one sentence."""
    for name, value, low in (
        ("vocab_size", vocab_size, 4),
        ("seq_len", seq_len, 2),
        ("emb_dim", emb_dim, 1),
        ("hidden_dim", hidden_dim, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise OracleError(f"the oracle's {name} must be an integer of at least {low}, got {value!r}")


def build_oracle(
    seed: int = 0, vocab_size: int = 5000, emb_dim: int = 32, hidden_dim: int = 32, seq_len: int = 20
) -> Generator:
    """The oracle LSTM of these sizes, every parameter N(0, 1) from ``torch.Generator().manual_seed(seed)``."""
    check_sizes(vocab_size, seq_len, emb_dim, hidden_dim)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise OracleError(f"the oracle's seed must be an integer, got {seed!r}")
    oracle = Generator(GenConfig(vocab_size, emb_dim, hidden_dim, seq_len))
    rng = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(oracle.named_parameters()):
            p.copy_(torch.randn(p.shape, generator=rng))
    oracle.eval()
    for p in oracle.parameters():
        p.requires_grad_(False)
    return oracle


#: how :func:`build_oracle` draws the weights: what a hash covers for a built oracle, with its seed and sizes
RECIPE = "build_oracle: every parameter N(0, 1) from torch.Generator().manual_seed(seed), sorted by name"


def oracle_info(oracle: Generator, seed: int | None, *, built: bool = False) -> dict[str, Any]:
    """The oracle's identity: its sizes, seed and weight digest; ``built``: made by :func:`build_oracle` from the
    seed (a hash then covers the recipe, not the weights: see :func:`hashed_identity`)."""
    info = {"seed": seed, **oracle.config.as_dict(), "weights": state_digest(oracle.state_dict())}
    return {**info, "built": True} if built else info


def hashed_identity(info: dict[str, Any]) -> dict[str, Any]:
    """What a hash covers of an oracle: a file's weight digest (an input), or a built one's seed, sizes and
    :data:`RECIPE` (its weights are computed, and their last bits follow torch's CPU kernels)."""
    if not info.get("built"):
        return info
    return {**{k: v for k, v in info.items() if k not in ("weights", "built")}, "recipe": RECIPE}


def save_oracle(oracle: Generator, path: str | Path, seed: int | None = None) -> Path:
    """Save the oracle's sizes, seed and weights (``torch.save``), for ``-o nll-oracle.oracle=PATH``."""
    path = Path(path)
    torch.save(
        {"kind": "texygen-oracle", "config": oracle.config.as_dict(), "seed": seed, "state": oracle.state_dict()}, path
    )
    return path


def load_model_file(path: str | Path, kind: str) -> tuple[Generator, dict[str, Any]]:
    """Load an oracle or generator file saved by this plugin (weights only); a bad file is one sentence."""
    path = Path(path)
    if not path.is_file():
        raise OracleError(f"no {kind} file at {path}")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        model = Generator(GenConfig(**blob["config"]))
        model.load_state_dict(blob["state"])
    except Exception as exc:
        raise OracleError(f"{path} is not a {kind} file saved by cotk-repro-texygen ({type(exc).__name__})") from None
    model.eval()
    return model, blob
