"""Shared fixtures: real git projects, the CLI as a subprocess, the repository's data fixtures, services.

Services are started by scripts/test.sh (the README's test command) and found here
through environment variables; a test that needs a missing one skips with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# Small subsets of the corpora, committed with their sources and licences (tests/fixtures/NOTICE.md):
# every test runs from a fresh clone alone. Full-size corpora are for benchmarks/ only.
FIXTURES = REPO_ROOT / "tests" / "fixtures"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _keep_bytecode() -> None:
    """Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the dev and CI machines), no process keeps the bytecode it
    compiles, and uv installs none: every one of the thousands of Python processes the tests start (the CLI, run
    entries, workers, reproductions) compiled everything it imports again — numpy, rich, pydantic, torch — about
    half of a CLI call's CPU. The test processes keep it instead under a cache of their own
    (``PYTHONPYCACHEPREFIX``: outside every source tree, so no project, checkout or fingerprint sees a
    ``__pycache__``); each module is compiled once per run and cache. The processes started after this inherit it
    (pytest-xdist's workers too). A ``PYTHONPYCACHEPREFIX`` already set is left as it is."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    from venv_cache import cache_root  # the tests' one answer to where the cache is (cotk_repro's cache_dir)

    cache = cache_root() / "test-pycache"
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # no writable cache: compile as before
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)


def pytest_configure(config):
    import suite_report

    _keep_bytecode()
    suite_report.register(config)


#: tests that use the Docker engine run one after another on one pytest-xdist worker (``docker:all``, dealt out
#: first: the longest chain, no longer than the other workers' share). Each module's images are its own (a
#: reproduction image is named by its key, which holds the project's tree and the base image's name; each module
#: removes the images its own output named), and the modules ran side by side too: eight on four workers (ci5) and
#: two at a time (ci6) made every test on the 2-core machine slower (test time 84 and 72 min against 59-63 on one
#: worker): the machine is CPU-bound, and containers, builds and dockerd use CPU no test's own figure shows. Two
#: races between modules found so were the product's, fixed there: a container or image removed while another
#: reproduction listed them (``ignore_removed``, engine.list_images), and a build whose cached layer another
#: module's image removal deleted under it (built once more: docker_runtime._VANISHED; the likely cause of the
#: fleet volunteer's one "could not run" beside other modules, not caught in the act). The one test that leaves a
#: container whose reproducer is gone (the SIGKILL test, ``docker_alone``) would hold the engine alone where Docker
#: tests run at once (:func:`pytest_runtest_protocol`): any reproduction's start-up collects such containers
DOCKER_FIXTURES = {"docker_base_image", "engine"}
DOCKER_GROUP = "docker:"


def _module_scoped(item) -> bool:
    """Whether the test uses a fixture built once per module (or class): a tiny model, a demo run, a server."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in getattr(item, "fixturenames", ()):
        defs = info.name2fixturedefs.get(name)
        if defs and defs[-1].scope in ("module", "class", "package"):
            return True
    return False


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which turns the groups into "@group" node ids
def pytest_collection_modifyitems(config, items):
    """Assign the xdist groups (used by ``--dist loadgroup``, which scripts/test.sh passes): the Docker tests on one
    worker (see DOCKER_FIXTURES); the tests of a module that share a module-scoped fixture on one worker (else each worker would build
    that fixture again: a tiny model, a whole demo run). Then the longest work goes first (the last full run's
    times), so that the workers start on the longest chains while the short tests fill in after them."""

    def file_of(item) -> str:
        return item.nodeid.split("::", 1)[0]

    def uses_docker(item) -> bool:
        return bool(item.get_closest_marker("docker") or DOCKER_FIXTURES & set(getattr(item, "fixturenames", ())))

    docker_files = {file_of(item) for item in items if uses_docker(item)}
    for item in items:
        plugin = _absent_plugin_of(item)
        if plugin is not None:  # a plugin's own tests, where that plugin is not installed: skipped, saying so
            item.add_marker(
                pytest.mark.skip(reason=f"the plugin {plugin} is not installed (scripts/setup.sh installs it)")
            )
        if item.get_closest_marker("xdist_group"):
            continue
        if uses_docker(item) or (_module_scoped(item) and file_of(item) in docker_files):
            # a module-scoped fixture of a Docker module is shared by its tests that do not use Docker too
            item.add_marker(pytest.mark.xdist_group(DOCKER_GROUP + "all"))
        elif _module_scoped(item):
            item.add_marker(pytest.mark.xdist_group("module:" + file_of(item)))

    def group(item) -> str | None:
        mark = item.get_closest_marker("xdist_group")
        return (mark.args[0] if mark.args else mark.kwargs.get("name")) if mark else None

    # the longest work first: pytest-xdist deals out work units (a group, else one test) in this order, so the
    # longest chains (a Docker module, a fuzzing module, the cross-machine matrix) start at once on the workers and
    # the short tests fill in at the end, instead of one worker finishing a long unit alone while the others idle.
    # Each unit's expected seconds come from the last full run (benchmarks/suite-durations.json); a unit's tests stay
    # together and in their order (a module's fixture is made once)
    expected = _summary().get("expected_seconds", {})
    unit_seconds: dict[str, float] = {}
    unit_first: dict[str, int] = {}
    for index, item in enumerate(items):
        unit = group(item) or item.nodeid
        unit_seconds[unit] = unit_seconds.get(unit, 0.0) + expected.get(item.nodeid, UNLISTED_SECONDS)
        unit_first.setdefault(unit, index)
    items.sort(key=lambda item: (-unit_seconds[group(item) or item.nodeid], unit_first[group(item) or item.nodeid]))

    # the quick loop (-m "not slow") also leaves out the tests the last full run measured over 5 s
    # (benchmarks/suite-durations.json, refreshed by `python benchmarks/suite_time.py --update`)
    for item in items:
        secs = _measured_slow().get(item.nodeid)
        if secs is not None and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow(reason=f"measured {secs} s in the last full run"))
            item.add_marker(pytest.mark.measured_slow)  # the summary keeps it listed while it stays over 5 s


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist, a Docker test holds a shared lock on the engine for its setup, run and teardown (a
    module's fixtures are made in its first test's setup and removed in its last one's teardown); a
    ``docker_alone`` test holds it alone. Such a test kills a reproducer and watches its container stop by itself:
    any other reproduction starting meanwhile would remove that container (its reproducer is gone), and so
    would the ``cotk-repro gc`` it runs remove any other test's."""
    mark = item.get_closest_marker("xdist_group")
    name = (mark.args[0] if mark.args else mark.kwargs.get("name", "")) if mark else ""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run or not str(name).startswith(DOCKER_GROUP):
        yield
        return
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / f"cotk-repro-tests-docker-{run}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX if item.get_closest_marker("docker_alone") else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _absent_plugin_of(item) -> str | None:
    """The distribution of ``plugins/<distribution>/tests/`` that holds this test, when it is not importable."""
    import importlib.util

    parts = (
        Path(str(item.fspath)).resolve().relative_to(REPO_ROOT).parts
        if REPO_ROOT in Path(str(item.fspath)).resolve().parents
        else ()
    )
    if len(parts) > 2 and parts[0] == "plugins" and parts[2] == "tests":
        distribution = parts[1]
        if importlib.util.find_spec(distribution.replace("-", "_")) is None:
            return distribution
    return None


def _summary() -> dict:
    """The last full run's summary (benchmarks/suite-durations.json), read once; empty when it cannot be read."""
    global _SUMMARY
    if _SUMMARY is None:
        import json

        try:
            _SUMMARY = json.loads((REPO_ROOT / "benchmarks" / "suite-durations.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            _SUMMARY = {}
    return _SUMMARY


def _measured_slow() -> dict[str, float]:
    return _summary().get("quick_loop_leaves_out", {})


_SUMMARY: dict | None = None
#: the expected seconds of a test the summary does not name (it names those over a second; most take a tenth)
UNLISTED_SECONDS = 0.3


@pytest.fixture(autouse=True, scope="session")
def _isolated_user_dirs(tmp_path_factory):
    """Never touch the real user's config (tokens) or data; git identity for commits."""
    base = tmp_path_factory.mktemp("userdirs")
    saved = dict(os.environ)
    os.environ.update(GIT_ENV)
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")
    os.environ["XDG_DATA_HOME"] = str(base / "data")
    os.environ.pop("COTK_REPRO_BUILTINS_ONLY", None)
    os.environ.pop("GITHUB_TOKEN", None)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def fixtures_dir() -> Path:
    """The committed data fixtures: ``texygen/`` (COCO captions, six generators) and ``cotk-small/``."""
    return FIXTURES


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def make_project(tmp_path):
    """Create a git repository with ``files`` committed; returns its path."""
    counter = {"n": 0}

    def make(files: dict[str, str], *, name: str | None = None, commit: bool = True) -> Path:
        counter["n"] += 1
        root = tmp_path / (name or f"project{counter['n']}")
        root.mkdir(parents=True)
        git(root, "init", "-q", "-b", "main")
        write_files(root, {".gitignore": ".cotk-repro/\nresult.json\n__pycache__/\n", **files})
        if commit:
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", "start")
        return root

    return make


class CLIResult:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def __repr__(self) -> str:
        return f"<exit {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}>"


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600, python: str | None = None
) -> CLIResult:
    """Run ``python -m cotk_repro ARGS`` as a real subprocess (no terminal: no progress bars)."""
    # a terminal width found in this process's environment is not the CLI's: its output is piped (no wrap) unless
    # the test names a width (a $COLUMNS left in the environment made tables wrap at 80 under pytest-xdist)
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    full_env.update(env or {})
    proc = subprocess.run(
        [python or sys.executable, "-m", "cotk_repro", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CLIResult(proc)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def pg_url() -> str:
    url = os.environ.get("COTK_REPRO_TEST_PG_URL")
    if not url:
        pytest.skip("no PostgreSQL server: COTK_REPRO_TEST_PG_URL is unset (scripts/test.sh starts one)")
    return url


def no_docker_reason() -> str:
    """Why there is no Docker base image, as scripts/services.sh found it (e.g. not root)."""
    why = os.environ.get(
        "COTK_REPRO_TEST_DOCKER_SKIP", "COTK_REPRO_TEST_BASE_IMAGE is unset (scripts/test.sh builds one)"
    )
    return f"no Docker base image: {why}"


@pytest.fixture
def docker_base_image() -> str:
    image = os.environ.get("COTK_REPRO_TEST_BASE_IMAGE")
    if not image:
        pytest.skip(no_docker_reason())
    return image


@pytest.fixture
def artifacts_dir() -> Path:
    path = Path(os.environ.get("COTK_REPRO_TEST_ARTIFACTS", REPO_ROOT / "test-artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


FRESH_PROCESS = "COTK_REPRO_TEST_FRESH_PROCESS"


@pytest.fixture
def in_fresh_process(request) -> bool:
    """For tests of the data loader's forked helpers, which fork only while no other thread runs (and other tests
    leave threads behind: servers, clients): in the test session, run this one test again in a fresh interpreter,
    fail if it fails there, and give False (the caller returns); in that fresh run, give True (the caller goes on)."""
    nodeid = request.node.nodeid.split("@", 1)[0]  # under pytest-xdist's loadgroup: "ID@group"
    if os.environ.get(FRESH_PROCESS) == nodeid:
        return True
    env = {**os.environ, FRESH_PROCESS: nodeid}
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", nodeid],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, f"in a fresh interpreter:\n{res.stdout[-6000:]}\n{res.stderr[-2000:]}"
    assert " passed" in res.stdout, res.stdout[-2000:]  # ran, not skipped or deselected
    return False
