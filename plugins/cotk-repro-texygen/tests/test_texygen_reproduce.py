"""A texygen template's record reproduces with the venv runtime: equal values, equal hashes (CPU).

Builds (once per source state) a record venv with cotk-repro, the CPU torch wheel, numpy, scipy, gensim and
this plugin installed editable, as a user who works from the source tree would; ``reproduce`` rebuilds the
plugin's wheel from ``plugins/`` and reruns the entry in a fresh venv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))

from conftest import git, run_cli  # noqa: E402 - from the core's tests/, put on sys.path just above
from test_reproduce_support import add_bare_remote, publish, small_venv_python  # noqa: E402
from venv_cache import bytecode_env  # noqa: E402

PLUGIN = REPO / "plugins" / "cotk-repro-texygen"


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a venv with torch, run (600 s), reproduce (900 s)
def test_texygen_mle_record_reproduces_with_the_venv_runtime(tmp_path):
    python = small_venv_python(
        extra=(("torch==2.13.0",), ("numpy", "scipy", "gensim"), ("--no-deps", "-e", str(PLUGIN))),
        name="test-venvs-texygen",
        # byte-compiled once at the build (tests/venv_cache.py): what the entry imports, and torch.compile's
        # configuration, which torch.use_deterministic_algorithms and torch.optim import
        warm="import numpy, scipy, torch, torch._inductor.config\nfrom gensim.models import Word2Vec",
    )
    res = run_cli("init", "mle", "--template", "texygen-mle", cwd=tmp_path)
    assert res.returncode == 0, res
    root = tmp_path / "mle"
    git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    config = root / "cotk-repro.toml"
    config.write_text(config.read_text().replace("args = []", 'args = ["--pre-gen-epochs", "2", "--adv-epochs", "1"]'))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    res = run_cli("run", "-q", "--json", cwd=root, python=python, timeout=600)
    assert res.returncode == 0, res
    record = json.loads(res.stdout)
    values = {k: v["value"] for k, v in record["results"].items()}
    assert {"nll-oracle", "nll-test", "embsim", "nll-oracle@epoch-3"} <= set(values)
    add_bare_remote(root, tmp_path / "remotes", "alice/mle")
    assert publish(root, record["id"], "--push").returncode == 0
    res = run_cli(
        "reproduce",
        str(tmp_path / "remotes" / "alice" / "mle.git"),
        "--record",
        record["id"],
        "--runtime",
        "venv",
        "--trust-remote-code",
        "--allow-unsigned",
        "--json",
        env=bytecode_env(),  # the venv runtime's venv has no byte code: torch compiled once, not per reproduction
        timeout=900,
    )
    assert res.returncode == 0, res
    verdict = json.loads(res.stdout)
    assert verdict["verdict"] == "reproduced"
    for row in verdict["metrics"]:
        assert row["a_value"] == row["b_value"] == values[row["metric"]], row["metric"]
        assert row["a_hash"] == row["b_hash"]
