"""The published hash and signature of nll-oracle, nll-test and embsim, pinned on small fixed inputs.

The values in ``texygen_pins.json`` were produced by the code before these metrics declared their settings once
(:mod:`cotk_repro.metrics.declaration`); its ``_changes`` says what changed since, and why. Regenerate only for a
deliberate, versioned change: ``python3 plugins/cotk-repro-texygen/tests/test_texygen_pins.py``.

The inputs are the same on every machine: the sentences are committed (``tiny-oracle/``: what the
``oracle-lstm`` loader sampled for :data:`SMALL` on an AVX2 CPU), and nll-test's generator file gets its weights
from numpy's integer generator (:func:`kernel_free_generator`), not from torch's normal draws, whose last bits
follow torch's CPU kernels (``ATEN_CPU_CAPABILITY=default``, ARM). Hashes compare exactly. One signature field
shows a value computed here: nll-oracle's ``oracle:`` for the oracle the metric builds from a seed (the digest of
its weights; its hash covers the seed, sizes and recipe instead); it compares with the digest of that oracle built
on the machine running the test.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

HERE = Path(__file__).parent
PINS = HERE / "texygen_pins.json"
SENTENCES = HERE / "tiny-oracle"
SMALL = {"seed": 3, "vocab_size": 30, "seq_len": 6, "emb_dim": 8, "hidden_dim": 8, "n_train": 300, "n_test": 40}
SIZES = {k: SMALL[k] for k in ("seed", "vocab_size", "seq_len", "emb_dim", "hidden_dim")}
#: per case, the signature field that shows the digest of weights built from a seed on this machine
BUILT_HERE = {"nll-oracle": "oracle"}


def sentences(split: str) -> list[str]:
    """The committed ``train`` or ``test`` sentences (token ids as text)."""
    return (SENTENCES / f"{split}.txt").read_text(encoding="utf-8").splitlines()


def kernel_free_generator(seed: int):
    """A generator LSTM of :data:`SIZES`, every parameter a uniform draw in [-1, 1) from numpy's integer
    generator (exact float32 values): the same bytes on every CPU."""
    import torch

    from cotk_repro_texygen.models.generator import GenConfig, Generator

    model = Generator(GenConfig(SIZES["vocab_size"], SIZES["emb_dim"], SIZES["hidden_dim"], SIZES["seq_len"]))
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            draws = rng.integers(-(2**20), 2**20, size=tuple(p.shape), dtype=np.int64)
            p.copy_(torch.from_numpy((draws / 2**20).astype(np.float32)))
    return model.eval()


def entries(folder: Path) -> dict[str, dict[str, Any]]:
    """``{case: {hash, signature}}`` of every case, files written under ``folder``."""
    from cotk_repro_texygen.metrics import EmbSim, NllOracle, NllTest
    from cotk_repro_texygen.oracle import save_oracle

    save_oracle(kernel_free_generator(SIZES["seed"]), folder / "g.pt", SIZES["seed"])
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        np.save(folder / f"{name}.npy", rng.normal(size=(40, 8)).astype(np.float32))
    files = {"tables": "files", "table": str(folder / "b.npy"), "reference_table": str(folder / "a.npy")}
    train, test = sentences("train"), sentences("test")
    results = {
        "nll-oracle": NllOracle(**SIZES).compute(test),
        "nll-oracle-file": NllOracle(oracle=str(folder / "g.pt")).compute(test),
        "nll-test": NllTest(model=str(folder / "g.pt")).compute(test),
        "embsim-files": EmbSim(**files).compute([]),
        "embsim-files-rows": EmbSim(**files, rows=20).compute([]),
        "embsim-word2vec": EmbSim(vector_size=8, epochs=3).compute(train[:150], train[150:]),
    }
    out = {}
    for case, result in results.items():
        key = case.split("-file")[0].split("-word2vec")[0]
        out[case] = {"hash": result[f"{key} hashvalue"], "signature": result[f"{key} signature"]}
    return out


def pinned() -> dict[str, dict[str, str]]:
    """The pins, without the ``_changes`` note."""
    pins = json.loads(PINS.read_text(encoding="utf-8"))
    pins.pop("_changes")
    return pins


def built_here() -> str:
    """The first 16 hex digits of the weight digest of the oracle built from :data:`SIZES` on this machine."""
    from cotk_repro_texygen.digest import state_digest
    from cotk_repro_texygen.oracle import build_oracle

    return state_digest(build_oracle(**SIZES).state_dict())[:16]


def without(signature: str, field: str) -> list[str]:
    """The signature's fields but ``field``, which must be there once."""
    fields = signature.split("|")
    assert sum(f.partition(":")[0] == field for f in fields) == 1, (field, signature)
    return [f for f in fields if f.partition(":")[0] != field]


def test_texygen_hashes_and_signatures_are_unchanged(tmp_path: Path) -> None:
    pytest.importorskip("gensim")
    got, pins = entries(tmp_path), pinned()
    assert sorted(got) == sorted(pins)
    for case, pin in pins.items():
        assert got[case]["hash"] == pin["hash"], case
        field = BUILT_HERE.get(case)
        if field is None:
            assert got[case]["signature"] == pin["signature"], case
            continue
        assert f"{field}:{built_here()}" in got[case]["signature"].split("|"), (case, got[case]["signature"])
        assert without(got[case]["signature"], field) == without(pin["signature"], field), case


def test_the_committed_sentences_are_what_the_loader_samples_here() -> None:
    """Where this machine's kernels build the pinned oracle, ``oracle-lstm`` samples the committed sentences."""
    from cotk_repro_texygen.data import OracleData

    pin = dict(f.partition(":")[::2] for f in pinned()["nll-oracle"]["signature"].split("|"))["oracle"]
    if built_here() != pin:
        pytest.skip(f"this machine's torch kernels build another oracle ({built_here()}, pinned {pin})")
    d = OracleData(**SMALL)
    assert (d.sentences("train"), d.sentences("test")) == (sentences("train"), sentences("test"))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    changes = json.loads(PINS.read_text(encoding="utf-8")).get("_changes", []) if PINS.exists() else []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = {"_changes": changes, **entries(Path(tmp))}  # add a line to _changes saying why
        PINS.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(PINS.read_text(encoding="utf-8"))
