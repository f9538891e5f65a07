"""Fixtures of the cotk-repro-lm tests (helpers in lm_support.py). Nothing is downloaded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# one intra-op thread: the models are tiny, and on a shared 2-core machine torch's spinning threads make
# them several times slower (set before any test module imports torch; CLI subprocesses inherit it)
os.environ.setdefault("OMP_NUM_THREADS", "1")

from lm_support import make_gpt2, train_bpe, train_wordpiece  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _isolated_dirs(tmp_path_factory):
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
    return train_bpe(tmp_path_factory.mktemp("bpe"))


@pytest.fixture(scope="session")
def wordpiece_json(tmp_path_factory) -> Path:
    return train_wordpiece(tmp_path_factory.mktemp("wordpiece"))


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory, bpe_json) -> Path:
    return make_gpt2(tmp_path_factory.mktemp("models") / "gpt2", seed=0, tokenizer_json=bpe_json)


