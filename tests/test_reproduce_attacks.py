"""Reproduce attacked the way a stranger would attack it (issue 10): every attack is a regression test.

Each test builds the malicious repository and record as an attacker would: a real git project, a
genuine record made by `cotk-repro run`, the record JSON then edited, its id recomputed with the
project's own function (`records.finalize`), and both published to a bare remote with
`cotk-repro publish --push`. The reproducer then fetches and reproduces it, and the test asserts
the outcome *and* that the attack did nothing on this host: a canary file under the test's
temporary folder was not written, a listener on 127.0.0.1 received nothing.

The Docker tests need the engine and ``COTK_REPRO_TEST_BASE_IMAGE`` (skip otherwise); the others run
anywhere. Listeners stop with their test; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import git, run_cli
from test_reproduce_support import add_bare_remote, edited_project, http_double, publish, record_in, seeded_cache

from cotk_repro.reproduce.engine import list_images

RECORDS_REF = "refs/heads/cotk-repro-records"

#: the entry of every attacker project: writes the canary when it runs on a machine without
#: author.txt (the reproducer's), and reports the uid it ran as
ENTRY = """import json, os
CANARY = {canary!r}
if not os.path.exists("author.txt"):
    try:
        open(CANARY, "w").write("the entry ran here")
    except OSError:
        pass
json.dump({{"tokens": 6.0, "uid": float(os.getuid())}}, open("result.json", "w"))
"""

#: a build backend that attacks whatever machine runs it, then builds the package with setuptools
EVIL_BACKEND = """import os, socket, time
CANARY = {canary!r}
try:
    open(CANARY, "w").write("the build backend ran here")
except OSError:
    pass
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
except OSError:
    pass
time.sleep({sleep})
from setuptools import build_meta as _setuptools
build_wheel = _setuptools.build_wheel
get_requires_for_build_wheel = _setuptools.get_requires_for_build_wheel
prepare_metadata_for_build_wheel = _setuptools.prepare_metadata_for_build_wheel
"""
EVIL_PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "evilbackend"
backend-path = ["."]

[project]
name = "evilpkg"
version = "1.0"

[tool.setuptools]
packages = ["evilpkg"]
"""


# -- the attacker's tools -------------------------------------------------------------------------


@contextmanager
def listener():
    """A TCP listener on 127.0.0.1 recording every connection (and the first bytes sent); answers HTTP 200."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    hits: list[bytes] = []
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            try:
                conn, _addr = srv.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            conn.settimeout(1)
            try:
                hits.append(conn.recv(4096))
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi")
            except OSError:
                hits.append(b"")
            finally:
                conn.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1], hits
    finally:
        stop.set()
        thread.join(5)
        srv.close()


def attacker_project(base: Path, name: str, canary: Path, edit=None, files=None, links=None) -> dict:
    """What an attacker publishes: a repository, a genuine record of it, the record edited by ``edit``."""
    return edited_project(
        base, name, {"main.py": ENTRY.format(canary=str(canary)), **(files or {})}, edit, links, user="mallory"
    )


def reproduce(project: dict, *args: str, env: dict | None = None, timeout: float = 600, allow_unsigned: bool = True):
    """`cotk-repro reproduce` of the attacker's record, without a terminal (stdin is /dev/null).

    With ``--allow-unsigned`` unless told otherwise: the attacker's records are unsigned, and these tests are
    about what happens after the signature check (tested in section 0 and in tests/test_signing.py).
    """
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "reproduce",
            str(project["bare"]),
            "--record",
            project["record"]["id"],
            *args,
            *(["--allow-unsigned"] if allow_unsigned else []),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )
    return proc


def could_not_run(proc, *words: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "could not run" in out, out
    assert "unexpected" not in out and "Traceback" not in out, out
    for w in words:
        assert w in " ".join(out.split()), out


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture
def canary(tmp_path) -> Path:
    return tmp_path / "canary.txt"


@pytest.fixture(scope="module")
def docker_image():
    """The test base image and a Docker client (the tests remove the images they build, see forget_images)."""
    image = os.environ.get("COTK_REPRO_TEST_BASE_IMAGE")
    if not image:
        pytest.skip("no Docker base image: COTK_REPRO_TEST_BASE_IMAGE is unset")
    try:
        import docker

        client = docker.from_env(timeout=120)
        client.ping()
        client.images.get(image)
    except Exception as exc:
        pytest.skip(f"no Docker engine or base image ({type(exc).__name__}: {str(exc)[:100]})")
    yield {"image": image, "client": client}
    client.close()


#: the docker case of a test over runtimes (its Docker fixture is asked for by name): marked, so that it runs with
#: this module's other Docker tests (tests/conftest.py)
DOCKER = pytest.param("docker", marks=pytest.mark.docker)


def docker_args(info: dict, *extra: str) -> list[str]:
    return ["--runtime", "docker", "--base-image", info["image"], *extra]


def forget_images(info: dict, proc) -> None:
    """Remove the images a reproduce built (named in its output)."""
    import re

    for tag in set(re.findall(r"building the Docker image (cotk-repro-reproduce:[0-9a-f]+)", proc.stderr)):
        try:
            info["client"].images.remove(tag, force=True)
        except Exception:
            pass


# -- 0. an unsigned record is refused before anything of it runs -----------------------------------


def _strip_signature(project: dict, tmp_path: Path) -> dict:
    """The attacker edits the signed record, recomputes its id and puts it on the records ref without a
    signature (the old one no longer covers it), removing the original's signature too."""
    from cotk_repro.records import finalize
    from cotk_repro.remote.gitrecords import add_to_ref

    bare, hexid = project["bare"], project["record"]["id"].removeprefix("sha256:")
    clone = tmp_path / "stripper"
    subprocess.run(["git", "clone", "-q", "--bare", str(project["bare"]), str(clone)], check=True)
    record = json.loads(git(clone, "show", f"{RECORDS_REF}:records/{hexid}/record.json"))
    record["results"]["tokens"]["value"] = 99.0
    record = finalize(record)
    new_hex = record["id"].removeprefix("sha256:")
    add_to_ref(clone, RECORDS_REF, {f"records/{new_hex}/record.json": json.dumps(record).encode()}, message="unsigned")
    git(
        clone,
        "update-ref",
        RECORDS_REF,
        git(clone, "commit-tree", "-p", RECORDS_REF, "-m", "no signatures", _tree_without_signatures(clone)),
    )
    git(clone, "push", "-q", "--force", str(bare), f"{RECORDS_REF}:{RECORDS_REF}")
    return {**project, "record": record}


def _tree_without_signatures(repo: Path) -> str:
    """The records ref's tree with every ``record.sig`` left out."""
    index = repo / "strip-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", RECORDS_REF], cwd=repo, env=env, check=True)
    sigs = [p for p in git(repo, "ls-tree", "-r", "--name-only", RECORDS_REF).split() if p.endswith("record.sig")]
    if sigs:
        subprocess.run(["git", "rm", "-q", "--cached", *sigs], cwd=repo, env=env, check=True)
    return subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_unsigned_record_is_could_not_run_before_anything_runs(tmp_path, canary, monkeypatch):
    """A record stripped of its signature is refused even on a host runtime the user trusts; the flag lets it run."""
    from signing_support import make_key

    from cotk_repro.core.userconfig import cache_dir

    # the user cache stays where it was (the tests' small venv is there: a new HOME built it again, ~15 s)
    monkeypatch.setenv("COTK_REPRO_CACHE", str(cache_dir()))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the author signs with a key of their own
    monkeypatch.setenv("COTK_REPRO_SIGNING_KEY", str(make_key(tmp_path / "keys")))
    genuine = attacker_project(tmp_path, "unsigned", canary)
    hexid = genuine["record"]["id"].removeprefix("sha256:")
    assert git(genuine["bare"], "show", f"{RECORDS_REF}:records/{hexid}/record.sig").startswith("-----BEGIN SSH")
    monkeypatch.setenv("COTK_REPRO_SIGNING_KEY", "")
    project = _strip_signature(genuine, tmp_path)
    files = git(project["bare"], "ls-tree", "-r", "--name-only", RECORDS_REF).split()
    assert f"records/{project['record']['id'].removeprefix('sha256:')}/record.json" in files
    assert not any(f.endswith("record.sig") for f in files)
    for record in (project, genuine):  # the edited record and the original, now unsigned too
        proc = reproduce(record, "--runtime", "local", "--trust-remote-code", "--json", allow_unsigned=False)
        could_not_run(proc, "is unsigned", "--allow-unsigned")
        verdict = json.loads(proc.stdout)
        assert verdict["verdict"] == "could not run" and "unsigned" in verdict["error"]
        assert "checking out" not in proc.stderr, proc.stderr  # stopped before the code was checked out
        assert not canary.exists()
    # with the flag it runs (and the canary shows that this test's canary works)
    proc = reproduce(project, "--runtime", "local", "--trust-remote-code", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 6.0 measured against the edited 99.0
    assert json.loads(proc.stdout)["record_signature"]["status"] == "unsigned" and "checking out" in proc.stderr
    assert canary.read_text() == "the entry ran here"


# -- 1. build backends never run on the host -----------------------------------------------------


def _with_evilpkg(record):
    record["environment"]["packages"].append({"name": "evilpkg", "version": "1.0", "install": "editable"})


def _evil_files(canary: Path, port: int, sleep: float = 0) -> dict:
    return {
        "evilpkg/pyproject.toml": EVIL_PYPROJECT,
        "evilpkg/evilbackend.py": EVIL_BACKEND.format(canary=str(canary), port=port, sleep=sleep),
        "evilpkg/evilpkg/__init__.py": "VALUE = 1\n",
    }


@pytest.mark.docker
@pytest.mark.slow
def test_build_backend_runs_in_the_sandbox_not_on_the_host(tmp_path, canary, docker_image):
    with listener() as (port, hits):
        project = attacker_project(tmp_path, "backend", canary, _with_evilpkg, _evil_files(canary, port))
        proc = reproduce(project, *docker_args(docker_image), "--json")
        forget_images(docker_image, proc)
        assert not canary.exists(), canary.read_text()
        assert hits == []
    # the package was built (in the container) and installed: the reproduction itself went through
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["metrics"] and verdict["rerun"]["results"]["tokens"]["value"] == 6.0
    assert any(p["name"] == "evilpkg" for p in verdict_packages(verdict, project))


def verdict_packages(verdict: dict, project: dict) -> list[dict]:
    """The rerun's packages: the recorded ones minus those the verdict says differ or are missing."""
    missing = {d["what"].split()[-1] for d in verdict["environment_differences"] if d.get("b") in (None, "")}
    return [p for p in project["record"]["environment"]["packages"] if p["name"] not in missing]


def _sdist(folder: Path, canary: Path, port: int) -> Path:
    """An sdist-only package whose build backend attacks the machine that builds it."""
    import tarfile

    src = folder / "sdistonly_pkg-1.0"
    files = {
        "pyproject.toml": EVIL_PYPROJECT.replace('"evilpkg"', '"sdistonly_pkg"').replace(
            'name = "sdistonly_pkg"', 'name = "sdistonly-pkg"'
        ),
        "evilbackend.py": EVIL_BACKEND.format(canary=str(canary), port=port, sleep=0),
        "sdistonly_pkg/__init__.py": "VALUE = 2\n",
        "PKG-INFO": "Metadata-Version: 2.1\nName: sdistonly-pkg\nVersion: 1.0\n",
    }
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    archive = folder / "sdistonly_pkg-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(str(src), arcname=src.name)
    shutil.rmtree(src)
    return archive


@pytest.mark.docker
@pytest.mark.slow
def test_sdist_only_package_is_downloaded_but_built_in_the_sandbox(tmp_path, canary, docker_image):
    """The index has only an sdist: the host downloads it without preparing it (pip download would run
    its backend for the metadata), the sandbox builds it."""
    links = tmp_path / "links"
    links.mkdir()
    with listener() as (port, hits):
        _sdist(links, canary, port)

        def edit(record):
            record["environment"]["packages"].append({"name": "sdistonly-pkg", "version": "1.0"})

        project = attacker_project(tmp_path, "sdist", canary, edit)
        proc = reproduce(
            project,
            *docker_args(docker_image),
            "--json",
            env={"PIP_FIND_LINKS": str(links), "COTK_REPRO_CACHE": str(seeded_cache(tmp_path / "cache"))},
        )
        forget_images(docker_image, proc)
        assert not canary.exists() and hits == []
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "building a wheel of sdistonly-pkg==1.0 (no wheel on the index) in the sandbox" in proc.stderr
    assert list((tmp_path / "cache").glob("wheelhouse/*/sdistonly_pkg-1.0-*.whl"))


@pytest.mark.docker
@pytest.mark.slow
def test_a_build_that_never_ends_is_stopped_at_the_time_limit(tmp_path, canary, docker_image):
    from cotk_repro.reproduce.docker_runtime import leftover_containers

    with listener() as (port, hits):
        project = attacker_project(tmp_path, "sleepy", canary, _with_evilpkg, _evil_files(canary, port, sleep=600))
        t0 = time.monotonic()
        proc = reproduce(project, *docker_args(docker_image, "--timeout", "20"))
        elapsed = time.monotonic() - t0
        assert not canary.exists() and hits == []
    could_not_run(proc, "ran past the time limit of 20 s")
    assert elapsed < 200, elapsed
    builds = [
        c
        for c in leftover_containers(docker_image["client"])
        if (c.labels or {}).get("cotk-repro.reproduce") == "build"
    ]
    assert builds == []


@pytest.mark.docker
@pytest.mark.slow
def test_image_build_past_the_time_limit_is_stopped_and_leaves_nothing(tmp_path, canary, docker_image):
    """--timeout bounds the image build too: the running step is killed, its containers and images go."""
    import io
    import re
    import uuid

    from docker.errors import NotFound

    project = attacker_project(tmp_path, "slowbuild", canary)
    # Every record here has this machine's packages, and Docker's layer cache would take their installation from
    # another image built on the same base: build on a base of this test's own (the test base image and one label),
    # so that this build installs them all anew; other tests' images, maybe in use, are left alone.
    client = docker_image["client"]
    base = f"cotk-repro-test-nocache:{uuid.uuid4().hex[:12]}"
    client.images.build(
        fileobj=io.BytesIO(f"FROM {docker_image['image']}\nLABEL cotk-repro-test.nocache={base}\n".encode()),
        tag=base,
        network_mode="none",
        rm=True,
    )
    tmpdir = tmp_path / "t"
    tmpdir.mkdir()
    t0 = time.monotonic()
    # 3 s: installing the recorded packages anew takes about 10 s here when the machine is idle
    try:
        proc = reproduce(
            project,
            *docker_args({**docker_image, "image": base}, "--timeout", "3", "--keep"),
            env={"TMPDIR": str(tmpdir)},
        )
        elapsed = time.monotonic() - t0
        forget_images(docker_image, proc)
        could_not_run(proc, "building the Docker image ran past the time limit of 3 s and was stopped")
        assert elapsed < 300, elapsed
        log = next(tmpdir.glob("cotk-repro-reproduce-*/logs/build.log")).read_text()
        for cid in re.findall(r"^ ---> Running in ([0-9a-f]{12,64})\s*$", log, re.M):
            with pytest.raises(NotFound):
                client.containers.get(cid)
        dangling = {i.id.removeprefix("sha256:")[:12] for i in list_images(client, filters={"dangling": True})}
        assert not dangling & {x[:12] for x in re.findall(r"^ ---> ([0-9a-f]{12,64})\s*$", log, re.M)}, log
    finally:
        try:
            client.images.remove(base, force=True)
        except Exception:
            pass


def test_venv_runtime_refuses_a_record_that_needs_a_build_without_trust(tmp_path, canary):
    """With consent to run the entry but not --trust-remote-code, a package build is still refused."""
    from cotk_repro.reproduce.core import ReproduceOptions
    from cotk_repro.reproduce.core import reproduce as do_reproduce

    with listener() as (port, hits):
        project = attacker_project(tmp_path, "backend-venv", canary, _with_evilpkg, _evil_files(canary, port))
        asked = []
        outcome = do_reproduce(
            str(project["bare"]),
            ReproduceOptions(
                record=project["record"]["id"],
                runtime="venv",
                allow_unsigned=True,
                confirm=lambda c: asked.append(c) or True,
            ),
        )
        assert not canary.exists() and hits == []
    assert len(asked) == 1 and outcome.exit_code == 2
    assert "evilpkg==1.0" in outcome.error.message and "--runtime docker" in outcome.error.hint


# -- 2. the lock is validated, never handed to pip as is ---------------------------------------------


@pytest.mark.parametrize(
    "entry, words",
    [
        ({"name": "evil2 @ http://127.0.0.1:{port}/evil2-1.0.tar.gz#", "version": "1.0"}, ["evil2 @ http"]),
        ({"name": "evil2", "version": "1.0 @ http://127.0.0.1:{port}/x.tar.gz"}, ["evil2", "not an exact version"]),
        ({"name": "--index-url=http://127.0.0.1:{port}/", "version": "1.0"}, ["--index-url"]),
        ({"name": "Evil_Pkg", "version": "1.0"}, ["Evil_Pkg", "canonical"]),
        ({"name": "evil2", "version": ">=1.0"}, ["evil2", "exact version"]),
        ({"name": "evil2", "version": "1.0; python_version>'3'"}, ["evil2"]),
        ({"name": "evil2", "version": "1.0", "install": "-e ../../x"}, ["evil2", "install kind"]),
    ],
    ids=["url-name", "url-version", "option", "not-canonical", "range", "marker", "install-kind"],
)
def test_lock_entries_that_are_not_name_and_exact_version_are_refused(entry, words):
    from cotk_repro.reproduce import ReproduceError
    from cotk_repro.reproduce.lock import validate_lock

    entry = {k: v.format(port=1) for k, v in entry.items()}
    with pytest.raises(ReproduceError) as info:
        validate_lock([{"name": "numpy", "version": "1.26.4"}, entry])
    for w in words:
        assert w in info.value.message
    assert [p.pin for p in validate_lock([{"name": "torch", "version": "2.13.0+cpu"}])] == ["torch==2.13.0+cpu"]


@pytest.mark.parametrize("runtime", ["venv", DOCKER])
def test_url_requirement_is_could_not_run_and_fetches_nothing(tmp_path, canary, runtime, request):
    args = ["--runtime", "venv", "--trust-remote-code"]
    if runtime == "docker":
        args = docker_args(request.getfixturevalue("docker_image"))
    with listener() as (port, hits):

        def edit(record):
            record["environment"]["packages"].append(
                {"name": f"evil2 @ http://127.0.0.1:{port}/evil2-1.0.tar.gz#", "version": "1.0"}
            )

        project = attacker_project(tmp_path, f"url-{runtime}", canary, edit)
        proc = reproduce(project, *args, env={"PIP_NO_INDEX": "1"})
        assert hits == [] and not canary.exists()
    could_not_run(proc, "evil2 @ http://127.0.0.1", "cannot be installed")


# -- 3. the recorded Dockerfile is never built ----------------------------------------------------


@pytest.mark.docker
@pytest.mark.slow
def test_recorded_dockerfile_is_not_built(tmp_path, canary, docker_image):
    import hashlib

    with listener() as (port, hits):

        def edit(record):
            record["environment"]["dockerfile"] += f"USER root\nADD http://127.0.0.1:{port}/x /x\nRUN sleep 300\n"

        project = attacker_project(tmp_path, "dockerfile", canary, edit)
        t0 = time.monotonic()
        proc = reproduce(project, *docker_args(docker_image), "--json")
        elapsed = time.monotonic() - t0
        forget_images(docker_image, proc)
        assert hits == []  # the daemon fetched nothing (no ADD http://)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["rerun"]["results"]["uid"]["value"] != 0.0  # not USER root
    assert elapsed < 300  # no RUN sleep 300
    recorded = project["record"]["environment"]["dockerfile"]
    warning = " ".join(proc.stderr.split())
    assert "differs from the one this cotk-repro renders" in warning
    assert hashlib.sha256(recorded.encode()).hexdigest() in warning


# -- 4. host runtimes ask first ---------------------------------------------------------------------


@pytest.mark.parametrize("runtime", ["local", "venv"])
def test_host_runtime_without_consent_runs_and_builds_nothing(tmp_path, canary, runtime):
    project = attacker_project(tmp_path, f"consent-{runtime}", canary)
    cache = tmp_path / "cache"
    proc = reproduce(project, "--runtime", runtime, env={"COTK_REPRO_CACHE": str(cache)})
    could_not_run(proc, "--trust-remote-code", "nothing was run")
    assert not canary.exists()
    assert not (cache / "venvs").exists() and not (cache / "wheelhouse").exists()
    # with the flag, the same record runs (and the canary shows that this test's canary works)
    proc = reproduce(
        project,
        "--runtime",
        runtime,
        "--trust-remote-code",
        env={"COTK_REPRO_CACHE": str(cache)} if runtime == "local" else None,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert canary.read_text() == "the entry ran here"


def test_a_cloned_checkout_that_ships_records_runs_nothing_on_the_host_without_consent(tmp_path, canary):
    """`reproduce ./` offers a checkout's own records when it has no records ref; a stranger's repository can
    ship such records (`.cotk-repro/runs` committed). They go through the same consent check: without
    --trust-remote-code and without a terminal, nothing runs and the canary stays unwritten."""
    project = attacker_project(tmp_path, "shipped-records", canary)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(project["bare"]), str(clone)], check=True)
    for ref in subprocess.run(
        ["git", "-C", str(clone), "for-each-ref", "--format=%(refname)"], check=True, capture_output=True, text=True
    ).stdout.split():
        if ref.endswith("cotk-repro-records"):
            subprocess.run(["git", "-C", str(clone), "update-ref", "-d", ref], check=True)
    shutil.copytree(project["root"] / ".cotk-repro" / "runs", clone / ".cotk-repro" / "runs")
    for runtime in ("local", "venv"):
        proc = subprocess.run(
            [sys.executable, "-m", "cotk_repro", "reproduce", str(clone), "--runtime", runtime],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=600,
        )
        could_not_run(proc, "--trust-remote-code", "nothing was run")
        assert not canary.exists()
    # with consent the shipped record is the candidate and runs (the canary works)
    proc = subprocess.run(
        [sys.executable, "-m", "cotk_repro", "reproduce", str(clone), "--runtime", "local", "--trust-remote-code"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "unpublished local record" in proc.stderr, proc.stdout + proc.stderr
    assert canary.read_text() == "the entry ran here"


def test_interactive_prompt_names_repository_commit_and_user(tmp_path, canary):
    """On a terminal the user is asked; answering no runs nothing."""
    import getpass
    import pty
    import select

    project = attacker_project(tmp_path, "prompt", canary)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "reproduce",
            str(project["bare"]),
            "--record",
            project["record"]["id"],
            "--runtime",
            "local",
            "--allow-unsigned",
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "COLUMNS": "400"},
        close_fds=True,
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 120
    try:
        while b"Run it?" not in seen and time.monotonic() < deadline:
            ready, _w, _x = select.select([master], [], [], 1)
            if ready:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
        assert b"Run it?" in seen, seen.decode(errors="replace")
        os.write(master, b"n\n")
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = " ".join(seen.decode(errors="replace").split())
    assert str(project["bare"]) in text and project["record"]["code"]["commit"][:12] in text
    assert getpass.getuser() in text and f"uid {os.getuid()}" in text
    assert rc == 2 and not canary.exists()


# -- 5. paths stay inside the checkout --------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [
        ("entry", "../../../../x/host.py"),
        ("entry", "{host}"),
        ("cwd", "../../.."),
        ("result_file", "../../../../x/result.json"),
    ],
    ids=["entry-traversal", "entry-absolute", "cwd", "result-file"],
)
@pytest.mark.parametrize("runtime", ["local", DOCKER])
def test_paths_out_of_the_checkout_are_refused(tmp_path, canary, field, value, runtime, request):
    args = ["--runtime", "local", "--trust-remote-code"]
    if runtime == "docker":
        args = docker_args(request.getfixturevalue("docker_image"))
    host = tmp_path / "x" / "host.py"  # the checkout lands in TMPDIR/cotk-repro-reproduce-*/context/code
    host.parent.mkdir()
    host.write_text(f"open({str(canary)!r}, 'w').write('host script ran')\n")

    def edit(record):
        record["command"][field] = value.format(host=host)

    project = attacker_project(tmp_path, f"path-{runtime}-{field}", canary, edit)
    tmpdir = tmp_path / "t"
    tmpdir.mkdir()
    proc = reproduce(project, *args, env={"TMPDIR": str(tmpdir)})
    could_not_run(proc, "outside the checkout")
    assert not canary.exists()


@pytest.mark.parametrize("runtime", ["local", DOCKER])
@pytest.mark.parametrize("target", ["absolute", "relative"])
def test_symlink_out_of_the_checkout_is_could_not_run(tmp_path, canary, runtime, target, request):
    args = ["--runtime", "local", "--trust-remote-code"]
    if runtime == "docker":
        args = docker_args(request.getfixturevalue("docker_image"))
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    link = str(secret) if target == "absolute" else "../../../../../../../../../../" + str(secret).lstrip("/")
    project = attacker_project(tmp_path, f"link-{runtime}-{target}", canary, links={"data.txt": link})
    proc = reproduce(project, *args)
    could_not_run(proc, "symbolic link data.txt", "points outside the checkout")
    assert not canary.exists()


# -- 6. the token goes only where the user pointed -------------------------------------------------


def test_submit_never_uses_the_projects_dashboard_url(tmp_path, canary):
    def answer(method, path, headers, body):
        return 201, {"id": 1, "url": "http://dash/r/1"}

    with http_double(answer) as (attacker, stolen), http_double(answer) as (mine, received):
        project = attacker_project(
            tmp_path, "token", canary, files={"cotk-repro.toml": f'[dashboard]\nurl = "{attacker}"\n'}
        )
        env = {"COTK_REPRO_DASHBOARD_TOKEN": "user-secret-token", "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
        proc = reproduce(project, "--runtime", "local", "--trust-remote-code", "--submit", env=env)
        assert proc.returncode in (0, 1), proc.stderr
        assert "no dashboard to submit to" in proc.stderr and attacker in proc.stderr  # shown, not used
        proc = reproduce(project, "--runtime", "local", "--trust-remote-code", "--submit", "--dashboard", mine, env=env)
        assert proc.returncode in (0, 1), proc.stderr
    assert stolen == []
    assert len(received) == 1 and received[0]["headers"].get("Authorization") == "Bearer user-secret-token"


# -- 7. Docker API failures are verdicts ------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.slow
def test_docker_api_failure_is_could_not_run_naming_the_step(tmp_path, canary, docker_image):
    project = attacker_project(tmp_path, "api", canary)
    # more CPUs than the machine has: within cotk-repro's own bounds (a ceiling of 4096), refused by the engine
    # when the container is made ("range of CPUs is from 0.01 to N"); --memory 1k, which did this before, is now
    # below the floor cotk-repro checks itself (tests/test_reproduce_limits.py)
    proc = reproduce(project, *docker_args(docker_image, "--cpus", "4000"))
    forget_images(docker_image, proc)
    could_not_run(proc, "the Docker engine failed at")


# -- 8. what is published ------------------------------------------------------------------------------


def _published_files(bare: Path) -> list[str]:
    return subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", "refs/heads/cotk-repro-records"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


SMALL_ENTRY = "import json\njson.dump({'x': 1.0}, open('result.json', 'w'))\n"


@pytest.mark.parametrize("opt_in", [False, True])
def test_run_logs_are_published_only_when_asked(tmp_path, make_project, opt_in):
    root = make_project(
        {
            "main.py": "print('SECRET-printed-by-the-entry')\n" + SMALL_ENTRY,
            **({"cotk-repro.toml": "[publish]\nlogs = true\n"} if opt_in else {}),
        }
    )
    bare = add_bare_remote(root, tmp_path / "remotes", "me/proj")
    record = record_in(root)
    assert publish(root, record["id"], "--push").returncode == 0
    names = {Path(p).name for p in _published_files(bare)}
    assert "record.json" in names and "result.json" in names
    assert ("stdout.log" in names) is opt_in and ("stderr.log" in names) is opt_in


@pytest.mark.parametrize(
    "url, published",
    [
        ("https://user:pass@[::1]/x.git", "https://[::1]/x.git"),
        ("https://user:tok@[2001:db8::1]:8443/a/x.git", "https://[2001:db8::1]:8443/a/x.git"),
        ("https://ghp_token@github.com/a/x.git", "https://github.com/a/x.git"),
        ("ssh://git@example.com:2222/a/x.git", "ssh://git@example.com:2222/a/x.git"),
        ("git@example.com:a/x.git", "git@example.com:a/x.git"),
        ("file://{home}/remotes/x.git", "local:x.git"),
        ("{home}/remotes/x.git", "local:x.git"),
    ],
)
def test_remote_urls_are_recorded_without_credentials_or_local_paths(make_project, url, published):
    root = make_project({"main.py": SMALL_ENTRY})
    git(root, "remote", "add", "origin", url.format(home=str(Path.home())))
    assert record_in(root)["code"]["remote_url"] == published


def test_malformed_remote_url_is_an_error_naming_the_remote(make_project):
    root = make_project({"main.py": SMALL_ENTRY})
    git(root, "remote", "add", "upstream", "https://user:pass@[badhost/x.git")
    res = run_cli("run", "-q", cwd=root)
    assert res.returncode == 2, res
    assert "'upstream' has a malformed URL" in res.stderr and "unexpected" not in res.stderr
