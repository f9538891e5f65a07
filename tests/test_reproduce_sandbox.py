"""The sandbox's limits on the real Docker engine, tried as an attacker would (issues 26, 28, 32).

A project's committed ``[reproduce]`` table asks for 20g and 1e9 s: nothing runs without the flags
that grant it, and with them the container gets exactly that; a project asking for less gets less.
Entries that fill their work folder, write into ``/``, leave a 400 MB sparse result file, print
gigabytes to stdout, or lose their reproducer to SIGKILL: each ends with one sentence, the host's
disk and the reproducer's memory untouched, and nothing left once the deadline passed (or `gc` ran).

Needs a Docker engine and ``COTK_REPRO_TEST_BASE_IMAGE``; skips with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, no_docker_reason, run_cli
from test_reproduce_support import add_bare_remote, record_in, small_venv_python

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1500)]  # reproduce: up to 1200 s

ENTRY = r"""import json, os, sys, time
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
arg = sys.argv[2] if len(sys.argv) > 2 else None
if not os.path.exists("author.txt"):  # the rerun: behave as an attacker would
    if mode == "sleep":
        time.sleep(float(arg))
    elif mode == "fill":  # 5 GB into the work folder
        with open("fill.bin", "wb") as fh:
            block = b"\1" * (1 << 20)
            for _ in range(5 * 1024):
                fh.write(block)
    elif mode == "root":
        open("/cotk-repro-was-here", "w").write("x")
    elif mode == "sparse":
        with open("result.json", "wb") as fh:
            fh.truncate(400 * 1024 * 1024)
        raise SystemExit(0)
    elif mode == "bomb":  # MiB to stdout, then a tenth of it to stderr
        block = b"y" * ((1 << 20) - 1) + b"\n"
        for _ in range(int(arg)):
            os.write(1, block)
        for _ in range(int(arg) // 10):
            os.write(2, block)
json.dump({"x": 1.0}, open("result.json", "w"))
"""
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def engine():
    image = os.environ.get("COTK_REPRO_TEST_BASE_IMAGE")
    if not image:
        pytest.skip(no_docker_reason())
    try:
        import docker

        client = docker.from_env(timeout=120)
        client.ping()
        client.images.get(image)
    except Exception as exc:
        pytest.skip(f"no Docker engine or base image {image} ({type(exc).__name__}: {str(exc)[:120]})")
    info = {"client": client, "image": image, "built": set()}
    yield info
    for tag in info["built"]:
        try:
            client.images.remove(tag)
        except Exception:
            pass
    client.close()


def _project(base: Path, name: str, toml: str | None, modes: dict[str, list[str]], signed: bool = False) -> dict:
    """A published project; ``signed``: its records signed by a fresh SSH key (made by ssh-keygen)."""
    py = small_venv_python()
    env = None
    if signed:
        from signing_support import key_env, make_key

        env = key_env(make_key(base / f"keys-{name}"), base / f"home-{name}")
    root = base / "work" / name
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    files = {".gitignore": ".cotk-repro/\nresult.json\n__pycache__/\nauthor.txt\n", "main.py": ENTRY}
    if toml:
        files["cotk-repro.toml"] = toml
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    (root / "author.txt").write_text("me\n")
    bare = add_bare_remote(root, base / "remotes", f"mallory/{name}")
    records = {mode: record_in(root, py, None, "--", *args) for mode, args in modes.items()}
    for i, record in enumerate(records.values()):
        res = run_cli("publish", "--no-dashboard", record["id"], *(["--push"] if i == 0 else []), cwd=root, env=env)
        assert res.returncode == 0, res
    return {"bare": bare, "records": records, "signed": signed}


@pytest.fixture(scope="module")
def projects(engine, tmp_path_factory):
    base = tmp_path_factory.mktemp("sandbox")
    made = {
        "plain": _project(
            base,
            "plain",
            None,
            {
                "sleep": ["sleep", "3600"],
                "fill": ["fill"],
                "root": ["root"],
                "sparse": ["sparse"],
                "bomb": ["bomb", "1200"],
                "flood": ["bomb", "2400"],
                "ok": ["ok"],
            },
        ),
        # issue 26's project: a stranger's config choosing its own sandbox
        "greedy": _project(
            base,
            "greedy",
            '[reproduce]\ntimeout = 999999999.0\nmemory = "20g"\ncpus = 2.0\n'
            'base_image = "registry.invalid/miner:latest"\n',
            {"sleep": ["sleep", "6"]},
            signed=True,
        ),
        # 30 s: the time limit bounds its image build too (short: the layers of the packages are plain's, below)
        "modest": _project(
            base, "modest", '[reproduce]\ntimeout = 30.0\nmemory = "256m"\ncpus = 0.5\n', {"sleep": ["sleep", "600"]}
        ),
    }
    # --timeout bounds the image build too, and a reproduction's image is removed after its verdict unless cached:
    # every reproduce here keeps its image in the cache (_args: --image-cache), warmed once, so that the tests'
    # few seconds of --timeout are the entry's
    warm = reproduce(made, "plain", "ok", engine)
    assert warm.returncode == 0, warm
    return made


def _args(projects, which, mode, engine, *extra):
    record = projects[which]["records"][mode]["id"]
    trust = [] if projects[which].get("signed") else ["--allow-unsigned"]
    return [
        "reproduce",
        str(projects[which]["bare"]),
        "--record",
        record,
        "--runtime",
        "docker",
        *trust,
        "--base-image",
        engine["image"],
        "--image-cache",
        "16",
        *extra,
    ]


def _note(engine, text: str) -> None:
    engine["built"].update(re.findall(r"building the Docker image (cotk-repro-reproduce:[0-9a-f]+)", text))


def reproduce(projects, which, mode, engine, *extra, env=None):
    res = run_cli(*_args(projects, which, mode, engine, *extra), env=env, timeout=900)
    _note(engine, res.stderr)
    return res


def said(res) -> str:
    return " ".join(res.stderr.split())


def measured(projects, which, mode, engine, tmp_path, *extra) -> tuple[subprocess.CompletedProcess, int, str]:
    """Reproduce in a child and return (the process, the peak RSS in bytes of the reproducer, its stderr)."""
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    wrapper = (
        "import resource, subprocess, sys\n"
        "with open(sys.argv[1], 'wb') as o, open(sys.argv[2], 'wb') as e:\n"
        "    rc = subprocess.run(sys.argv[3:], stdout=o, stderr=e).returncode\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, rc)\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            wrapper,
            str(out),
            str(err),
            sys.executable,
            "-m",
            "cotk_repro",
            *_args(projects, which, mode, engine, *extra),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        env=dict(os.environ),
    )
    rss, rc = map(int, proc.stdout.split())
    stderr = err.read_text(errors="replace")
    _note(engine, stderr)
    return subprocess.CompletedProcess(proc.args, rc, out.read_text(errors="replace"), stderr), rss, stderr


def running_container(engine, record_id: str, proc: subprocess.Popen, log: Path, wait: float = 300):
    from cotk_repro.reproduce.engine import LABEL

    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        found = engine["client"].containers.list(
            filters={"label": [f"{LABEL}=run", f"cotk-repro.record={record_id}"], "status": "running"},
            ignore_removed=True,
        )
        if found:
            return found[0]
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    raise AssertionError(f"no running container (exit {proc.poll()}):\n{log.read_text()[-3000:]}")


def start(projects, which, mode, engine, tmp_path, *extra, env=None):
    log = tmp_path / f"{which}-{mode}.log"
    fh = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cotk_repro", *_args(projects, which, mode, engine, *extra)],
        stdout=fh,
        stderr=subprocess.STDOUT,
        env={**os.environ, "TMPDIR": str(tmp_path), **(env or {})},
    )
    fh.close()
    return proc, log


def finish(proc, log: Path, engine, timeout=300) -> int:
    try:
        rc = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _note(engine, log.read_text(errors="replace"))
    return rc


# -- 1. the reproducer's limits, not the project's ------------------------------------------------


def test_a_project_asking_for_more_stops_before_anything_is_built_naming_the_flags(projects, engine, tmp_path):
    out = tmp_path / "verdict.json"
    res = reproduce(projects, "greedy", "sleep", engine, "--json", str(out))
    assert res.returncode == 2, res
    text = said(res)
    assert "the project's config asks for more than this reproduction grants" in text
    assert "memory 20g" in text and "--memory 20g" in text and "--timeout 999999999" in text
    assert "image build" not in text.split("steps:")[-1] and "Traceback" not in res.stderr
    verdict = json.loads(out.read_text())
    assert verdict["verdict"] == "could not run" and verdict["record_signature"]["status"] == "valid"
    assert verdict["limits"]["memory"] == {"value": "4g", "from": "default"}
    assert verdict["limits"]["timeout"] == {"value": 3600.0, "from": "default"}


def test_the_flags_grant_it_and_the_container_gets_exactly_that(projects, engine, tmp_path):
    proc, log = start(
        projects,
        "greedy",
        "sleep",
        engine,
        tmp_path,
        "--memory",
        "20g",
        "--timeout",
        "999999999",
        "--json",
        str(tmp_path / "v.json"),
    )
    container = running_container(engine, projects["greedy"]["records"]["sleep"]["id"], proc, log)
    host = container.attrs["HostConfig"]
    assert host["Memory"] == 20 * 1024**3 and host["NanoCpus"] == 2 * 10**9
    assert finish(proc, log, engine) == 0, log.read_text()
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["limits"]["memory"] == {"value": "20g", "from": "flag", "project_asked": "20g"}
    assert verdict["limits"]["timeout"]["value"] == 999999999.0
    # the project's base image was not used, nor pulled: the one the reproducer named was
    assert "registry.invalid/miner:latest" in " ".join(log.read_text().split())
    assert not engine["client"].images.list(name="registry.invalid/miner")


def test_no_flags_the_container_is_confined_by_the_defaults(projects, engine, tmp_path):
    from cotk_repro.reproduce.gc import DEADLINE, GRACE, OWNER

    proc, log = start(projects, "plain", "sleep", engine, tmp_path, "--timeout", "8")
    container = running_container(engine, projects["plain"]["records"]["sleep"]["id"], proc, log)
    host, config = container.attrs["HostConfig"], container.attrs["Config"]
    assert host["Memory"] == 4 * 1024**3 and host["NanoCpus"] == 2 * 10**9  # the documented defaults
    assert host["ReadonlyRootfs"] is True and host["NetworkMode"] == "none"
    assert host["Tmpfs"] == {"/tmp": f"size={1024**3},mode=1777,exec,nosuid,nodev"}
    assert host["LogConfig"] == {"Type": "json-file", "Config": {"max-size": "1m", "max-file": "2"}}
    home = [m for m in container.attrs["Mounts"] if m["Destination"] == "/home/runner"]
    assert home and home[0]["Type"] == "volume"
    volume = engine["client"].volumes.get(home[0]["Name"])
    assert volume.attrs["Options"]["type"] == "tmpfs" and f"size={1024**3}" in volume.attrs["Options"]["o"]
    # the container keeps its own deadline: pid 1 sleeps until then, and the labels say when and whose
    assert config["Entrypoint"] == ["sleep", str(int(8 + GRACE))]
    assert float(config["Labels"][DEADLINE]) <= time.time() + 8 + GRACE + 1 and config["Labels"][OWNER]
    rc = finish(proc, log, engine)
    assert rc == 2 and "ran past the time limit of 8 s and was killed" in " ".join(log.read_text().split())
    from docker.errors import NotFound

    with pytest.raises(NotFound):
        engine["client"].volumes.get(home[0]["Name"])


def test_a_project_asking_for_less_gets_less(projects, engine, tmp_path):
    proc, log = start(projects, "modest", "sleep", engine, tmp_path, "--json", str(tmp_path / "v.json"))
    container = running_container(engine, projects["modest"]["records"]["sleep"]["id"], proc, log)
    host = container.attrs["HostConfig"]
    assert host["Memory"] == 256 * MiB and host["NanoCpus"] == 5 * 10**8
    t0 = time.monotonic()
    rc = finish(proc, log, engine)
    assert rc == 2 and "ran past the time limit of 30 s and was killed" in " ".join(log.read_text().split())
    assert time.monotonic() - t0 < 60
    limits = json.loads((tmp_path / "v.json").read_text())["limits"]
    assert limits["timeout"] == {"value": 30.0, "from": "project", "project_asked": 30.0}
    assert limits["memory"] == {"value": "256m", "from": "project", "project_asked": "256m"}


# -- 2. the container cannot fill the host ----------------------------------------------------------


def test_filling_the_work_folder_stops_at_the_disk_limit_and_the_host_disk_is_untouched(projects, engine):
    before = shutil.disk_usage("/var/lib/docker" if os.path.isdir("/var/lib/docker") else "/").free
    res = reproduce(projects, "plain", "fill", engine)
    after = shutil.disk_usage("/var/lib/docker" if os.path.isdir("/var/lib/docker") else "/").free
    assert res.returncode == 2, res
    assert "the entry ran out of disk space (limit 1g for its work folder and for /tmp) and failed" in said(res)
    assert "--disk" in said(res)
    # 5 GB were attempted; at most the container's own budget could have reached any disk (none did: tmpfs)
    assert before - after < 1024**3, (before, after)


def test_writing_into_the_root_filesystem_is_refused(projects, engine):
    res = reproduce(projects, "plain", "root", engine)
    assert res.returncode == 2, res
    assert (
        "the entry tried to write outside its work folder and /tmp (the container's root filesystem is "
        "read-only) and failed"
    ) in said(res)


# -- 3. bounded reads --------------------------------------------------------------------------------


def test_a_400mb_sparse_result_file_is_refused_by_its_size_in_bounded_memory(projects, engine, tmp_path):
    res, rss, stderr = measured(projects, "plain", "sparse", engine, tmp_path)
    assert res.returncode == 2, stderr
    text = " ".join(stderr.split())
    assert "the rerun's result file result.json is 400m, more than the 64m the reproducer reads back" in text
    print(f"400 MB sparse result: reproducer peak RSS {rss / MiB:.0f} MiB")
    assert rss < 300 * MiB, rss


def test_an_entry_printing_past_the_output_cap_is_stopped_with_one_sentence(projects, engine, tmp_path):
    """Issue 28: printing without end (2400 MiB + 240 MiB here, past the 2 GiB cap) ends the run with its reason
    instead of holding a worker for the whole time limit; the reproducer stays small."""
    res, rss, stderr = measured(projects, "plain", "flood", engine, tmp_path)
    assert res.returncode == 2, stderr
    assert "the entry printed more than 2 GiB to stdout and stderr and was stopped" in " ".join(stderr.split())
    assert rss < 300 * MiB, rss


def test_gigabytes_on_stdout_keep_the_reproducer_small_and_the_verdict_clear(projects, engine, tmp_path):
    res, rss, stderr = measured(projects, "plain", "bomb", engine, tmp_path, "--keep")
    assert res.returncode == 0, stderr  # 1200 MiB on stdout, 120 MiB on stderr, then a good result
    assert "reproduced" in res.stdout
    print(f"1200 MiB stdout + 120 MiB stderr: reproducer peak RSS {rss / MiB:.0f} MiB")
    assert rss < 300 * MiB, rss
    kept = re.search(r"work folder kept: (\S+)", " ".join(stderr.split()))
    logs = Path(kept.group(1)) / "logs"
    try:
        out_log, err_log = (logs / "stdout.log").stat().st_size, (logs / "stderr.log").stat().st_size
        assert 4 * MiB <= out_log <= 4 * MiB + 200 and 4 * MiB <= err_log <= 4 * MiB + 200
        assert (logs / "stdout.log").read_bytes().startswith(b"[... ")
    finally:
        shutil.rmtree(kept.group(1), ignore_errors=True)


# -- 4. limits hold when the reproducer dies ------------------------------------------------------


@pytest.mark.docker_alone  # any reproduction starting meanwhile would remove the container whose reproducer died
def test_sigkilled_reproducer_the_container_stops_by_its_deadline_and_gc_removes_everything(projects, engine, tmp_path):
    from cotk_repro.reproduce.gc import GRACE, GRACE_ENV

    record = projects["plain"]["records"]["sleep"]["id"]
    # its own deadline is the time limit plus a grace period: 5 s here instead of the 30 s nobody need wait for
    proc, log = start(projects, "plain", "sleep", engine, tmp_path, "--timeout", "3", env={GRACE_ENV: "5"})
    container = running_container(engine, record, proc, log)
    work = [p for p in tmp_path.glob("cotk-repro-reproduce-*")]
    assert len(work) == 1
    proc.send_signal(signal.SIGKILL)
    finish(proc, log, engine)
    assert container.attrs["Config"]["Entrypoint"] == ["sleep", str(3 + 5)]
    # nobody is left to stop it: the container does, at its deadline (3 s + the grace period)
    t0 = time.monotonic()
    while time.monotonic() - t0 < GRACE + 60:
        container.reload()
        if container.status != "running":
            break
        time.sleep(1)
    assert container.status == "exited", container.status
    assert work[0].is_dir()  # left behind ...
    res = run_cli("gc", "--json", env={"TMPDIR": str(tmp_path)})
    assert res.returncode == 0, res
    removed = json.loads(res.stdout)
    assert container.name in removed["containers"] and str(work[0]) in removed["workdirs"]
    assert container.name in removed["volumes"]  # the scratch volume has the container's name
    assert not work[0].exists()
    from docker.errors import NotFound

    with pytest.raises(NotFound):
        container.reload()
