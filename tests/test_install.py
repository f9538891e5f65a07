"""The product as users install it (issue 24): `--version`, the demo's clean-up and its pinned environment,
a wheel of the installed cotk-repro for reproductions, exit codes under a closed pipe, missing dependencies.

The wheel of each distribution installed alone into a bare venv is exercised by scripts/ci-dists.sh (run by
.ci/run); these tests cover the pieces that make it pass, with real subprocesses, real pip and real signals.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cotk_repro", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        **kw,
    )


# -- --version ---------------------------------------------------------------------------------------------


def test_version_prints_the_package_version_and_exits_0():
    import cotk_repro

    res = _cli("--version")
    assert res.returncode == 0, res
    assert res.stdout == f"cotk-repro {cotk_repro.__version__}\n"
    # the same through the Typer app (an embedding caller, `--debug --version`)
    res = subprocess.run(
        [sys.executable, "-c", "from cotk_repro.cli import main; main(['--debug', '--version'])"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res
    assert res.stdout.strip() == f"cotk-repro {cotk_repro.__version__}"
    # the version is the one the wheel is built with (hatch reads __version__ from the file pyproject.toml names)
    assert f'__version__ = "{cotk_repro.__version__}"' in (ROOT / "cotk_repro" / "_version.py").read_text()
    assert 'path = "cotk_repro/_version.py"' in (ROOT / "pyproject.toml").read_text()


# -- the demo: clean-up on failure and SIGTERM --------------------------------------------------------------


@pytest.mark.parametrize("keep", [False, True])
def test_a_failed_demo_removes_its_temporary_folder_or_names_it(tmp_path, monkeypatch, keep):
    import cotk_repro.demo as demo
    from cotk_repro.errors import CotkError

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    made = []

    def failing_loop(folder, **_kw):
        (folder / "dashboard.db").write_bytes(b"x")
        made.append(folder)
        raise CotkError("the sample run failed")

    monkeypatch.setattr(demo, "_loop", failing_loop)
    said: list[str] = []
    with pytest.raises(CotkError):
        demo.run_demo(keep=keep, on_status=said.append)
    (folder,) = made
    assert folder.parent == tmp_path.resolve()
    assert folder.exists() is keep
    assert said == ([f"the demo folder is kept in {folder}"] if keep else [f"removed the demo folder {folder}"])


def test_a_given_demo_folder_is_named_not_removed_on_failure(tmp_path, monkeypatch):
    import cotk_repro.demo as demo

    monkeypatch.setattr(demo, "_loop", lambda folder, **_kw: (_ for _ in ()).throw(RuntimeError("boom")))
    said: list[str] = []
    with pytest.raises(RuntimeError):
        demo.run_demo(tmp_path / "mine", on_status=said.append)
    assert said == [f"the demo folder is kept in {(tmp_path / 'mine').resolve()}"]


SIGTERM_DEMO = r"""
import time
import cotk_repro.demo as demo
from cotk_repro.cli import main

def slow_loop(folder, **_kw):
    (folder / "keys").mkdir()
    print("started", flush=True)
    time.sleep(60)

demo._loop = slow_loop
main(["demo", "--no-serve"])  # the command itself: its signal handling, its clean-up, its words
"""


def test_sigterm_during_the_demo_removes_its_folder_and_exits_143(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_DEMO],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.stdout.readline().strip() == "started"
    (folder,) = list(tmp_path.iterdir())
    assert (folder / "keys").is_dir()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (out, err)
    assert f"removed the demo folder {folder}" in out + err
    assert "terminated (SIGTERM)" in err
    assert list(tmp_path.iterdir()) == []


# -- [run] requires: a record pins what the project needs ---------------------------------------------------


def test_requirement_closure_follows_the_installed_metadata():
    import importlib.metadata as md

    from cotk_repro.capture.environment import installed_distributions, requirement_closure

    packages = installed_distributions()
    closure = {p["name"] for p in requirement_closure(["cotk-repro"], packages)}
    assert "cotk-repro" in closure
    # every requirement cotk-repro's own metadata declares (without extras/markers that are false) is in it
    from packaging.requirements import Requirement

    for line in md.requires("cotk-repro"):
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            assert req.name.lower().replace("_", "-") in closure, req
    assert "click" in closure  # typer's requirement: transitive
    installed = {p["name"] for p in packages}
    for outsider in ("torch", "pytest", "hypothesis"):  # installed here, needed by no part of cotk-repro
        if outsider in installed:
            assert outsider not in closure


def test_requirement_closure_refuses_a_name_that_is_not_installed():
    from cotk_repro.capture.environment import installed_distributions, requirement_closure
    from cotk_repro.errors import ConfigError

    with pytest.raises(ConfigError, match=r"\[run\] requires names no-such-dist-xyz, which is not installed"):
        requirement_closure(["no-such-dist-xyz"], installed_distributions())


def test_the_demo_project_pins_only_cotk_repro_and_its_requirements():
    text = (ROOT / "templates" / "project" / "demo" / "cotk-repro.toml.j2").read_text()
    assert 'requires = ["cotk-repro"]' in text


# -- a wheel of the installed cotk-repro (a record made by a wheel install reproduces) -----------------------


def test_repack_gives_the_installed_files_with_the_hashes_the_installer_recorded(tmp_path):
    """Repacking an installed distribution (typer, installed by pip) yields exactly the files its RECORD lists,
    with the same hashes; pip installs the repacked wheel and it imports."""
    import importlib.metadata as md

    from cotk_repro.reproduce.selfwheel import repack

    dist = md.distribution("typer")
    wheel = repack(dist, tmp_path / "out")
    assert wheel.name.startswith(f"typer-{dist.version}-") and wheel.suffix == ".whl"
    recorded = {}
    for line in dist.read_text("RECORD").splitlines():
        path, digest, _size = line.rsplit(",", 2)
        if (
            digest
            and not path.startswith("..")
            and "__pycache__" not in path
            and path.split("/")[-1] not in ("INSTALLER", "REQUESTED", "direct_url.json")
        ):
            recorded[path] = digest
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for path, digest in recorded.items():
            data = zf.read(path)
            assert "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode() == digest
    assert set(recorded) <= names
    assert not any(n.endswith(("INSTALLER", "direct_url.json")) for n in names)
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    res = subprocess.run(
        [sys.executable, "-c", "import typer, sys; print(typer.__file__)"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(target)},
        timeout=60,
    )
    assert res.stdout.startswith(str(target)), res


# -- GPT-2 templates without the hub ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("template", ["lm-gpt2-finetune", "dialog-gpt2-finetune"])
def test_a_gpt2_template_without_the_hub_stops_at_once_with_the_command_that_fixes_it(tmp_path, template):
    pytest.importorskip("transformers")
    pytest.importorskip("cotk_repro_templates")
    res = _cli("init", "proj", "--template", template, cwd=tmp_path)
    assert res.returncode == 0, res
    project = tmp_path / "proj"
    env = {**os.environ, "HF_HOME": str(tmp_path / "empty-hf-home"), "HF_HUB_OFFLINE": "1"}
    check = "import model; model.reachable_or_stop(__import__('sys').argv[1]); print('usable')"
    t = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", check, "gpt2"], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "GPT-2 'gpt2' is neither a local folder nor in the Hugging Face cache" in res.stderr
    command = res.stderr.split("make a tiny one here with `", 1)[1].split("`", 1)[0]
    assert command.startswith("python -m cotk_repro_templates.tiny_gpt2 tiny-gpt2 data/")
    # the command it names works here, offline, and its folder is then usable
    made = subprocess.run(
        [sys.executable, *command.split()[1:]], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert made.returncode == 0, made
    res = subprocess.run(
        [sys.executable, "-c", check, "tiny-gpt2"], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0 and res.stdout.strip() == "usable", res
    assert time.perf_counter() - t < 280


# -- torch install lines ----------------------------------------------------------------------------------


def test_every_torch_install_line_gives_the_pinned_cpu_build():
    pinned = next(
        line.split("==", 1)[1].strip()
        for line in (ROOT / "requirements" / "torch.txt").read_text().splitlines()
        if line.startswith("torch==")
    )
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("plugins/*/README.md"))]
    # an install command: a line or a `code span` that starts with pip install (a `$ ` prompt allowed); the
    # error sentence docs/core.md quotes (check_imports's hint for a user's own project) is prose, not a command
    command_start = re.compile(r"^\s*(\$ )?pip install|`pip install")
    lines = [
        (p.relative_to(ROOT), line)
        for p in docs
        for line in p.read_text(encoding="utf-8").splitlines()
        if command_start.search(line) and "torch" in line.split("#", 1)[0].replace("torch.txt", "")
    ]
    assert lines, "no torch install line found"
    for where, line in lines:
        command = line.split("#", 1)[0]
        assert f"torch=={pinned} " in command + " ", (where, line)
        assert "--index-url https://download.pytorch.org/whl/cpu" in command, (where, line)


# -- a closed pipe is not "not reproduced" ----------------------------------------------------------------


@pytest.mark.parametrize("what", ["show", "show-json", "data-hashes", "data-hashes-json"])
def test_show_and_data_hashes_exit_0_when_the_reader_goes_away(what, make_project, tmp_path):
    from conftest import run_cli

    if what == "show":
        root = make_project({"main.py": 'import json\njson.dump({"toy": 1.0}, open("result.json", "w"))\n'})
        assert run_cli("run", cwd=root).returncode == 0
        args = ["show", "latest"] + (["--json"] if what.endswith("json") else [])
    else:
        root = tmp_path
        args = ["data", "hashes", str(ROOT / "tests" / "fixtures" / "cotk-small" / "mscoco")]
        args += ["--json"] if what.endswith("json") else []
    script = (
        f"set -o pipefail; '{sys.executable}' -m cotk_repro {' '.join(args)} | true; echo \"status=${{PIPESTATUS[0]}}\""
    )
    res = subprocess.run(
        ["bash", "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "60"},
    )
    assert res.stdout.strip() == "status=0", res
    assert "Traceback" not in res.stderr and "Error" not in res.stderr and "BrokenPipe" not in res.stderr, res.stderr


# -- a missing dependency at run time ---------------------------------------------------------------------


def _without(module: str, tmp_path: Path) -> dict[str, str]:
    """An environment in which importing ``module`` fails as if it were not installed."""
    shadow = tmp_path / f"without-{module}"
    shadow.mkdir()
    (shadow / f"{module}.py").write_text(
        f"raise ModuleNotFoundError(\"No module named '{module}'\", name={module!r})\n", encoding="utf-8"
    )
    return {"PYTHONPATH": os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")])}


def test_a_missing_dependency_is_one_sentence_naming_what_to_install(tmp_path):
    res = _cli(
        "dashboard",
        "users",
        "--json",
        "--db",
        "sqlite:///" + str(tmp_path / "d.sqlite3"),
        env=_without("sqlalchemy", tmp_path),
    )
    assert res.returncode == 2, res
    assert res.stderr.strip().splitlines() == [
        (
            "Error: cotk-repro needs the Python package SQLAlchemy, which is not installed (removed?): "
            "pip install 'SQLAlchemy' (or reinstall cotk-repro)"
        )
    ], res.stderr
    assert "unexpected" not in res.stderr and "Traceback" not in res.stderr


def test_a_missing_extra_names_the_extra():
    from cotk_repro.core.missing import missing_dependency

    assert missing_dependency(ModuleNotFoundError("No module named 'psycopg'", name="psycopg")) == (
        "cotk-repro[postgres] needs the Python package psycopg, which is not installed: "
        "pip install 'cotk-repro[postgres]'"
    )
    assert missing_dependency(ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")).endswith(
        "pip install 'cotk-repro[compare]'"
    )


def test_missing_torch_names_the_cpu_line():
    from cotk_repro.core.missing import missing_dependency

    sentence = missing_dependency(ModuleNotFoundError("No module named 'torch'", name="torch"))
    assert sentence.endswith("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu")
    assert "2.13.0" in (ROOT / "requirements" / "torch.txt").read_text()
    assert missing_dependency(ModuleNotFoundError("No module named 'cotk_repro.x'", name="cotk_repro.x")) is None


# -- CI installs what users install ------------------------------------------------------------------------


def test_ci_runs_the_distribution_checks_after_the_test_command():
    run = (ROOT / ".ci" / "run").read_text()
    assert run.index("bash scripts/test.sh") < run.index("bash scripts/ci-dists.sh")
    script = ROOT / "scripts" / "ci-dists.sh"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    text = script.read_text()
    for needed in (
        "python -m deptry",
        "-m build",
        "twine check --strict",
        "venv",
        "+cpu",
        "--version",
        "demo --no-serve --runtime venv --trust-remote-code",
        "--template lm-gru",
        "-m fluency",
        "benchmark.toml",
        "-m toy-metric",
        "-t toy-tokenizer",
    ):
        assert needed.replace("python -m", "-m") in text, needed
    # deptry knows every distribution's own package and nothing is ignored without a reason beside it
    import tomllib

    for pyproject in [ROOT / "pyproject.toml", *sorted(ROOT.glob("plugins/cotk-repro-*/pyproject.toml"))]:
        cfg = tomllib.loads(pyproject.read_text()).get("tool", {}).get("deptry")
        if cfg is None:
            continue  # a distribution another change fills (deptry's defaults apply)
        assert cfg["known_first_party"] == [
            pyproject.parent.name.replace("-", "_") if pyproject.parent != ROOT else "cotk_repro"
        ]
        lines = pyproject.read_text().split("[tool.deptry.per_rule_ignores]", 1)[-1].split("\n[", 1)[0]
        for line in lines.splitlines():
            if line.strip().startswith('"'):
                assert "#" in line, f"{pyproject}: an ignored dependency without its reason: {line}"


def test_ci_runs_the_test_command_inside_a_fresh_venv(tmp_path):
    """.ci/run runs scripts/test.sh as a README user does: in a fresh `python3 -m venv` (no system site-packages,
    no PYTHONPATH), activated, so pip installs into it and every `python3` the tests spawn is its own; the venv
    is gone afterwards. The real .ci/run is run against stub scripts that report what they saw."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    (repo / "scripts").mkdir()
    (repo / ".ci" / "run").write_text((ROOT / ".ci" / "run").read_text())
    report = tmp_path / "seen.txt"
    probe = (
        "import json, os, sys, sysconfig; print(json.dumps({'prefix': sys.prefix, 'base': sys.base_prefix, "
        "'purelib': sysconfig.get_path('purelib'), 'path': sys.path, "
        "'pythonpath': os.environ.get('PYTHONPATH'), 'venv': os.environ.get('VIRTUAL_ENV')}))"
    )
    (repo / "scripts" / "test.sh").write_text(f'python3 -c "{probe}" > {report}\n')
    (repo / "scripts" / "ci-dists.sh").write_text(f"echo dists >> {tmp_path / 'dists.txt'}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "COTK_REPRO_CI_VENV")}
    env.update(PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    res = subprocess.run(["bash", str(repo / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=600)
    import json

    seen = json.loads(report.read_text())
    assert seen["prefix"] != seen["base"] and seen["venv"] == seen["prefix"], seen
    assert seen["pythonpath"] is None
    assert seen["prefix"].startswith(str(tmp_path)), seen
    # no --system-site-packages: only the venv's own site dir and the stdlib on sys.path
    assert not any("site-packages" in p and not p.startswith(seen["prefix"]) for p in seen["path"]), seen["path"]
    assert str(ROOT) not in seen["path"]
    pyvenv = Path(seen["prefix"], "pyvenv.cfg")
    assert not pyvenv.exists(), "the CI venv is left behind"
    assert (tmp_path / "dists.txt").read_text() == "dists\n"  # the distribution checks run too
    # the stubs install nothing, so ruff (installed by the real test.sh) is missing: the run fails, as it must
    assert res.returncode != 0
