"""The reproducer's limits and clean-up, without Docker (issue 26, issue 32 items 3 and 11).

The limits come from the reproducer (flags, the user config's ``reproduce`` object, the defaults);
the reproduced project's ``[reproduce]`` may only lower them. The Docker side of the same rules is
in ``test_reproduce_sandbox.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cotk_repro.errors import ConfigError
from cotk_repro.reproduce import ReproduceError
from cotk_repro.reproduce.limits import DEFAULTS, apply_project, reproducer_limits, size_bytes


def test_defaults_when_nothing_is_said():
    limits = reproducer_limits({}, {})
    assert (limits.timeout, limits.memory, limits.cpus, limits.disk) == (3600.0, "4g", 2.0, "1g")
    assert limits.as_dict() == {
        name: {"value": value if name not in ("timeout", "cpus") else float(value), "from": "default"}
        for name, value in DEFAULTS.items()
    }


def test_flag_beats_user_config_beats_default():
    limits = reproducer_limits({"memory": "8g", "timeout": None}, {"memory": "2g", "timeout": 60, "disk": "512m"})
    assert limits.memory == "8g" and limits.sources["memory"] == "flag"
    assert limits.timeout == 60.0 and limits.sources["timeout"] == "user config"
    assert limits.disk == "512m" and limits.sources["disk"] == "user config"
    assert limits.cpus == 2.0 and limits.sources["cpus"] == "default"


def test_the_attackers_config_raises_nothing_and_stops_with_the_flags_that_grant_it():
    """Issue 26's record: timeout 1e9 s, memory 20g, cpus 2 (== the default, so not more)."""
    mine = reproducer_limits({}, {})
    with pytest.raises(ReproduceError) as err:
        apply_project(mine, {"timeout": 999999999.0, "memory": "20g", "cpus": 2.0})
    msg = err.value.message
    assert "memory 20g" in msg and "--memory 20g" in msg
    assert "--timeout 999999999" in msg and "nothing was built or run" in msg
    assert "cpus" not in msg  # asking for what is granted anyway is fine
    assert msg.count(". ") == 0  # one sentence
    assert err.value.step == "limits"


def test_the_flag_grants_what_the_project_asks():
    mine = reproducer_limits({"memory": "20g", "timeout": 1e9}, {})
    applied = apply_project(mine, {"timeout": 999999999.0, "memory": "20g"})
    assert applied.memory == "20g" and applied.sources["memory"] == "flag"
    assert applied.timeout == 999999999.0 and applied.sources["timeout"] == "project"
    assert applied.as_dict()["memory"]["project_asked"] == "20g"


def test_a_project_asking_for_less_gets_less():
    applied = apply_project(reproducer_limits({}, {}), {"memory": "256m", "timeout": 5.0, "cpus": 0.5, "disk": "100m"})
    assert (applied.memory, applied.timeout, applied.cpus, applied.disk) == ("256m", 5.0, 0.5, "100m")
    assert set(applied.sources.values()) == {"project"}


@pytest.mark.parametrize(
    "bad",
    [{"memory": "lots"}, {"timeout": -1}, {"cpus": "nan"}, {"disk": "0"}, {"memory": True}, {"timeout": float("inf")}],
)
def test_a_project_value_that_is_not_a_limit_is_one_sentence(bad):
    with pytest.raises(ReproduceError) as err:
        apply_project(reproducer_limits({}, {}), bad)
    name = next(iter(bad))
    assert f"the project's reproduce.{name}" in err.value.message


def test_bad_flag_and_user_values_name_their_place():
    with pytest.raises(ReproduceError, match="--memory 'lots' is not a memory limit"):
        reproducer_limits({"memory": "lots"}, {})
    with pytest.raises(ReproduceError, match=r"reproduce\.disk in .* is not a disk limit"):
        reproducer_limits({}, {"disk": "x"})


def test_sizes_read_as_docker_reads_them():
    assert size_bytes("4g") == 4 * 1024**3 and size_bytes("512m") == 512 * 1024**2
    assert size_bytes("1.5g") == int(1.5 * 1024**3) and size_bytes("2048") == 2048
    assert size_bytes("-1g") is None and size_bytes("g") is None and size_bytes("1 petabyte") is None


def test_user_config_reproduce_table(tmp_path, monkeypatch):
    from cotk_repro.core import userconfig

    monkeypatch.setenv("COTK_REPRO_CONFIG_DIR", str(tmp_path))
    assert userconfig.reproduce_settings() == {}
    (tmp_path / "config.json").write_text(
        json.dumps({"reproduce": {"memory": "8g", "timeout": 60, "allow_project_image": True}})
    )
    assert userconfig.reproduce_settings() == {"memory": "8g", "timeout": 60, "allow_project_image": True}
    (tmp_path / "config.json").write_text(json.dumps({"reproduce": {"memroy": "8g"}}))
    with pytest.raises(ConfigError, match=r"unknown key 'reproduce.memroy'"):
        userconfig.reproduce_settings()
    (tmp_path / "config.json").write_text(json.dumps({"reproduce": {"timeout": "long"}}))
    with pytest.raises(ConfigError, match=r"'reproduce.timeout' must be int or float"):
        userconfig.reproduce_settings()


def test_base_image_is_the_reproducers_choice(monkeypatch):
    from cotk_repro.reproduce.core import Outcome, ReproduceOptions, choose_base_image

    monkeypatch.delenv("COTK_REPRO_BASE_IMAGE", raising=False)

    def pick(opts, user, project):
        outcome = Outcome(verdict={}, exit_code=2)
        return choose_base_image(opts, user, project, outcome), outcome

    chosen, out = pick(ReproduceOptions(), {}, "evil.example/miner:latest")
    assert chosen is None  # the runtime's default for the recorded Python
    assert any("evil.example/miner:latest" in n and "--allow-project-image" in n for n in out.notices)
    chosen, out = pick(ReproduceOptions(allow_project_image=True), {}, "evil.example/miner:latest")
    assert chosen == "evil.example/miner:latest"
    assert any("evil.example/miner:latest" in w for w in out.warnings)
    chosen, _ = pick(ReproduceOptions(), {"allow_project_image": True}, "proj:1")
    assert chosen == "proj:1"
    chosen, _ = pick(ReproduceOptions(base_image="mine:1", allow_project_image=True), {}, "proj:1")
    assert chosen == "mine:1"
    chosen, _ = pick(ReproduceOptions(), {"base_image": "user:1"}, None)
    assert chosen == "user:1"
    monkeypatch.setenv("COTK_REPRO_BASE_IMAGE", "env:1")
    assert pick(ReproduceOptions(), {"base_image": "user:1"}, None)[0] == "user:1"
    assert pick(ReproduceOptions(), {}, "proj:1")[0] == "env:1"


def _dead_owner() -> str:
    out = subprocess.run(
        [sys.executable, "-c", "from cotk_repro.reproduce.gc import owner; print(owner())"],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    )
    return out.stdout.strip()


def test_gc_removes_work_folders_whose_reproducer_died_and_keeps_the_others(tmp_path):
    from cotk_repro.reproduce.gc import MARK, collect, mark_workdir, owner_alive

    dead = tmp_path / "cotk-repro-reproduce-dead"
    live = tmp_path / "cotk-repro-reproduce-live"
    kept = tmp_path / "cotk-repro-reproduce-kept"  # --keep: no mark
    other = tmp_path / "something-else"
    for d in (dead, live, kept, other):
        d.mkdir()
    (dead / MARK).write_text(json.dumps({"owner": _dead_owner()}))
    (other / MARK).write_text(json.dumps({"owner": _dead_owner()}))
    mark_workdir(live)
    assert owner_alive(json.loads((live / MARK).read_text())["owner"]) is True
    assert owner_alive(json.loads((dead / MARK).read_text())["owner"]) is False
    assert collect(None, tmp=tmp_path, dry_run=True).workdirs == [str(dead)] and dead.is_dir()
    report = collect(None, tmp=tmp_path)
    assert report.workdirs == [str(dead)]
    assert not dead.exists() and live.is_dir() and kept.is_dir() and other.is_dir()


def test_expired_by_deadline_or_dead_owner():
    import time

    from cotk_repro.reproduce.gc import DEADLINE, OWNER, expired, owner

    now = time.time()
    assert expired({DEADLINE: str(int(now - 1)), OWNER: owner()})
    assert not expired({DEADLINE: str(int(now + 100)), OWNER: owner()})
    assert expired({DEADLINE: str(int(now + 100)), OWNER: _dead_owner()})
    assert not expired({DEADLINE: str(int(now + 100)), OWNER: "another-host:1:1"})  # cannot tell: wait
    assert not expired({DEADLINE: str(int(now + 100)), OWNER: owner().replace(":", ":x", 1)})  # another boot


def test_tail_keeps_only_the_last_bytes_in_bounded_memory(tmp_path):
    from cotk_repro.core.tail import Tail, TailFile

    tail = Tail(1000)
    block = bytes(range(256)) * 40
    for _ in range(1000):
        tail.write(block)
        assert len(tail._buf) <= 2000
    assert tail.total == 1000 * len(block) and tail.value() == (block * 2)[-1000:]
    sink = TailFile(tmp_path / "out.log", 100)
    sink.write(b"x" * 1000 + b"END")
    sink.close()
    text = (tmp_path / "out.log").read_bytes()
    assert text.endswith(b"x" * 97 + b"END") and b"903 earlier bytes not kept" in text


def test_host_runtime_result_read_is_bounded(tmp_path):
    from cotk_repro.reproduce.venv_runtime import read_capped

    big = tmp_path / "result.json"
    with big.open("wb") as fh:
        fh.truncate(400 * 1024 * 1024)  # sparse: nothing on disk
    with pytest.raises(ReproduceError, match="is 400m, more than the 64m the reproducer reads back"):
        read_capped(big, 64 * 1024 * 1024, "the rerun's result file result.json")
    os.mkfifo(tmp_path / "fifo")
    assert read_capped(tmp_path / "fifo", 100, "x") is None  # a FIFO does not block the reproducer
    assert read_capped(tmp_path / "none", 100, "x") is None
    Path(tmp_path / "ok").write_bytes(b"{}")
    assert read_capped(tmp_path / "ok", 100, "x") == b"{}"


def test_gc_command_help_and_json(tmp_path):
    from conftest import run_cli

    res = run_cli("gc", "--help")
    assert res.returncode == 0 and "--json" in res.stdout and "--dry-run" in res.stdout
    res = run_cli("gc", "--json", "--dry-run", env={"TMPDIR": str(tmp_path), "DOCKER_HOST": "unix:///nonexistent"})
    assert res.returncode == 0, res
    data = json.loads(res.stdout)
    assert data["dry_run"] is True and data["workdirs"] == [] and data["notes"]
