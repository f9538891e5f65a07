"""Capture of code (git) and environment: credentials, detached HEAD, dirty trees, PEP 610, secrets, GPUs."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from conftest import git

from cotk_repro.capture.environment import _install_kind, accelerators, installed_distributions, lock_text
from cotk_repro.capture.git import capture_git, strip_credentials

ENTRY = 'import json\njson.dump({"bleu": 0.25}, open("result.json", "w"))\n'


def run_json(cli, root, *args, env=None):
    res = cli("run", "--json", *args, cwd=root, env=env)
    assert res.returncode == 0, res
    return json.loads(res.stdout)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:token@example.invalid/x.git", "https://example.invalid/x.git"),
        ("https://ghp_abcdef123456@github.com/u/r.git", "https://github.com/u/r.git"),
        ("https://x-access-token:s3cr3t@host:8443/a/b.git?t=1#f", "https://host:8443/a/b.git"),
        ("ssh://git@example.invalid/u/r.git", "ssh://git@example.invalid/u/r.git"),
        ("ssh://git:pw@example.invalid/u/r.git", "ssh://example.invalid/u/r.git"),
        ("git@github.com:u/r.git", "git@github.com:u/r.git"),
        ("/srv/git/r.git", "local:r.git"),  # a path says where on the author's machine: only its name is kept
        (None, None),
    ],
)
def test_strip_credentials(url, expected):
    assert strip_credentials(url) == expected


def test_remote_credentials_stripped_in_record(make_project, cli):
    root = make_project({"main.py": ENTRY})
    git(root, "remote", "add", "origin", "https://user:tok3n-S3CRET@example.invalid/x.git")
    rec = run_json(cli, root)
    assert rec["code"]["remote"] == "origin"
    assert rec["code"]["remote_url"] == "https://example.invalid/x.git"
    folder = root / ".cotk-repro" / "runs" / rec["id"].removeprefix("sha256:")
    for f in folder.iterdir():
        assert "tok3n-S3CRET" not in f.read_text(errors="replace"), f


def test_tracked_remote_preferred(make_project):
    root = make_project({"main.py": ENTRY})
    git(root, "remote", "add", "origin", "https://example.invalid/origin.git")
    git(root, "remote", "add", "fork", "https://example.invalid/fork.git")
    assert capture_git(root).remote == "origin"
    git(root, "config", "branch.main.remote", "fork")
    state = capture_git(root)
    assert (state.remote, state.remote_url) == ("fork", "https://example.invalid/fork.git")


def test_detached_head_is_recorded(make_project, cli):
    root = make_project({"main.py": ENTRY})
    head = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "--detach")
    rec = run_json(cli, root)
    assert rec["code"] == {
        "commit": head,
        "branch": None,
        "detached": True,
        "remote": None,
        "remote_url": None,
        "dirty": False,
    }


def test_not_a_repo_and_no_commits(tmp_path, make_project, cli):
    for args in (("run",), ("runs",), ("show", "latest")):
        res = cli(*args, cwd=tmp_path)
        assert res.returncode == 2 and "is not inside a git repository" in res.stderr and "Traceback" not in res.stderr
    root = make_project({"main.py": ENTRY}, commit=False)
    res = cli("run", cwd=root)
    assert res.returncode == 2 and "no commits yet" in res.stderr


def test_dirty_states(make_project, cli):
    root = make_project({"main.py": ENTRY, "lib.py": "x = 1\n"})
    # ignored files and cotk-repro's own folder do not make the tree dirty
    (root / "result.json").write_text("{}")
    assert not capture_git(root).dirty
    # untracked, not ignored
    (root / "notes with space.txt").write_text("x")
    state = capture_git(root)
    assert state.dirty and state.dirty_files == ["notes with space.txt"]
    (root / "notes with space.txt").unlink()
    # staged only
    (root / "lib.py").write_text("x = 2\n")
    git(root, "add", "lib.py")
    assert capture_git(root).dirty_files == ["lib.py"]
    # renamed (the entry after a rename is its new path; the old one follows it in git's output)
    git(root, "reset", "-q", "--hard")
    git(root, "mv", "main.py", "entry.py")
    assert capture_git(root).dirty_files == ["entry.py"]
    git(root, "mv", "entry.py", "main.py")
    (root / "lib.py").write_text("x = 3\n")
    res = cli("run", cwd=root)
    assert res.returncode == 2 and "--allow-dirty" in res.stderr and "lib.py" in res.stderr
    rec = run_json(cli, root, "--allow-dirty")
    assert rec["code"]["dirty"] is True and rec["status"] == "ok"
    # the human output warns too
    res = cli("run", "--allow-dirty", cwd=root)
    assert res.returncode == 0 and "dirty" in res.stderr


def test_editable_install_marked(make_project, cli):
    """cotk-repro itself is an editable install in the test environment (pip install -e .)."""
    import importlib.metadata as md

    if _install_kind(md.distribution("cotk-repro")) != "editable":
        pytest.skip("cotk-repro is not installed editable here")
    root = make_project({"main.py": ENTRY})
    rec = run_json(cli, root)
    pkgs = {p["name"]: p for p in rec["environment"]["packages"]}
    assert pkgs["cotk-repro"]["install"] == "editable"
    assert "install" not in pkgs["pluggy"]  # from an index
    assert pkgs["pluggy"]["version"] == md.version("pluggy")
    folder = root / ".cotk-repro" / "runs" / rec["id"].removeprefix("sha256:")
    lock = (folder / "requirements.lock").read_text()
    assert f"pluggy=={md.version('pluggy')}\n" in lock and "# editable: cotk-repro==" in lock


def test_installed_distributions_match_importlib_metadata():
    import importlib.metadata as md

    from cotk_repro.capture.environment import normalize_name

    expected = {}
    for dist in md.distributions():  # the slow, complete parse, as a reference
        expected.setdefault(normalize_name(dist.metadata["Name"]), dist.version)
    got = installed_distributions()
    assert {p["name"]: p["version"] for p in got} == expected
    assert [p["name"] for p in got] == sorted(p["name"] for p in got)
    # the install kinds too (PEP 610), against importlib.metadata's own reading of direct_url.json
    kinds = {}
    for dist in md.distributions():
        kinds.setdefault(normalize_name(dist.metadata["Name"]), _install_kind(dist))
    assert {p["name"]: p.get("install") for p in got} == kinds


def _dist_info(folder, stem, metadata, direct_url=None):
    info = folder / f"{stem}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_bytes(metadata.encode())
    if direct_url is not None:
        (info / "direct_url.json").write_text(direct_url)
    return info


def test_distributions_read_from_their_folders_as_importlib_metadata_reads_them(tmp_path):
    """The folders are read directly (no importlib.metadata: ~25 ms of each run); on a made-up path with the
    cases that direct reading could get wrong, the result equals importlib.metadata's."""
    import importlib.metadata as md

    from cotk_repro.capture.environment import normalize_name

    first, second = tmp_path / "first", tmp_path / "second"
    long_headers = "".join(f"Classifier: Topic :: Number {i}\n" for i in range(900))  # > 8 KiB before Version
    _dist_info(
        first,
        "Shadowed_Pkg-1.0",
        "Metadata-Version: 2.1\nName: Shadowed.Pkg\nVersion: 1.0\n\nbody\n",
        '{"url": "file:///src/s", "dir_info": {"editable": true}}',
    )
    _dist_info(second, "shadowed_pkg-2.0", "Metadata-Version: 2.1\nName: shadowed-pkg\nVersion: 2.0\n\n")
    _dist_info(
        first,
        "late_version-3.1",
        f"Metadata-Version: 2.1\nName: late_version\n{long_headers}Version: 3.1\n\n"
        + "Version: 9.9 (in the description, not a header)\n" * 2000,
    )
    _dist_info(
        first,
        "crlf-0.5",
        "Metadata-Version: 2.1\r\nName: crlf\r\nVersion: 0.5\r\n\r\ntext\r\n",
        '{"url": "https://example.invalid/x.git", "vcs_info": {"vcs": "git"}}',
    )
    _dist_info(
        second,
        "unicode_name-1.0",
        "Metadata-Version: 2.1\nName: unicode-name\nVersion: 1.0\nSummary: caf\u00e9 \u2013 na\u00efve\n\n",
        '{"url": "file:///w/u-1.0-py3-none-any.whl", "archive_info": {}}',
    )
    (_dist_info(second, "no_metadata-1.0", "x") / "METADATA").unlink()  # unreadable: skipped by both
    (second / "broken.egg-info").write_text("not a folder")
    path = [str(first), str(second), str(tmp_path / "missing")]

    got = installed_distributions(path)
    expected: dict = {}
    for dist in md.distributions(path=path):
        name = dist.metadata["Name"] if dist.read_text("METADATA") or dist.read_text("PKG-INFO") else None
        if name:
            expected.setdefault(normalize_name(name), (dist.version, _install_kind(dist)))
    assert {p["name"]: (p["version"], p.get("install")) for p in got} == expected
    assert expected == {
        "shadowed-pkg": ("1.0", "editable"),
        "late-version": ("3.1", None),
        "crlf": ("0.5", "vcs"),
        "unicode-name": ("1.0", "local"),
    }


def test_distributions_on_a_zip_path_come_from_importlib_metadata(tmp_path):
    """A zip archive on the path cannot be listed as a folder: importlib.metadata reads it."""
    import zipfile

    archive = tmp_path / "dists.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("zipped_pkg-4.2.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped_pkg\nVersion: 4.2\n\n")
    assert [(p["name"], p["version"]) for p in installed_distributions([str(archive)])] == [("zipped-pkg", "4.2")]


def test_pep610_kinds(tmp_path):
    class Fake:
        def __init__(self, text):
            self.text = text

        def read_text(self, name):
            assert name == "direct_url.json"
            return self.text

    assert _install_kind(Fake(None)) is None
    assert _install_kind(Fake('{"url": "file:///src/x", "dir_info": {"editable": true}}')) == "editable"
    assert _install_kind(Fake('{"url": "file:///src/x", "dir_info": {}}')) == "local"
    assert _install_kind(Fake('{"url": "file:///w/x-1.0-py3-none-any.whl", "archive_info": {}}')) == "local"
    assert _install_kind(Fake('{"url": "https://h/x.git", "vcs_info": {"vcs": "git"}}')) == "vcs"
    assert _install_kind(Fake('{"url": "https://h/x.tar.gz", "archive_info": {}}')) == "url"
    assert _install_kind(Fake("not json")) is None
    assert lock_text([{"name": "a", "version": "1"}, {"name": "b", "version": "2", "install": "local"}]).splitlines()[
        1:
    ] == ["a==1", "# local: b==2"]


def test_no_secrets_env_or_home_paths_in_record(make_project, cli, tmp_path):
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    root = make_project({"main.py": ENTRY + "import os\nprint(os.environ['MY_API_TOKEN'][:4])\n"})
    remote = home / "remotes" / "r.git"
    remote.mkdir(parents=True)
    git(remote, "init", "-q", "--bare")
    git(root, "remote", "add", "origin", str(remote))
    secret = "sk-live-THIS-IS-A-FAKE-SECRET-1234567890"
    env = {
        "HOME": str(home),
        "MY_API_TOKEN": secret,
        "GITHUB_TOKEN": secret + "-gh",
        "AWS_SECRET_ACCESS_KEY": secret + "-aws",
        "COTK_REPRO_TOKEN": secret + "-ct",
    }
    rec = run_json(cli, root, env=env)
    assert rec["code"]["remote_url"] == "local:r.git"  # a local remote: its last path component, never a path
    text = json.dumps(rec)
    folder = root / ".cotk-repro" / "runs" / rec["id"].removeprefix("sha256:")
    everything = text + "".join(f.read_text(errors="replace") for f in folder.iterdir() if f.name != "stdout.log")
    assert secret not in everything
    assert str(home) not in everything
    assert str(Path.home()) not in text or str(Path.home()) == "/"
    for name in ("MY_API_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "COTK_REPRO_TOKEN", "XDG_CONFIG_HOME"):
        assert name not in text
    assert os.environ["PATH"] not in text and os.environ["XDG_CONFIG_HOME"] not in text
    assert str(tmp_path) not in text  # no absolute paths of the project either


def _fake_nvidia_smi(folder: Path, output: str, code: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\necho \"$@\" > {folder}/args\nprintf '%s' '{output}'\nexit {code}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


def test_accelerators_from_fake_nvidia_smi(make_project, cli, tmp_path, monkeypatch):
    fake = tmp_path / "fakebin"
    _fake_nvidia_smi(fake, "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB\nNVIDIA A10G, 535.1, 23028 MiB\n")
    root = make_project({"main.py": ENTRY})
    rec = run_json(cli, root, env={"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"})
    assert rec["environment"]["accelerators"] == [
        {"vendor": "nvidia", "name": "NVIDIA H100 80GB HBM3", "driver": "550.54.15", "memory": "81559 MiB"},
        {"vendor": "nvidia", "name": "NVIDIA A10G", "driver": "535.1", "memory": "23028 MiB"},
    ]
    assert "--query-gpu=name,driver_version,memory.total" in (fake / "args").read_text()
    # a failing nvidia-smi (driver not loaded) gives no accelerators, not an error
    _fake_nvidia_smi(fake, "NVIDIA-SMI has failed", code=9)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    assert accelerators() == []


def test_no_accelerators_without_nvidia_smi(make_project, cli, tmp_path):
    # a PATH with git and python but no nvidia-smi
    bindir = tmp_path / "bin"
    bindir.mkdir()
    import shutil

    for tool in ("git",):
        os.symlink(shutil.which(tool), bindir / tool)
    root = make_project({"main.py": ENTRY})
    rec = run_json(cli, root, env={"PATH": str(bindir)})
    assert rec["environment"]["accelerators"] == []
    assert rec["environment"]["python"]["version"] == ".".join(map(str, sys.version_info[:3]))


def test_dockerfile_render_is_remembered_and_keyed_by_template_and_values(tmp_path, monkeypatch):
    """The rendered Dockerfile comes back from the cache without Jinja, and a changed value renders anew."""
    import subprocess
    import sys

    monkeypatch.setenv("COTK_REPRO_CACHE", str(tmp_path / "cache"))
    from cotk_repro.capture.dockerfile import render_dockerfile
    from cotk_repro.core.templating import render

    kw = dict(python_major_minor="3.11", entry="main.py", args=["--x", "1"], cwd=".")
    text, sha = render_dockerfile(**kw)
    direct = render(
        "Dockerfile.j2",
        cotk_repro_version=__import__("cotk_repro").__version__,
        python_version="3.11",
        base_image="python:3.11-slim",
        cwd=".",
        entrypoint_json='["python", "main.py", "--x", "1"]',
    )
    assert text == direct
    assert len(list((tmp_path / "cache" / "rendered").iterdir())) == 1
    other, other_sha = render_dockerfile(**{**kw, "args": ["--x", "2"]})
    assert other_sha != sha and '"2"' in other
    code = (
        "import sys; from cotk_repro.capture.dockerfile import render_dockerfile as r; "
        "t, s = r(python_major_minor='3.11', entry='main.py', args=['--x', '1'], cwd='.'); "
        "print(s, 'jinja2' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "COTK_REPRO_CACHE": str(tmp_path / "cache")},
    ).stdout.split()
    assert out == [sha, "False"]
