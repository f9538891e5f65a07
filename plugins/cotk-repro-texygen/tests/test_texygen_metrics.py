"""The oracle-lstm loader and the metrics nll-oracle, nll-test, embsim, against independent references."""

from __future__ import annotations

# ruff: noqa: E402  (the imports after the skips below need torch and the plugin)
import itertools
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup.sh installs the CPU build)")
pytest.importorskip(
    "cotk_repro_texygen", reason="the cotk-repro-texygen plugin is not installed (scripts/setup.sh installs it)"
)
from scipy.spatial.distance import cosine

from cotk_repro.metrics import MetricError
from cotk_repro_texygen.data import OracleData
from cotk_repro_texygen.metrics import EmbSim, NllOracle, NllTest, embsim, mean_nll
from cotk_repro_texygen.oracle import OracleError, build_oracle, save_oracle

SMALL = {"seed": 3, "vocab_size": 30, "seq_len": 6, "emb_dim": 8, "hidden_dim": 8, "n_train": 200, "n_test": 40}


def _loader_fingerprint_script(settings):
    return (
        "import json, hashlib\nfrom cotk_repro.data import load\n"
        f"d = load('oracle-lstm', None, **{settings!r})\n"
        "print(json.dumps({'codes': d.hash_codes, 'train': hashlib.sha256(d.splits['train'].numpy().tobytes())"
        ".hexdigest(), 'test': d.sentences('test')[:5]}))"
    )


def test_oracle_lstm_is_bit_identical_across_interpreters():
    here = OracleData(**SMALL)
    outs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _loader_fingerprint_script(SMALL)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONHASHSEED": str(i)},
            ).stdout
        )
        for i in (1, 2)
    ]
    import hashlib

    assert outs[0] == outs[1]
    assert outs[0]["codes"] == here.hash_codes
    assert outs[0]["train"] == hashlib.sha256(here.splits["train"].numpy().tobytes()).hexdigest()
    assert outs[0]["test"] == here.sentences("test")[:5]


def test_oracle_hash_covers_seed_sizes_and_weights():
    base = OracleData(**SMALL).hash_codes
    assert OracleData(**{**SMALL, "seed": 4}).hash_codes["setting"] != base["setting"]
    assert OracleData(**{**SMALL, "hidden_dim": 9}).hash_codes["setting"] != base["setting"]
    assert OracleData(**{**SMALL, "n_test": 41}).hash_codes["general"] != base["general"]
    d = OracleData(**SMALL)
    assert d.settings["oracle_weights"] == OracleData(**SMALL).settings["oracle_weights"]
    # the parameters are N(0, 1): over all weights, mean ~0 and std ~1
    flat = torch.cat([p.flatten() for p in d.oracle.parameters()])
    assert abs(float(flat.mean())) < 0.1 and abs(float(flat.std()) - 1) < 0.1


@pytest.mark.parametrize("bad", [{"vocab_size": 3}, {"seq_len": 1}, {"n_train": 0}, {"vocab_size": "x"}])
def test_oracle_bad_sizes_are_one_sentence(bad):
    with pytest.raises(OracleError) as exc:
        OracleData(**{**SMALL, **bad})
    assert "\n" not in exc.value.message and "at least" in exc.value.message or "integer" in exc.value.message


def test_bad_oracle_sizes_on_the_command_line_exit_2_and_write_nothing(tmp_path):
    (tmp_path / "h.txt").write_text("1 2 3\n")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "evaluate",
            "-m",
            "nll-oracle",
            "-o",
            "nll-oracle.vocab_size=3",
            "--hyps",
            "h.txt",
            "--json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2
    assert "vocab_size must be an integer of at least 4" in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.txt"]


def _direct_lstm_nll(oracle, x):
    """The oracle's per-token NLL by hand: the LSTM cell written out (not nn.LSTM), one step at a time."""
    sd = {k: v.double() for k, v in oracle.state_dict().items()}
    w_ih, w_hh = sd["lstm.weight_ih_l0"], sd["lstm.weight_hh_l0"]
    b = sd["lstm.bias_ih_l0"] + sd["lstm.bias_hh_l0"]
    n, t = x.shape
    hdim = w_hh.shape[1]
    h = torch.zeros(n, hdim, dtype=torch.float64)
    c = torch.zeros(n, hdim, dtype=torch.float64)
    inp = torch.zeros(n, dtype=torch.long)  # the start token
    total = torch.zeros((), dtype=torch.float64)
    for s in range(t):
        gates = sd["emb.weight"][inp] @ w_ih.T + h @ w_hh.T + b
        i, f, g, o = gates.chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        logits = h @ sd["out.weight"].T + sd["out.bias"]
        total -= torch.log_softmax(logits, -1).gather(1, x[:, s : s + 1]).sum()
        inp = x[:, s]
    return float(total) / x.numel()


def test_nll_oracle_of_the_oracles_own_samples_equals_a_direct_torch_computation():
    d = OracleData(**SMALL)
    got = NllOracle(**{k: SMALL[k] for k in ("seed", "vocab_size", "seq_len", "emb_dim", "hidden_dim")}).compute(
        d.sentences("train")
    )
    assert got["nll-oracle"] == pytest.approx(_direct_lstm_nll(d.oracle, d.splits["train"]), rel=1e-5)
    assert len(got["nll-oracle hashvalue"]) == 64


def test_nll_oracle_of_its_samples_estimates_the_oracles_exact_entropy():
    # 4 words, 3 tokens: all 64 sentences enumerated give the exact per-token entropy
    oracle = build_oracle(seed=5, vocab_size=4, emb_dim=3, hidden_dim=3, seq_len=3)
    every = torch.tensor(list(itertools.product(range(4), repeat=3)))
    logp = oracle.token_log_probs(every).sum(1).double()
    assert float(logp.exp().sum()) == pytest.approx(1.0, abs=1e-6)
    entropy = float(-(logp.exp() * logp).sum()) / 3
    samples = oracle.sample(20000, torch.Generator().manual_seed(0))
    assert mean_nll(oracle, samples) == pytest.approx(entropy, abs=0.02)


def test_nll_oracle_hash_covers_the_oracle_and_an_oracle_file_gives_the_same_value(tmp_path):
    """A built oracle hashes by its recipe (seed and sizes: its weights are computed, and their last bits follow
    torch's CPU kernels); a file by its weights' digest. The same oracle gives the same value and signature."""
    from cotk_repro_texygen.oracle import RECIPE, hashed_identity, oracle_info

    d = OracleData(**SMALL)
    sizes = {k: SMALL[k] for k in ("seed", "vocab_size", "seq_len", "emb_dim", "hidden_dim")}
    hyps = d.sentences("test")
    a = NllOracle(**sizes).compute(hyps)
    d.write(tmp_path)
    b = NllOracle(oracle=str(tmp_path / "oracle.pt")).compute(hyps)
    assert a["nll-oracle"] == b["nll-oracle"] and a["nll-oracle signature"] == b["nll-oracle signature"]
    assert a["nll-oracle hashvalue"] != b["nll-oracle hashvalue"]
    built = hashed_identity(oracle_info(d.oracle, 3, built=True))
    assert "weights" not in built and built["recipe"] == RECIPE and built["seed"] == 3
    assert hashed_identity(oracle_info(d.oracle, 3))["weights"] == oracle_info(d.oracle, 3)["weights"]
    c = NllOracle(**{**sizes, "seed": 4}).compute(hyps)
    assert c["nll-oracle hashvalue"] != a["nll-oracle hashvalue"]
    with pytest.raises(MetricError, match="not 6 token ids"):
        NllOracle(**sizes).compute(["1 2 3"])


def test_nll_test_reads_a_generator_file(tmp_path):
    d = OracleData(**SMALL)
    save_oracle(d.oracle, tmp_path / "g.pt", 3)
    got = NllTest(model=str(tmp_path / "g.pt")).compute(d.sentences("test"))
    assert got["nll-test"] == pytest.approx(_direct_lstm_nll(d.oracle, d.splits["test"]), rel=1e-5)
    with pytest.raises(MetricError, match="needs the model"):
        NllTest().compute(d.sentences("test"))
    with pytest.raises(MetricError, match="no generator file"):
        NllTest(model=str(tmp_path / "none.pt")).compute(d.sentences("test"))


def _paper_embsim(a, b):
    """Texygen's EmbSim as the paper states it, with scipy's cosine distance, row by row."""

    def sim(e):
        en = e / np.sqrt((e**2).sum(1, keepdims=True))
        return en @ en.T

    sa, sb = sim(a), sim(b)
    return math.log10(sum(1 - cosine(sa[i], sb[i]) for i in range(len(sa))) / len(sa))


def test_embsim_equals_the_papers_formula_in_scipy(tmp_path):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(40, 8)), rng.normal(size=(40, 8))
    assert embsim(a, b) == pytest.approx(_paper_embsim(a, b), rel=1e-9)
    assert embsim(a, a) == pytest.approx(0.0, abs=1e-12)
    np.save(tmp_path / "a.npy", a.astype(np.float32))
    np.save(tmp_path / "b.npy", b.astype(np.float32))
    got = EmbSim(tables="files", table=str(tmp_path / "b.npy"), reference_table=str(tmp_path / "a.npy")).compute([])
    assert got["embsim"] == pytest.approx(_paper_embsim(a.astype(np.float32), b.astype(np.float32)), rel=1e-6)
    np.save(tmp_path / "c.npy", rng.normal(size=(40, 8)).astype(np.float32))
    other = EmbSim(tables="files", table=str(tmp_path / "b.npy"), reference_table=str(tmp_path / "c.npy")).compute([])
    assert other["embsim hashvalue"] != got["embsim hashvalue"]


def test_embsim_refuses_tables_of_another_size_in_one_sentence(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((10, 4)))
    np.save(tmp_path / "b.npy", np.ones((11, 4)))
    with pytest.raises(MetricError) as exc:
        EmbSim(tables="files", table=str(tmp_path / "b.npy"), reference_table=str(tmp_path / "a.npy")).compute([])
    assert "one row per word" in exc.value.message and "\n" not in exc.value.message
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "evaluate",
            "-m",
            "embsim",
            "-o",
            "embsim.tables=files",
            "-o",
            "embsim.table=b.npy",
            "-o",
            "embsim.reference_table=a.npy",
            "--hyps",
            "a.npy",
            "--refs",
            "a.npy",
            "--json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npy", "b.npy"]


def test_embsim_from_gensim_word2vec_tables():
    gensim = pytest.importorskip("gensim")
    from gensim.models import Word2Vec

    d = OracleData(**{**SMALL, "n_train": 300})
    hyps, refs = d.sentences("train")[:150], d.sentences("train")[150:]
    got = EmbSim(vector_size=8, epochs=3).compute(hyps, refs)
    again = EmbSim(vector_size=8, epochs=3).compute(hyps, refs)
    assert got == again  # one worker, a seed: deterministic
    kw = {"vector_size": 8, "window": 5, "min_count": 1, "sg": 0, "epochs": 3, "seed": 0, "workers": 1}
    mh = Word2Vec([h.split() for h in hyps], **kw)
    mr = Word2Vec([r.split() for r in refs], **kw)
    words = sorted(set(mh.wv.index_to_key) & set(mr.wv.index_to_key))
    ref = np.stack([mr.wv[w] for w in words]).astype(np.float64)
    gen = np.stack([mh.wv[w] for w in words]).astype(np.float64)
    assert got["embsim"] == pytest.approx(_paper_embsim(ref, gen), rel=1e-6)
    assert f"gensim:{gensim.__version__}" in got["embsim signature"]
    other = EmbSim(vector_size=9, epochs=3).compute(hyps, refs)
    assert other["embsim hashvalue"] != got["embsim hashvalue"]


def test_the_plugin_registers_its_names():
    from cotk_repro.plugins import get_plugins

    p = get_plugins()
    assert {"nll-oracle", "nll-test", "embsim"} <= set(p.registry("metric"))
    assert "oracle-lstm" in p.registry("dataloader")
    out = subprocess.run(
        [sys.executable, "-m", "cotk_repro", "metrics", "--json"], capture_output=True, text=True, check=True
    ).stdout
    facts = {m["name"]: m for m in json.loads(out)}
    assert facts["nll-oracle"]["higher_is_better"] is False and facts["nll-test"]["higher_is_better"] is False
    assert facts["embsim"]["higher_is_better"] is True


def test_loading_the_plugin_imports_neither_torch_nor_gensim():
    code = (
        "import sys\nfrom cotk_repro.plugins import get_plugins\np = get_plugins()\n"
        "for kind in ('template', 'metric', 'dataloader', 'generator'):\n    p.registry(kind)\n"
        "assert 'texygen-gsgan' in p.registry('template')\n"
        "print('torch' in sys.modules, 'gensim' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
