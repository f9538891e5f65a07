"""The templates' records side by side on the dashboard, as the CoTK paper's Table 7 shows its models.

The three templates of a task are scaffolded, run (tiny preset), published with a signature to a real
dashboard (SQLite, uvicorn in a thread, signatures required) and must land on one leaderboard: one hash
group per metric holding all three, the task's results table with a column per metric, each ranked in
the direction the metric declares. The ranks are checked against the records' own values sorted here
with the paper's directions written out (perplexity and Self-BLEU lower is better, BLEU higher).
"""

from __future__ import annotations

import json

import pytest
import requests
from conftest import run_cli
from dashboard_support import signed_dashboard
from test_reproduce_support import add_bare_remote, remote_served_by_git_daemon
from test_templates import DIALOG_KEYS, LM_KEYS, TEMPLATES, make_template_project, needs_torch

API = "/api/v1"
#: the paper's directions, written out here (the independent reference for the dashboard's ranking)
LOWER_IS_BETTER = {"perplexity", "self-bleu", "fw-ppl", "rv-ppl"}
TASKS = {
    "language-generation": ("mscoco-small", TEMPLATES[:3], LM_KEYS),
    "single-turn-dialog": ("opensubtitles-small", TEMPLATES[3:], DIALOG_KEYS),
}


@pytest.fixture
def dashboard(tmp_path):
    """A real dashboard requiring signatures, alice logged in to it, and the environment that signs as her."""
    for url, token, signing in signed_dashboard(tmp_path):
        assert run_cli("login", "--dashboard", url, "--token", token).returncode == 0
        yield url, signing


def expected_ranks(values: dict[str, float], metric: str) -> dict[str, int]:
    """``{template: rank}`` by sorting the values in the metric's direction (distinct values here)."""
    order = sorted(values, key=lambda t: values[t], reverse=metric not in LOWER_IS_BETTER)
    return {t: i + 1 for i, t in enumerate(order)}


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("task", list(TASKS))
def test_the_templates_of_a_task_share_one_leaderboard(task, dashboard, tmp_path):
    url, signing = dashboard
    dataset, templates, keys = TASKS[task]
    records = {}
    for template in templates:
        root = make_template_project(template, tmp_path)
        bare = add_bare_remote(root, tmp_path / "remotes", f"alice/{template}")  # a record names its remote
        # served by git daemon: a dashboard refuses a remote only its author's machine can read (a path)
        with remote_served_by_git_daemon(root, bare, tmp_path / "remotes"):
            res = run_cli("run", "-q", "--json", cwd=root, timeout=300)
            assert res.returncode == 0, res
            records[template] = json.loads(res.stdout)
            assert records[template]["project"] == {"name": template, "task": task, "dataset": dataset}
            pub = run_cli("publish", "--push", "--dashboard", url, "--json", cwd=root, env=signing)
            assert pub.returncode == 0, pub
    values = {m: {t: r["results"][m]["value"] for t, r in records.items()} for m in keys}
    hashes = {m: {r["results"][m]["hash"] for r in records.values()} for m in keys}
    assert all(len(h) == 1 and None not in h for h in hashes.values()), hashes  # comparable: one hash each

    # every metric's leaderboard: one group, all three, best first in the metric's direction
    for metric in keys:
        board = requests.get(
            url + API + "/leaderboard", params={"task": task, "dataset": dataset, "metric": metric}, timeout=30
        ).json()
        assert board["higher_is_better"] == (metric not in LOWER_IS_BETTER), metric
        assert [g["hash"] for g in board["groups"]] == list(hashes[metric]), metric
        ranked = expected_ranks(values[metric], metric)
        by_id = {records[t]["id"]: t for t in templates}
        assert [by_id[e["id"]] for e in board["groups"][0]["entries"]] == sorted(ranked, key=ranked.get), metric
        assert all(e["signed"] and e["signer"] == "alice" for e in board["groups"][0]["entries"])

    # the task's table: a row per template, a column per metric, each cell ranked within its column
    table = requests.get(url + API + "/table", params={"task": task, "dataset": dataset}, timeout=30).json()
    assert {c["metric"] for c in table["columns"]} == keys
    for col in table["columns"]:
        assert col["higher_is_better"] == (col["metric"] not in LOWER_IS_BETTER), col
        assert (col["ranked"], col["other_groups"], col["hash"]) == (3, 0, next(iter(hashes[col["metric"]])))
    rows = {r["project"]: r for r in table["rows"]}
    assert set(rows) == set(templates) and table["total"] == 3
    for metric in keys:
        ranked = expected_ranks(values[metric], metric)
        for template in templates:
            cell = rows[template]["cells"][metric]
            assert cell["comparable"] and cell["value"] == values[metric][template], (metric, template)
            assert cell["rank"] == ranked[template], (metric, template, values[metric])

    page = requests.get(url + "/leaderboard", params={"task": task, "dataset": dataset}, timeout=30).text
    for metric in keys:
        assert (
            f'data-metric="{metric}" data-higher-is-better="{"false" if metric in LOWER_IS_BETTER else "true"}"' in page
        )
    for template in templates:
        row = page.split(f'data-record="{records[template]["id"]}"', 1)[1].split("</tr>", 1)[0]
        assert template in row and row.count("data-rank=") == len(keys) and "not-comparable" not in row
