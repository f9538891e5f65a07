"""The record's Python runs in the sandbox (issue 38): the Docker runtime takes a base image with the record's
Python minor version, or says in one sentence that there is none (exit 2, before any build); the venv runtime
takes ``--python PATH`` of that minor version; ``cotk-repro demo`` under Python 3.13 reproduces in a 3.13 image.

Real parts: the Docker engine with the images ``scripts/base-image.sh`` builds (``cotk-repro-base:bookworm``,
Python 3.11, and ``cotk-repro-base:trixie``, Python 3.13; tests that need one skip without it), real records made
by ``cotk-repro run`` (a record of another Python is a genuine record edited as a stranger can, its id
recomputed), real interpreters (pyenv's 3.13 where the machine has it, ``PYTHON313=PATH`` otherwise).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git
from test_reproduce_support import SMALL_DEPS, add_bare_remote, edited_project, publish, record_in

ENTRY = """import json, platform
json.dump({"tokens": 6.0}, open("result.json", "w"))
print("python", platform.python_version())
"""
FILES = {"main.py": ENTRY}
BOOKWORM, TRIXIE = "cotk-repro-base:bookworm", "cotk-repro-base:trixie"


def as_python(mm: str, micro: str = "1"):
    """An edit of a record: it says it was made with Python ``mm``."""

    def edit(record):
        record["environment"]["python"]["version"] = f"{mm}.{micro}"
        record["environment"]["python"]["major_minor"] = mm

    return edit


def reproduce(project: dict, *args: str, env: dict | None = None, timeout: float = 900):
    """`cotk-repro reproduce` of the project's record, without a terminal; COTK_REPRO_BASE_IMAGE unset unless
    ``env`` sets it (the default base image is what is tested)."""
    full_env = {k: v for k, v in os.environ.items() if k != "COTK_REPRO_BASE_IMAGE"}
    full_env.update(env or {})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "reproduce",
            str(project["bare"]),
            "--record",
            project["record"]["id"],
            "--allow-unsigned",
            *args,
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )


def one_sentence_exit_2(proc, *words: str) -> str:
    """The reproduce could not run, said in an ``Error:`` line holding ``words``, with no traceback; returns it."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out and "unexpected" not in out, out
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, out
    for w in words:
        assert w in errors[0], errors[0]
    return errors[0]


def find_python(mm: str) -> str | None:
    """An interpreter of Python ``mm``: ``PYTHON<XY>``, ``pythonX.Y`` on PATH, else pyenv's newest ``mm``."""
    candidates = [os.environ.get("PYTHON" + mm.replace(".", "")), shutil.which(f"python{mm}")]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python3") for p in sorted(pyenv.glob(f"{mm}.*"), reverse=True)]
    for exe in candidates:
        if exe and os.access(exe, os.X_OK):
            out = subprocess.run(
                [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
            )
            if out.stdout.strip() == mm:
                return exe
    return None


def venv_of(mm: str, full: bool) -> str:
    """A virtual environment of Python ``mm`` with cotk-repro from a wheel of this checkout: with its declared
    dependencies (``full``, as a user installs it), else with the few `cotk-repro run` needs (small records).
    Built once per source state and interpreter under the user cache dir (tests/venv_cache.py)."""
    from venv_cache import cached_venv

    exe = find_python(mm)
    if exe is None:
        pytest.skip(f"no Python {mm} on this machine (PYTHON{mm.replace('.', '')}=PATH names one)")
    if full:
        return cached_venv(f"test-venvs-py{mm}-full", (), python=exe, self_deps=True)
    return cached_venv(f"test-venvs-py{mm}-small", ((*SMALL_DEPS,),), python=exe)


@pytest.fixture(scope="module")
def engine():
    """A Docker client, and which of the two images of scripts/base-image.sh are there."""
    try:
        import docker

        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:
        pytest.skip(f"no Docker engine ({type(exc).__name__}: {str(exc)[:100]})")
    have = set()
    for tag in (BOOKWORM, TRIXIE):
        try:
            client.images.get(tag)
            have.add(tag)
        except Exception:
            pass
    yield client, have
    client.close()


def forget_images(client, proc) -> None:
    """Remove the images a reproduce built (named in its output) and their environment caches."""
    from cotk_repro.core.userconfig import cache_dir

    for tag in set(re.findall(r"building the Docker image (cotk-repro-reproduce:[0-9a-f]+)", proc.stderr)):
        try:
            key = (client.images.get(tag).labels or {}).get("cotk-repro.key")
            if key:
                (cache_dir() / "images" / f"{key}.json").unlink(missing_ok=True)
            client.images.remove(tag, force=True)
        except Exception:
            pass


# -- which image has which Python (no engine) -------------------------------------------------------------


def test_an_images_python_is_read_from_its_label_else_from_its_name():
    from cotk_repro.reproduce.base_images import PYTHON_LABEL, describe_available, image_python

    assert image_python({PYTHON_LABEL: "3.13"}, ["anything:latest"]) == "3.13"
    assert image_python({}, [BOOKWORM]) == "3.11"  # imported before the label existed
    assert image_python(None, [TRIXIE]) == "3.13"
    assert image_python({}, ["python:3.12-slim"]) == "3.12"
    assert image_python({}, ["docker.io/library/python:3.10.14-slim-bookworm"]) == "3.10"
    assert image_python({PYTHON_LABEL: "3.13; rm -rf /"}, ["mine:1"]) is None  # a label that is no version
    assert image_python({}, ["ubuntu:24.04", "cotk-repro-base:sid"]) is None
    said = describe_available({"3.13": [TRIXIE], "3.11": [BOOKWORM, "python:3.11-slim"]})
    assert said == f"the local images have Python 3.11 ({BOOKWORM}) and 3.13 ({TRIXIE})"


# -- the Docker runtime: an image with the record's Python, or one sentence -------------------------------


@pytest.mark.docker
def test_a_python_312_record_with_only_311_and_313_images_is_refused_before_any_build(tmp_path, engine):
    from docker.errors import DockerException, ImageNotFound

    from cotk_repro.reproduce.base_images import local_pythons

    client, have = engine
    if have != {BOOKWORM, TRIXIE}:
        pytest.skip(f"needs {BOOKWORM} and {TRIXIE} (bash scripts/base-image.sh); here: {sorted(have) or 'none'}")
    if "3.12" in local_pythons(client):
        pytest.skip(f"an image with Python 3.12 is on this machine: {local_pythons(client)['3.12']}")
    try:
        client.images.pull("python:3.12-slim")
        client.images.remove("python:3.12-slim")
        pytest.skip("a registry is reachable here: python:3.12-slim can be pulled")
    except (DockerException, ImageNotFound):
        pass
    project = edited_project(tmp_path, "py312", FILES, as_python("3.12"))
    proc = reproduce(project, "--runtime", "docker")
    forget_images(client, proc)
    line = one_sentence_exit_2(
        proc,
        "the record needs Python 3.12",
        "python:3.12-slim cannot be pulled",
        f"Python 3.11 ({BOOKWORM}) and 3.13 ({TRIXIE})",
        "--base-image IMAGE",
        "--runtime venv --python PATH",
    )
    assert "pip" not in line
    # nothing of the record was downloaded or built: the sentence came first
    assert "downloading" not in proc.stderr and "building the Docker image" not in proc.stderr, proc.stderr
    assert "Step " not in proc.stderr


@pytest.mark.docker
def test_a_base_image_of_another_python_is_refused_naming_both_versions(tmp_path, engine):
    client, have = engine
    if TRIXIE not in have:
        pytest.skip(f"needs {TRIXIE} (bash scripts/base-image.sh trixie)")
    project = edited_project(tmp_path, "py311", FILES)  # made with this test run's Python
    mm = project["record"]["environment"]["python"]["major_minor"]
    if mm == "3.13":
        pytest.skip("the record is of Python 3.13, which the trixie image has")
    for how in (["--base-image", TRIXIE], []):  # the flag, and COTK_REPRO_BASE_IMAGE (the fleet worker's)
        proc = reproduce(project, "--runtime", "docker", *how, env={} if how else {"COTK_REPRO_BASE_IMAGE": TRIXIE})
        forget_images(client, proc)
        one_sentence_exit_2(
            proc,
            f"the base image {TRIXIE} has Python 3.13 and the record needs Python {mm}",
            "--runtime venv --python PATH",
        )
        assert "building the Docker image" not in proc.stderr, proc.stderr


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_python_313_record_is_reproduced_in_the_trixie_image(tmp_path, engine):
    """A genuine record of Python 3.13 (`cotk-repro run` under 3.13), reproduced with the default base image:
    python:3.13-slim where it can be pulled, else the local trixie image, said in a warning."""
    client, have = engine
    py313 = venv_of("3.13", full=False)
    from docker.errors import ImageNotFound

    try:
        client.images.get("python:3.13-slim")
        expected = "python:3.13-slim"
    except ImageNotFound:
        if TRIXIE not in have:
            pytest.skip(f"needs {TRIXIE} (bash scripts/base-image.sh trixie) or python:3.13-slim")
        expected = None  # pulled, or the trixie image when that fails
    root = tmp_path / "work" / "py313"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in {".gitignore": ".cotk-repro/\nresult.json\n__pycache__/\n", **FILES}.items():
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    bare = add_bare_remote(root, tmp_path / "remotes", "alice/py313")
    record = record_in(root, py313)
    assert record["environment"]["python"]["major_minor"] == "3.13"
    res = publish(root, record["id"], "--push")
    assert res.returncode == 0, res
    proc = reproduce({"bare": bare, "record": record}, "--runtime", "docker", "--json", timeout=1500)
    forget_images(client, proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "reproduced"
    assert verdict["rerun"]["python"].startswith("3.13."), verdict["rerun"]
    said = " ".join(proc.stderr.split())
    if expected is None and "pulling the base image python:3.13-slim" in said and "cannot be pulled" in said:
        assert f"the local {TRIXIE} (Python 3.13) was used instead" in said, said


# -- the venv runtime: --python PATH -----------------------------------------------------------------------


def test_venv_python_of_another_minor_is_refused_in_one_sentence(tmp_path):
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    other = "3.13" if here == "3.12" else "3.12"  # a minor that is not this Python's, whichever this one is
    project = edited_project(tmp_path, "venv-other", FILES, as_python(other))
    proc = reproduce(project, "--runtime", "venv", "--trust-remote-code", "--python", sys.executable)
    one_sentence_exit_2(proc, f"--python {sys.executable} is Python {here} and the record needs Python {other}")
    proc = reproduce(project, "--runtime", "venv", "--trust-remote-code", "--python", str(tmp_path / "nope"))
    one_sentence_exit_2(proc, "is not an executable file")
    proc = reproduce(project, "--runtime", "docker", "--python", sys.executable)
    one_sentence_exit_2(proc, "--python applies to --runtime venv only")


@pytest.mark.slow
def test_venv_runtime_builds_with_the_python_it_is_given(tmp_path):
    """--python names a wrapper of this Python that notes each call: the environment is made by it, and the
    rerun's Python is its version."""
    calls = tmp_path / "calls.log"
    wrapper = tmp_path / "bin" / "mypython"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    project = edited_project(tmp_path, "venvpy", FILES)
    proc = reproduce(project, "--runtime", "venv", "--trust-remote-code", "--python", str(wrapper), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "reproduced"
    import platform

    assert verdict["rerun"]["python"] == platform.python_version()
    from cotk_repro.reproduce.venv_runtime import find_uv

    made = [ln for ln in calls.read_text().splitlines() if "-m venv" in ln]
    assert made or find_uv() is not None, calls.read_text()  # uv makes the venv from what the wrapper reports


# -- the demo under Python 3.13 --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.docker  # its reproduction runs in Docker where it can: with this module's other Docker tests
@pytest.mark.timeout(2400)
def test_demo_under_python_313_reproduces_in_an_image_with_313_or_says_why_not(tmp_path):
    """The README's first command with cotk-repro installed (non-editable, its declared dependencies) under
    Python 3.13: its docker step takes the local 3.13 image, or the venv runtime with the reason."""
    py313 = venv_of("3.13", full=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COTK_REPRO_BASE_IMAGE")}
    exe = str(Path(py313).parent / "cotk-repro")
    proc = subprocess.run(
        [exe, "demo", "--no-serve", "--dir", str(tmp_path / "demo")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=2000,
    )
    out = proc.stdout + proc.stderr
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.images.get(TRIXIE)
        forget_images(client, proc)
        has_trixie = True
    except Exception:
        has_trixie = False
    assert proc.returncode == 0, out
    said = " ".join(proc.stderr.split())
    if has_trixie:
        assert f"(docker runtime: base image {TRIXIE}, Python 3.13)" in said, said
    else:
        assert "(venv runtime: " in said, said
    assert re.search(r"^reproduced$", proc.stdout, re.M), proc.stdout
