"""Reproduce in Docker, end to end, against the real engine (docs/spec.md section 7, issue 5).

A project is published to a bare remote (records made with a small real virtual environment,
see :mod:`test_reproduce_support`), then `cotk-repro reproduce --runtime docker` rebuilds its
environment in an image (wheelhouse made on the host, installed offline in the build) and reruns
the entry in a container: exit 0 / 1 / 2, the metric that differs named, the failing step's log,
the isolation (no network, not root), the time limit, the image cache, and no container left
behind, also when the reproduce is interrupted.

Needs a Docker engine and a base image with python3 (bookworm + python3-venv/pip), named by
``COTK_REPRO_TEST_BASE_IMAGE`` (scripts/test.sh builds one offline with debootstrap); skips with
the reason otherwise. The base image is given a tag of its own for this module, so every run of
this file goes through the real image build (the image cache key includes the base image); the
images this module builds and that tag are removed at the end. Docker's layer cache makes the
builds after the first one short: the first one's package layers are kept for the module
(``keep_the_package_layers``). Expected values come from ``expected_values()``, computed from
the project's inputs independently of cotk-repro.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import git, no_docker_reason, run_cli
from test_reproduce_support import build_published_project, expected_values, publish, record_in, small_venv_python

from cotk_repro.reproduce.engine import list_images

pytestmark = [pytest.mark.docker, pytest.mark.slow]

#: the records of the published project (entry arguments per record)
MODES = {"ok": [], "seeded": ["seeded"], "spin": ["spin"]}
#: a package version that exists on no index: the wheel download must fail and say so
MISSING_PACKAGE = ("nosuchpkg-cotk-repro-test", "9.9.9")


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def docker_client():
    image = os.environ.get("COTK_REPRO_TEST_BASE_IMAGE")
    if not image:
        pytest.skip(no_docker_reason())
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        pytest.skip("the docker Python package is not installed")
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except (DockerException, OSError) as exc:
        pytest.skip(f"no Docker engine reachable ({type(exc).__name__}: {str(exc)[:120]})")
    except Exception as exc:
        pytest.skip(f"no Docker engine reachable ({type(exc).__name__}: {str(exc)[:120]})")
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.skip(f"the base image {image} (COTK_REPRO_TEST_BASE_IMAGE) is not in the Docker engine")
    yield client
    client.close()


@pytest.fixture(scope="module")
def base_image(docker_client):
    """The base image under a tag of this module's own; at the end, removes the images this module
    built (named by the reproduce output, so that a concurrent run's images are left alone)."""
    from cotk_repro.core.userconfig import cache_dir

    source = os.environ["COTK_REPRO_TEST_BASE_IMAGE"]
    name = f"cotk-repro-test-base:{uuid.uuid4().hex[:12]}"
    docker_client.images.get(source).tag(*name.split(":"))
    python = (
        docker_client.containers.run(
            name,
            ["python3", "-c", "import platform; print(platform.python_version())"],
            network_mode="none",
            remove=True,
        )
        .decode()
        .strip()
    )
    info = {"image": name, "python": python, "built": set(), "records": set()}
    yield info
    for container in our_leftovers(docker_client, info):  # only after a failed test
        try:
            container.remove(force=True)
        except Exception:
            pass
    for tag in [*info["built"], *info.get("layers", [])]:
        try:
            key = (docker_client.images.get(tag).labels or {}).get("cotk-repro.key")
            if key:
                (cache_dir() / "images" / f"{key}.json").unlink(missing_ok=True)
            docker_client.images.remove(tag)
        except Exception:
            pass
    try:
        docker_client.images.remove(name)
    except Exception:
        pass


def our_leftovers(client, info) -> list:
    """Containers of this module's records that still exist (another test run may have its own)."""
    from cotk_repro.reproduce.docker_runtime import leftover_containers

    return [c for c in leftover_containers(client) if (c.labels or {}).get("cotk-repro.record") in info["records"]]


def note_builds(info, output: str) -> None:
    info["built"].update(re.findall(r"building the Docker image (cotk-repro-reproduce:[0-9a-f]+)", output))


def _fake_distribution(site: Path, name: str, version: str, requires=()) -> None:
    """What pip leaves in site-packages for an index install (no direct_url.json)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *(f"Requires-Dist: {r}" for r in requires)]
    (info / "METADATA").write_text("\n".join(meta) + "\n\n", encoding="utf-8")
    (info / "INSTALLER").write_text("pip\n", encoding="utf-8")


@pytest.fixture(scope="module")
def pub(base_image, docker_client, tmp_path_factory):
    """The published project: one record per mode, plus a record made where the environment
    held a package the reproducer cannot rebuild (recorded by a real `cotk-repro run`, the extra
    distribution put on its PYTHONPATH)."""
    base = tmp_path_factory.mktemp("repro-docker")
    project = build_published_project(base, modes=MODES)
    py = small_venv_python()
    extra = {"missing": [MISSING_PACKAGE, []]}
    for mode, ((name, version), requires) in extra.items():
        site = base / f"site-{mode}"
        _fake_distribution(site, name, version, requires)
        record = record_in(project["root"], py, {"PYTHONPATH": str(site)})
        assert {"name": name, "version": version} in record["environment"]["packages"]
        res = publish(project["root"], record["id"])
        assert res.returncode == 0, res
        project["records"][mode] = record
    keep_the_package_layers(project, base_image, docker_client)
    return project


def keep_the_package_layers(project: dict, base_image: dict, client) -> None:
    """Docker's layer cache for this module's builds: the image layers of the recorded packages (a venv and the
    wheels installed in it: most of a build's time), kept under a tag of this module's own.

    A record of the same environment at another commit is reproduced once with the image cache; its image is then
    tagged ``cotk-repro-test-layers:...`` and its reproduction tag and cached environment removed (no reproduction
    finds it, no image cache counts it). The records of the tests are of another commit, so their images are not
    this one: each test's build still runs (``Step``, ``Running in``, the checkout copied in, the image tagged and
    removed after its verdict), taking the package layers from the cache and building the rest anew."""
    from cotk_repro.core.userconfig import cache_dir

    root = project["root"]
    (root / "layers.txt").write_text("another commit, the same environment\n", encoding="utf-8")
    git(root, "add", "layers.txt")
    git(root, "commit", "-q", "-m", "another commit")
    record = record_in(root, small_venv_python())
    res = publish(root, record["id"], "--push")
    assert res.returncode == 0, res
    base_image["records"].add(record["id"])
    res = run_cli(
        "reproduce", str(project["bare"]), "--record", record["id"], "--runtime", "docker", "--allow-unsigned",
        "--base-image", base_image["image"], "--image-cache", "1000",
    )  # fmt: skip
    note_builds(base_image, res.stderr)
    assert res.returncode == 0, res
    [tag] = re.findall(r"building the Docker image (cotk-repro-reproduce:[0-9a-f]+)", res.stderr)
    image = client.images.get(tag)
    layers = f"cotk-repro-test-layers:{uuid.uuid4().hex[:12]}"
    image.tag(*layers.split(":"))
    base_image.setdefault("layers", []).append(layers)
    client.images.remove(tag)  # the tag only: the image keeps the other one
    base_image["built"].discard(tag)
    (cache_dir() / "images" / f"{image.labels['cotk-repro.key']}.json").unlink(missing_ok=True)


def reproduce(pub, mode, base_image, *args, env=None):
    record = pub["records"][mode]["id"]
    base_image["records"].add(record)
    res = run_cli(
        "reproduce",
        str(pub["bare"]),
        "--record",
        record,
        "--runtime",
        "docker",
        "--allow-unsigned",
        "--base-image",
        base_image["image"],
        *args,
        env=env,
    )
    note_builds(base_image, res.stderr)
    return res


def steps_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.lstrip().startswith("steps:")]
    assert lines, stderr
    return lines[-1]


def table_verdicts(stdout: str) -> dict[str, str]:
    """metric -> verdict, read from the rows of the verdict table."""
    rows = [
        [c.strip() for c in ln.strip().strip("│").split("│")]
        for ln in stdout.splitlines()
        if ln.strip().startswith("│")
    ]
    return {r[0]: r[1] for r in rows if len(r) > 2}


def kept_workdir(res, tmp_path: Path) -> Path:
    kept = [p for p in tmp_path.glob("cotk-repro-reproduce-*") if p.is_dir()]
    assert len(kept) == 1 and f"work folder kept: {kept[0]}" in " ".join(res.stderr.split()), res.stderr
    return kept[0]


def assert_build_left_nothing(client, build_log: Path) -> None:
    """No container of the build (" ---> Running in ID") is left, nor a dangling image of its steps (" ---> ID")."""
    from docker.errors import NotFound

    text = build_log.read_text()
    containers = re.findall(r"^ ---> Running in ([0-9a-f]{12,64})\s*$", text, re.M)
    layers = set(re.findall(r"^ ---> ([0-9a-f]{12,64})\s*$", text, re.M))
    assert containers and layers, text
    for cid in containers:
        with pytest.raises(NotFound):
            client.containers.get(cid)
    dangling = {i.id.removeprefix("sha256:")[:12] for i in list_images(client, filters={"dangling": True})}
    assert not dangling & {x[:12] for x in layers}, text


# -- tests --------------------------------------------------------------------------------------


def test_reproduced_in_a_container_without_network_as_non_root(pub, base_image, docker_client, tmp_path):
    res = reproduce(pub, "ok", base_image, "--keep", "--json", env={"TMPDIR": str(tmp_path)})
    assert res.returncode == 0, res
    verdict = json.loads(res.stdout)
    assert verdict["verdict"] == "reproduced" and verdict["runtime"] == "docker" and verdict["error"] is None
    assert verdict["record_id"] == pub["records"]["ok"]["id"]
    expected = expected_values("ok")
    rows = {r["metric"]: r for r in verdict["metrics"]}
    assert set(rows) == set(expected)
    for name, row in rows.items():
        assert row["verdict"] == "reproduced"
        assert row["a_value"] == row["b_value"] == expected[name]
        assert row["a_hash"] == row["b_hash"] == pub["records"]["ok"]["results"][name]["hash"]
    # the rerun ran on the base image's Python; a difference from the record is reported beside the verdict,
    # and the image holds exactly the recorded package versions
    assert verdict["rerun"]["python"] == base_image["python"]
    recorded_python = pub["records"]["ok"]["environment"]["python"]["version"]
    diffs = verdict["environment_differences"]
    if recorded_python == base_image["python"]:
        assert diffs == []
    else:
        assert diffs == [{"what": "python", "a": recorded_python, "b": base_image["python"]}]
    # the environment was built (this module's base tag is new to the image cache), not taken from the host
    steps = steps_line(res.stderr)
    assert "image build" in steps and "image build 0.0s (skipped" not in steps, steps
    assert "THIS HOST" not in res.stderr
    # what the entry saw inside the container (its stdout, kept with --keep)
    kept = kept_workdir(res, tmp_path)
    seen = dict(line.split("=", 1) for line in (kept / "logs" / "stdout.log").read_text().splitlines() if "=" in line)
    assert seen["uid"].isdigit() and int(seen["uid"]) != 0, seen
    assert seen["interfaces"] == "lo", seen  # network_mode none: loopback only
    assert seen["network"].startswith("unreachable"), seen
    # the container is gone, and so are the build's
    assert our_leftovers(docker_client, base_image) == []
    assert_build_left_nothing(docker_client, kept / "logs" / "build.log")


def test_changed_result_exits_1_naming_the_metric(pub, base_image, tmp_path):
    out = tmp_path / "verdict.json"
    res = reproduce(pub, "seeded", base_image, "--json", str(out))
    assert res.returncode == 1, res
    assert "not reproduced" in res.stdout
    # each row in words: how far a value moved, or that it is identical (docs/reproduce.md, "Tolerances")
    words = table_verdicts(res.stdout)
    assert words["score"].startswith("differs (moved by 0.5") and words["tokens"] == "identical", res.stdout
    verdict = json.loads(out.read_text())
    assert verdict["verdict"] == "not reproduced" and verdict["runtime"] == "docker"
    rows = {r["metric"]: r for r in verdict["metrics"]}
    assert rows["score"]["verdict"] == "differs" and rows["tokens"]["verdict"] == "reproduced"
    assert rows["tokens"]["identical"] is True and rows["score"]["identical"] is False
    assert rows["score"]["a_value"] == expected_values("seeded", author_seed=7)["score"]
    assert rows["score"]["b_value"] == expected_values("seeded")["score"]
    assert rows["tokens"]["b_value"] == expected_values("seeded")["tokens"]


def test_package_version_that_does_not_exist_could_not_run_with_the_step_log(pub, base_image, tmp_path):
    name, version = MISSING_PACKAGE
    out = tmp_path / "verdict.json"
    res = reproduce(pub, "missing", base_image, "--json", str(out))
    assert res.returncode == 2, res
    assert "could not run" in res.stdout
    assert "downloading the recorded packages failed" in res.stderr
    # the failing step's log: pip's own words about the package
    assert f"{name}=={version}" in res.stderr and "pip" in res.stderr
    assert "wheel download" in steps_line(res.stderr) and "(failed)" in steps_line(res.stderr)
    verdict = json.loads(out.read_text())
    assert verdict["verdict"] == "could not run" and "downloading the recorded packages failed" in verdict["error"]
    assert verdict["record_id"] == pub["records"]["missing"]["id"] and verdict["metrics"] == []
    assert "Traceback" not in res.stderr
    # the work folder is gone (no --keep), but the log the error names was kept and holds pip's words
    log = Path(re.search(r"full log: (\S+?\.log)", verdict["error"]).group(1))
    assert log.is_file() and f"{name}=={version}" in log.read_text()
    assert "cotk-repro-reproduce-" not in str(log) and str(log.parent) in res.stderr


def test_image_build_failure_could_not_run_with_the_failing_step_log(pub, base_image, docker_client, tmp_path):
    """A base image whose python3 cannot make a venv: the image build fails at its install step. (The lock is
    installed with --no-deps, exactly as recorded, so an incomplete lock no longer fails the build.)"""
    import io

    broken = f"cotk-repro-test-novenv:{uuid.uuid4().hex[:12]}"
    docker_client.images.build(
        fileobj=io.BytesIO(
            f"FROM {base_image['image']}\nRUN rm -rf /usr/lib/python3.11/venv /usr/lib/python3/dist-packages/venv\n".encode()
        ),
        tag=broken,
        network_mode="none",
        rm=True,
    )
    try:
        res = reproduce(pub, "seeded", {**base_image, "image": broken}, "--keep", env={"TMPDIR": str(tmp_path)})
        assert res.returncode == 2, res
        assert "building the Docker image failed at Step" in res.stderr
        # the failing step is the venv + offline install, and its log says why
        assert "python3 -m venv" in res.stderr and "venv" in res.stderr
        assert "image build" in steps_line(res.stderr) and "(failed)" in steps_line(res.stderr)
        assert "could not run" in res.stdout and "Traceback" not in res.stderr
        # the build's intermediate containers, and the images of the steps that did finish, are removed too
        assert our_leftovers(docker_client, base_image) == []
        assert_build_left_nothing(docker_client, kept_workdir(res, tmp_path) / "logs" / "build.log")
    finally:
        docker_client.images.remove(broken, force=True)


def test_runaway_entry_is_killed_at_the_time_limit(pub, base_image, docker_client, tmp_path):
    out = tmp_path / "verdict.json"
    # --timeout bounds the image build too, and a reproduction's image is removed after its verdict: warm this
    # environment's image in the cache first, so that the 3 s are the entry's alone (a cache of 16 images, as in
    # tests/test_reproduce_sandbox.py: with the Docker modules on two workers at once, a smaller one could evict
    # the image another module cached for its own short time limits)
    warm = reproduce(pub, "ok", base_image, "--image-cache", "16")
    assert warm.returncode == 0, warm
    t0 = time.monotonic()
    res = reproduce(pub, "spin", base_image, "--image-cache", "16", "--timeout", "3", "--json", str(out))
    elapsed = time.monotonic() - t0
    assert res.returncode == 2, res
    assert "ran past the time limit of 3 s and was killed" in res.stderr
    verdict = json.loads(out.read_text())
    assert verdict["verdict"] == "could not run" and "ran past the time limit" in verdict["error"]
    run_step = [s for s in steps_line(res.stderr).split(", ") if s.startswith("run ")]
    assert run_step and "(failed)" in run_step[0]
    assert 3 <= float(run_step[0].split()[1].rstrip("s")) < 30, run_step
    assert elapsed < 120
    assert our_leftovers(docker_client, base_image) == []


def test_second_reproduce_uses_the_cached_image(pub, base_image):
    first = reproduce(pub, "ok", base_image, "--image-cache", "16")
    assert first.returncode == 0, first
    second = reproduce(pub, "ok", base_image, "--image-cache", "16")
    assert second.returncode == 0, second
    assert "reproduced" in second.stdout and "not reproduced" not in second.stdout
    steps = steps_line(second.stderr)
    assert "image build skipped (cached)" in steps, steps
    assert "wheel download skipped (image cached)" in steps, steps
    assert "building the Docker image" not in second.stderr


def test_without_a_cache_each_image_is_removed_after_its_verdict(pub, base_image, docker_client):
    """Issue 39: a small repository can make a large image; nothing kept it once its verdict was in."""
    from docker.errors import ImageNotFound

    for _ in range(2):  # the second builds again: the first's image is gone
        res = reproduce(pub, "ok", base_image)
        assert res.returncode == 0, res
    built = re.findall(r"building the Docker image (cotk-repro-reproduce:[0-9a-f]+)", res.stderr)
    assert built and "image build skipped" not in steps_line(res.stderr)
    with pytest.raises(ImageNotFound):
        docker_client.images.get(built[0])


def _terminal_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_interrupted_reproduce_leaves_no_container(pub, base_image, docker_client, tmp_path, signum):
    from cotk_repro.reproduce.docker_runtime import LABEL

    record = pub["records"]["spin"]["id"]
    base_image["records"].add(record)
    log = tmp_path / "reproduce.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cotk_repro",
                "reproduce",
                str(pub["bare"]),
                "--record",
                record,
                "--runtime",
                "docker",
                "--base-image",
                base_image["image"],
                "--timeout",
                "300",
                "--allow-unsigned",
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**os.environ, "TMPDIR": str(tmp_path)},
            # Ctrl-C and a hang-up work in it even when this runs as a background job (SIGINT ignored) or under
            # nohup (SIGHUP ignored, which reproduce respects on purpose: the user asked to outlive the terminal)
            preexec_fn=_terminal_signals,
        )
    try:
        deadline = time.monotonic() + 180
        running = []
        while time.monotonic() < deadline:  # the entry's container is up and running
            running = docker_client.containers.list(
                filters={"label": [f"{LABEL}=run", f"cotk-repro.record={record}"], "status": "running"},
                ignore_removed=True,
            )
            if running or proc.poll() is not None:
                break
            time.sleep(0.2)
        assert running, f"no running reproduce container (exit {proc.poll()}):\n{log.read_text()}"
        assert proc.poll() is None
        time.sleep(0.5)
        proc.send_signal(signum)
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    note_builds(base_image, log.read_text())
    assert rc not in (0, 1, 2), (rc, log.read_text())  # interrupted: no verdict (130, as after Ctrl-C)
    assert "reproduced" not in log.read_text()
    assert our_leftovers(docker_client, base_image) == []
    assert not list(tmp_path.glob("cotk-repro-reproduce-*"))  # the work folder went too


@pytest.mark.timeout(1200)  # its reproduce is allowed 900 s
def test_default_base_image_that_cannot_be_pulled_falls_back_to_a_local_cotk_repro_base(pub, base_image, docker_client):
    """Without a registry, `python:X.Y-slim` cannot be pulled: a local cotk-repro-base image is used, and said."""
    from docker.errors import DockerException, ImageNotFound

    mm = ".".join(pub["records"]["ok"]["environment"]["python"]["version"].split(".")[:2])
    default = f"python:{mm}-slim"
    try:
        docker_client.images.get(default)
        pytest.skip(f"{default} is on this machine: nothing to fall back from")
    except ImageNotFound:
        pass
    try:
        docker_client.images.get("cotk-repro-base:bookworm")
    except ImageNotFound:
        pytest.skip("no local cotk-repro-base:bookworm to fall back to")
    try:
        docker_client.images.pull(default)
        docker_client.images.remove(default)
        pytest.skip(f"a registry is reachable here: {default} can be pulled")
    except DockerException:
        pass
    record = pub["records"]["ok"]["id"]
    base_image["records"].add(record)
    env = {k: v for k, v in os.environ.items() if k != "COTK_REPRO_BASE_IMAGE"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "reproduce",
            str(pub["bare"]),
            "--record",
            record,
            "--runtime",
            "docker",
            "--allow-unsigned",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    note_builds(base_image, proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert f"the base image {default} cannot be pulled" in said and "the local cotk-repro-base:" in said
