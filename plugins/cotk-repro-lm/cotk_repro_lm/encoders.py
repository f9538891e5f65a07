"""Model folders for the embedding metrics (``bertscore``, ``mauve``): where a ``model`` option points, and what
identifies the model in a hash.

``model`` is a local folder (saved with ``save_pretrained``) or ``hf:NAME`` (a Hugging Face hub name,
resolved to its snapshot folder through ``huggingface_hub``: downloaded once, then read from the cache;
with ``HF_HUB_OFFLINE=1`` only the cache). Either way the identity is the **content** of the folder's
weights (``*.safetensors``, else ``pytorch_model*.bin``), its ``config.json`` and its tokenizer files,
never its name or path: one changed weight gives another hash, the same files anywhere the same one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cotk_repro.core.canonical import hash_object
from cotk_repro.metrics.base import MetricError

from .fileshash import file_sha256, files_hash, tokenizer_files


@dataclass(frozen=True)
class ModelFolder:
    """A resolved model folder and its content identity."""

    path: Path
    label: str  # what the user gave: the folder's name, or hf:NAME
    weights_hash: str
    tokenizer_hash: str
    config: dict

    @property
    def identity(self) -> dict[str, str]:
        return {"weights": self.weights_hash, "tokenizer": self.tokenizer_hash}

    def depth(self) -> int | None:
        """The number of layers the config declares (None when it names none)."""
        for key in ("num_hidden_layers", "n_layer", "num_layers", "n_layers"):
            value = self.config.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None


def model_weight_files(folder: Path) -> list[Path]:
    """The weight files of a saved model: ``*.safetensors``, else PyTorch ``*.bin`` checkpoints."""
    files = sorted(folder.glob("*.safetensors"))
    return files or sorted(p for p in folder.glob("*.bin") if p.name.startswith(("pytorch_model", "model")))


def resolve_model(value: Any, option: str) -> ModelFolder:
    """``value`` (a folder or ``hf:NAME``) as a :class:`ModelFolder`; one sentence when it holds no model."""
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise MetricError(f"{option} must be a model folder or hf:NAME, not {value!r}")
    text = str(value)
    if text.startswith("hf:"):
        name = text[3:]
        if not name:
            raise MetricError(f"{option}=hf: needs a model name after the colon, e.g. hf:roberta-large")
        try:
            from huggingface_hub import snapshot_download

            folder = Path(
                snapshot_download(
                    name,
                    allow_patterns=["*.json", "*.jinja", "*.safetensors", "*.txt", "*.model", "pytorch_model*.bin"],
                )
            )
        except Exception as exc:
            raise MetricError(
                f"cannot get the model hf:{name} ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else 'no detail'})"
            ) from None
        label = text
    else:
        folder = Path(text).expanduser()
        label = folder.name
        if not folder.exists():
            raise MetricError(f"model folder {folder} does not exist")
        if not folder.is_dir():
            raise MetricError(f"{folder} is not a folder; give a model folder saved with save_pretrained or hf:NAME")
    weights = model_weight_files(folder)
    if not weights:
        raise MetricError(f"{folder} holds no model: no *.safetensors or pytorch_model*.bin weights")
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise MetricError(f"{folder} holds no model: no config.json")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MetricError(f"{config_file} is not readable JSON ({exc})") from None
    if not isinstance(config, dict):
        raise MetricError(f"{config_file} is not a JSON object")
    toks = tokenizer_files(folder)
    if not toks:
        raise MetricError(f"{folder} has no tokenizer files; save the tokenizer into the model folder too")
    weights_hash = hash_object({"weights": files_hash("weights", weights), "config": file_sha256(config_file)})
    return ModelFolder(folder, label, weights_hash, files_hash("tokenizer", toks), config)


def torch_device(device: str) -> Any:
    """``auto`` (CUDA when there is one), ``cpu``, ``cuda``, ``cuda:N``."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except (RuntimeError, TypeError):
        raise MetricError(f"device must be auto, cpu or cuda[:N], not {device!r}") from None


def check_batch_size(value: Any) -> int:
    """A positive integer batch size."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MetricError(f"batch_size must be a positive integer, not {value!r}")
    return value


def quiet_hf() -> Any:
    """A context manager that silences transformers' progress bars and load reports while loading a local folder."""
    import contextlib

    @contextlib.contextmanager
    def quiet():
        from transformers.utils import logging as hf_logging

        bars = hf_logging.is_progress_bar_enabled()
        level = hf_logging.get_verbosity()
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        try:
            yield
        finally:
            hf_logging.set_verbosity(level)
            if bars:
                hf_logging.enable_progress_bar()

    return quiet()
