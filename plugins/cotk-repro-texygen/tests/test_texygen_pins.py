"""The published hash and signature of nll-oracle, nll-test and embsim, pinned on small fixed inputs.

The values in ``texygen_pins.json`` were produced by the code before these metrics declared their settings once
(:mod:`cotk_repro.metrics.declaration`); a refactor that changes any of them fails here. Regenerate only for a
deliberate, versioned change: ``python3 plugins/cotk-repro-texygen/tests/test_texygen_pins.py``.

Changed since: nll-oracle's hash (issue 38). An oracle the metric builds from a seed is hashed by its seed, sizes
and recipe (``oracle.RECIPE``), no longer by its weights' digest, a computed value whose bits follow torch's CPU
kernels; the signature still shows the digest. The fixture's oracle, and so nll-test's sampled test tokens and
the signatures' digests, still come from torch's normal draws: these pins hold where torch uses the AVX2 (or
AVX-512) kernels, not under ``ATEN_CPU_CAPABILITY=default``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

PINS = Path(__file__).parent / "texygen_pins.json"
SMALL = {"seed": 3, "vocab_size": 30, "seq_len": 6, "emb_dim": 8, "hidden_dim": 8, "n_train": 300, "n_test": 40}
SIZES = {k: SMALL[k] for k in ("seed", "vocab_size", "seq_len", "emb_dim", "hidden_dim")}


def entries(folder: Path) -> dict[str, dict[str, Any]]:
    """``{case: {hash, signature}}`` of every case, files written under ``folder``."""
    from cotk_repro_texygen.data import OracleData
    from cotk_repro_texygen.metrics import EmbSim, NllOracle, NllTest
    from cotk_repro_texygen.oracle import save_oracle

    d = OracleData(**SMALL)
    save_oracle(d.oracle, folder / "g.pt", 3)
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        np.save(folder / f"{name}.npy", rng.normal(size=(40, 8)).astype(np.float32))
    files = {"tables": "files", "table": str(folder / "b.npy"), "reference_table": str(folder / "a.npy")}
    train = d.sentences("train")
    results = {
        "nll-oracle": NllOracle(**SIZES).compute(d.sentences("test")),
        "nll-test": NllTest(model=str(folder / "g.pt")).compute(d.sentences("test")),
        "embsim-files": EmbSim(**files).compute([]),
        "embsim-files-rows": EmbSim(**files, rows=20).compute([]),
        "embsim-word2vec": EmbSim(vector_size=8, epochs=3).compute(train[:150], train[150:]),
    }
    out = {}
    for case, result in results.items():
        key = case.split("-files")[0].split("-word2vec")[0]
        out[case] = {"hash": result[f"{key} hashvalue"], "signature": result[f"{key} signature"]}
    return out


def test_texygen_hashes_and_signatures_are_unchanged(tmp_path: Path) -> None:
    pytest.importorskip("gensim")
    assert entries(tmp_path) == json.loads(PINS.read_text(encoding="utf-8"))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        PINS.write_text(json.dumps(entries(Path(tmp)), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(PINS.read_text(encoding="utf-8"))
