"""A third-party metric written only from the docs works everywhere.

The plugin's module is the code block of docs/metrics.md "A plugin metric, complete", copied verbatim
into a real distribution and pip-installed into a throwaway venv. It is then used through
``cotk-repro metrics``, ``evaluate``, ``compare``, ``run`` (a record) and the dashboard's leaderboard,
all of which must read its declared facts (lower is better) and feed it through ``forward``/``close``.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli
from test_plugins import make_distribution, parent_env_venv, pip_install

SYSTEMS = {  # repeat rate by hand: the share of lines equal (lowercased) to an earlier line
    "varied": (["a man rides a horse", "a dog runs", "two cats sleep", "a bird sings"], 0 / 4),
    "repetitive": (["a dog runs", "A dog runs", "a dog runs", "a bird sings"], 2 / 4),
}


def documented_plugin() -> str:
    text = (REPO_ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    section = text.split("### A plugin metric, complete", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> str:
    base = tmp_path_factory.mktemp("metric-plugin")
    python = parent_env_venv(base / "venv")  # sees this interpreter's packages, inside a venv too
    pip_install(python, make_distribution(base, "repeat-rate", "0.1.0", "repeat_rate", documented_plugin()))
    return python


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_metrics_lists_the_plugin_metric_with_its_facts(venv):
    res = run_cli("metrics", "--json", python=venv)
    assert res.returncode == 0, res
    m = {x["name"]: x for x in json.loads(res.stdout)}["repeat-rate"]
    assert m["plugin"] == "repeat-rate" and m["higher_is_better"] is False and m["value_range"] == [0.0, 1.0]
    assert m["needs_references"] is False and m["level"] == "corpus" and m["cost"] == 0.1
    assert m["options"] == [{"name": "lowercase", "default": True, "required": False}]


def test_evaluate_feeds_it_through_forward_and_close(venv, tmp_path):
    for name, (lines, expected) in SYSTEMS.items():
        res = run_cli(
            "evaluate",
            "--hyps",
            str(write_lines(tmp_path / f"{name}.txt", lines)),
            "-m",
            "repeat-rate",
            "--json",
            python=venv,
        )
        assert res.returncode == 0, res
        out = json.loads(res.stdout)
        assert out["repeat-rate"] == expected
        assert re.fullmatch("[0-9a-f]{64}", out["repeat-rate hashvalue"])
        assert out["repeat-rate signature"] == "repeat-rate|lc:yes|hyps:4|v:1"
    res = run_cli(
        "evaluate",
        "--hyps",
        str(tmp_path / "varied.txt"),
        "-m",
        "repeat-rate",
        "-o",
        "repeat-rate.lowercase=false",
        "--json",
        python=venv,
    )
    assert json.loads(res.stdout)["repeat-rate"] == 0.0


def test_compare_ranks_it_lower_is_better(venv, tmp_path):
    root = tmp_path / "bench"
    write_lines(root / "data/d/gold/refs.txt", ["unused"] * 4)
    for name, (lines, _) in SYSTEMS.items():
        write_lines(root / f"data/d/samples/{name}.txt", lines)
    (root / "bench.toml").write_text(
        textwrap.dedent("""
        [[dataset]]
        name = "d"
        path = "data/d"
        [[metric]]
        name = "repeat-rate"
        """)
    )
    res = run_cli("compare", str(root / "bench.toml"), "--json", "--jobs", "1", python=venv)
    assert res.returncode == 0, res
    cells = {c["system"]: c for c in json.loads(res.stdout)["cells"]}
    assert {s: c["value"] for s, c in cells.items()} == {s: v for s, (_, v) in SYSTEMS.items()}
    assert (cells["varied"]["rank"], cells["repetitive"]["rank"]) == (1, 2)


ENTRY = """\
from cotk_repro import save_result
from cotk_repro.metrics import get_metric

metric = get_metric("repeat-rate")
lines = open("samples.txt", encoding="utf-8").read().splitlines()
for i in range(0, len(lines), 2):          # CoTK style: forward batches, then close
    metric.forward({"hyps": lines[i:i + 2]})
save_result(metric.close(), "result.json")
"""

DASHBOARD = """\
import json, sys
import requests
from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.server import start_in_thread

db_url, records = sys.argv[1], json.load(open(sys.argv[2]))
url, stop = start_in_thread(db_url, allow_unsigned=True)  # signing is tested elsewhere
db = open_database(db_url)
token = add_user(db, "alice")[0]
db.dispose()
for rec in records:
    r = requests.post(url + "/api/v1/records", json=rec, headers={"Authorization": "Bearer " + token}, timeout=30)
    assert r.status_code == 201, r.text
p = records[0]["project"]
board = requests.get(url + "/api/v1/leaderboard", timeout=30,
                     params={"task": p["task"], "dataset": p["dataset"], "metric": "repeat-rate"}).json()
stop()
print(json.dumps(board))
"""


def test_records_of_it_rank_lower_is_better_on_the_dashboard(venv, make_project, tmp_path):
    records = []
    for name, (lines, expected) in SYSTEMS.items():
        root = make_project({"main.py": ENTRY, "samples.txt": "\n".join(lines) + "\n"}, name=name)
        res = run_cli("run", "--json", cwd=root, python=venv)
        assert res.returncode == 0, res
        rec = json.loads(res.stdout)
        assert rec["status"] == "ok" and rec["results"]["repeat-rate"]["value"] == expected
        assert rec["results"]["repeat-rate"]["hash"]
        records.append(rec)
    (tmp_path / "records.json").write_text(json.dumps(records))
    proc = subprocess.run(
        [venv, "-c", DASHBOARD, f"sqlite:///{tmp_path / 'dash.sqlite3'}", str(tmp_path / "records.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    board = json.loads(proc.stdout)
    assert board["higher_is_better"] is False
    assert len(board["groups"]) == 1  # same settings and sentence count: one comparable group
    assert [e["value"] for e in board["groups"][0]["entries"]] == [0.0, 0.5]
