"""`cotk-repro init --template llm-eval` (plugin cotk-repro-templates): an LLM prompted through a protocol file and
scored by an LLM judge, recorded and reproduced with identical values (issue 41, point 4).

One project is scaffolded, committed, run with its tiny preset (`cotk-repro run` in the benchmark templates'
record venv of tests/test_templates.py: the CPU torch wheel, transformers, and cotk-repro-lm installed editable
from this checkout, so reproduce builds it from here), published to a bare remote and reproduced with the venv runtime
and with the Docker runtime (the one project is shared by the two tests). Independent references: the answers
against a plain greedy `model.generate` over the protocol's prompts, Distinct-n recomputed from the answers,
every metric's hash against the unstamped metric's hash combined with the protocol's SHA-256, and the
tiny models' weights against a second build (the same bytes).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_cli

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from test_reproduce_support import add_bare_remote, publish
from test_templates import record_venv_python
from venv_cache import bytecode_env

HAVE_ALL = all(
    importlib.util.find_spec(m) is not None for m in ("cotk_repro_templates", "cotk_repro_lm", "torch", "transformers")
)
needs_all = pytest.mark.skipif(
    not HAVE_ALL, reason="llm-eval needs cotk-repro-templates, cotk-repro-lm, torch and transformers installed"
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


#: the runs' environment: one torch thread, never the hub
ENV = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _scaffold_and_run(tmp_path, python) -> tuple:
    """``init --template llm-eval``, committed on main, run once with ``python``: (project folder, record)."""
    assert run_cli("init", "exp", "--template", "llm-eval", cwd=tmp_path).returncode == 0
    root = tmp_path / "exp"
    git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    res = run_cli("run", "-q", "--json", cwd=root, python=python, env=ENV, timeout=300)
    assert res.returncode == 0, res
    return root, json.loads(res.stdout)


def _publish(root, record, tmp_path) -> str:
    """The record and its code pushed to a bare remote alice/exp; returns the remote's path."""
    add_bare_remote(root, tmp_path / "remotes", "alice/exp")
    assert publish(root, record["id"], "--push").returncode == 0
    return str(tmp_path / "remotes" / "alice" / "exp.git")


@needs_all
def test_llm_eval_scaffold(cli, tmp_path):
    res = cli("init", "exp", "--template", "llm-eval", cwd=tmp_path)
    assert res.returncode == 0, res
    root = tmp_path / "exp"
    for name in ("evaluate.py", "make_models.py", "protocol.toml", "data/inputs.txt", "README.md", "cotk-repro.toml"):
        assert (root / name).is_file(), name
        if name.endswith(".py"):
            compile((root / name).read_text(), name, "exec")
    config = tomllib.loads((root / "cotk-repro.toml").read_text())
    assert config["run"]["entry"] == "evaluate.py"
    assert config["run"]["imports"] == ["torch", "transformers", "cotk_repro_lm"]  # checked by `run` first
    protocol = tomllib.loads((root / "protocol.toml").read_text())
    assert {"template", "system", "chat", "max_new_tokens", "stop", "few_shot"} <= set(protocol)
    assert "{{ input }}" in protocol["template"] and protocol["max_new_tokens"] <= 8
    ignored = (root / ".gitignore").read_text().splitlines()
    assert {"tiny-models/", "outputs/", ".cotk-repro/", "result.json"} <= set(ignored)
    listed = {r["name"]: r for r in json.loads(cli("init", "--list-templates", "--json", cwd=tmp_path).stdout)}
    assert listed["llm-eval"]["plugin"] == "cotk-repro-templates"
    assert "llm-judge" in listed["llm-eval"]["metrics"]


def _greedy(model_dir: Path, prompts: list[str], max_new_tokens: int, stop: list[str]) -> list[str]:
    """A plain greedy ``model.generate``, one prompt at a time (no padding), cut at the first stop string."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    lm = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    out = []
    with torch.no_grad():
        for prompt in prompts:
            ids = tok(prompt, return_tensors="pt")
            new = lm.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id)
            text = tok.decode(new[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
            for s in stop:
                text = text.split(s)[0]
            out.append(text.replace("\n", " ").strip())
    return out


@pytest.fixture(scope="module")
def llm_record_python():
    if not HAVE_ALL:
        pytest.skip("llm-eval needs cotk-repro-templates, cotk-repro-lm, torch and transformers installed")
    return record_venv_python()  # the benchmark templates' record venv: it has cotk-repro-lm too


@pytest.fixture(scope="module")
def llm_published(llm_record_python, tmp_path_factory) -> dict:
    """One llm-eval project scaffolded, run and published, reproduced by both tests (venv and Docker runtimes):
    the same inputs for both, so it is made once (its run builds the tiny models and generates: most of a test's
    time outside the reproduction). ``status``: ``git status --porcelain`` right after the run."""
    tmp = tmp_path_factory.mktemp("llm-eval")
    root, record = _scaffold_and_run(tmp, llm_record_python)
    status = git(root, "status", "--porcelain")
    return {"root": root, "record": record, "status": status, "remote": _publish(root, record, tmp)}


@needs_all
@pytest.mark.slow  # builds the tiny system and judge, generates, judges, then reproduces in a fresh venv: ~40 s
@pytest.mark.timeout(900)
def test_llm_eval_runs_and_reproduces_with_identical_values(llm_published, tmp_path):
    from cotk_repro.core.canonical import hash_object
    from cotk_repro.llm import load_protocol
    from cotk_repro.metrics import get_metric

    root, record = llm_published["root"], llm_published["record"]
    assert record["status"] == "ok" and not record["code"]["dirty"]
    results = record["results"]
    assert {"distinct-1", "distinct-2", "llm-judge", "llm-judge parse-failures"} <= set(results)
    assert llm_published["status"] == ""  # tiny-models/ and outputs/ are ignored

    # the answers: a plain greedy loop over the protocol's prompts gives the same text
    protocol = load_protocol(root / "protocol.toml")
    inputs = (root / "data" / "inputs.txt").read_text().splitlines()
    answers = (root / "outputs" / "outputs.txt").read_text().splitlines()
    assert len(answers) == len(inputs) == 8
    assert answers == _greedy(
        root / "tiny-models" / "system", [protocol.render(q) for q in inputs], protocol.max_new_tokens, protocol.stop
    )
    for n in (1, 2):
        assert results[f"distinct-{n}"]["value"] == pytest.approx(distinct(answers, n), abs=1e-12)
    # the protocol in every hash, the system in every signature (not in the hash)
    for n in (1, 2):
        plain = get_metric("distinct", ngram=n).compute(answers)[f"distinct-{n} hashvalue"]
        assert results[f"distinct-{n}"]["hash"] == hash_object({"metric": plain, "protocol": protocol.sha256})
    for key, row in results.items():
        assert f"|protocol:{protocol.sha256[:12]}" in row["signature"], key
        assert re.search(r"\|system:hf@[0-9a-f]{12}", row["signature"]), key
    # the tiny models are the same bytes when built again (what lets a reproduction rebuild them)
    again = tmp_path / "again"
    subprocess.run(
        [sys.executable, "make_models.py", "system", str(again)],
        cwd=root,
        check=True,
        capture_output=True,
        env=os.environ,
    )
    for name in ("model.safetensors", "tokenizer.json"):
        digest = hashlib.sha256((again / name).read_bytes()).hexdigest()
        assert digest == hashlib.sha256((root / "tiny-models" / "system" / name).read_bytes()).hexdigest(), name

    remote = llm_published["remote"]
    res = run_cli(
        "reproduce",
        remote,
        "--record",
        record["id"],
        "--runtime",
        "venv",
        "--trust-remote-code",
        "--allow-unsigned",
        "--json",
        env={**ENV, **bytecode_env()},  # the venv runtime's venv has no byte code: torch compiled once, not per run
        timeout=600,
    )
    assert res.returncode == 0, res
    verdict = json.loads(res.stdout)
    assert verdict["verdict"] == "reproduced"
    rows = {r["metric"]: r for r in verdict["metrics"]}
    assert set(rows) == set(results)
    for name, row in rows.items():
        assert row["a_value"] == row["b_value"] == results[name]["value"], name  # identical, not merely close
        assert row["a_hash"] == row["b_hash"] == results[name]["hash"], name
        assert row["identical"] is True, name
    assert verdict["environment_differences"] == []  # cotk-repro-lm rebuilt from this checkout's plugins/


@needs_all
@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.timeout(1800)  # run (300 s) then reproduce in Docker (1200 s), as the calls allow
def test_llm_eval_reproduces_with_the_docker_runtime(llm_published, docker_base_image):
    """The same record rerun in the Docker sandbox (no network: the tiny models are rebuilt from make_models.py,
    cotk-repro-lm from this checkout's plugins/): identical values and hashes."""
    record, remote = llm_published["record"], llm_published["remote"]
    res = run_cli(
        "reproduce",
        remote,
        "--record",
        record["id"],
        "--runtime",
        "docker",
        "--base-image",
        docker_base_image,
        "--allow-unsigned",
        "--json",
        env=ENV,
        timeout=1200,
    )
    assert res.returncode == 0, res
    verdict = json.loads(res.stdout)
    assert verdict["verdict"] == "reproduced"
    assert {r["metric"] for r in verdict["metrics"]} == set(record["results"])
    for row in verdict["metrics"]:
        assert row["a_value"] == row["b_value"] == record["results"][row["metric"]]["value"], row["metric"]
        assert row["a_hash"] == row["b_hash"], row["metric"]
