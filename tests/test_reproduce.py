"""Reproduce from git (bare remotes, a folder of bare repos, a work tree, `git daemon`) with the
host runtimes (`local`, `venv`): verdict table, --json verdict, exit 0/1/2, and the error cases.

Everything is real: git repositories and bare remotes, `git daemon` on 127.0.0.1, virtual
environments built offline from a wheelhouse downloaded with pip (cached under the user cache
dir, so only the first run of the suite downloads). Expected values are computed in this file
from the test project's inputs, independently of cotk-repro.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import git, run_cli
from test_reproduce_support import (
    REPRO_ENTRY,
    REPRO_MODES,
    REPRO_REFS,
    build_published_project,
    edited_project,
    expected_values,
    git_daemon,
)

VERDICT_KEYS = {
    "schema",
    "schema_version",
    "record_id",
    "verdict",
    "runtime",
    "metrics",
    "environment_differences",
    "rerun",
    "error",
    "record_signature",
    "cotk_repro_version",
    "limits",
    "tolerance_widened",
}
ROW_KEYS = {
    "metric",
    "verdict",
    "a_value",
    "b_value",
    "a_hash",
    "b_hash",
    "abs_diff",
    "rtol",
    "atol",
    "identical",
    "widened",
}


@pytest.fixture(scope="module")
def pub(tmp_path_factory):
    return build_published_project(tmp_path_factory.mktemp("repro"))


def reproduce(*args, env=None, cwd=None):
    """The host runtimes run this suite's own project: trusted (tests/test_reproduce_attacks.py covers
    what happens without --trust-remote-code). Its records are published without a key: --allow-unsigned
    (the refusal without it is tested in tests/test_reproduce_attacks.py and tests/test_signing.py)."""
    host = any(a in ("local", "venv") for a in args)
    return run_cli("reproduce", *args, *(["--trust-remote-code"] if host else []), "--allow-unsigned", env=env, cwd=cwd)


def rid(pub, mode):
    return pub["records"][mode]["id"]


def test_reproduce_bare_remote_local_runtime_json_verdict(pub):
    res = reproduce(str(pub["bare"]), "--record", rid(pub, "ok"), "--runtime", "local", "--json")
    assert res.returncode == 0, res
    verdict = json.loads(res.stdout)  # stdout is the verdict JSON and nothing else
    assert set(verdict) == VERDICT_KEYS
    assert verdict["schema"] == "cotk-repro/reproduction" and verdict["schema_version"] == 1
    assert verdict["record_id"] == rid(pub, "ok")
    assert verdict["verdict"] == "reproduced" and verdict["runtime"] == "local" and verdict["error"] is None
    expected = expected_values("ok")
    record = pub["records"]["ok"]
    rows = {r["metric"]: r for r in verdict["metrics"]}
    assert set(rows) == {"tokens", "score"}
    for name, row in rows.items():
        assert set(row) == ROW_KEYS
        assert row["verdict"] == "reproduced"
        assert row["a_value"] == record["results"][name]["value"] == expected[name]
        assert row["b_value"] == expected[name]
        assert row["a_hash"] == row["b_hash"] == record["results"][name]["hash"]
        assert row["rtol"] == 1e-6 and row["atol"] == 1e-12
    assert verdict["rerun"]["results"]["tokens"]["value"] == expected["tokens"]
    assert verdict["rerun"]["python"] and verdict["rerun"]["started_at"]
    # the local runtime says it runs on this host, and that this environment is not the recorded one
    assert "THIS HOST" in res.stderr or "CURRENT Python environment" in res.stderr
    assert "differs from the record" in res.stderr


def test_reproduce_git_base_folder_and_work_tree_table(pub):
    env = {"COTK_REPRO_GIT_BASE": str(pub["bare_root"])}
    res = reproduce("alice/proj", "--record", rid(pub, "ok")[7:19], "--runtime", "local", env=env)
    assert res.returncode == 0, res
    assert "reproduced" in res.stdout and "tokens" in res.stdout and "score" in res.stdout
    # a local work tree works as SOURCE too (its records ref is the one publish built)
    res = reproduce(str(pub["root"]), "--record", rid(pub, "ok"), "--runtime", "local")
    assert res.returncode == 0, res
    # the default record is the newest successful one
    # (the newest is the "spin" record, whose rerun loops: a short time limit ends it; the choice is what counts)
    res = reproduce(str(pub["bare"]), "--runtime", "local", "--timeout", "3", "--json")
    newest = max(pub["records"].values(), key=lambda r: r["command"]["started_at"])
    assert json.loads(res.stdout)["record_id"] == newest["id"]


def test_changed_result_exits_1_naming_the_metric(pub, tmp_path):
    out = tmp_path / "verdict.json"
    res = reproduce(str(pub["bare"]), "--record", rid(pub, "seeded"), "--runtime", "local", "--json", str(out))
    assert res.returncode == 1, res
    assert "not reproduced" in res.stdout and "differs" in res.stdout
    line = [ln for ln in res.stdout.splitlines() if "differs" in ln][0]
    assert "score" in line
    verdict = json.loads(out.read_text())
    assert verdict["verdict"] == "not reproduced"
    rows = {r["metric"]: r for r in verdict["metrics"]}
    assert rows["score"]["verdict"] == "differs" and rows["tokens"]["verdict"] == "reproduced"
    assert rows["score"]["a_value"] == expected_values("seeded", author_seed=7)["score"]
    assert rows["score"]["b_value"] == expected_values("seeded")["score"]
    # a tolerance wide enough accepts it only with the reproducer's consent (command-line tolerances reach the diff)
    res = reproduce(str(pub["bare"]), "--record", rid(pub, "seeded"), "--runtime", "local", "--atol", "1")
    assert res.returncode == 1, res
    warnings = [ln for ln in res.stderr.splitlines() if ln.startswith("Warning:")]
    assert any("--atol 1 was not used for score, tokens" in w and "--widen-tolerance" in w for w in warnings), res
    args = ("--record", rid(pub, "seeded"), "--runtime", "local", "--atol", "1", "--widen-tolerance")
    res = reproduce(str(pub["bare"]), *args)
    assert res.returncode == 0 and "widened" in res.stdout, res


def test_list_records(pub):
    res = reproduce(str(pub["bare"]), "--list", "--json")
    assert res.returncode == 0, res
    listed = json.loads(res.stdout)
    assert sorted(r["id"] for r in listed) == sorted(r["id"] for r in pub["records"].values())
    started = [r["started_at"] for r in listed]
    assert started == sorted(started, reverse=True)
    table = reproduce(str(pub["bare"]), "--list")
    assert table.returncode == 0 and rid(pub, "seeded")[7:19] in table.stdout


def test_list_records_to_a_json_file(pub, tmp_path):
    out = tmp_path / "records.json"
    res = reproduce(str(pub["bare"]), "--list", "--json", str(out))
    assert res.returncode == 0, res
    assert sorted(r["id"] for r in json.loads(out.read_text())) == sorted(r["id"] for r in pub["records"].values())
    assert rid(pub, "seeded")[7:19] in res.stdout  # and the table is still shown


def test_source_errors(pub, tmp_path):
    env = {"COTK_REPRO_GIT_BASE": str(pub["bare_root"])}
    # unknown user/repo
    res = reproduce("alice/nope", "--runtime", "local", env=env)
    assert res.returncode == 2 and "alice/nope was not found" in res.stderr and "COTK_REPRO_GIT_BASE" in res.stderr
    assert "Traceback" not in res.stderr
    # a repository without records
    empty = pub["bare_root"] / "bob" / "plain.git"
    subprocess.run(["git", "init", "-q", "--bare", str(empty)], check=True)
    git(pub["root"], "push", "-q", str(empty), "main")
    res = reproduce("bob/plain", "--runtime", "local", env=env)
    assert res.returncode == 2 and "has no cotk-repro records" in res.stderr
    # a record id that is not there
    res = reproduce("alice/proj", "--record", "deadbeef", "--runtime", "local", "--json", env=env)
    assert res.returncode == 2
    verdict = json.loads(res.stdout)
    assert verdict["verdict"] == "could not run" and "no record matches 'deadbeef'" in verdict["error"]
    # the records ref was pushed, the recorded commit was not
    lacking = pub["bare_root"] / "carol" / "nocode.git"
    subprocess.run(["git", "init", "-q", "--bare", str(lacking)], check=True)
    git(pub["root"], "push", "-q", str(lacking), "refs/heads/cotk-repro-records")
    res = reproduce("carol/nocode", "--record", rid(pub, "ok"), "--runtime", "local", env=env)
    assert res.returncode == 2
    assert (
        f"commit {pub['records']['ok']['code']['commit'][:12]}" in res.stderr and "is not on carol/nocode" in res.stderr
    )
    # not a source at all
    res = reproduce("not a source!", "--runtime", "local")
    assert res.returncode == 2 and "is not user/repo" in res.stderr


def test_rerun_errors_could_not_run(pub):
    # the entry crashes in the rerun: exit 2, its stderr shown
    res = reproduce(str(pub["bare"]), "--record", rid(pub, "crash"), "--runtime", "local")
    assert res.returncode == 2, res
    assert "exited with status 3" in res.stderr and "boom: the entry fails on purpose" in res.stderr
    assert "could not run" in res.stdout
    # the entry succeeds but writes no result file
    res = reproduce(str(pub["bare"]), "--record", rid(pub, "noresult"), "--runtime", "local", "--json")
    assert res.returncode == 2, res
    verdict = json.loads(res.stdout)
    assert verdict["verdict"] == "could not run" and "did not write its result file result.json" in verdict["error"]
    assert verdict["record_id"] == rid(pub, "noresult")
    # a runaway entry is killed at the time limit and reported
    res = reproduce(str(pub["bare"]), "--record", rid(pub, "spin"), "--runtime", "local", "--timeout", "2")
    assert res.returncode == 2, res
    assert "ran past the time limit of 2 s and was killed" in res.stderr


def test_no_docker_engine_suggests_venv(pub, tmp_path):
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    res = reproduce(str(pub["bare"]), env=env)  # docker is the default runtime
    assert res.returncode == 2, res
    assert "cannot reach a Docker engine" in res.stderr and "--runtime venv" in res.stderr
    assert "Traceback" not in res.stderr


def test_unknown_runtime(pub):
    res = reproduce(str(pub["bare"]), "--runtime", "podman")
    assert res.returncode == 2 and "unknown runtime 'podman'" in res.stderr


@pytest.mark.slow
def test_venv_runtime_rebuilds_the_recorded_environment_and_caches_it(pub):
    env = {"COTK_REPRO_GIT_BASE": str(pub["bare_root"])}
    first = reproduce("alice/proj", "--record", rid(pub, "ok"), "--runtime", "venv", "--json", env=env)
    assert first.returncode == 0, first
    verdict = json.loads(first.stdout)
    assert verdict["verdict"] == "reproduced" and verdict["runtime"] == "venv"
    # the venv holds exactly the recorded distributions (same Python here): nothing differs
    assert verdict["environment_differences"] == []
    assert "THIS HOST" in first.stderr
    second = reproduce("alice/proj", "--record", rid(pub, "ok"), "--runtime", "venv", env=env)
    assert second.returncode == 0, second
    assert "venv build skipped (cached)" in second.stderr
    assert "wheel download skipped (environment cached)" in second.stderr


@pytest.mark.slow
def test_end_to_end_through_git_daemon(pub):
    with git_daemon(pub["bare_root"]) as base:
        env = {"COTK_REPRO_GIT_BASE": base}
        listed = reproduce("alice/proj", "--list", "--json", env=env)
        assert listed.returncode == 0, listed
        assert len(json.loads(listed.stdout)) == len(REPRO_MODES)
        res = reproduce("alice/proj", "--record", rid(pub, "ok"), "--runtime", "venv", "--json", env=env)
        assert res.returncode == 0, res
        assert json.loads(res.stdout)["verdict"] == "reproduced"
        res = reproduce("alice/proj", "--record", rid(pub, "seeded"), "--runtime", "venv", env=env)
        assert res.returncode == 1 and "score" in res.stdout and "differs" in res.stdout
        res = reproduce("alice/missing", "--runtime", "venv", env=env)
        assert res.returncode == 2 and "was not found" in res.stderr


# -- what the reproduced project's config may choose -------------------------------------------------


def _config(tmp_path, text):
    from cotk_repro.core.config import load_config

    (tmp_path / "cotk-repro.toml").write_text(text, encoding="utf-8")
    return load_config(tmp_path)


def _pick(config, runtime=None):
    from cotk_repro.reproduce.core import Outcome, _configured_runtime, empty_verdict
    from cotk_repro.reproduce.job import Steps

    outcome = Outcome(verdict=empty_verdict("docker"), exit_code=2)
    current = runtime or object()
    name, chosen = _configured_runtime(config, "docker", current, outcome, Steps(None, lambda _m: None))
    return name, chosen is current, outcome.warnings


@pytest.mark.parametrize("host_runtime", ["local", "venv"])
def test_project_config_cannot_pick_a_host_runtime(tmp_path, host_runtime):
    name, kept, warnings = _pick(_config(tmp_path, f'[reproduce]\nruntime = "{host_runtime}"\n'))
    assert name == "docker" and kept
    assert len(warnings) == 1 and f"--runtime {host_runtime}" in warnings[0] and "on this host" in warnings[0]


def test_project_config_unknown_runtime_is_a_warning(tmp_path):
    name, kept, warnings = _pick(_config(tmp_path, '[reproduce]\nruntime = "podman"\n'))
    assert name == "docker" and kept and "'podman'" in warnings[0] and "not installed" in warnings[0]


def test_project_config_may_pick_an_isolating_plugin_runtime(tmp_path):
    """A plugin runtime that keeps the code off this host (not on_host) is honoured."""
    from cotk_repro.hookspecs import hookimpl
    from cotk_repro.plugins import get_plugins, reset_plugins

    class Sandbox:
        name, on_host, description = "sandbox", False, "a test sandbox"
        connected = False

        def connect(self):
            Sandbox.connected = True

        def prepare(self, job):  # the runtime contract (cotk_repro/protocols.py); never called here
            raise AssertionError("not reached")

        def run(self, job):
            raise AssertionError("not reached")

    class Plugin:
        @hookimpl
        def register_runtimes(self, register):
            register("sandbox", Sandbox)

    reset_plugins()
    try:
        plugins = get_plugins()
        plugins._add(Plugin(), "test-sandbox", "1", builtin=False, module_name=__name__)
        name, kept, warnings = _pick(_config(tmp_path, '[reproduce]\nruntime = "sandbox"\n'))
        assert name == "sandbox" and not kept and warnings == [] and Sandbox.connected
        # the default is no switch at all
        name, kept, warnings = _pick(_config(tmp_path, ""))
        assert name == "docker" and kept and warnings == []
    finally:
        reset_plugins()


def test_network_request_in_project_config_is_a_warning_for_isolated_runtimes(tmp_path):
    from cotk_repro.reproduce.core import config_warnings
    from cotk_repro.reproduce.docker_runtime import DockerRuntime
    from cotk_repro.reproduce.venv_runtime import VenvRuntime

    wants = _config(tmp_path, "[reproduce]\nnetwork = true\n")
    assert "without network" in config_warnings(wants, DockerRuntime())[0]
    assert config_warnings(wants, VenvRuntime()) == []  # on the host it has the host's network
    assert config_warnings(_config(tmp_path, "[reproduce]\nnetwork = false\n"), DockerRuntime()) == []


def test_reproduce_a_checkout_right_after_run_uses_its_unpublished_records(tmp_path):
    """`cotk-repro run` then `cotk-repro reproduce ./`: with no records ref, the checkout's own records (each
    checked against its id) are the candidates; they are unsigned by nature, so no --allow-unsigned is needed.
    A local record edited without its id recomputed is no candidate."""
    from test_reproduce_support import record_in, reproduce_project, small_venv_python

    root = reproduce_project(tmp_path / "fresh")
    record = record_in(root, small_venv_python())
    res = run_cli("reproduce", "./", "--runtime", "local", "--trust-remote-code", "--json", cwd=root)
    assert res.returncode == 0, res
    verdict = json.loads(res.stdout)
    assert verdict["record_id"] == record["id"] and verdict["verdict"] == "reproduced"
    assert {r["metric"]: r["b_value"] for r in verdict["metrics"]} == expected_values("ok")
    assert "unpublished local record" in res.stderr
    # the same record, its value edited and its id left alone: refused as a candidate, nothing runs
    path = root / ".cotk-repro" / "runs" / record["id"].removeprefix("sha256:") / "record.json"
    data = json.loads(path.read_text())
    data["results"]["tokens"]["value"] += 1
    path.write_text(json.dumps(data))
    res = run_cli("reproduce", "./", "--runtime", "local", "--trust-remote-code", cwd=root)
    assert res.returncode == 2 and "has no cotk-repro records" in res.stderr, res


def test_project_tolerance_wider_than_declared_is_refused_unless_widened(tmp_path):
    """The reproduced project's [reproduce.tolerances.KEY] may only tighten what the metric declares: a wider one
    stops the reproduction before anything is run (exit 2, naming the metric and both values); the reproducer's
    --widen-tolerance accepts it and the verdict records that it was widened."""
    files = {
        "main.py": REPRO_ENTRY,
        "refs.txt": REPRO_REFS,
        "cotk-repro.toml": "[reproduce.tolerances.score]\nrtol = 0.5\n",
    }
    bare = edited_project(tmp_path, "loose", files)["bare"]
    res = reproduce(str(bare), "--runtime", "local", "--json")
    verdict = json.loads(res.stdout)
    assert res.returncode == 2 and verdict["verdict"] == "could not run", res
    assert "score with rtol 0.5, wider than the rtol 1e-06 its metric declares" in verdict["error"]
    assert verdict["rerun"]["started_at"] is None  # nothing ran
    res = reproduce(str(bare), "--runtime", "local", "--json", "--widen-tolerance")
    verdict = json.loads(res.stdout)
    assert res.returncode == 0 and verdict["verdict"] == "reproduced", res
    rows = {r["metric"]: r for r in verdict["metrics"]}
    assert (rows["score"]["rtol"], rows["score"]["widened"], rows["score"]["identical"]) == (0.5, True, True)
    assert (rows["tokens"]["rtol"], rows["tokens"]["widened"]) == (1e-6, False)
    assert verdict["tolerance_widened"] is True
