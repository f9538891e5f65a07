"""Publish targets are chosen: ``--target`` (repeatable), ``publish.targets`` in the config, default git+dashboard.

A third-party target from a real pip-installed plugin distribution runs when named, in the order given;
an unknown name is one sentence and exit 2.
"""

from __future__ import annotations

import json

from conftest import git, run_cli
from test_plugins import extra_distribution
from test_reproduce_support import add_bare_remote, record_in

ENTRY = 'import json\njson.dump({"x": 1.0}, open("result.json", "w"))\n'

NOTE_TARGET = """
    import os
    from pathlib import Path

    from cotk_repro.hookspecs import hookimpl

    class NoteTarget:
        name = "note"

        def publish(self, ctx):
            out = Path(os.environ["NOTE_TARGET_DIR"]) / "published.txt"
            with out.open("a") as fh:
                fh.write(ctx.record["id"] + "\\n")
            return {"target": "note", "status": "published", "detail": str(out)}

    @hookimpl
    def register_publish_targets(register):
        register("note", NoteTarget)
"""


def test_plugin_target_runs_when_chosen_and_only_then(make_project, tmp_path):
    env = extra_distribution(tmp_path, "note-target", "note_target", NOTE_TARGET)
    env["NOTE_TARGET_DIR"] = str(tmp_path)
    env["COTK_REPRO_CONFIG_DIR"] = str(tmp_path / "userconfig")  # no dashboard logged in to by other tests
    root = make_project({"main.py": ENTRY})
    bare = add_bare_remote(root, tmp_path / "remotes", "alice/proj")
    git(root, "push", "-q", "origin", "main")
    record = record_in(root, None, env)
    published = tmp_path / "published.txt"

    # the default (git, then dashboard: none configured, so skipped) never runs a plugin's target
    res = run_cli("publish", "--json", cwd=root, env=env)
    assert res.returncode == 0, res
    assert [s["target"] for s in json.loads(res.stdout)["steps"]] == ["git", "dashboard"]
    assert not published.exists()

    # --target: only the named ones, in order
    res = run_cli("publish", "--target", "note", "--json", cwd=root, env=env)
    assert res.returncode == 0, res
    assert [(s["target"], s["status"]) for s in json.loads(res.stdout)["steps"]] == [("note", "published")]
    assert published.read_text().split() == [record["id"]]

    # publish.targets in the project config
    (root / "cotk-repro.toml").write_text('[publish]\ntargets = ["note", "git"]\n')
    res = run_cli("publish", "--json", cwd=root, env=env)
    assert res.returncode == 0, res
    assert [s["target"] for s in json.loads(res.stdout)["steps"]] == ["note", "git"]
    assert published.read_text().split() == [record["id"]] * 2
    assert record["id"].removeprefix("sha256:") in git(
        bare, "ls-tree", "-r", "--name-only", "refs/heads/cotk-repro-records"
    )


def test_unknown_target_is_one_sentence(make_project):
    root = make_project({"main.py": ENTRY})
    record_in(root)
    res = run_cli("publish", "--target", "carrier-pigeon", cwd=root)
    assert res.returncode == 2
    assert "unknown publish target 'carrier-pigeon'" in res.stderr and "git" in res.stderr
    (root / "cotk-repro.toml").write_text('[publish]\ntargets = "git"\n')
    res = run_cli("publish", cwd=root)
    assert res.returncode == 2 and "publish.targets" in res.stderr
