"""The models on their shared parts, Texygen's protocol, and the seven templates' tiny presets."""

from __future__ import annotations

# ruff: noqa: E402  (the imports after the skips below need torch and the plugin)
import inspect
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup.sh installs the CPU build)")
pytest.importorskip(
    "cotk_repro_texygen", reason="the cotk-repro-texygen plugin is not installed (scripts/setup.sh installs it)"
)

from cotk_repro.core.canonical import is_sha256_hex
from cotk_repro_texygen.models import MODELS, base, discriminator, generator, reinforce
from cotk_repro_texygen.models.generator import GenConfig, Generator
from cotk_repro_texygen.protocol import ProtocolError, model_class, run
from cotk_repro_texygen.templates import FILES, TEMPLATES

QUIET = {"log": lambda line: None}


def test_mle_tiny_lowers_nll_oracle_epoch_by_epoch():
    r = run("mle", "tiny", out_dir=None, **QUIET)
    curve = [p["nll-oracle"] for p in r.curve]
    assert len(curve) == 8
    assert all(b < a for a, b in itertools.pairwise(curve)), curve


def test_every_tiny_preset_runs_deterministically_and_writes_each_metric_with_its_hash(tmp_path):
    seconds = {}
    for model in MODELS:
        out = tmp_path / model
        t0 = time.perf_counter()
        r = run(model, "tiny", out_dir=out, **QUIET)
        seconds[model] = time.perf_counter() - t0
        doc = json.loads((out / "result.json").read_text())
        results = doc["results"]
        for name in ("nll-oracle", "nll-test", "embsim"):
            assert is_sha256_hex(results[name]["hash"]) and results[name]["metric"] == name
            epochs = [k for k in results if k.startswith(name + "@epoch-")]
            assert len(epochs) == len(r.curve) >= 3
            assert all(results[k]["hash"] == results[name]["hash"] for k in epochs)
        assert set(doc["data"]) == {"raw", "data", "vocab", "setting", "general"}
        assert (out / "checkpoints" / "generator.pt").is_file() and (out / "outputs" / "samples.txt").is_file()
    # the metric hashes do not depend on the model: one comparison group per metric
    docs = [json.loads((tmp_path / m / "result.json").read_text())["results"] for m in MODELS]
    for name in ("nll-oracle", "nll-test", "embsim"):
        assert len({d[name]["hash"] for d in docs}) == 1
    run("seqgan", "tiny", out_dir=tmp_path / "again", **QUIET)
    assert json.loads((tmp_path / "again" / "result.json").read_text()) == json.loads(
        (tmp_path / "seqgan" / "result.json").read_text()
    )
    print(
        "tiny presets, seconds:", {k: round(v, 2) for k, v in seconds.items()}, "total", round(sum(seconds.values()), 1)
    )


def test_the_gans_share_the_generator_discriminator_and_rollout():
    for name in ("seqgan", "maligan", "rankgan", "leakgan"):
        assert issubclass(model_class(name), base.PolicyGradientGAN)
    for name in MODELS:
        src = inspect.getsource(sys.modules[model_class(name).__module__])
        assert "nn.LSTM(" not in src and "nn.Conv1d" not in src, name  # only generator.py / discriminator.py
    assert "nn.LSTM(" in inspect.getsource(generator) and "nn.Conv1d" in inspect.getsource(discriminator)
    assert "def rewards" in inspect.getsource(reinforce)


def test_rollout_keeps_the_prefix_and_scores_the_whole_sentence_last():
    torch.manual_seed(0)
    gen = Generator(GenConfig(12, 4, 4, 5))
    x = gen.sample(6, torch.Generator().manual_seed(1))
    done = gen.complete(x[:, :2], torch.Generator().manual_seed(2))
    assert done.shape == (6, 5) and torch.equal(done[:, :2], x[:, :2])
    roll = reinforce.Rollout(gen)
    r = roll.rewards(x, lambda s: (s[:, -1] % 2).float(), num=3, rng=torch.Generator().manual_seed(3))
    assert r.shape == (6, 5) and torch.equal(r[:, -1], (x[:, -1] % 2).float())
    soft = gen.relaxed(3, tau=0.5, rng=torch.Generator().manual_seed(4))
    assert soft.shape == (3, 5, 12) and torch.allclose(soft.sum(-1), torch.ones(3, 5))


def test_a_gan_without_its_pretrained_generator_is_one_sentence_and_writes_nothing(tmp_path):
    with pytest.raises(ProtocolError) as exc:
        run("seqgan", "tiny", out_dir=tmp_path, pre_gen_epochs=0, **QUIET)
    assert "needs a pretrained generator" in exc.value.message and "\n" not in exc.value.message
    with pytest.raises(ProtocolError, match="is missing"):
        run("leakgan", "tiny", out_dir=tmp_path, pre_gen_epochs=0, pretrained=str(tmp_path / "g.pt"), **QUIET)
    assert list(tmp_path.iterdir()) == []
    run("gsgan", "tiny", out_dir=None, pre_gen_epochs=0, adv_epochs=1, **QUIET)  # GSGAN has no pretraining


def test_a_pretrained_generator_file_replaces_pretraining(tmp_path):
    run("mle", "tiny", out_dir=tmp_path / "mle", adv_epochs=0, **QUIET)
    r = run(
        "seqgan",
        "tiny",
        out_dir=None,
        pre_gen_epochs=0,
        adv_epochs=1,
        pretrained=str(tmp_path / "mle" / "checkpoints" / "generator.pt"),
        **QUIET,
    )
    assert r.curve[0]["epoch"] == 1


def test_real_mode_reports_bleu_self_bleu_embsim_and_nll_test():
    r = run(
        "mle",
        "tiny",
        out_dir=None,
        mode="real",
        data=str(FILES / "data"),
        seq_len=10,
        pre_gen_epochs=1,
        adv_epochs=0,
        eval_samples=64,
        **QUIET,
    )
    for name in ("nll-test", "bleu", "self-bleu", "embsim"):
        assert name in r.entries and is_sha256_hex(r.entries[name + " hashvalue"])
    assert "nll-oracle" not in r.entries


def test_templates_are_listed_and_a_generated_project_runs(tmp_path):
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    out = subprocess.run(
        [sys.executable, "-m", "cotk_repro", "init", "--list-templates", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {row["name"] for row in json.loads(out)}
    assert set(TEMPLATES) <= names
    subprocess.run(
        [sys.executable, "-m", "cotk_repro", "init", "proj", "--template", "texygen-maligan"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    proj = tmp_path / "proj"
    assert 'MODEL = "maligan"' in (proj / "train.py").read_text()
    bad = subprocess.run(
        [sys.executable, "train.py", "--vocab-size", "3"], cwd=proj, capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2 and "vocab_size must be an integer of at least 4" in bad.stderr
    assert not (proj / "result.json").exists() and not (proj / "checkpoints").exists()
    subprocess.run(
        [sys.executable, "train.py", "--pre-gen-epochs", "1", "--adv-epochs", "1"],
        cwd=proj,
        check=True,
        capture_output=True,
        env=env,
    )
    results = json.loads((proj / "result.json").read_text())["results"]
    assert {"nll-oracle", "nll-oracle@epoch-1", "nll-oracle@epoch-2", "embsim", "nll-test"} <= set(results)


def test_compare_drives_the_texygen_generator(tmp_path):
    from cotk_repro_texygen.data import OracleData
    from cotk_repro_texygen.protocol import TINY as T

    d = OracleData(
        seed=0,
        vocab_size=T["vocab_size"],
        seq_len=T["seq_len"],
        emb_dim=T["oracle_emb_dim"],
        hidden_dim=T["oracle_hidden_dim"],
        n_train=T["n_train"],
        n_test=T["n_test"],
    )
    (tmp_path / "data" / "gold").mkdir(parents=True)
    (tmp_path / "data" / "gold" / "refs.txt").write_text("\n".join(d.sentences("test")) + "\n")
    (tmp_path / "data" / "inputs.txt").write_text("".join(f"x{i}\n" for i in range(60)))
    (tmp_path / "b.toml").write_text("""
[report]
jobs = 1
charts = false
html = false

[[dataset]]
name = "oracle"
path = "data"

[[system]]
name = "MLE"
generator = "texygen"
settings = { model = "mle", preset = "tiny" }

[[system]]
name = "GSGAN"
generator = "texygen"
settings = { model = "gsgan", preset = "tiny", adv_epochs = 1 }

[[metric]]
name = "nll-oracle"
options = { seed = 0, vocab_size = 40, seq_len = 8, emb_dim = 16, hidden_dim = 16 }

[[metric]]
name = "embsim"
""")
    subprocess.run(
        [sys.executable, "-m", "cotk_repro", "compare", "b.toml", "--out", "out"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    cells = json.loads((tmp_path / "out" / "results.json").read_text())["cells"]
    got = {(c["system"], c["metric"]): c for c in cells}
    assert got[("MLE", "nll-oracle")]["hash"] == got[("GSGAN", "nll-oracle")]["hash"]
    # the same model, trained in-process with the same preset, samples the same sentences: the same NLL-oracle
    from cotk_repro_texygen.generate import TexygenGenerator
    from cotk_repro_texygen.metrics import NllOracle

    mle = TexygenGenerator(model="mle", preset="tiny").generate([f"x{i}" for i in range(60)])
    value = NllOracle(seed=0, vocab_size=40, seq_len=8, emb_dim=16, hidden_dim=16).compute(mle)["nll-oracle"]
    assert got[("MLE", "nll-oracle")]["value"] == pytest.approx(value, rel=1e-12)
    assert got[("MLE", "nll-oracle")]["value"] < got[("GSGAN", "nll-oracle")]["value"]


def test_the_synthetic_example_config_loads_and_names_the_seven_models():
    from cotk_repro.compare.config import load_config
    from cotk_repro_texygen.generate import TexygenGenerator

    repo = Path(__file__).resolve().parents[3]
    config = load_config(repo / "examples" / "texygen-synthetic" / "benchmark.toml")
    assert sorted(s.settings["model"] for s in config.systems) == sorted(MODELS)
    for system in config.systems:
        TexygenGenerator(**system.settings)  # every setting is known and valid
    assert {m.name for m in config.metrics} == {"nll-oracle", "embsim", "self-bleu"}
