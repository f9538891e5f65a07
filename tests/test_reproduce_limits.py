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


# -- floors and ceilings (issue 39): a number a stranger sets never switches a limit off --------------------------

BELOW_OR_NOT_A_NUMBER = [
    ("cpus", 1e-10, "below the least a CPU limit of 0.01 CPUs"),  # NanoCpus=0: Docker reads it as no limit
    ("cpus", 0.001, "below the least a CPU limit of 0.01 CPUs"),
    ("cpus", 1e300, "above the most a CPU limit"),
    ("memory", "1k", "below the least a memory limit of 6m"),
    ("memory", "0.0000001g", "below the least a memory limit of 6m"),
    ("disk", "512k", "below the least a disk limit of 1m"),
    ("timeout", 0.5, "below the least a time limit of 1 s"),
    ("timeout", 1e300, "above the most a time limit"),
    ("cpus", float("nan"), "is not a CPU limit"),
    ("timeout", float("inf"), "is not a time limit"),
    ("cpus", -2.0, "is not a CPU limit"),
    ("timeout", True, "is not a time limit"),
    ("memory", False, "is not a memory limit"),
    ("disk", "-1g", "is not a disk limit"),
]


@pytest.mark.parametrize(("name", "value", "words"), BELOW_OR_NOT_A_NUMBER)
def test_a_project_cannot_switch_a_limit_off_or_break_it(name, value, words):
    with pytest.raises(ReproduceError) as err:
        apply_project(reproducer_limits({}, {}), {name: value})
    msg = err.value.message
    assert msg.startswith(f"the project's reproduce.{name} ") and words in msg, msg
    assert msg.count(". ") == 0 and err.value.step == "limits"


@pytest.mark.parametrize(("name", "value", "words"), BELOW_OR_NOT_A_NUMBER)
def test_the_reproducers_own_values_have_the_same_floors(name, value, words):
    with pytest.raises(ReproduceError, match=words.replace("(", r"\(")):
        reproducer_limits({name: value}, {})
    with pytest.raises(ReproduceError, match=rf"reproduce\.{name} in "):
        reproducer_limits({}, {name: value})


def test_the_floors_themselves_are_limits():
    from cotk_repro.reproduce.limits import FLOORS

    applied = apply_project(reproducer_limits({}, {}), {"cpus": 0.01, "memory": "6m", "disk": "1m", "timeout": 1})
    assert (applied.cpus, applied.memory_bytes, applied.disk_bytes, applied.timeout) == (
        FLOORS["cpus"],
        FLOORS["memory"],
        FLOORS["disk"],
        FLOORS["timeout"],
    )
    from cotk_repro.reproduce.container import confinement

    assert confinement(applied.memory, applied.cpus, applied.disk)["nano_cpus"] == 10_000_000  # never 0


def test_the_cpus_flag_below_the_floor_is_one_sentence_exit_2(tmp_path):
    from conftest import run_cli

    res = run_cli(
        "reproduce", str(tmp_path / "nothing"), "--cpus", "1e-10", env={"COTK_REPRO_CONFIG_DIR": str(tmp_path)}
    )
    assert res.returncode == 2, res
    assert "--cpus '1e-10' is below the least a CPU limit of 0.01 CPUs" in res.stderr + res.stdout
    assert "Traceback" not in res.stderr and "unexpected" not in res.stderr.lower()


def test_image_cache_setting():
    from cotk_repro.reproduce.limits import image_cache

    assert image_cache(None, {}) == 0 and image_cache(None, {"image_cache": 3}) == 3 and image_cache(5, {}) == 5
    assert image_cache(None, {"image_cache": True}) == 0 and image_cache(None, {"image_cache": -1}) == 0


# -- each limit as the kernel sees it: a real container's cgroup v2 files -----------------------------------------


@pytest.fixture(scope="module")
def engine():
    image = os.environ.get("COTK_REPRO_TEST_BASE_IMAGE")
    if not image:
        from conftest import no_docker_reason

        pytest.skip(no_docker_reason())
    try:
        import docker

        client = docker.from_env(timeout=120)
        client.ping()
        client.images.get(image)
    except Exception as exc:
        pytest.skip(f"no Docker engine or base image {image} ({type(exc).__name__}: {str(exc)[:120]})")
    yield {"client": client, "image": image}
    client.close()


def _cgroup(engine, limits) -> dict[str, str]:
    """The kernel's limits inside a confined container, cgroup v2 or v1 alike: ``cpu`` as "QUOTA PERIOD" (v2's
    cpu.max; v1's cfs quota and period, -1 being no limit), ``memory`` and ``pids`` maxima, the /tmp tmpfs size."""
    from cotk_repro.reproduce.container import Confined

    box = Confined(
        engine["client"], engine["image"], "limits-test", limits.timeout, limits.memory, limits.cpus, limits.disk
    )
    script = (
        "c=/sys/fs/cgroup; if [ -f $c/cpu.max ]; then echo cpu=$(cat $c/cpu.max); echo memory=$(cat $c/memory.max);"
        " echo pids=$(cat $c/pids.max); else echo cpu=$(cat $c/cpu/cpu.cfs_quota_us) $(cat $c/cpu/cpu.cfs_period_us);"
        " echo memory=$(cat $c/memory/memory.limit_in_bytes); echo pids=$(cat $c/pids/pids.max); fi;"
        " echo tmp=$(awk '$2==\"/tmp\"{print $4}' /proc/mounts)"
    )
    try:
        box.start("limits test")
        res = box.exec(["sh", "-c", script], step="limits test", timeout=60)
    finally:
        box.remove()
    assert res.rc == 0, res.stderr.value()
    return dict(line.split("=", 1) for line in res.stdout.value().decode().split("\n") if "=" in line)


@pytest.mark.docker
@pytest.mark.slow
def test_each_limit_is_the_containers_cgroup_value(engine):
    limits = apply_project(reproducer_limits({}, {}), {"cpus": 0.5, "memory": "64m", "disk": "16m", "timeout": 30})
    seen = _cgroup(engine, limits)
    assert seen["cpu"] == "50000 100000", seen  # 0.5 CPUs: 50 ms of every 100 ms
    assert seen["memory"] == str(64 * 1024**2)
    assert seen["pids"] == "512"
    assert "size=16384k" in seen["tmp"], seen["tmp"]
    floor = apply_project(reproducer_limits({}, {}), {"cpus": 0.01, "memory": "6m", "disk": "1m"})
    seen = _cgroup(engine, floor)
    assert seen["cpu"] == "1000 100000", seen  # the floor still limits: never "max" nor -1
    assert seen["memory"] == str(6 * 1024**2)
    assert "size=1024k" in seen["tmp"], seen["tmp"]


def test_a_lock_is_bounded_and_its_refusals_quote_little():
    from cotk_repro.reproduce.lock import MAX_PACKAGES, validate_lock, validate_package

    with pytest.raises(ReproduceError, match=f"lists {MAX_PACKAGES + 1:,} packages, more than the {MAX_PACKAGES:,}"):
        validate_lock([{"name": f"p{i}", "version": "1.0"} for i in range(MAX_PACKAGES + 1)])
    for entry in ({"name": "a", "version": "1" * 1_000_000 + "x!"}, {"name": "n" * 1_000_000}, [{}] * 100_000):
        with pytest.raises(ReproduceError) as err:
            validate_package(entry)
        assert len(err.value.message) < 600, len(err.value.message)


def _labelled_image(client, base: str, key: str) -> str:
    """A reproduction image as `reproduce` tags and labels it (no RUN step: built in a moment)."""
    import io

    from cotk_repro.reproduce.docker_runtime import IMAGE_REPO
    from cotk_repro.reproduce.engine import LABEL

    tag = f"{IMAGE_REPO}:{key[:24]}"
    dockerfile = f'FROM {base}\nLABEL {LABEL}=image cotk-repro.key="{key}"\n'
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True, network_mode="none")
    return tag


@pytest.mark.docker
@pytest.mark.slow
def test_images_are_removed_after_the_verdict_unless_cached_least_recently_used_first(engine, tmp_path, monkeypatch):
    import time

    from docker.errors import ImageNotFound

    from cotk_repro.reproduce.docker_runtime import DockerRuntime

    monkeypatch.setenv("COTK_REPRO_CACHE", str(tmp_path))
    client, keys = engine["client"], [f"{i:x}{os.getpid():x}".ljust(64, "e") for i in range(4)]
    tags = [_labelled_image(client, engine["image"], k) for k in keys]
    try:
        envs = tmp_path / "images"
        envs.mkdir()
        for age, key in enumerate(keys):  # keys[0] used longest ago
            (envs / f"{key}.json").write_text("{}")
            os.utime(envs / f"{key}.json", (time.time() - 1000 + age, time.time() - 1000 + age))

        def gone(tag):
            try:
                client.images.get(tag)
            except ImageNotFound:
                return True
            return False

        runtime = DockerRuntime()
        runtime.client, runtime.tag = client, tags[3]
        runtime.finish(2)  # a cache of 2: the two least recently used go, with their environments
        assert [gone(t) for t in tags] == [True, True, False, False]
        assert sorted(p.name for p in envs.iterdir()) == sorted(f"{k}.json" for k in keys[2:])
        runtime.finish(0)  # no cache: this reproduction's own image goes (and only it)
        assert [gone(t) for t in tags] == [True, True, False, True]
    finally:
        for tag in tags:
            try:
                client.images.remove(tag, force=True)
            except Exception:
                pass
