"""Helpers and fixtures of the cotk-repro-lm tests: a tiny GPT-2 with random (seeded) weights and tokenizers
trained here on the repository's fixture corpus (nothing is downloaded), and the CLI as a subprocess.

Test modules import the fixtures from here (``from lm_support import tiny_gpt2, ...``) instead of a
``conftest.py``: the core's ``tests/conftest.py`` is imported as the top-level module ``conftest`` (its tests
``from conftest import git``), and a second ``conftest.py`` in the same run would take that name.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# one intra-op thread: the models are tiny, and on a shared 2-core machine torch's spinning threads make
# them several times slower (test modules import this before torch; CLI subprocesses inherit it)
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO_ROOT = Path(__file__).resolve().parents[3]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "cotk-small"
OPENSUB = FIXTURES / "opensubtitles"
MSCOCO = FIXTURES / "mscoco"


def corpus_lines() -> list[str]:
    """Every non-empty line of the fixture corpus (OpenSubtitles pairs and MSCOCO captions)."""
    lines = []
    for path in sorted(OPENSUB.glob("*")) + sorted(MSCOCO.glob("*.txt")):
        lines.extend(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return lines


def train_bpe(out: Path, vocab_size: int = 400) -> Path:
    """A byte-level BPE (GPT-2 style) trained on the fixture corpus; returns its tokenizer.json."""
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(
        corpus_lines(), vocab_size=vocab_size, min_frequency=2, special_tokens=["<|endoftext|>"], show_progress=False
    )
    out.mkdir(parents=True, exist_ok=True)
    path = out / "tokenizer.json"
    tok.save(str(path))
    return path


def train_wordpiece(out: Path, vocab_size: int = 600) -> Path:
    """A WordPiece (BERT style, cased) trained on the fixture corpus; returns its tokenizer.json."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=["[UNK]", "[CLS]", "[SEP]", "[PAD]"], show_progress=False
    )
    tok.train_from_iterator(corpus_lines(), trainer=trainer)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "tokenizer.json"
    tok.save(str(path))
    return path


def kernel_free_init(model, seed: int, std: float = 0.02) -> None:
    """Every weight matrix ``std`` times a uniform draw in [-1, 1) from numpy's integer generator, biases 0, layer
    norms 1: the same bytes on every CPU. (torch's own initializers draw normals with a Box-Muller transform whose
    log/sin/cos are vectorised approximations under AVX2 and libm calls without it, so
    ``ATEN_CPU_CAPABILITY=default`` or an ARM machine gives other weights, and every hash over the model differs.)
    """
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() < 2:
                p.fill_(1.0 if name.endswith(".weight") else 0.0)  # a layer norm's weight; any bias
                continue
            draws = rng.integers(-(2**20), 2**20, size=tuple(p.shape), dtype=np.int64)
            p.copy_(torch.from_numpy((draws * (std / 2**20)).astype(np.float32)))


def make_gpt2(out: Path, seed: int = 0, tokenizer_json: Path | None = None) -> Path:
    """A tiny GPT-2 (2 layers, 2 heads, 32 dims) with seeded random weights (:func:`kernel_free_init`) and a
    fixture-trained BPE."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    if tokenizer_json is None:
        tokenizer_json = train_bpe(out.parent / f"{out.name}-bpe")
    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(tokenizer_json),
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    torch.manual_seed(seed)
    cfg = GPT2Config(
        vocab_size=len(tok),
        n_positions=128,
        n_layer=2,
        n_head=2,
        n_embd=32,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    model = GPT2LMHeadModel(cfg)
    kernel_free_init(model, seed)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out


def run_cli(
    *args: str, cwd: Path | None = None, check: bool = True, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``cotk-repro ARGS`` as a subprocess of this interpreter."""
    full_env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **(env or {}),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "cotk_repro", *args], cwd=cwd, capture_output=True, text=True, env=full_env, timeout=300
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"cotk-repro {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


@pytest.fixture(autouse=True, scope="module")
def _isolated_dirs(tmp_path_factory):
    """User folders and caches in a temporary folder; no hub access."""
    base = tmp_path_factory.mktemp("lm-userdirs")
    saved = dict(os.environ)
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")
    os.environ["COTK_REPRO_CACHE"] = str(base / "cache")
    os.environ.pop("COTK_REPRO_BUILTINS_ONLY", None)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="session")
def bpe_json(tmp_path_factory) -> Path:
    """A byte-level BPE trained on the fixture corpus."""
    return train_bpe(tmp_path_factory.mktemp("bpe"))


@pytest.fixture(scope="session")
def wordpiece_json(tmp_path_factory) -> Path:
    """A WordPiece trained on the fixture corpus."""
    return train_wordpiece(tmp_path_factory.mktemp("wordpiece"))


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory, bpe_json) -> Path:
    """A tiny GPT-2 folder (seeded random weights, the BPE)."""
    return make_gpt2(tmp_path_factory.mktemp("models") / "gpt2", seed=0, tokenizer_json=bpe_json)


def make_bert(out: Path, seed: int = 0, tokenizer_json: Path | None = None, layers: int = 3) -> Path:
    """A tiny BERT encoder (``layers`` layers, 2 heads, 32 dims) with seeded random weights and a
    fixture-trained WordPiece, for BERTScore."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    if tokenizer_json is None:
        tokenizer_json = train_wordpiece(out.parent / f"{out.name}-wordpiece")
    tok = BertTokenizerFast(
        tokenizer_file=str(tokenizer_json),
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[UNK]",
        model_max_length=128,
    )
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    model = BertModel(cfg)
    kernel_free_init(model, seed)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory, wordpiece_json) -> Path:
    """A tiny BERT folder (seeded random weights, the WordPiece)."""
    return make_bert(tmp_path_factory.mktemp("models") / "bert", seed=0, tokenizer_json=wordpiece_json)
