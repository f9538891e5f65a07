"""A record's publication (issue 24 item 5: the git remote taken at publish time, beside the record, signed)
is a stranger's when it comes from a dashboard: every way to bend it is refused before git is run.

Each attack is built as a stranger would: a real record signed with a real key (ssh-keygen), a publication
made with cotk-repro's own code and then tampered with, re-signed with another key, or pointed at a git
option, served by a static HTTP server posing as a dashboard. The tests assert the refusal (one sentence,
exit 2) and that nothing of the attack happened on this host: a canary file never created, a listening
socket named by the publication never connected to. The dashboard's own endpoint refuses the same.
"""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from dashboard_support import make_record
from signing_support import make_key
from test_reproduce_support import http_double


def cli(*args: str, cwd: Path, timeout: float = 300):
    return subprocess.run(
        [sys.executable, "-m", "cotk_repro", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "XDG_CONFIG_HOME": str(cwd / "cfg")},
        cwd=cwd,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def one_sentence_exit_2(proc, *words: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "unexpected" not in out and "Traceback" not in out, out
    for w in words:
        assert w in " ".join(out.split()), out


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    from cotk_repro.core.signing import key_from_path

    base = tmp_path_factory.mktemp("keys")
    return {who: key_from_path(make_key(base / who), who) for who in ("author", "attacker")}


@pytest.fixture
def listener():
    """A TCP port that accepts connections and counts them: a publication's URL pointed here is never fetched."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)

    def connections() -> int:
        n = 0
        while True:
            try:
                conn, _ = sock.accept()
                conn.close()
                n += 1
            except BlockingIOError:
                return n

    yield f"git://127.0.0.1:{sock.getsockname()[1]}/x.git", connections
    sock.close()


def signed_record(key):
    from cotk_repro.core.signing import sign_record

    record = make_record({"bleu": (0.25, None)}, remote_url=None)  # made before the project had a remote
    return record, sign_record(record, key)


def publication(record, url, key):
    """A genuine publication of ``record`` (cotk-repro's own code), signed with ``key``; the URL not checked,
    as an attacker's tool would not check it."""
    from cotk_repro.core.signing import sign_bytes
    from cotk_repro.remote.publication import KIND, NS_PUBLICATION, publication_bytes

    doc = {"kind": KIND, "record_id": record["id"], "commit": record["code"]["commit"], "remote_url": url}
    return {"publication": doc, "signature": sign_bytes(publication_bytes(doc), NS_PUBLICATION, key)}


def serve(record, signature, attachment):
    def answer(method, path, headers, body):
        if "/records/" in path:
            return 200, {"record": record, "signature": signature, "publication": attachment, "reproductions": []}
        return 404, {"detail": "not found"}

    return http_double(answer)


def reproduce_from(record, signature, attachment, tmp_path, *extra):
    with serve(record, signature, attachment) as (base, calls):
        proc = cli(
            "reproduce",
            f"{base}/records/{record['id']}",
            "--runtime",
            "local",
            "--trust-remote-code",
            *extra,
            cwd=tmp_path,
        )
    assert calls, "the dashboard was asked"
    return proc


# -- the attacks ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "--upload-pack=touch {c};#://x",
        "--upload-pack=id>{c};#://x",
        "ext::sh -c touch% {c}",
        "file://{d}",
        "{d}",
        "local:x.git",
        "ssh://-oProxyCommand=touch%20{c}/x",
        "git@-oProxyCommand=touch {c}:x",
    ],
)
def test_a_publication_signed_by_the_author_pointing_at_a_git_option_is_refused(tmp_path, keys, url):
    """Even the record's own signer cannot make reproduce run a command or read this host's disk."""
    canary = tmp_path / "CANARY"
    record, sig = signed_record(keys["author"])
    attachment = publication(record, url.format(c=canary, d=tmp_path), keys["author"])
    proc = reproduce_from(record, sig, attachment, tmp_path)
    assert not canary.exists()
    one_sentence_exit_2(proc, "git URL" if "local:" not in url and url != "{d}" else "author's machine")


def test_a_tampered_publication_is_refused(tmp_path, keys, listener):
    url, connections = listener
    record, sig = signed_record(keys["author"])
    attachment = publication(record, "https://example.com/author/proj.git", keys["author"])
    attachment["publication"]["remote_url"] = url  # a plain URL, but not the one signed
    proc = reproduce_from(record, sig, attachment, tmp_path)
    one_sentence_exit_2(proc, "BAD signature")
    assert connections() == 0


def test_a_tampered_publication_pointing_at_an_option_never_reaches_git(tmp_path, keys):
    canary = tmp_path / "CANARY"
    record, sig = signed_record(keys["author"])
    attachment = publication(record, "https://example.com/author/proj.git", keys["author"])
    attachment["publication"]["remote_url"] = f"--upload-pack=touch {canary};#://x"
    proc = reproduce_from(record, sig, attachment, tmp_path, "--allow-unsigned")
    one_sentence_exit_2(proc, "is not a plain https://, ssh://, git:// or scp-like git URL")
    assert not canary.exists()


def test_a_publication_re_signed_by_another_key_is_refused(tmp_path, keys, listener):
    url, connections = listener
    record, sig = signed_record(keys["author"])
    attachment = publication(record, url, keys["attacker"])  # a valid signature, by the wrong key
    proc = reproduce_from(record, sig, attachment, tmp_path, "--allow-unsigned")
    one_sentence_exit_2(
        proc,
        f"signed by key {keys['attacker'].public.fingerprint}",
        f"not by the key that signed the record ({keys['author'].public.fingerprint})",
    )
    assert connections() == 0


def test_a_record_re_signed_by_the_attacker_with_a_matching_publication_names_the_attacker(tmp_path, keys):
    """A hostile dashboard can sign anybody's record with its own key (as it can today): the publication is
    then the attacker's, and reproduce says whose key signed (never the author's)."""
    from cotk_repro.reproduce.source import source_for_record

    record, _sig = signed_record(keys["author"])
    from cotk_repro.core.signing import sign_record

    attacker_sig = sign_record(record, keys["attacker"])
    attachment = publication(record, "https://example.com/attacker/proj.git", keys["attacker"])
    source = source_for_record(record, publication=attachment, record_signature=attacker_sig)
    assert source.publisher == keys["attacker"].public.fingerprint != keys["author"].public.fingerprint


@pytest.mark.parametrize("change", ["record_id", "commit", "kind", "extra", "missing", "not-a-dict", "sig-type"])
def test_a_publication_for_another_record_or_of_another_shape_is_refused(tmp_path, keys, listener, change):
    url, connections = listener
    record, sig = signed_record(keys["author"])
    other, _ = signed_record(keys["author"])
    from cotk_repro.core.signing import sign_bytes
    from cotk_repro.remote.publication import NS_PUBLICATION, publication_bytes

    attachment = publication(record, url, keys["author"])
    doc = copy.deepcopy(attachment["publication"])
    if change == "record_id":
        doc["record_id"] = other["id"]
    elif change == "commit":
        doc["commit"] = other["code"]["commit"]
    elif change == "kind":
        doc["kind"] = "cotk-repro-record"
    elif change == "extra":
        doc["upload_pack"] = "x"
    elif change == "missing":
        del doc["commit"]
    if change == "not-a-dict":
        attachment = [attachment]
    elif change == "sig-type":
        attachment["signature"] = {"armored": attachment["signature"]}
    else:  # re-signed by the author's own key: each is refused for what it says, not for its signature
        attachment = {
            "publication": doc,
            "signature": sign_bytes(publication_bytes(doc), NS_PUBLICATION, keys["author"]),
        }
    proc = reproduce_from(record, sig, attachment, tmp_path, "--allow-unsigned")
    one_sentence_exit_2(proc, "publication of record")
    assert connections() == 0


def test_an_unsigned_publication_of_a_signed_record_is_refused(tmp_path, keys, listener):
    url, connections = listener
    record, sig = signed_record(keys["author"])
    attachment = {**publication(record, url, keys["author"]), "signature": None}
    proc = reproduce_from(record, sig, attachment, tmp_path, "--allow-unsigned")
    one_sentence_exit_2(proc, "is not signed, but the record is")
    assert connections() == 0


def test_unsigned_record_and_publication_need_allow_unsigned(tmp_path, keys, listener):
    url, connections = listener
    record, _sig = signed_record(keys["author"])
    attachment = {**publication(record, url, keys["author"]), "signature": None}
    proc = reproduce_from(record, None, attachment, tmp_path)
    one_sentence_exit_2(proc, "unsigned", "--allow-unsigned")
    assert connections() == 0
    from cotk_repro.reproduce.source import source_for_record

    assert source_for_record(record, publication=attachment, allow_unsigned=True).git_url == url


def test_a_record_that_names_its_own_remote_ignores_a_publication(keys):
    from cotk_repro.reproduce.source import source_for_record

    record = make_record({"bleu": (0.25, None)}, remote_url="https://example.com/a/proj.git")
    attachment = publication(record, "https://example.com/attacker/proj.git", keys["attacker"])
    assert source_for_record(record, publication=attachment).git_url == "https://example.com/a/proj.git"


# -- the dashboard refuses the same ------------------------------------------------------------------------


@pytest.fixture
def dashboard(tmp_path):
    """A real dashboard (SQLite, uvicorn in a thread) requiring signatures: ``(url, database URL)``."""
    from cotk_repro.dashboard.server import start_in_thread

    db_url = f"sqlite:///{tmp_path / 'dash.sqlite3'}"
    url, stop = start_in_thread(db_url)
    try:
        yield url, db_url
    finally:
        stop()


def test_the_dashboard_stores_serves_and_refuses_publications(tmp_path, keys, dashboard):
    import requests

    from cotk_repro.dashboard.auth import add_user
    from cotk_repro.dashboard.db import open_database
    from cotk_repro.dashboard.identity import add_key
    from cotk_repro.remote.dashboard import DashboardClient, DashboardError

    url, db_url = dashboard
    db = open_database(db_url)
    tokens = {}
    for user, who in (("alice", "author"), ("mallory", "attacker")):
        tokens[user] = add_user(db, user)[0]
        add_key(db, user, keys[who].public.line)
    db.dispose()
    record, sig = signed_record(keys["author"])
    alice, mallory = DashboardClient(url, tokens["alice"]), DashboardClient(url, tokens["mallory"])
    alice.upload_record(record, signature=sig)
    assert requests.get(f"{url}/api/v1/records/{record['id']}", timeout=10).json()["publication"] is None

    def refused(client, attachment, status, words):
        with pytest.raises(DashboardError) as exc:
            client.upload_publication(record["id"], attachment)
        assert str(status) in exc.value.message and words in exc.value.message, exc.value.message

    good = publication(record, "git://127.0.0.1:9418/alice/proj.git", keys["author"])
    tampered = copy.deepcopy(good)
    tampered["publication"]["remote_url"] = "https://example.com/mallory/proj.git"
    refused(alice, tampered, 422, "BAD signature")
    refused(
        mallory,
        publication(record, "https://example.com/mallory/proj.git", keys["attacker"]),
        422,
        "not by the key that signed the record",
    )
    refused(mallory, good, 403, "not by one of yours")  # the author's own publication, sent by somebody else
    refused(alice, publication(record, "--upload-pack=touch x;#://x", keys["author"]), 422, "git URL")
    refused(alice, publication(record, str(tmp_path), keys["author"]), 422, "author's machine")
    refused(alice, {**good, "signature": None}, 403, "is not signed, but the record is")
    assert requests.get(f"{url}/api/v1/records/{record['id']}", timeout=10).json()["publication"] is None
    assert alice.upload_publication(record["id"], good)["created"] is True
    assert alice.upload_publication(record["id"], good)["created"] is False
    served = requests.get(f"{url}/api/v1/records/{record['id']}", timeout=10).json()
    assert served["publication"] == good and served["record"] == record
    # and reproduce reads it from there (the source step; the code is not fetched here)
    from cotk_repro.reproduce.source import resolve

    source = resolve(f"{url}/records/{record['id']}")
    assert source.git_url == "git://127.0.0.1:9418/alice/proj.git"
    assert source.publisher == keys["author"].public.fingerprint


def test_record_page_shows_the_remote_of_the_publication():
    """Issue 40: the record page said "remote (none)" for a record whose remote came with its publication."""
    from cotk_repro.dashboard.pages import record_view

    url = "https://git.example.org/alice/proj.git"
    base = {"user": "alice", "submitted_at": "2026-01-01T00:00:00Z", "reproductions": []}
    publication = {"publication": {"kind": "cotk-repro-publication", "remote_url": url}, "signature": None}
    commit = "ab" * 20
    for recorded in (None, "local:origin"):
        record = {"id": "sha256:" + "0" * 64, "status": "ok", "code": {"commit": commit, "remote_url": recorded}}
        shown = record_view({**base, "record": record, "publication": publication})["code"]
        assert shown["remote_url"] == url and shown["link"] == f"https://git.example.org/alice/proj/commit/{commit}"
        assert record_view({**base, "record": record, "publication": None})["code"]["remote_url"] == (recorded or "")
    # a record naming a remote of its own keeps it: a publication never replaces it
    own = {"id": "sha256:" + "0" * 64, "code": {"commit": commit, "remote_url": "https://other.example/x.git"}}
    shown = record_view({**base, "record": own, "publication": publication})["code"]
    assert shown["remote_url"] == "https://other.example/x.git"
