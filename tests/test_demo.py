"""`cotk-repro demo`: the whole loop on one machine (docs/spec.md section 8), through the real CLI.

Real parts: a real git repository and bare remote, the embedded dashboard on SQLite
over HTTP, a real venv reproduction. The demo project ships its own corpus, so the
test does not need the shared data.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # the demo's run is allowed 900 s (demo_run)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    from conftest import run_cli

    folder = tmp_path_factory.mktemp("demo") / "loop"
    home = tmp_path_factory.mktemp("home-without-ssh-key")  # a machine with no SSH key at all
    res = run_cli(
        "demo",
        "--dir",
        str(folder),
        "--runtime",
        "venv",
        "--json",
        timeout=900,
        env={"HOME": str(home), "COTK_REPRO_SIGNING_KEY": "", "GIT_CONFIG_GLOBAL": str(home / "gitconfig")},
    )
    return folder, res


def test_demo_reproduces_its_own_run(demo_run):
    folder, res = demo_run
    assert res.returncode == 0, res
    summary = json.loads(res.stdout)
    results = summary["results"]
    # the sample project scores quality and diversity, each with a comparability hash
    for metric in ("perplexity", "bleu", "self-bleu", "distinct-2"):
        assert metric in results, sorted(results)
        assert len(results[metric]["hash"]) == 64
    assert results["perplexity"]["value"] > 1.0
    verdict = summary["reproduction"]
    assert verdict["verdict"] == "reproduced"
    assert verdict["record_id"] == summary["record_id"]
    assert {m["verdict"] for m in verdict["metrics"]} == {"reproduced"}
    assert summary["dashboard"].startswith("http://127.0.0.1:")


def test_demo_published_to_git_and_dashboard(demo_run):
    folder, res = demo_run
    assert res.returncode == 0, res
    summary = json.loads(res.stdout)
    bare = folder / "git" / "demo" / "sample-lm.git"
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "refs/heads/main" in refs
    assert any("cotk-repro" in r for r in refs), refs  # the records travel on their own ref
    with sqlite3.connect(folder / "dashboard.db") as db:
        tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
        text = " ".join(str(row) for t in tables for row in db.execute(f'select * from "{t}"'))
    hex_id = summary["record_id"].removeprefix("sha256:")
    assert hex_id in text  # the record was uploaded
    assert "reproduced" in text  # and the reproduction attached to it


def test_demo_signs_with_throwaway_keys_and_counts_an_independent_reproduction(demo_run):
    folder, res = demo_run
    assert res.returncode == 0, res
    summary = json.loads(res.stdout)
    hex_id = summary["record_id"].removeprefix("sha256:")
    bare = folder / "git" / "demo" / "sample-lm.git"
    sig = subprocess.run(
        ["git", "show", f"refs/heads/cotk-repro-records:records/{hex_id}/record.sig"],
        cwd=bare,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert sig.startswith("-----BEGIN SSH SIGNATURE-----")
    assert (folder / "keys" / "demo.pub").is_file() and (folder / "keys" / "demo-reproducer.pub").is_file()
    with sqlite3.connect(folder / "dashboard.db") as db:
        owner, fp, n = db.execute(
            "select u.name, r.key_fingerprint, r.reproduced_by from records r join users u on u.id = r.user_id"
        ).fetchone()
        repro = db.execute(
            "select u.name, p.verdict, p.by_author, p.key_fingerprint from reproductions p "
            "join users u on u.id = p.user_id"
        ).fetchall()
    keygen = subprocess.run(
        ["ssh-keygen", "-lf", str(folder / "keys" / "demo.pub")], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    assert owner == "demo" and fp == keygen and n == 1
    assert [(u, v, bool(a)) for u, v, a, _k in repro] == [("demo-reproducer", "reproduced", False)]
    assert repro[0][3] is not None


# -- what --no-serve leaves behind (issue 12, rough edge 10) -------------------------------------------------


def _fake_demo(folder: Path):
    """What run_demo returns, for a folder that exists: the CLI's bookkeeping around it, without the loop."""
    from types import SimpleNamespace

    from cotk_repro.demo import DemoResult

    (folder / "project").mkdir(parents=True)
    (folder / "dashboard.db").write_bytes(b"")
    outcome = SimpleNamespace(verdict={"verdict": "reproduced"}, rows=[], error=None, exit_code=0)
    return DemoResult(
        folder=folder,
        project=folder / "project",
        record={"id": "sha256:" + "ab" * 32, "results": {}},
        dashboard_url="http://127.0.0.1:1",
        record_url=None,
        reproduction=outcome,
        runtime="venv",
    )


@pytest.mark.parametrize("args, kept", [([], False), (["--keep"], True), (["--dir", "{dir}"], True)])
def test_no_serve_removes_its_temporary_folder_or_says_how_to_serve_it_again(tmp_path, monkeypatch, args, kept):
    from typer.testing import CliRunner

    import cotk_repro.demo
    from cotk_repro.cli import _load_commands, app

    folder = tmp_path / "cotk-repro-demo-x"
    monkeypatch.setattr(cotk_repro.demo, "run_demo", lambda *a, **k: _fake_demo(folder))
    _load_commands()
    res = CliRunner().invoke(app, ["demo", "--no-serve", *[a.format(dir=folder) for a in args]])
    assert res.exit_code == 0, res.output
    assert "stopped when this command exits" in res.output
    assert folder.exists() is kept
    if kept:
        assert f"cotk-repro dashboard serve --db sqlite:///{folder / 'dashboard.db'}" in res.output
    else:
        assert f"removed the demo folder {folder}" in res.output and "--keep" in res.output
