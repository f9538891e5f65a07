"""`cotk-repro init --template` with the benchmark templates of the plugin cotk-repro-templates.

Every template is scaffolded, committed, run with its tiny preset (`cotk-repro run`, in a small
record venv with the CPU torch wheel), published to a bare remote and reproduced with the venv
runtime: exit 0 and identical values. The GPT-2 templates get a tiny GPT-2 built here (never the
hub) and committed into the project. Checks against independent references: Distinct-n of the
generated text written beside the result, the perplexity hash against the dataloader's own
reference hash, the data hashes against a loader built here.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, git, run_cli

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from test_reproduce_support import add_bare_remote, publish, small_venv_python
from venv_cache import bytecode_env

TEMPLATES = [
    "lm-gru",
    "lm-transformer",
    "lm-gpt2-finetune",
    "seq2seq-gru",
    "seq2seq-transformer",
    "dialog-gpt2-finetune",
]
LM_KEYS = {"perplexity", "bleu", "self-bleu", "fw-bleu", "bw-bleu", "fw-bw-bleu", "fw-ppl", "rv-ppl", "distinct-2"}
DIALOG_KEYS = {"perplexity", "bleu", "distinct-1", "distinct-2"}
PLUGIN = importlib.util.find_spec("cotk_repro_templates") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_HF = importlib.util.find_spec("transformers") is not None and importlib.util.find_spec("tokenizers") is not None
TORCH_WHEEL = "torch==2.13.0"  # the CPU build pip finds on local disk (never a CUDA build from an index)

needs_plugin = pytest.mark.skipif(
    not PLUGIN, reason="the plugin cotk-repro-templates is not installed (pip install -e plugins/cotk-repro-templates)"
)
needs_torch = pytest.mark.skipif(
    not (PLUGIN and HAVE_TORCH and HAVE_HF), reason="the templates need torch, transformers and tokenizers installed"
)


@functools.cache
def trust_flag() -> tuple[str, ...]:
    """``--trust-remote-code`` where this cotk-repro knows it (the host runtimes require it); asked once."""
    res = run_cli("reproduce", "--help", env={"COLUMNS": "200"})
    return ("--trust-remote-code",) if "--trust-remote-code" in res.stdout else ()


#: what the templates' entries import (byte-compiled once when the record venv is built: tests/venv_cache.py):
#: torch with torch.compile's configuration (transformers imports it), numpy, nltk, and a tiny GPT-2 that is
#: initialised, saved, loaded and asked to generate (the modules transformers imports only when used)
RECORD_VENV_WARM = """
import tempfile
import nltk, numpy, torch, torch._inductor.config
from tokenizers import Tokenizer, models
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
with tempfile.TemporaryDirectory() as tmp:
    bpe = Tokenizer(models.BPE({"a": 0, "b": 1}, [], unk_token="a"))
    PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="a").save_pretrained(tmp)
    GPT2LMHeadModel(GPT2Config(vocab_size=8, n_positions=8, n_layer=1, n_head=1, n_embd=4)).save_pretrained(tmp)
    AutoTokenizer.from_pretrained(tmp)("a b")
    AutoModelForCausalLM.from_pretrained(tmp).generate(torch.tensor([[1]]), max_new_tokens=1, do_sample=False)
"""


def record_venv_python() -> str:
    """A venv for records: cotk-repro (a wheel of this checkout), the few packages it imports, the
    CPU torch wheel (first, so nothing else resolves another torch), transformers and tokenizers, and
    cotk-repro-lm from this checkout (editable, without its heavy extras: llm-eval's generator and judge,
    tests/test_templates_llm.py; one venv for both files, as building one takes minutes)."""
    return small_venv_python(
        extra=(
            (TORCH_WHEEL,),
            ("numpy", "nltk", "transformers", "tokenizers"),
            ("--no-deps", "-e", str(REPO_ROOT / "plugins" / "cotk-repro-lm")),  # reproduce rebuilds it from plugins/
        ),
        name="test-venvs-templates-lm",
        warm=RECORD_VENV_WARM,
    )


def distinct(lines: list[str], n: int) -> float:
    """Distinct-n written out here: distinct n-grams / all n-grams over WordPunct tokens."""
    grams = [
        tuple(toks[i : i + n])
        for line in lines
        for toks in [re.findall(r"\w+|[^\w\s]+", line)]
        for i in range(len(toks) - n + 1)
    ]
    return len(set(grams)) / len(grams) if grams else 0.0


# -- listing and scaffolding ---------------------------------------------------------------------


@needs_plugin
def test_list_templates_json_and_table(cli, tmp_path):
    res = cli("init", "--list-templates", "--json", cwd=tmp_path)
    assert res.returncode == 0, res
    rows = {r["name"]: r for r in json.loads(res.stdout)}
    assert set(TEMPLATES) | {"minimal", "demo"} <= set(rows)
    for name in TEMPLATES:
        row = rows[name]
        assert row["plugin"] == "cotk-repro-templates"
        lm = name.startswith("lm-")
        assert row["task"] == ("language-generation" if lm else "single-turn-dialog")
        assert ("mscoco_" if lm else "opensub_pair_") in row["dataset"]
        assert "perplexity" in row["metrics"] and "bleu" in row["metrics"]
        assert ("fw-rv-ppl" in row["metrics"]) == lm
        assert "torch" in row["dependencies"] and ("transformers" in row["dependencies"]) == ("gpt2" in name)
    assert rows["minimal"]["plugin"] == "cotk_repro.builtins.templates"
    table = cli("init", "--list-templates", cwd=tmp_path, env={"COLUMNS": "250"})
    assert table.returncode == 0 and all(name in table.stdout for name in TEMPLATES)
    assert not list(tmp_path.iterdir())  # listing writes nothing
    bad = cli("init", "x", "--json", cwd=tmp_path)
    assert bad.returncode == 2 and "--list-templates" in bad.stderr


def test_core_never_imports_torch(tmp_path):
    """`import cotk_repro`, `cotk-repro --help` and `init --list-templates` stay free of torch."""
    code = (
        "import sys\nfrom cotk_repro.cli import main\n"
        "for argv in (['--help'], ['init', '--list-templates', '--json'], ['init', '--help']):\n"
        "    sys.argv = ['cotk-repro', *argv]\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        "bad = sorted(m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules)\n"
        "print('HEAVY', bad)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "HEAVY []" in res.stdout


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory):
    """``scaffolded(template)``: the folder of ``init exp --template TEMPLATE``, made once per module and only read
    (the scaffold and the presets' tests read the same projects; each ``init`` is a process of its own)."""
    made: dict[str, Path] = {}

    def get(template: str) -> Path:
        if template not in made:
            base = tmp_path_factory.mktemp(template)
            res = run_cli("init", "exp", "--template", template, cwd=base)
            assert res.returncode == 0, res
            made[template] = base / "exp"
        return made[template]

    return get


@needs_plugin
@pytest.mark.parametrize("template", TEMPLATES)
def test_scaffold_files(template, scaffolded):
    root = scaffolded(template)
    for name in ("model.py", "train.py", "common.py", "evaluate.py", "README.md", "cotk-repro.toml"):
        assert (root / name).is_file(), name
        if name.endswith(".py"):
            compile((root / name).read_text(), name, "exec")
    ignored = (root / ".gitignore").read_text().splitlines()
    assert {"checkpoints/", "outputs/", ".cotk-repro/", "result.json"} <= set(ignored)
    config = (root / "cotk-repro.toml").read_text()
    assert 'entry = "train.py"' in config
    imports = tomllib.loads(config)["run"]["imports"]  # checked by `run` before it starts (issue 40)
    assert imports == (["torch", "transformers"] if "gpt2" in template else ["torch"])
    assert f'task = "{"language-generation" if template.startswith("lm-") else "single-turn-dialog"}"' in config
    data = sorted(p.name for p in (root / "data").iterdir())
    assert ("mscoco_train.txt" in data) if template.startswith("lm-") else ("opensub_pair_train.post" in data)
    train = (root / "train.py").read_text()
    assert "{{" not in train and "exp" in train  # rendered, with the project's name
    assert "use_deterministic_algorithms(True)" in (root / "common.py").read_text()
    assert ("--model" in train) == ("gpt2" in template)


def template_presets(root: Path) -> dict[str, dict]:
    """``PRESETS`` of a scaffolded project's model.py, read without importing it (no torch needed)."""
    import ast

    tree = ast.parse((root / "model.py").read_text())
    node = next(
        n.value
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        and any(getattr(t, "id", None) == "PRESETS" for t in getattr(n, "targets", [getattr(n, "target", None)]))
    )
    return eval(compile(ast.Expression(node), "model.py", "eval"), {"dict": dict})  # dict(...) calls of literals


@needs_plugin
@pytest.mark.parametrize("preset", ["tiny", "paper"])
def test_templates_of_a_task_share_the_data_settings_so_their_hashes_agree(preset, scaffolded):
    """The loader's options and the number of generated samples are in the hashes (setting hash; Self-BLEU,
    Distinct and BLEU hashes cover the sentence count): every template of a task uses the same ones, so the
    records of one preset land on one leaderboard."""
    keys = ("data", "tokenizer", "min_frequent_vocab_times", "max_sent_length")
    for task_templates in (TEMPLATES[:3], TEMPLATES[3:]):
        seen = {}
        for template in task_templates:
            settings = template_presets(scaffolded(template))[preset]
            lm = template.startswith("lm-")
            seen[template] = (
                tuple(settings[k] for k in keys),
                settings.get("lowercase", False),
                settings["samples"] if lm else None,
            )
        assert len(set(seen.values())) == 1, seen


# -- run, publish, reproduce ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def record_python():
    if not (PLUGIN and HAVE_TORCH and HAVE_HF):
        pytest.skip("the templates need torch, transformers and tokenizers installed")
    return record_venv_python()


def make_template_project(template: str, base: Path) -> Path:
    """init, a tiny GPT-2 committed into the project where the template needs one, commit."""
    res = run_cli("init", template, "--template", template, cwd=base)
    assert res.returncode == 0, res
    root = base / template
    git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    if "gpt2" in template:
        from cotk_repro_templates.tiny_gpt2 import build_tiny_gpt2

        texts = [line for f in sorted((root / "data").glob("*train*")) for line in f.read_text().splitlines()]
        build_tiny_gpt2(root / "tiny-gpt2", texts)
        config = root / "cotk-repro.toml"
        # replies of 5 BPE pieces, not 20: the tiny GPT-2 generates one piece per forward call, one sample at a
        # time (~2 s of the entry's 7); no test here looks at the samples' length
        args = 'args = ["--model", "tiny-gpt2", "--max-gen-length", "5"]'
        config.write_text(config.read_text().replace("args = []", args))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


@needs_torch
@pytest.mark.slow  # each template trains its tiny preset, then reproduce builds a venv and trains it again: 30-80 s
@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.timeout(1200)  # run (300 s) then reproduce (600 s), as the calls allow
def test_template_runs_and_reproduces_with_the_venv_runtime(template, record_python, tmp_path):
    from cotk_repro import data

    root = make_template_project(template, tmp_path)
    res = run_cli("run", "-q", "--json", cwd=root, python=record_python, timeout=300)
    assert res.returncode == 0, res
    record = json.loads(res.stdout)
    assert record["status"] == "ok" and not record["code"]["dirty"]
    values = {k: v["value"] for k, v in record["results"].items()}
    lm = template.startswith("lm-")
    assert set(values) == (LM_KEYS if lm else DIALOG_KEYS)
    assert all(r["hash"] for r in record["results"].values())
    # independent references: the data hashes and the perplexity hash from a loader built here,
    # Distinct-n recomputed from the generated text the entry wrote
    dl = data.load(
        "language-generation" if lm else "single-turn-dialog",
        root / "data",
        tokenizer="space",
        min_frequent_vocab_times=2,
        max_sent_length=50 if lm else 30,
    )
    assert record["data"] == dl.hash_codes
    assert record["results"]["perplexity"]["hash"] == dl.reference_hashes("test")["perplexity"]
    assert 1.0 < values["perplexity"] < float("inf")
    samples = (root / "outputs" / "samples.txt").read_text(encoding="utf-8").splitlines()
    assert len(samples) == 100
    for n in (2,) if lm else (1, 2):
        assert values[f"distinct-{n}"] == pytest.approx(distinct(samples, n), abs=1e-12)
    assert (root / "checkpoints").is_dir() and list((root / "checkpoints").glob("*.pt"))
    assert git(root, "status", "--porcelain") == ""  # checkpoints and outputs are ignored

    add_bare_remote(root, tmp_path / "remotes", f"alice/{template}")
    pub = publish(root, record["id"], "--push")
    assert pub.returncode == 0, pub
    res = run_cli(
        "reproduce",
        str(tmp_path / "remotes" / "alice" / f"{template}.git"),
        "--record",
        record["id"],
        "--runtime",
        "venv",
        *trust_flag(),
        "--allow-unsigned",
        "--json",
        env=bytecode_env(),  # the venv runtime's venv has no byte code: torch compiled once, not per reproduction
        timeout=600,
    )
    assert res.returncode == 0, res
    verdict = json.loads(res.stdout)
    assert verdict["verdict"] == "reproduced"
    rows = {r["metric"]: r for r in verdict["metrics"]}
    assert set(rows) == set(values)
    for name, row in rows.items():
        assert row["a_value"] == row["b_value"] == values[name], name  # identical, not merely close
        assert row["a_hash"] == row["b_hash"]
    assert verdict["environment_differences"] == []


@needs_torch
def test_presets_and_overrides(tmp_path, cli):
    """`--help` shows both presets' values; an override in the entry's arguments changes the setting."""
    res = cli("init", "p", "--template", "lm-gru", cwd=tmp_path)
    assert res.returncode == 0, res
    root = tmp_path / "p"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    help_ = subprocess.run(
        [sys.executable, "train.py", "--help"], cwd=root, capture_output=True, text=True, env=env, timeout=120
    )
    assert help_.returncode == 0, help_.stderr
    assert "--preset {paper,tiny}" in help_.stdout and "paper: 300" in help_.stdout  # embedding 300 in the paper
    run = subprocess.run(
        [sys.executable, "train.py", "--epochs", "1", "--samples", "7", "--result", "r.json"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "epoch 1/1" in run.stdout and len((root / "outputs" / "samples.txt").read_text().splitlines()) == 7
    assert json.loads((root / "r.json").read_text())["results"]["perplexity"]["value"] > 1


@needs_plugin
def test_an_editable_first_party_plugin_is_rebuilt_from_this_source(tmp_path):
    """A record made where the plugin was installed with `pip install -e plugins/...` names it an editable
    install; reproduce builds its wheel from this cotk-repro's plugins/ folder (not from the index)."""
    import zipfile

    from cotk_repro.reproduce.lock import Package
    from cotk_repro.reproduce.wheelhouse import (
        Builders,
        ensure_local_wheels,
        first_party_plugin,
        host_mm,
        local_identity,
    )

    assert first_party_plugin("cotk-repro-templates", "0.1.0") == REPO_ROOT / "plugins" / "cotk-repro-templates"
    assert first_party_plugin("cotk-repro-templates", "9.9") is None  # another version: not this source
    package = [Package("cotk-repro-templates", "0.1.0", "editable")]
    assert local_identity(package, "tree")[0].startswith("cotk-repro-templates==0.1.0@plugin:")
    (tmp_path / "code").mkdir()
    # no sandbox and no --trust-remote-code: our own code is built here all the same, like cotk-repro
    wheels = ensure_local_wheels(package, tmp_path / "code", "tree", Builders(host_mm(), tmp_path / "log"))
    assert len(wheels) == 1 and wheels[0].name.startswith("cotk_repro_templates-0.1.0-")
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "cotk_repro_templates/files/lm-gru/model.py" in names
    assert "cotk_repro_templates/files/lm/data/mscoco_train.txt" in names
