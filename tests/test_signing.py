"""Signed records: publish signs (ssh-keygen, SSHSIG), the signature travels on the records ref,
`cotk-repro keys` and `cotk-repro verify`, interop with `ssh-keygen -Y` both ways, agent keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, run_cli
from signing_support import agent_add, fingerprint_of, key_env, make_key, ssh_agent
from test_reproduce_support import add_bare_remote, record_in, remote_served_by_git_daemon

from cotk_repro.core.canonical import canonical_json

ENTRY = """import json
json.dump({"tokens": 4.0}, open("result.json", "w"))
"""
REF = "refs/heads/cotk-repro-records"


@pytest.fixture
def project(make_project, tmp_path):
    root = make_project({"main.py": ENTRY}, name="proj")
    bare = add_bare_remote(root, tmp_path / "remotes", "alice/proj")
    return root, bare


def signed_bytes(record: dict) -> bytes:
    """Independent reference: the canonical JSON of the record without its id (what the id hashes)."""
    return canonical_json({k: v for k, v in record.items() if k != "id"})


def publish_with(root: Path, env: dict, *args: str):
    return run_cli("publish", "--no-dashboard", "--push", "--json", *args, cwd=root, env=env)


def on_ref(bare: Path, record: dict, name: str) -> str:
    return git(bare, "show", f"{REF}:records/{record['id'].removeprefix('sha256:')}/{name}")


def ssh_verify(tmp: Path, principal: str, pub: Path, data: bytes, sig_text: str, namespace="cotk-repro-record"):
    signers = tmp / "allowed_signers"
    signers.write_text(f"{principal} {pub.read_text().strip()}\n")
    sig = tmp / "check.sig"
    sig.write_text(sig_text + "\n")
    return subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", principal, "-n", namespace, "-s", str(sig)],
        input=data,
        capture_output=True,
    )


@pytest.mark.parametrize("key_type", ["ed25519", "rsa"])
def test_published_signature_verifies_with_ssh_keygen(project, tmp_path, key_type):
    root, bare = project
    key = make_key(tmp_path / "keys", key_type=key_type)
    env = key_env(key, tmp_path / "home")
    record = record_in(root, env=env)
    res = publish_with(root, env)
    assert res.returncode == 0, res
    report = json.loads(res.stdout)
    assert report["signed_by"] == fingerprint_of(key.with_suffix(".pub"))
    sig = on_ref(bare, record, "record.sig")
    assert sig.startswith("-----BEGIN SSH SIGNATURE-----")
    # interop: OpenSSH itself accepts it, over the bytes the id is computed from ...
    ok = ssh_verify(tmp_path, "alice", key.with_suffix(".pub"), signed_bytes(record), sig)
    assert ok.returncode == 0, ok.stderr
    assert b'Good "cotk-repro-record" signature for alice' in ok.stdout
    # the docs' recipe (docs/reproduce.md, "Signing") yields exactly the signed bytes
    recipe = (
        'import json,sys; r=json.load(sys.stdin); r.pop("id"); sys.stdout.write(json.dumps(r, sort_keys=True, '
        'separators=(",", ":"), ensure_ascii=False))'
    )
    via_docs = subprocess.run(
        [sys.executable, "-c", recipe],
        input=on_ref(bare, record, "record.json").encode(),
        capture_output=True,
        check=True,
    ).stdout
    assert via_docs == signed_bytes(record)
    # ... and the id is still content-addressed (the signature is not part of what it hashes)
    assert json.loads(on_ref(bare, record, "record.json"))["id"] == record["id"]
    # ... and not over anything else
    assert ssh_verify(tmp_path, "alice", key.with_suffix(".pub"), signed_bytes(record) + b" ", sig).returncode != 0
    assert (
        ssh_verify(tmp_path, "alice", key.with_suffix(".pub"), signed_bytes(record), sig, namespace="git").returncode
        != 0
    )


def test_ssh_keygen_signature_verifies_with_cotk_repro_verify(project, tmp_path):
    root, bare = project
    key = make_key(tmp_path / "keys")
    env = key_env(None, tmp_path / "home")
    record = record_in(root, env=env)
    folder = root / ".cotk-repro" / "runs" / record["id"].removeprefix("sha256:")
    # the signature made by OpenSSH's own tool, by hand, as a user without cotk-repro's help would
    data = tmp_path / "record.bytes"
    data.write_bytes(signed_bytes(record))
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", "cotk-repro-record", str(data)],
        check=True,
        capture_output=True,
    )
    (folder / "record.sig").write_text(Path(str(data) + ".sig").read_text())
    assert publish_with(root, env).returncode == 0
    assert on_ref(bare, record, "record.sig") == Path(str(data) + ".sig").read_text().strip()
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"alice@example.org {key.with_suffix('.pub').read_text()}")
    res = run_cli("verify", str(bare), "--allowed-signers", str(signers), "--json", env=env)
    assert res.returncode == 0, res
    [row] = json.loads(res.stdout)
    assert row["status"] == "valid" and row["signer"] == "alice@example.org"
    assert row["fingerprint"] == fingerprint_of(key.with_suffix(".pub"))
    # a key that is not in the allowed signers: valid, but not the author's -> exit 1
    other = make_key(tmp_path / "other")
    signers.write_text(f"bob {other.with_suffix('.pub').read_text()}")
    res = run_cli("verify", str(bare), "--allowed-signers", str(signers), "--json", env=env)
    assert res.returncode == 1 and json.loads(res.stdout)[0]["status"] == "unknown signer"


def test_verify_finds_a_tampered_record_on_the_ref(project, tmp_path):
    root, bare = project
    key = make_key(tmp_path / "keys")
    env = key_env(key, tmp_path / "home")
    record = record_in(root, env=env)
    assert publish_with(root, env).returncode == 0
    assert run_cli("verify", str(bare), env=env).returncode == 0
    # someone with push access rewrites the result (and recomputes the id so the record still looks valid)
    from cotk_repro.records import finalize

    forged = dict(record)
    forged["results"] = {k: {**v, "value": 0.999} for k, v in record["results"].items()}
    forged = finalize(forged)
    hexid = record["id"].removeprefix("sha256:")
    sig = on_ref(bare, record, "record.sig")
    from cotk_repro.remote.gitrecords import add_to_ref

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--bare", str(bare), str(clone)], check=True)
    fhex = forged["id"].removeprefix("sha256:")
    add_to_ref(
        clone,
        REF,
        {
            f"records/{fhex}/record.json": json.dumps(forged).encode(),
            f"records/{fhex}/record.sig": (sig + "\n").encode(),
        },
        message="forged",
    )
    git(clone, "push", "-q", str(bare), f"{REF}:{REF}")
    res = run_cli("verify", str(bare), "--json", env=env)
    assert res.returncode == 1, res
    rows = {r["id"]: r for r in json.loads(res.stdout)}
    assert rows[record["id"]]["status"] == "valid"
    assert rows[forged["id"]]["status"] == "invalid"
    assert "does not match the signed content" in rows[forged["id"]]["detail"]
    assert hexid != fhex


def test_no_key_publishes_unsigned_with_a_warning(project, tmp_path):
    root, bare = project
    env = key_env(None, tmp_path / "home")
    record = record_in(root, env=env)
    res = publish_with(root, env)
    assert res.returncode == 0, res
    assert "published unsigned" in res.stderr
    assert json.loads(res.stdout)["signed_by"] is None
    files = git(bare, "ls-tree", "-r", "--name-only", REF).split()
    assert f"records/{record['id'].removeprefix('sha256:')}/record.json" in files
    assert not any(f.endswith("record.sig") for f in files)
    res = run_cli("verify", str(bare), "--json", env=env)
    assert res.returncode == 1 and json.loads(res.stdout)[0]["status"] == "unsigned"
    assert run_cli("verify", str(bare), "--allow-unsigned", env=env).returncode == 0
    # reproduce refuses it (could not run, one sentence naming the flag) unless --allow-unsigned
    refused = run_cli("reproduce", str(bare), "--record", record["id"], *_local_runtime(), "--json", env=env)
    assert refused.returncode == 2, refused
    verdict = json.loads(refused.stdout)
    assert verdict["verdict"] == "could not run" and verdict["metrics"] == [] and verdict["rerun"]["results"] == {}
    assert "is unsigned" in verdict["error"] and "--allow-unsigned" in verdict["error"]
    anyway = run_cli(
        "reproduce", str(bare), "--record", record["id"], *_local_runtime(), "--allow-unsigned", "--json", env=env
    )
    assert anyway.returncode == 0, anyway
    assert json.loads(anyway.stdout)["record_signature"]["status"] == "unsigned"
    assert "is unsigned" in anyway.stderr
    keys = run_cli("keys", env=env)
    assert keys.returncode == 1 and "no SSH key" in keys.stderr


def test_no_key_with_a_dashboard_stops_before_anything_is_sent(project, tmp_path):
    """Issue 40: without a key, publishing to git and a dashboard used to push to git, then get the dashboard's
    403: half published. Now one sentence pointing to `cotk-repro keys add`, and nothing sent: the bare remote has
    no records ref and the dashboard (a listening socket standing in for it, so that a connection would show)
    was never connected to."""
    import socket

    root, bare = project
    env = key_env(None, tmp_path / "home")
    record_in(root, env=env)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        res = run_cli("publish", "--push", "--dashboard", url, cwd=root, env=env)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody knocked
    assert res.returncode == 2, res
    [line] = res.stderr.strip().splitlines()
    assert line.startswith("Error: record ") and "no SSH key" in line and "nothing was sent" in line, res
    assert "`cotk-repro keys add`" in line and "add-user" not in line and ". " not in line.split(" (")[0], res
    assert subprocess.run(["git", "-C", str(bare), "rev-parse", "--verify", "-q", REF]).returncode != 0
    # without the dashboard, the unsigned record goes to git (with its warning), as before
    assert publish_with(root, env).returncode == 0


def test_keys_follows_git_signingkey_then_the_default_key(project, tmp_path):
    root, _ = project
    home = tmp_path / "home"
    default = make_key(home / ".ssh")
    env = {"HOME": str(home), "COTK_REPRO_SIGNING_KEY": "", "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig")}
    res = run_cli("keys", "--json", cwd=root, env=env)
    assert res.returncode == 0, res
    key = json.loads(res.stdout)["key"]
    assert key["fingerprint"] == fingerprint_of(default.with_suffix(".pub"))
    assert key["source"] == "~/.ssh/id_ed25519"
    other = make_key(tmp_path / "k2", key_type="rsa")
    git(root, "config", "user.signingkey", str(other))
    key = json.loads(run_cli("keys", "--json", cwd=root, env=env).stdout)["key"]
    assert key["fingerprint"] == fingerprint_of(other.with_suffix(".pub")) and key["type"] == "ssh-rsa"
    assert key["source"] == "git config user.signingkey"
    human = run_cli("keys", cwd=root, env=env)
    assert fingerprint_of(other.with_suffix(".pub")) in human.stdout


def test_passphrase_key_signs_through_ssh_agent(project, tmp_path):
    root, bare = project
    key = make_key(tmp_path / "keys", passphrase="correct horse")
    pub = key.with_suffix(".pub")
    with ssh_agent(tmp_path) as agent:
        agent_add(key, "correct horse", agent, tmp_path)
        env = {**key_env(None, tmp_path / "home"), **agent}
        # as git does it: user.signingkey = key::<public key>, the private half only in the agent
        git(root, "config", "user.signingkey", "key::" + pub.read_text().strip())
        record = record_in(root, env=env)
        res = publish_with(root, env)
        assert res.returncode == 0, res
        assert json.loads(res.stdout)["signed_by"] == fingerprint_of(pub)
    sig = on_ref(bare, record, "record.sig")
    assert ssh_verify(tmp_path, "alice", pub, signed_bytes(record), sig).returncode == 0


def test_passphrase_key_without_agent_fails_with_a_sentence(project, tmp_path):
    root, _ = project
    key = make_key(tmp_path / "keys", passphrase="secret")
    env = {**key_env(key, tmp_path / "home"), "SSH_AUTH_SOCK": ""}
    record_in(root, env=env)
    res = publish_with(root, env)
    assert res.returncode == 2, res
    assert "signing with SHA256:" in res.stderr and "ssh-agent" in res.stderr
    assert "Traceback" not in res.stderr


def _forge_on_ref(bare: Path, tmp_path: Path, record: dict) -> None:
    """Rewrite the record's value on the remote's records ref, keeping its id and signature (a tampered record)."""
    from cotk_repro.remote.gitrecords import add_to_ref

    hexid = record["id"].removeprefix("sha256:")
    clone = tmp_path / "forger"
    subprocess.run(["git", "clone", "-q", "--bare", str(bare), str(clone)], check=True)
    forged = json.loads(git(clone, "show", f"{REF}:records/{hexid}/record.json"))
    forged["results"]["tokens"]["value"] = 99.0
    # the id is content-addressed: the forger must recompute it, and the old signature no longer covers it
    from cotk_repro.records import finalize

    old_sig = git(clone, "show", f"{REF}:records/{hexid}/record.sig")
    forged = finalize(forged)
    fhex = forged["id"].removeprefix("sha256:")
    add_to_ref(
        clone,
        REF,
        {
            f"records/{fhex}/record.json": json.dumps(forged).encode(),
            f"records/{fhex}/record.sig": (old_sig + "\n").encode(),
        },
        message="forged",
    )
    git(clone, "push", "-q", str(bare), f"{REF}:{REF}")
    return forged


def _local_runtime() -> list[str]:
    """``--runtime local``, with the trust flag where this version of reproduce asks for it."""
    help_text = run_cli("reproduce", "--help", env={"COLUMNS": "200"}).stdout
    return ["--runtime", "local"] + (["--trust-remote-code"] if "--trust-remote-code" in help_text else [])


def test_reproduce_names_the_signer_and_refuses_a_bad_signature(project, tmp_path):
    LOCAL = _local_runtime()
    root, bare = project
    key = make_key(tmp_path / "keys")
    env = key_env(key, tmp_path / "home")
    record = record_in(root, env=env)
    assert publish_with(root, env).returncode == 0
    good = run_cli("reproduce", str(bare), "--record", record["id"], *LOCAL, "--json", env=env)
    verdict = json.loads(good.stdout)
    assert verdict["record_signature"] == {
        "status": "valid",
        "signer": None,
        "fingerprint": fingerprint_of(key.with_suffix(".pub")),
    }
    assert "signature valid" in good.stderr
    # news, not a warning (issue 40)
    [line] = [line for line in good.stderr.splitlines() if "signature valid" in line]
    assert line.startswith("record ") and "Warning" not in line, good.stderr
    forged = _forge_on_ref(bare, tmp_path, record)
    bad = run_cli("reproduce", str(bare), "--record", forged["id"], *LOCAL, "--json", env=env)
    assert bad.returncode == 2, bad
    verdict = json.loads(bad.stdout)
    assert verdict["verdict"] == "could not run" and "BAD signature" in verdict["error"]
    anyway = run_cli("reproduce", str(bare), "--record", forged["id"], *LOCAL, "--allow-unsigned", "--json", env=env)
    verdict = json.loads(anyway.stdout)
    assert verdict["record_signature"]["status"] == "invalid"
    assert verdict["verdict"] == "not reproduced"  # it ran: 4.0 measured against the forged 99.0


def test_publish_uploads_the_signed_record_and_reproduce_from_the_dashboard_checks_it(project, tmp_path):
    from contextlib import ExitStack

    import requests

    from cotk_repro.dashboard.auth import add_user
    from cotk_repro.dashboard.db import open_database
    from cotk_repro.dashboard.identity import add_key
    from cotk_repro.dashboard.server import start_in_thread

    root, bare = project
    key = make_key(tmp_path / "keys")
    env = key_env(key, tmp_path / "home")
    db_url = f"sqlite:///{tmp_path / 'dash.sqlite3'}"
    db = open_database(db_url)
    token, _ = add_user(db, "alice")
    add_key(db, "alice", key.with_suffix(".pub").read_text())
    db.dispose()
    url, stop = start_in_thread(db_url, migrate=False)  # signatures required (the default)
    stack = ExitStack()
    try:
        served = stack.enter_context(remote_served_by_git_daemon(root, bare, tmp_path / "remotes"))
        assert run_cli("login", "--dashboard", url, "--token", token, "--no-check", env=env).returncode == 0
        record = record_in(root, env=env)
        assert record["code"]["remote_url"] == served
        res = run_cli("publish", "--push", "--dashboard", url, "--json", cwd=root, env=env)
        assert res.returncode == 0, res
        got = requests.get(f"{url}/api/v1/records/{record['id']}", timeout=10).json()
        assert got["user"] == "alice" and got["signed"] is True
        assert got["signature"].strip() == on_ref(bare, record, "record.sig")
        assert got["key"] == fingerprint_of(key.with_suffix(".pub"))
        res = run_cli("reproduce", f"{url}/records/{record['id']}", *_local_runtime(), "--json", env=env)
        assert res.returncode == 0, res
        assert json.loads(res.stdout)["record_signature"]["status"] == "valid"
        # without a key the same publish is refused by this dashboard with a sentence saying why
        other = record_in(root, env=key_env(None, tmp_path / "home2"))
        res = run_cli(
            "publish", other["id"], "--no-git", "--dashboard", url, cwd=root, env=key_env(None, tmp_path / "home2")
        )
        assert res.returncode == 2 and "accepts only signed records" in res.stderr, res
    finally:
        stack.close()
        stop()
