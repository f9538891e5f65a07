"""Publish: the records ref (git plumbing, real bare remotes), idempotency, errors, login, GitHub double."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_cli
from test_reproduce_support import (
    add_bare_remote,
    free_port,
    http_double,
    publish,
    record_in,
    remote_served_by_git_daemon,
)

ENTRY = """import json, sys
refs = open("refs.txt", encoding="utf-8").read().split()
json.dump({"tokens": float(len(refs))}, open("result.json", "w"))
"""
REF = "refs/heads/cotk-repro-records"


@pytest.fixture
def project(make_project, tmp_path):
    root = make_project({"main.py": ENTRY, "refs.txt": "a b c d\n"}, name="proj")
    bare = add_bare_remote(root, tmp_path / "remotes", "alice/proj")
    return root, bare


def _state(root: Path) -> tuple[str, str, str, str]:
    return (
        git(root, "rev-parse", "HEAD"),
        git(root, "status", "--porcelain"),
        git(root, "for-each-ref", "refs/heads/", "--format=%(refname)"),
        (root / ".git" / "index").read_bytes().hex()[:64],
    )


def test_publish_pushes_records_ref_without_touching_branches(project):
    root, bare = project
    record = record_in(root)
    before = _state(root)
    res = publish(root, "--push", "--json")
    assert res.returncode == 0, res
    report = json.loads(res.stdout)
    git_step = [s for s in report["steps"] if s["target"] == "git"][0]
    assert git_step["status"] == "pushed" and git_step["code"] == "pushed main"
    # work tree, index, HEAD and the branch list are untouched (only the records ref is new)
    after = _state(root)
    assert after[0] == before[0] and after[1] == before[1] == "" and after[3] == before[3]
    assert after[2].split() == ["refs/heads/cotk-repro-records", "refs/heads/main"]
    # the remote has the code and the records ref with the record's files
    hexid = record["id"].removeprefix("sha256:")
    files = git(bare, "ls-tree", "-r", "--name-only", REF).split()
    assert f"records/{hexid}/record.json" in files
    assert f"records/{hexid}/requirements.lock" in files and f"records/{hexid}/Dockerfile" in files
    assert json.loads(git(bare, "show", f"{REF}:records/{hexid}/record.json")) == record
    assert git(bare, "rev-parse", "refs/heads/main") == record["code"]["commit"]
    # the records history is unrelated to the user's branches (pushing it never pushes code)
    assert subprocess.run(["git", "merge-base", REF, "main"], cwd=bare, capture_output=True).returncode == 1


def test_publish_is_idempotent(project):
    root, bare = project
    record_in(root)
    assert publish(root, "--push").returncode == 0
    tip = git(bare, "rev-parse", REF)
    again = publish(root, "--json")
    assert again.returncode == 0, again
    step = json.loads(again.stdout)["steps"][0]
    assert step["status"] == "up to date"
    assert git(bare, "rev-parse", REF) == tip
    assert git(root, "rev-parse", REF) == tip


def test_commit_missing_on_remote_says_what_to_push(project):
    root, bare = project
    record_in(root)
    res = publish(root)
    assert res.returncode == 2
    assert "is not on the remote 'origin'" in res.stderr
    assert "git push origin main" in res.stderr and "--push" in res.stderr
    # nothing was pushed: the remote never advertises a record whose commit it lacks
    assert git(bare, "for-each-ref") == ""


def test_two_machines_publishing_merge_on_the_records_ref(project, tmp_path):
    root, bare = project
    first = record_in(root)
    assert publish(root, "--push").returncode == 0
    other = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bare), str(other)], check=True)
    (other / "refs.txt").write_text("a b c d e f\n")
    git(other, "commit", "-qam", "more refs")
    second = record_in(other)
    assert publish(other, "--push").returncode == 0
    # the first machine (records ref now behind the remote's) publishes a new record from a
    # new branch: its push must keep the other machine's record
    git(root, "checkout", "-qb", "exp")
    (root / "refs.txt").write_text("x\n")
    git(root, "commit", "-qam", "x")
    third = record_in(root)
    res = publish(root, "--push")
    assert res.returncode == 0, res
    names = git(bare, "ls-tree", "--name-only", f"{REF}:records").split()
    assert sorted(names) == sorted(r["id"].removeprefix("sha256:") for r in (first, second, third))


def test_publish_refuses_failed_record_and_missing_remote(make_project):
    root = make_project({"main.py": "raise SystemExit(3)\n"})
    res = run_cli("run", "-q", cwd=root)
    assert res.returncode != 0
    failed = json.loads(run_cli("runs", "--json", cwd=root).stdout)[0]
    assert failed["status"] == "failed"
    out = publish(root, failed["id"][:19])
    assert out.returncode == 2 and "only successful records can be published" in out.stderr
    ok = make_project({"main.py": ENTRY, "refs.txt": "a\n"})
    record_in(ok)
    out = publish(ok)
    assert out.returncode == 2 and "no git remote named 'origin'" in out.stderr and "git remote add" in out.stderr
    nothing = run_cli("publish", "--no-git", "--no-dashboard", cwd=ok)
    assert nothing.returncode == 2 and "nothing to publish" in nothing.stderr


def test_dead_dashboard_keeps_the_record_and_says_how_to_retry(project):
    root, _bare = project
    # a remote others could fetch (a path one is refused for a dashboard before it is asked)
    git(root, "remote", "set-url", "origin", "https://example.invalid/alice/proj.git")
    record = record_in(root)
    folder = root / ".cotk-repro" / "runs" / record["id"].removeprefix("sha256:")
    snapshot = {p.name: p.read_bytes() for p in folder.iterdir()}
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    assert run_cli("login", "--dashboard", url, "--token", "t0k3n", "--no-check").returncode == 0
    # --allow-unsigned: no signing key here, and this test is about the dashboard (a key is checked first)
    res = run_cli("publish", "--no-git", "--dashboard", url, "--allow-unsigned", cwd=root)
    assert res.returncode == 2
    assert "cannot reach the dashboard" in res.stderr
    assert (
        "kept locally" in res.stderr and f"cotk-repro publish {record['id'].removeprefix('sha256:')[:12]}" in res.stderr
    )
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == snapshot


def test_dashboard_without_token_asks_for_login(project):
    root, _bare = project
    git(root, "remote", "set-url", "origin", "https://example.invalid/alice/proj.git")
    record_in(root)
    res = run_cli(
        "publish",
        "--no-git",
        "--dashboard",
        "http://127.0.0.1:9",
        "--allow-unsigned",  # no signing key here (checked first): this test is about the token
        cwd=root,
        env={"XDG_CONFIG_HOME": str(root / "nocfg")},
    )
    assert res.returncode == 2 and "cotk-repro login --dashboard http://127.0.0.1:9" in res.stderr


def test_login_stores_token_0600_in_user_config(project, tmp_path):
    root, _bare = project
    cfg = tmp_path / "xdg"
    res = run_cli(
        "login",
        "--dashboard",
        "http://dash.example:8000/",
        "--token",
        "s3cret",
        "--no-check",
        env={"XDG_CONFIG_HOME": str(cfg)},
        cwd=root,
    )
    assert res.returncode == 0, res
    path = cfg / "cotk-repro" / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data["dashboards"]["http://dash.example:8000"]["token"] == "s3cret"
    assert data["default_dashboard"] == "http://dash.example:8000"
    # never in the repository
    assert "s3cret" not in subprocess.run(["grep", "-r", "s3cret", str(root)], capture_output=True, text=True).stdout


def test_dashboard_client_retries_with_backoff(tmp_path):
    """Retry logic against a local HTTP test double that fails twice (503) before answering.

    The real dashboard server is exercised in test_publish_dashboard.py; this double only
    injects the transient failures a real server does not produce on demand.
    """
    from cotk_repro.remote.dashboard import DashboardClient

    state = {"n": 0}

    def handler(method, path, headers, body):
        state["n"] += 1
        if state["n"] <= 2:
            return 503, {"detail": "busy"}
        return 201, {"id": json.loads(body)["id"], "url": "http://x/records/1"}

    with http_double(handler) as (url, calls):
        answer = DashboardClient(url, "tok", backoff=0.01).upload_record({"id": "sha256:ab"})
    assert answer["created"] is True and len(calls) == 3
    assert all(c["headers"]["Authorization"] == "Bearer tok" for c in calls)


def test_github_repo_creation_against_a_test_double(monkeypatch):
    """GitHub's REST API is unreachable from here: this test uses a local HTTP test double of it."""
    from cotk_repro.publish import github

    def handler(method, path, headers, body):
        if method == "GET" and path == "/repos/alice/newrepo":
            return 404, {"message": "Not Found"}
        if method == "GET" and path == "/user":
            return 200, {"login": "alice"}
        if method == "POST" and path == "/user/repos":
            return 201, {"full_name": "alice/" + json.loads(body)["name"]}
        if method == "GET" and path == "/repos/alice/there":
            return 200, {"full_name": "alice/there"}
        return 404, {"message": "unexpected"}

    with http_double(handler) as (api, calls):
        host = api.split("://", 1)[1]
        monkeypatch.setenv("GITHUB_API_URL", api)
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
        assert github.maybe_create(f"https://{host}/alice/newrepo.git") is None  # no token: nothing happens
        assert calls == []
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_test")
        assert github.maybe_create(f"https://{host}/alice/newrepo.git") == "created"
        assert github.maybe_create(f"git@{host.split(':')[0]}:alice/there.git") == "exists"
        assert github.maybe_create("/some/local/bare.git") is None
    posts = [c for c in calls if c["method"] == "POST"]
    assert posts == [
        {
            "method": "POST",
            "path": "/user/repos",
            "headers": posts[0]["headers"],
            "body": {
                "name": "newrepo",
                "private": False,
                "auto_init": False,
                "description": "published with cotk-repro",
            },
        }
    ]
    assert all(c["headers"]["Authorization"] == "Bearer ghp_test" for c in calls)


def test_token_never_written_to_git_config(project, monkeypatch):
    root, _bare = project
    record_in(root)
    env = {"GITHUB_TOKEN": "ghp_never_in_config", "GITHUB_API_URL": "http://127.0.0.1:9"}
    res = run_cli("publish", "--no-dashboard", "--push", cwd=root, env=env)
    assert res.returncode == 0, res  # a local bare remote is not a GitHub remote: no API call
    assert "ghp_never_in_config" not in (root / ".git" / "config").read_text()


def test_custom_records_ref_is_found_by_reproduce(make_project, tmp_path):
    """publish.records_ref may name another ref ending in cotk-repro-records; reproduce finds it."""
    custom = "refs/heads/team-cotk-repro-records"
    config = f'[publish]\nrecords_ref = "{custom}"\n'
    root = make_project({"main.py": ENTRY, "refs.txt": "a b c\n", "cotk-repro.toml": config}, name="team")
    bare = add_bare_remote(root, tmp_path / "remotes", "alice/team")
    record = record_in(root)
    res = publish(root, "--push")
    assert res.returncode == 0, res
    refs = git(bare, "for-each-ref", "--format=%(refname)").split()
    assert custom in refs and REF not in refs
    listed = run_cli("reproduce", str(bare), "--list", "--json")
    assert listed.returncode == 0, listed
    assert [r["id"] for r in json.loads(listed.stdout)] == [record["id"]]


@pytest.fixture
def live_dashboard(tmp_path):
    """A real dashboard (SQLite, uvicorn in a thread) with the user alice and her registered SSH key:
    (url, alice's token, the environment that makes the CLI sign with that key)."""
    from dashboard_support import signed_dashboard

    yield from signed_dashboard(tmp_path)


def test_login_checks_url_and_token_and_saves_only_what_works(tmp_path, live_dashboard):
    """Rough edge 5: a dead URL or a refused token exits 2 and saves nothing; --no-check saves anyway."""
    url, token, _ = live_dashboard
    cfg = tmp_path / "xdg"
    config = cfg / "cotk-repro" / "config.json"
    env = {"XDG_CONFIG_HOME": str(cfg)}
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    res = run_cli("login", "--dashboard", dead, "--token", token, env=env)
    assert res.returncode == 2 and "cannot reach the dashboard" in res.stderr and not config.exists(), res
    res = run_cli("login", "--dashboard", url, "--token", "wrong-token", env=env)
    assert res.returncode == 2 and "refused the token (401)" in res.stderr and not config.exists(), res
    res = run_cli("login", "--dashboard", url, "--token", token, env=env)
    assert res.returncode == 0 and "alice" in res.stderr, res
    assert json.loads(config.read_text())["dashboards"][url.rstrip("/")]["token"] == token
    res = run_cli("login", "--dashboard", dead, "--token", "later", "--no-check", env=env)
    assert res.returncode == 0 and json.loads(config.read_text())["dashboards"][dead]["token"] == "later"


@pytest.mark.slow  # five CLI calls against a live dashboard, a git daemon and a reproduce
def test_record_made_before_the_remote_is_published_without_a_rerun(make_project, tmp_path, live_dashboard):
    """Issue 24 item 5: a record made before `git remote add` is published once the remote exists: the remote
    is taken at publish time and goes beside the record, signed (publication.json), the record's id unchanged;
    a path-only remote is refused up front with the very sentence reproduce gives later; reproduce from the
    dashboard URL then fetches the code through the published remote and reproduces it."""
    from cotk_repro.reproduce import ReproduceError
    from cotk_repro.reproduce.source import resolve, source_for_record

    root = make_project({"main.py": ENTRY, "refs.txt": "a b\n"})
    early = record_in(root)
    assert early["code"]["remote_url"] is None
    folder = next((root / ".cotk-repro" / "runs").iterdir())
    record_bytes = (folder / "record.json").read_bytes()
    bare = add_bare_remote(root, tmp_path / "remotes", "alice/exp")  # a path: nobody else can fetch it
    url, token, signing = live_dashboard
    assert run_cli("login", "--dashboard", url, "--token", token).returncode == 0
    res = run_cli("publish", "--push", "--dashboard", url, early["id"][:19], cwd=root, env=signing)
    with pytest.raises(ReproduceError) as later:  # what reproduce says of a record naming that remote
        source_for_record({**early, "code": {**early["code"], "remote_url": "local:exp.git"}})
    assert res.returncode == 2 and later.value.message in " ".join(res.stderr.split()), res
    assert "unexpected" not in res.stderr
    assert git(bare, "for-each-ref").strip() == ""  # refused before anything was pushed
    assert not (folder / "publication.json").exists()
    # git alone: a path remote is fine there (reproducing from the git location does not read the record's remote)
    assert run_cli("publish", "--push", "--no-dashboard", early["id"][:19], cwd=root).returncode == 0
    with remote_served_by_git_daemon(root, bare, tmp_path / "remotes") as served:
        res = run_cli("publish", "--push", "--dashboard", url, "--json", early["id"][:19], cwd=root, env=signing)
        assert res.returncode == 0, res
        report = json.loads(res.stdout)
        assert report["id"] == early["id"] and report["remote_url"] == served and report["remote_from"] == "publication"
        assert (folder / "record.json").read_bytes() == record_bytes  # the record itself is untouched
        assert len(list((root / ".cotk-repro" / "runs").iterdir())) == 1  # nothing was run again
        attachment = json.loads((folder / "publication.json").read_text())
        assert attachment["publication"] == {
            "kind": "cotk-repro-publication",
            "record_id": early["id"],
            "commit": early["code"]["commit"],
            "remote_url": served,
        }
        # signed by the key that signed the record, checked here with ssh-keygen itself
        sig = tmp_path / "publication.sig"
        sig.write_text(attachment["signature"])
        from cotk_repro.core.canonical import canonical_json

        check = subprocess.run(
            ["ssh-keygen", "-Y", "check-novalidate", "-n", "cotk-repro-publication", "-s", str(sig)],
            input=canonical_json(attachment["publication"]),
            capture_output=True,
        )
        assert check.returncode == 0, check.stderr
        # beside the record on the records ref too
        hexid = early["id"].removeprefix("sha256:")
        assert json.loads(git(bare, "show", f"{REF}:records/{hexid}/publication.json")) == attachment
        assert json.loads(git(bare, "show", f"{REF}:records/{hexid}/record.json")) == early
        # the dashboard serves it; reproduce by the record's URL finds the code there and reproduces it
        record_url = next(s["url"] for s in report["steps"] if s["target"] == "dashboard")
        source = resolve(record_url)
        assert source.git_url == served and source.record_id == early["id"]
        # (the local runtime: a venv one rebuilds this whole test environment; tests/test_reproduce.py has it)
        res = run_cli(
            "reproduce", record_url, "--runtime", "local", "--trust-remote-code", "--json", cwd=tmp_path, timeout=300
        )
        assert res.returncode == 0, res
        verdict = json.loads(res.stdout)
        assert verdict["verdict"] == "reproduced" and verdict["record_id"] == early["id"]
        assert verdict["record_signature"]["status"] == "valid"
        # publishing again changes nothing
        again = run_cli("publish", "--dashboard", url, "--json", early["id"][:19], cwd=root, env=signing)
        assert again.returncode == 0, again
        assert json.loads((folder / "publication.json").read_text()) == attachment


def test_a_remote_taken_later_is_signed_by_the_key_that_signed_the_record(make_project, tmp_path):
    """Reproducers use a publication's remote only when the record's signer signed it: publishing one with
    another key is refused before anything is sent, and a stale publication.json is made again."""
    from signing_support import key_env, make_key

    root = make_project({"main.py": ENTRY, "refs.txt": "a b\n"})
    record = record_in(root)
    add_bare_remote(root, tmp_path / "remotes", "alice/keys")
    first, second = make_key(tmp_path / "k1"), make_key(tmp_path / "k2")
    env1, env2 = key_env(first, tmp_path / "h1"), key_env(second, tmp_path / "h2")
    assert run_cli("publish", "--push", "--no-dashboard", cwd=root, env=env1).returncode == 0  # record.sig by k1
    git(root, "remote", "set-url", "origin", "https://example.invalid/alice/keys.git")  # now others could fetch it
    res = run_cli(
        "publish",
        "--no-git",
        "--dashboard",
        "http://127.0.0.1:9",
        cwd=root,
        env={**env2, "XDG_CONFIG_HOME": str(tmp_path / "cfg")},
    )
    fp1 = subprocess.run(["ssh-keygen", "-lf", f"{first}.pub"], capture_output=True, text=True).stdout.split()[1]
    assert res.returncode == 2 and f"signed by key {fp1}" in res.stderr and "one key signed both" in res.stderr, res
    # with the record's key: past that check (to the missing token), the publication made again with it
    res = run_cli(
        "publish",
        "--no-git",
        "--dashboard",
        "http://127.0.0.1:9",
        cwd=root,
        env={**env1, "XDG_CONFIG_HOME": str(tmp_path / "cfg")},
    )
    assert res.returncode == 2 and "no token for the dashboard" in res.stderr, res
    folder = root / ".cotk-repro" / "runs" / record["id"].removeprefix("sha256:")
    attachment = json.loads((folder / "publication.json").read_text())
    sig = tmp_path / "p.sig"
    sig.write_text(attachment["signature"])
    from cotk_repro.core.canonical import canonical_json

    allowed = tmp_path / "allowed"
    allowed.write_text("alice " + (first.parent / f"{first.name}.pub").read_text())
    check = subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            str(allowed),
            "-I",
            "alice",
            "-n",
            "cotk-repro-publication",
            "-s",
            str(sig),
        ],
        input=canonical_json(attachment["publication"]),
        capture_output=True,
    )
    assert check.returncode == 0, check.stderr


@pytest.mark.slow  # a live dashboard, a git daemon, three publishes and a key registration
def test_a_key_the_dashboard_does_not_know_stops_publish_before_anything_is_pushed(
    make_project, tmp_path, live_dashboard
):
    """Issue 40: a signing key that exists here but is not registered to the token's user on the dashboard used to
    push to git and then get the dashboard's 403 (a half publish). Now the dashboard is asked first: one sentence
    pointing to `cotk-repro keys add`, nothing pushed; once the key is added, the same publish goes through."""
    from signing_support import fingerprint_of, key_env, make_key

    url, token, _alice = live_dashboard
    root = make_project({"main.py": ENTRY, "refs.txt": "a b\n"})
    bare = add_bare_remote(root, tmp_path / "remotes", "alice/newkey")
    record_in(root)
    key = make_key(tmp_path / "new-key")  # alice's second machine: its key is not on the dashboard
    home = tmp_path / "home"
    env = {**key_env(key, home), "XDG_CONFIG_HOME": str(home / ".config"), "COTK_REPRO_DASHBOARD_TOKEN": token}
    with remote_served_by_git_daemon(root, bare, tmp_path / "remotes"):
        res = run_cli("publish", "--push", "--dashboard", url, cwd=root, env=env)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res
        [error] = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
        fp = fingerprint_of(key.with_suffix(".pub"))
        assert f"the key {fp}" in error and "is not registered to alice" in error, res
        assert "`cotk-repro keys add`" in error and "add-user" not in res.stderr and "nothing was published" in error
        assert git(bare, "for-each-ref").strip() == ""  # no ref arrived: neither the records ref nor a branch
        assert run_cli("keys", "add", "--dashboard", url, env=env, timeout=120).returncode == 0
        res = run_cli("publish", "--push", "--dashboard", url, "--json", cwd=root, env=env)
        assert res.returncode == 0, res
        assert [s["target"] for s in json.loads(res.stdout)["steps"]] == ["git", "dashboard"]
        assert REF in git(bare, "for-each-ref", "--format=%(refname)").split()


def test_the_dashboards_refusal_of_an_unregistered_key_points_to_keys_add(make_project, tmp_path, live_dashboard):
    """Issue 40: the 403 for a signature by a key nobody registered is one sentence naming `cotk-repro keys add`
    (never the administrator's `dashboard add-user`); the client's own words do not run a second sentence on."""
    from signing_support import make_key

    from cotk_repro.core.signing import key_from_path, sign_record
    from cotk_repro.remote.dashboard import DashboardClient, DashboardError

    url, token, _alice = live_dashboard
    record = record_in(make_project({"main.py": ENTRY, "refs.txt": "a\n"}))
    signature = sign_record(record, key_from_path(make_key(tmp_path / "stranger"), "test"))
    with pytest.raises(DashboardError) as refused:
        DashboardClient(url, token, retries=1).upload_record(record, signature=signature)
    err = refused.value
    assert err.status == 403 and "not registered on this dashboard" in err.message
    assert "`cotk-repro keys add`" in err.message and "`cotk-repro keys add`" in (err.hint or "")
    assert "add-user" not in err.message + (err.hint or "") and ". " not in err.message
