"""Whatever a stranger controls is hostile (issue 32): records served by a dashboard, records on a git ref,
record folders committed to a project, a project's committed config.

Each attack is built the way a stranger would build it (a static HTTP server posing as a dashboard, a
record with a valid id, a planted record folder) and the test asserts both the refusal and that nothing of
the attack happened on this host: a canary file under the test's temporary folder was never created, no
secret left, no command died with an unexpected error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dashboard_support import make_record
from test_reproduce_support import http_double


def cli(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 300, input: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", "cotk_repro", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def one_sentence_exit_2(proc, *words: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "unexpected" not in out and "Traceback" not in out, out
    for w in words:
        assert w in " ".join(out.split()), out


def serve_record(record: dict, signature: str | None = None):
    """A static HTTP server posing as a dashboard: every GET of a record answers ``record``."""

    def answer(method, path, headers, body):
        if "/records/" in path:
            return 200, {"record": record, "signature": signature, "reproductions": []}
        return 404, {"detail": "not found"}

    return http_double(answer)


# -- 1. no record field reaches a host process as anything but data --------------------------------------


def _hostile_urls(canary: Path) -> list[str]:
    c = str(canary)
    return [
        f"--upload-pack=id>{c};#://x",
        f"--upload-pack=touch {c};#://x",
        f"-oProxyCommand=touch {c}:x",
        f"git@-oProxyCommand=touch {c}:x",
        f"ssh://-oProxyCommand=touch%20{c}/x",
        f"ext::sh -c touch% {c}",
        "fd::17",
        "file:///etc",
        "http://127.0.0.1:9/x.git",
        "https://example.com/x.git\n--upload-pack=x",
        "https://example.com/x\x1b[2J.git",
        f"https://example.com/x.git --upload-pack=touch {c}",
        "-",
    ]


@pytest.mark.parametrize("index", range(13))
def test_record_remote_url_from_a_dashboard_is_data_never_an_option(tmp_path, index):
    canary = tmp_path / "CANARY"
    url = _hostile_urls(canary)[index]
    record = make_record({"bleu": (0.25, None)}, remote_url=url)
    with serve_record(record) as (base, calls):
        proc = cli(
            "reproduce",
            f"{base}/records/{record['id']}",
            "--runtime",
            "local",
            "--trust-remote-code",
            "--allow-unsigned",
            cwd=tmp_path,
            env={"XDG_CONFIG_HOME": str(tmp_path / "cfg")},
        )
    assert not canary.exists(), proc.stderr
    one_sentence_exit_2(proc, "git URL")
    assert calls, "the dashboard was asked"


def test_the_refusal_is_one_sentence_naming_the_url_escaped(tmp_path):
    canary = tmp_path / "CANARY"
    record = make_record({"bleu": (0.25, None)}, remote_url=f"--upload-pack=id>{canary};#://x")
    with serve_record(record) as (base, _calls):
        proc = cli("reproduce", f"{base}/records/{record['id']}", "--json", cwd=tmp_path)
    one_sentence_exit_2(proc, "is not a plain https://, ssh://, git:// or scp-like git URL")
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "could not run" and "--upload-pack" in verdict["error"]
    assert not canary.exists()


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/a/b.git",
        "https://github.com/a/b",
        "ssh://git@example.com:2222/a/x.git",
        "git@example.com:a/x.git",
        "example.com:a/x.git",
        "git://127.0.0.1:9418/x.git",
        "https://[2001:db8::1]:8443/a/x.git",
        "ssh://example.com/~user/x.git",
    ],
)
def test_plain_git_urls_are_accepted(url):
    from cotk_repro.core.giturl import check_stranger_url

    assert check_stranger_url(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/x.git",
        "http://example.com/x.git",
        "ext::sh -c id",
        "fd::3",
        "--upload-pack=x:y",
        "-oProxyCommand=x:y",
        "ssh://-oProxyCommand=x/y",
        "git@-oProxyCommand=x:y",
        "host:-x",
        "https://example.com/-x",
        "https://example.com/x y.git",
        "https://exa\u200bmple.com/x.git",
        "https://example.com/x\u202e.git",
        "https://example.com/x\x00.git",
        "https://user:pw@example.com/x.git",
        "HTTPS://example.com/x.git",
        "https://example.com/%2d%2dx",
        "https://example.com",
        "https://example.com/",
        "svn+ssh://example.com/x",
        "host://x",
        "x" * 3000,
        "",
        "local:x.git",
        "/abs/path.git",
        "../up.git",
    ],
)
def test_other_git_urls_are_refused(url):
    from cotk_repro.core.giturl import UnsafeUrlError, check_stranger_url

    with pytest.raises(UnsafeUrlError) as info:
        check_stranger_url(url)
    assert "\n" not in info.value.message and "\x00" not in info.value.message


def test_git_may_use_file_and_ext_only_where_the_user_typed_the_location(tmp_path):
    """The transports are limited in git itself, whatever the URL checks let through."""
    from cotk_repro.reproduce import ReproduceError
    from cotk_repro.reproduce.fetch import RemoteRepo

    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    user = RemoteRepo(bare.as_uri(), "bare", tmp_path / "u", user_typed=True)
    user.init()
    assert user.ls_remote() == {}
    stranger = RemoteRepo(bare.as_uri(), "bare", tmp_path / "s", user_typed=False)
    stranger.init()
    with pytest.raises(ReproduceError):
        stranger.ls_remote()
    canary = tmp_path / "CANARY"
    for url in (f"ext::sh -c touch% {canary}", f"--upload-pack=touch {canary};#"):
        for typed in (True, False):
            repo = RemoteRepo(url, "x", tmp_path / f"e{typed}", user_typed=typed)
            repo.init()
            with pytest.raises(ReproduceError):
                repo.ls_remote()
            with pytest.raises(ReproduceError):
                repo.fetch_commit("0" * 40, "sha256:" + "0" * 64)
    assert not canary.exists()


@pytest.mark.parametrize("commit", ["--output=/tmp/x", "HEAD", "a" * 39 + "^", "-1"])
def test_a_commit_that_is_not_hex_never_reaches_git(tmp_path, commit):
    from cotk_repro.reproduce import ReproduceError
    from cotk_repro.reproduce.fetch import RemoteRepo

    repo = RemoteRepo("https://example.invalid/x.git", "x", tmp_path)
    repo.init()
    for call in (
        lambda: repo.fetch_commit(commit, "sha256:" + "0" * 64),
        lambda: repo.export(commit, tmp_path / "o"),
        lambda: repo.tree_of(commit),
    ):
        with pytest.raises(ReproduceError, match="not a hex commit id"):
            call()


# -- 2. the signature covers exactly the bytes the id covers ----------------------------------------------


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    """A real dashboard (SQLite) with alice and bob, each with a token and a registered ed25519 key."""
    from signing_support import make_key

    from cotk_repro.core.signing import key_from_path
    from cotk_repro.dashboard.auth import add_user
    from cotk_repro.dashboard.db import open_database
    from cotk_repro.dashboard.identity import add_key
    from cotk_repro.dashboard.server import start_in_thread

    folder = tmp_path_factory.mktemp("dash")
    db_url = f"sqlite:///{folder / 'dash.sqlite3'}"
    db = open_database(db_url)
    users = {}
    for name in ("alice", "bob"):
        token, _ = add_user(db, name)
        path = make_key(folder / name)
        add_key(db, name, path.with_suffix(".pub").read_text())
        users[name] = {"token": token, "key": key_from_path(path, "test"), "path": path}
    db.dispose()
    url, stop = start_in_thread(db_url, rate_limit=None)
    yield {"url": url, "users": users, "db": db_url}
    stop()


def _post(dashboard, path, body, user):
    import requests

    return requests.post(
        dashboard["url"] + "/api/v1" + path,
        json=body,
        timeout=30,
        headers={"Authorization": f"Bearer {dashboard['users'][user]['token']}"},
    )


def _count_rows(db_url: str, table: str) -> int:
    import sqlite3

    con = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def test_the_id_and_the_signature_cover_the_same_bytes():
    from cotk_repro.core.canonical import canonical_json, record_content
    from cotk_repro.core.signing import record_bytes
    from cotk_repro.records.store import compute_id

    record = make_record({"bleu": (0.25, None)})
    for extra in ({}, {"_path": "x-1"}, {"zz": [1, 2]}):
        r = {**record, **extra}
        body = canonical_json({k: v for k, v in r.items() if k != "id"})  # the independent reference
        assert record_bytes(r) == record_content(r) == body
        import hashlib

        assert compute_id(r) == "sha256:" + hashlib.sha256(body).hexdigest()


def test_alices_signature_does_not_cover_a_copy_with_an_extra_key(dashboard):
    """The `_path` recipe: alice's public record and signature, `_path` added, id recomputed, uploaded by bob."""
    import requests

    from cotk_repro.core.signing import sign_record
    from cotk_repro.records import finalize

    record = make_record({"bleu": (0.25, None)}, name="pathproj")
    signature = sign_record(record, dashboard["users"]["alice"]["key"])
    first = _post(dashboard, "/records", {"record": record, "signature": signature}, "alice")
    assert first.status_code == 201, first.text
    rows = _count_rows(dashboard["db"], "records")
    for n in range(3):
        copy = finalize({**json.loads(json.dumps(record)), "_path": f"x-{n}"})
        assert copy["id"] != record["id"]
        for user in ("bob", "alice"):
            res = _post(dashboard, "/records", {"record": copy, "signature": signature}, user)
            assert res.status_code in (401, 403, 422), res.text
            assert "_path" in res.text or "signature" in res.text, res.text
            got = requests.get(dashboard["url"] + f"/api/v1/records/{copy['id']}", timeout=30)
            assert got.status_code == 404
    assert _count_rows(dashboard["db"], "records") == rows


def test_a_record_with_a_key_the_schema_does_not_define_is_refused_even_signed(dashboard):
    from cotk_repro.core.signing import sign_record
    from cotk_repro.records import finalize

    rows = _count_rows(dashboard["db"], "records")
    for where in ("top", "code", "result", "package"):
        record = make_record({"bleu": (0.25, None)}, name=f"extra-{where}")
        if where == "top":
            record["_path"] = "x"
        elif where == "code":
            record["code"]["upload_pack"] = "x"
        elif where == "result":
            record["results"]["bleu"]["rank"] = 1
        else:
            record["environment"]["packages"][0]["note"] = "x"
        record = finalize(record)
        res = _post(
            dashboard,
            "/records",
            {"record": record, "signature": sign_record(record, dashboard["users"]["alice"]["key"])},
            "alice",
        )
        assert res.status_code == 422, res.text
        assert "does not define" in res.text
    assert _count_rows(dashboard["db"], "records") == rows


# -- 7. reproductions name their record ---------------------------------------------------------------------


def test_a_signed_reproduction_without_its_record_id_is_refused_and_not_counted(dashboard):
    import requests
    from dashboard_support import make_verdict

    from cotk_repro.core.signing import sign_record, sign_reproduction

    record = make_record({"bleu": (0.25, None)}, name="repro-id")
    res = _post(
        dashboard,
        "/records",
        {"record": record, "signature": sign_record(record, dashboard["users"]["alice"]["key"])},
        "alice",
    )
    assert res.status_code == 201, res.text
    before = _count_rows(dashboard["db"], "reproductions")
    for how in ("missing", "null", "empty", "other"):
        verdict = make_verdict(record["id"], value=0.25)
        if how == "missing":
            del verdict["record_id"]
        else:
            verdict["record_id"] = {"null": None, "empty": "", "other": "sha256:" + "1" * 64}[how]
        body = {"reproduction": verdict, "signature": sign_reproduction(verdict, dashboard["users"]["bob"]["key"])}
        res = _post(dashboard, f"/records/{record['id']}/reproductions", body, "bob")
        assert res.status_code == 422, (how, res.text)
        assert "record_id" in res.text
    assert _count_rows(dashboard["db"], "reproductions") == before
    page = requests.get(dashboard["url"] + f"/api/v1/records/{record['id']}", timeout=30).json()
    assert page["reproductions"] == []
    # the same reproduction naming its record is accepted: the refusal is about the missing name only
    verdict = make_verdict(record["id"], value=0.25)
    body = {"reproduction": verdict, "signature": sign_reproduction(verdict, dashboard["users"]["bob"]["key"])}
    res = _post(dashboard, f"/records/{record['id']}/reproductions", body, "bob")
    assert res.status_code == 201, res.text


# -- 4. a project's own files are not the publisher's records ---------------------------------------------

SMALL_ENTRY = "import json\njson.dump({'x': 1.0}, open('result.json', 'w'))\n"


def _ref_blobs(bare: Path) -> bytes:
    """Every blob on the published records ref, concatenated."""
    ref = "refs/heads/cotk-repro-records"
    names = subprocess.run(
        ["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", ref], capture_output=True, text=True
    ).stdout.split()
    return b"".join(
        subprocess.run(["git", "--git-dir", str(bare), "show", f"{ref}:{n}"], capture_output=True).stdout for n in names
    )


def _plant(root: Path, genuine: dict, secret: Path) -> dict:
    """What a stranger commits to a project: a record folder, started in 2099, its files links to secrets."""
    from cotk_repro.records import finalize

    planted = finalize(
        {**json.loads(json.dumps(genuine)), "command": {**genuine["command"], "started_at": "2099-01-01T00:00:00.000Z"}}
    )
    folder = root / ".cotk-repro" / "runs" / planted["id"].removeprefix("sha256:")
    folder.mkdir(parents=True)
    (folder / "record.json").write_text(json.dumps(planted))
    (folder / ".written-here").write_text("0" * 64 + "\n")  # the stranger's own mark, under the stranger's key
    for name in ("requirements.lock", "result.json", "Dockerfile", "record.sig"):
        (folder / name).symlink_to(secret)
    subprocess.run(["git", "-C", str(root), "add", "-f", ".cotk-repro/runs"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "template"], check=True)
    return planted


def test_a_record_folder_committed_to_the_project_is_never_published(tmp_path, make_project):
    from test_reproduce_support import add_bare_remote, record_in

    secret = tmp_path / "netrc"
    secret.write_text("machine github.com password SECRET-TOKEN-123\n")
    root = make_project({"main.py": SMALL_ENTRY})
    bare = add_bare_remote(root, tmp_path / "remotes", "me/proj")
    genuine = record_in(root)
    planted = _plant(root, genuine, secret)
    mine = record_in(root)  # the victim runs as usual (on the new commit)
    res = cli("publish", "--no-dashboard", "--push", "--json", cwd=root)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["id"] == mine["id"]
    for args in (("publish", planted["id"], "--no-dashboard", "--push"), ("show", planted["id"][7:19])):
        res = cli(*args, cwd=root)
        one_sentence_exit_2(res, "was not written by cotk-repro on this machine")
    listed = cli("runs", "--json", cwd=root)
    assert listed.returncode == 0 and planted["id"] not in listed.stdout
    assert "ignoring 1 record folder" in listed.stderr
    assert b"SECRET-TOKEN-123" not in _ref_blobs(bare)
    assert (
        planted["id"].removeprefix("sha256:").encode()
        not in subprocess.run(
            ["git", "--git-dir", str(bare), "ls-tree", "-r", "--name-only", "refs/heads/cotk-repro-records"],
            capture_output=True,
        ).stdout
    )


def test_a_symbolic_link_in_ones_own_record_folder_is_not_followed(tmp_path, make_project):
    from test_reproduce_support import add_bare_remote, record_in

    secret = tmp_path / "environ"
    secret.write_text("GITHUB_TOKEN=SECRET-TOKEN-456\n")
    root = make_project({"main.py": SMALL_ENTRY})
    bare = add_bare_remote(root, tmp_path / "remotes", "me/proj")
    record = record_in(root)
    folder = root / ".cotk-repro" / "runs" / record["id"].removeprefix("sha256:")
    (folder / "requirements.lock").unlink()
    (folder / "requirements.lock").symlink_to(secret)
    res = cli("publish", "--no-dashboard", "--push", cwd=root)
    one_sentence_exit_2(res, "requirements.lock of record", "is a symbolic link")
    assert b"SECRET-TOKEN-456" not in _ref_blobs(bare)
    # a FIFO is refused too, without hanging
    (folder / "requirements.lock").unlink()
    os.mkfifo(folder / "requirements.lock")
    res = cli("publish", "--no-dashboard", "--push", cwd=root, timeout=60)
    one_sentence_exit_2(res, "is not a regular file")


# -- 5. tokens go only where the user put them ------------------------------------------------------------


def test_login_reads_the_token_from_standard_input(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "COTK_REPRO_CONFIG_DIR": ""}
    for args in ((), ("--token", "-")):
        res = cli(
            "login", "--dashboard", "https://dash.example.org", "--no-check", *args, env=env, input="cotk_from_stdin\n"
        )
        assert res.returncode == 0, res.stderr
        assert "cotk_from_stdin" not in res.stdout + res.stderr
        stored = json.loads((tmp_path / "cfg" / "cotk-repro" / "config.json").read_text())
        assert stored["dashboards"]["https://dash.example.org"]["token"] == "cotk_from_stdin"
    res = cli("login", "--dashboard", "https://dash.example.org", "--no-check", env=env, input="")
    one_sentence_exit_2(res, "no token was given")


def _recorder():
    def answer(method, path, headers, body):
        return 201, {"id": "x", "url": "http://x/records/1", "created": True}

    return http_double(answer)


def test_an_environment_token_never_goes_to_a_dashboard_only_the_project_names(tmp_path, make_project):
    from test_reproduce_support import record_in

    with _recorder() as (attacker, stolen):
        root = make_project({"main.py": SMALL_ENTRY, "cotk-repro.toml": f'[dashboard]\nurl = "{attacker}"\n'})
        subprocess.run(
            ["git", "-C", str(root), "remote", "add", "origin", "https://example.invalid/a/x.git"], check=True
        )
        record_in(root)
        env = {
            "COTK_REPRO_DASHBOARD_TOKEN": "ci-secret-token",
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
            "COTK_REPRO_DASHBOARD_URL": "",
        }
        # --allow-unsigned: no signing key here (checked before anything is sent); this test is about the token
        res = cli("publish", "--no-git", "--allow-unsigned", cwd=root, env=env)
        one_sentence_exit_2(res, "is named only by the project's cotk-repro.toml")
    assert all("ci-secret-token" not in json.dumps(c["headers"]) for c in stolen)
    # the user chose it (--dashboard, or COTK_REPRO_DASHBOARD_URL): then it goes there
    with _recorder() as (mine, received):
        res = cli("publish", "--no-git", "--dashboard", mine, "--allow-unsigned", cwd=root, env=env)
        res2 = cli("publish", "--no-git", "--allow-unsigned", cwd=root, env={**env, "COTK_REPRO_DASHBOARD_URL": mine})
    assert [c["headers"].get("Authorization") for c in received if c["method"] == "POST"] == [
        "Bearer ci-secret-token"
    ] * 2, (res.stderr, res2.stderr)


def test_github_token_never_goes_to_the_api_a_project_names(tmp_path, make_project):
    from test_reproduce_support import record_in

    with _recorder() as (attacker, stolen):
        root = make_project({"main.py": SMALL_ENTRY, "cotk-repro.toml": f'[publish]\ngithub_api = "{attacker}"\n'})
        subprocess.run(
            ["git", "-C", str(root), "remote", "add", "origin", f"https://{attacker.split('://')[1]}/alice/x.git"],
            check=True,
        )
        record_in(root)
        env = {"GITHUB_TOKEN": "ghp_secret", "GITHUB_API_URL": "", "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
        res = cli("publish", "--no-dashboard", cwd=root, env=env, timeout=120)
        assert "Traceback" not in res.stderr and "unexpected error" not in res.stderr.lower()
        subprocess.run(
            ["git", "-C", str(root), "remote", "set-url", "origin", "https://github.com/alice/x.git"], check=True
        )
        res = cli("publish", "--no-dashboard", cwd=root, env=env, timeout=120)
        assert "Traceback" not in res.stderr and "unexpected error" not in res.stderr.lower()
    assert all("ghp_secret" not in json.dumps(c["headers"]) for c in stolen), stolen


def test_github_token_goes_only_over_https(monkeypatch):
    from cotk_repro.publish import PublishError, github

    with _recorder() as (api, calls):
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
        monkeypatch.setenv("GITHUB_API_URL", "http://example.invalid/api/v3")
        with pytest.raises(PublishError, match="not an https:// URL"):
            github.maybe_create("https://example.invalid/alice/x.git")
        assert github.github_hosts("https://ghe.example.org/api/v3") == {"ghe.example.org"}
        assert (
            github.parse_remote("https://github.com/alice/x.git", github.github_hosts("https://ghe.example.org/api/v3"))
            is None
        )
    assert calls == []


# -- 6. a project's config is bounded -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, words",
    [
        ("a = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n", "nested too deeply"),
        ('[project]\nname = "' + "x" * (2 * 1024 * 1024) + '"\n', "over the 1,048,576-byte limit"),
    ],
    ids=["arrays", "tables", "big"],
)
def test_a_hostile_config_is_one_sentence_exit_2(make_project, text, words):
    import time

    root = make_project({"main.py": SMALL_ENTRY})
    (root / "cotk-repro.toml").write_text(text)
    subprocess.run(["git", "-C", str(root), "add", "cotk-repro.toml"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "config"], check=True)
    started = time.monotonic()
    res = cli("run", "-q", cwd=root)
    assert time.monotonic() - started < 30
    one_sentence_exit_2(res, words)
    assert not (root / ".cotk-repro" / "runs").exists() or not any((root / ".cotk-repro" / "runs").iterdir())


def test_a_config_with_a_byte_order_mark_is_read(make_project):
    from cotk_repro.core.config import load_config

    root = make_project({"main.py": SMALL_ENTRY})
    (root / "cotk-repro.toml").write_bytes('\ufeff[project]\ntask = "lm"\n'.encode("utf-8"))
    assert load_config(root).get("project", "task") == "lm"


# -- 14, 15, 16. records refs and checkouts are read bounded -----------------------------------------------


def _records_ref_with_odd_entries(tmp_path: Path, big: int) -> tuple[Path, dict]:
    """A bare repository whose records ref holds one good record, a gitlink and a ``big``-byte blob."""
    bare = tmp_path / "odd.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)

    def g(*a, **kw):
        return (
            subprocess.run(["git", "--git-dir", str(bare), *a], check=True, capture_output=True, **kw)
            .stdout.decode()
            .strip()
        )

    good = make_record({"bleu": (0.25, None)}, name="good")
    good_sha = g("hash-object", "-w", "--stdin", input=json.dumps(good).encode())
    big_path = tmp_path / "big.json"
    with open(big_path, "wb") as fh:  # written in pieces: this process stays small
        fh.write(b"{")
        for _ in range((big - 2) // (1 << 20)):
            fh.write(b" " * (1 << 20))
        fh.write(b" " * ((big - 2) % (1 << 20)) + b"}")
    big_sha = g("hash-object", "-w", str(big_path))
    big_path.unlink()
    empty_tree = g("mktree", input=b"")
    some_commit = g("commit-tree", empty_tree, "-m", "x")
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "index")}
    for mode, sha, name in (
        ("100644", good_sha, good["id"][7:]),
        ("160000", some_commit, "a" * 64),
        ("100644", big_sha, "b" * 64),
    ):
        subprocess.run(
            [
                "git",
                "--git-dir",
                str(bare),
                "update-index",
                "--add",
                "--cacheinfo",
                f"{mode},{sha},records/{name}/record.json",
            ],
            check=True,
            env=env,
        )
    tree = subprocess.run(
        ["git", "--git-dir", str(bare), "write-tree"], check=True, env=env, capture_output=True, text=True
    ).stdout.strip()
    g("update-ref", "refs/heads/cotk-repro-records", g("commit-tree", tree, "-m", "records"))
    return bare, good


def _peak_rss_mb(args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    """Run the CLI in a child that reports its own peak RSS (so the parent's children do not count)."""
    # VmHWM of its own memory map (ru_maxrss would carry the forking parent's size over exec)
    code = (
        "import runpy, sys; sys.argv = ['cotk-repro', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('cotk_repro', run_name='__main__')\n"
        "finally:\n    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "    sys.stderr.write('\\nPEAK %s\\n' % hwm)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    peak = int(proc.stderr.rsplit("PEAK ", 1)[1].split()[0]) / 1024
    return proc, peak


def test_a_gitlink_and_a_huge_blob_on_a_records_ref_leave_the_other_records_usable(tmp_path):
    bare, good = _records_ref_with_odd_entries(tmp_path, 200 * 1024 * 1024)
    listed, peak = _peak_rss_mb(["reproduce", str(bare), "--list", "--json", "-"])
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [good["id"]]
    assert "is a commit, not a file" in listed.stderr and "over the 16,777,216-byte limit" in listed.stderr
    assert "unexpected" not in listed.stderr and "Traceback" not in listed.stderr
    assert peak < 200, f"peak RSS {peak:.0f} MB reading a ref with a 200 MB blob"
    verified = cli("verify", str(bare), "--json", "--allow-unsigned")
    assert verified.returncode in (0, 1), verified.stderr
    rows = json.loads(verified.stdout)
    rows = rows.get("records", rows) if isinstance(rows, dict) else rows
    details = " ".join(str(r.get("detail")) for r in rows)
    assert "is a commit, not a file" in details and "over the 16,777,216-byte limit" in details, rows
    assert "unexpected" not in verified.stderr and "Traceback" not in verified.stderr


def test_a_checkout_is_streamed_to_disk_and_capped(tmp_path):
    from cotk_repro.reproduce import ReproduceError
    from cotk_repro.reproduce.fetch import RemoteRepo

    work = tmp_path / "w"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    (work / ".gitattributes").write_text("v.txt export-subst\n")
    (work / "v.txt").write_text("$Format:%H%H%H%H%H%H%H%H$\n")
    subprocess.run(["git", "-C", str(work), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(work), "commit", "-q", "-m", "x"], check=True)
    commit = subprocess.run(
        ["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    repo = RemoteRepo(str(work), "w", tmp_path / "r", user_typed=True)
    repo.init()
    repo.fetch_commit(commit, "sha256:" + "0" * 64)
    repo.export(commit, tmp_path / "out")
    assert (tmp_path / "out" / "big.bin").stat().st_size == 3 * 1024 * 1024
    assert (tmp_path / "out" / "v.txt").read_text() == "$Format:%H%H%H%H%H%H%H%H$\n"  # export-subst is off
    with pytest.raises(ReproduceError, match="over the 1,048,576-byte limit for a checkout"):
        repo.export(commit, tmp_path / "out2", limit=1024 * 1024)
    assert not list(tmp_path.glob(".out2*.tar"))


# -- 17, 18. terminal and CSV escape stranger text -----------------------------------------------------------

ESCAPES = [
    "\x1b[2J\x1b[H",
    "\x1b]0;owned\x07",
    "\x9b31m",
    "a\u202eb",
    "x\u200by",
    "[link=http://evil.invalid]click[/link]",
    "[bold red]loud[/]",
    "line\nbreak",
]


def _bare_with_records(tmp_path: Path, records: list[dict]) -> Path:
    bare = tmp_path / "recs.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "recs-index")}
    for r in records:
        sha = (
            subprocess.run(
                ["git", "--git-dir", str(bare), "hash-object", "-w", "--stdin"],
                input=json.dumps(r).encode(),
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        subprocess.run(
            [
                "git",
                "--git-dir",
                str(bare),
                "update-index",
                "--add",
                "--cacheinfo",
                f"100644,{sha},records/{r['id'][7:]}/record.json",
            ],
            check=True,
            env=env,
        )
    tree = subprocess.run(
        ["git", "--git-dir", str(bare), "write-tree"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "--git-dir", str(bare), "commit-tree", tree, "-m", "r"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "--git-dir", str(bare), "update-ref", "refs/heads/cotk-repro-records", commit], check=True)
    return bare


def _assert_inert(out: str) -> None:
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out, ascii(out[:400])
    assert "\u202e" not in out and "\u200b" not in out, ascii(out[:400])
    assert (
        "[link=http://evil.invalid]click[/link]" in out.replace("\n", "").replace(" ", "")
        or "[link=http://evil.invalid]" in out
    ), out[:2000]


def test_record_text_never_reaches_the_terminal_raw(tmp_path):
    from cotk_repro.records import finalize

    record = make_record({e: (0.25, None) for e in ESCAPES}, name="esc")
    record["command"]["entry"] = "\x1b]0;title\x07main.py"
    record = finalize(record)
    bare = _bare_with_records(tmp_path, [record])
    listed = cli("reproduce", str(bare), "--list", env={"COLUMNS": "400"})
    assert listed.returncode == 0, listed.stderr
    _assert_inert(listed.stdout + listed.stderr)
    other = finalize(
        {
            **json.loads(json.dumps(record)),
            "status": "ok",
            "results": {
                e: {"value": 0.5, "hash": None, "signature": None, "metric": e, "version": "1"} for e in ESCAPES
            },
        }
    )
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(record))
    b.write_text(json.dumps(other))
    diffed = cli("diff", str(a), str(b), cwd=tmp_path, env={"COLUMNS": "400"})
    assert diffed.returncode in (0, 1), diffed.stderr
    _assert_inert(diffed.stdout + diffed.stderr)


def test_safe_escapes_controls_and_keeps_text():
    from cotk_repro.cli.output import safe

    assert safe("bleu 0.25 — ünïcode 中文") == "bleu 0.25 — ünïcode 中文"
    assert safe("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert safe("a\u202eb\u200bc") == "a\\u202eb\\u200bc"
    assert safe("x\ny") == "x\\ny" and safe("x\ny", keep_newlines=True) == "x\ny"


@pytest.mark.parametrize(
    "name, shown",
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("-0.5", "-0.5"),
        ("plain", "plain"),
        ("\tTAB", "'\tTAB"),
    ],
)
def test_csv_cells_that_look_like_formulas_are_neutralised(tmp_path, name, shown):
    import csv

    from cotk_repro.compare.report import _write_csv

    path = tmp_path / "t.csv"
    _write_csv(path, ["system", "bleu"], [[name, "0.25"], ["-1.5", "-0.5"]])
    rows = list(csv.reader(path.open()))
    assert rows[1][0] == shown and rows[2] == ["-1.5", "-0.5"]


# -- a dashboard's answer is read bounded -------------------------------------------------------------------


def _streaming_server(body_mb: int, declare: bool):
    """A raw HTTP server answering every request with ``body_mb`` MB of JSON white space (Content-Length
    declared or not: then the body runs until the connection closes)."""
    import socket
    import threading
    from contextlib import contextmanager

    @contextmanager
    def serve():
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        srv.settimeout(0.2)
        stop = threading.Event()

        def loop():
            while not stop.is_set():
                try:
                    conn, _ = srv.accept()
                except OSError:
                    continue
                try:
                    conn.recv(65536)
                    head = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
                    if declare:
                        head += f"Content-Length: {body_mb * 1024 * 1024}\r\n"
                    conn.sendall((head + "\r\n").encode())
                    block = b" " * (1024 * 1024)
                    for _ in range(body_mb):
                        conn.sendall(block)
                except OSError:
                    pass
                finally:
                    conn.close()

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{srv.getsockname()[1]}"
        finally:
            stop.set()
            thread.join(5)
            srv.close()

    return serve()


@pytest.mark.parametrize("declare", [True, False])
def test_a_dashboard_answer_past_the_cap_is_refused_unread(tmp_path, declare):
    rid = "sha256:" + "a" * 64
    with _streaming_server(200, declare) as base:
        proc, peak = _peak_rss_mb(["reproduce", f"{base}/records/{rid}"])
        diffed, _ = _peak_rss_mb(["diff", f"{base}/records/{rid}", f"{base}/records/{rid}"])
    one_sentence_exit_2(proc, "answered more than 67,108,864 bytes")
    one_sentence_exit_2(diffed, "answered more than 67,108,864 bytes")
    assert peak < 200, f"peak RSS {peak:.0f} MB for a 200 MB answer"
