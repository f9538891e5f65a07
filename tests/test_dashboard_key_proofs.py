"""A key belongs to whoever proves they hold it (issue 25): mallory cannot register alice's public key,
challenges are single-use, short-lived and bound to the user and the dashboard, and a database that
holds keys registered without proof (made through the old path) is migrated so they sign nothing until
their holder proves possession, then moves them with what they signed."""

from __future__ import annotations

import json

import pytest
import requests
from conftest import run_cli
from dashboard_support import (
    challenge_for,
    db_url_for,
    fake_hash,
    make_record,
    prove_key,
    write_old_records,
)
from signing_support import fingerprint_of, key_env, make_key
from sqlalchemy import insert, select, update

from cotk_repro.core.keyproof import (
    NS_KEY_REGISTRATION,
    Challenge,
    ChallengeError,
    check_challenge,
)
from cotk_repro.core.signing import (
    key_from_path,
    sign_bytes,
    sign_record,
    sign_reproduction,
)
from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import Database, open_database
from cotk_repro.dashboard.models import KeyAudit, KeyChallenge, Record, SshKey, User
from cotk_repro.dashboard.server import start_in_thread

API = "/api/v1"
H = fake_hash("keyproof-refs")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path_factory):
    yield from db_url_for(request, tmp_path_factory, "kp")


@pytest.fixture(scope="module")
def people(db_url, tmp_path_factory):
    """alice and mallory: a token and a key pair each, no key registered."""
    db = open_database(db_url)
    keys = tmp_path_factory.mktemp("kpkeys")
    out = {}
    for name in ("alice", "mallory"):
        out[name] = {"token": add_user(db, name)[0], "path": make_key(keys / name)}
        out[name]["pub"] = out[name]["path"].with_suffix(".pub").read_text()
        out[name]["fp"] = fingerprint_of(out[name]["path"].with_suffix(".pub"))
    db.dispose()
    return out


@pytest.fixture(scope="module")
def server(db_url, people):
    url, stop = start_in_thread(db_url, rate_limit=None)
    yield url
    stop()


def auth(token):
    return {"Authorization": f"Bearer {token}"}


def registered(db_url) -> dict[str, str]:
    """fingerprint -> user name of every key stored."""
    db = open_database(db_url, migrate=False)
    try:
        return dict(
            db.read(
                lambda c: c.execute(select(SshKey.fingerprint, User.name).join(User, User.id == SshKey.user_id)).all()
            )
        )
    finally:
        db.dispose()


def sign_text(text: str, path) -> str:
    return sign_bytes(text.encode(), NS_KEY_REGISTRATION, key_from_path(path, "test"))


def test_mallory_cannot_register_alices_public_key_and_alice_can(server, people, db_url, tmp_path):
    alice, mallory = people["alice"], people["mallory"]
    m = auth(mallory["token"])

    def refused(r, status, words):
        assert r.status_code == status, r.text
        detail = r.json()["detail"]
        assert isinstance(detail, str) and words in detail and detail.count(". ") == 0, detail
        assert alice["fp"] not in registered(db_url)

    # 1. alice's public key, no proof at all
    refused(
        requests.post(server + API + "/keys", json={"public_key": alice["pub"]}, headers=m, timeout=10),
        422,
        "only with proof that you hold it",
    )
    # 2. a proof made by mallory's own key over mallory's own challenge
    refused(
        prove_key(server, mallory["token"], mallory["path"], public_key=alice["pub"]),
        403,
        f"signed by the key {mallory['fp']}, not by the key {alice['fp']}",
    )
    # 3. alice's genuine signature, but over another challenge (alice's own, earlier)
    alices = challenge_for(server, alice["token"])
    old_sig = sign_text(alices["challenge"], alice["path"])
    mine = challenge_for(server, mallory["token"])
    body = {"public_key": alice["pub"], "challenge": mine["nonce"], "signature": old_sig}
    refused(requests.post(server + API + "/keys", json=body, headers=m, timeout=10), 403, "the proof does not hold")
    # ... or sent with alice's nonce: that challenge is not mallory's
    body = {"public_key": alice["pub"], "challenge": alices["nonce"], "signature": old_sig}
    refused(requests.post(server + API + "/keys", json=body, headers=m, timeout=10), 403, "issued to another user")
    # 4. a challenge issued to mallory, which alice was tricked into signing for another dashboard
    mine = challenge_for(server, mallory["token"])
    elsewhere = Challenge("https://other-dashboard.example", "mallory", mine["nonce"], mine["expires_at"]).text()
    body = {"public_key": alice["pub"], "challenge": mine["nonce"], "signature": sign_text(elsewhere, alice["path"])}
    refused(requests.post(server + API + "/keys", json=body, headers=m, timeout=10), 403, "the proof does not hold")
    # the same with the key's namespace wrong (a record signature of alice's is not a key proof)
    rec_sig = sign_record(make_record({"bleu": (0.1, H)}, task="kp", dataset="d"), key_from_path(alice["path"], "t"))
    body = {"public_key": alice["pub"], "challenge": mine["nonce"], "signature": rec_sig}
    refused(requests.post(server + API + "/keys", json=body, headers=m, timeout=10), 403, "the proof does not hold")
    assert requests.get(server + API + "/users/mallory/keys", timeout=10).json() == []

    # alice registers her key with a valid proof, through the CLI (ssh-keygen signs)
    home = tmp_path / "alice-home"
    env = {
        **key_env(alice["path"], home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "COTK_REPRO_DASHBOARD_TOKEN": alice["token"],
    }
    res = run_cli("keys", "add", "--dashboard", server, "--json", env=env, timeout=120)
    assert res.returncode == 0, res
    out = json.loads(res.stdout)
    assert out["fingerprint"] == alice["fp"] and out["user"] == "alice" and out["moved_from"] is None
    assert registered(db_url)[alice["fp"]] == "alice"
    listed = requests.get(server + API + "/users/alice/keys", timeout=10).json()
    assert [(k["fingerprint"], k["proof"]) for k in listed] == [(alice["fp"], "possession")]
    # her records are hers, with the key beside her name, even when mallory uploads them
    rec = make_record({"bleu": (0.3, H)}, task="kp", dataset="d")
    body = {"record": rec, "signature": sign_record(rec, key_from_path(alice["path"], "t"))}
    r = requests.post(server + API + "/records", json=body, headers=m, timeout=10)
    assert r.status_code == 201 and r.json()["owner"] == "alice" and r.json()["mirror"] is True, r.text
    got = requests.get(server + API + "/records/" + rec["id"], timeout=10).json()
    assert got["user"] == "alice" and got["key"] == alice["fp"]
    page = requests.get(server + "/records/" + rec["id"], timeout=10).text
    assert "alice" in page and alice["fp"] in page
    # and mallory, proving he holds alice's key, cannot: he does not (his own key signs his proof)
    refused_again = prove_key(server, mallory["token"], mallory["path"], public_key=alice["pub"])
    assert refused_again.status_code == 403 and registered(db_url)[alice["fp"]] == "alice"


def test_expired_reused_and_unknown_challenges_are_refused(server, people, db_url, tmp_path):
    alice = people["alice"]
    second = make_key(tmp_path / "second")
    fp = fingerprint_of(second.with_suffix(".pub"))
    issued = challenge_for(server, alice["token"])
    assert issued["namespace"] == NS_KEY_REGISTRATION and issued["user"] == "alice"
    assert issued["dashboard"] == server and f"nonce: {issued['nonce']}\n" in issued["challenge"]
    # expired: the challenge's expiry moved into the past
    db = open_database(db_url, migrate=False)
    try:
        db.write(
            lambda c: c.execute(
                update(KeyChallenge).where(KeyChallenge.nonce == issued["nonce"]).values(expires_epoch=1)
            )
        )
    finally:
        db.dispose()
    r = prove_key(server, alice["token"], second, text=issued["challenge"], nonce=issued["nonce"])
    assert r.status_code == 422 and "expired" in r.json()["detail"] and fp not in registered(db_url)
    # unknown nonce
    r = prove_key(
        server, alice["token"], second, text=issued["challenge"].replace(issued["nonce"], "x" * 43), nonce="x" * 43
    )
    assert r.status_code == 422 and "no such key registration challenge" in r.json()["detail"]
    # a valid one works once; the same proof again is refused as used
    fresh = challenge_for(server, alice["token"])
    assert prove_key(server, alice["token"], second, text=fresh["challenge"], nonce=fresh["nonce"]).status_code == 201
    r = prove_key(server, alice["token"], second, text=fresh["challenge"], nonce=fresh["nonce"])
    assert r.status_code == 422 and "used already" in r.json()["detail"]
    # a challenge needs a token
    assert requests.post(server + API + "/keys/challenge", json={}, timeout=10).status_code == 401


def test_the_client_refuses_to_sign_a_challenge_naming_another_dashboard_or_user():
    text = Challenge("https://dash.example", "alice", "n" * 43, "2030-01-01T00:00:00Z").text()
    assert check_challenge(text, dashboard="https://dash.example/", user="alice").nonce == "n" * 43
    with pytest.raises(ChallengeError, match=r"names the dashboard https://dash.example, not https://evil"):
        check_challenge(text, dashboard="https://evil.example", user="alice")
    with pytest.raises(ChallengeError, match="names the user 'alice', not 'bob'"):
        check_challenge(text, dashboard="https://dash.example", user="bob")
    for bad in (
        text + "extra: x\n",
        text.replace("user: alice", "user: al ice"),
        42,
        "x" * 3000,
        text.replace("\n", "\r\n"),
    ):
        with pytest.raises(ChallengeError):
            check_challenge(bad, dashboard="https://dash.example", user="alice")


# -- a dashboard made through the old path --------------------------------------------------------------------
def _old_dashboard(db_url: str, tmp_path):
    """A database at revision 0004 (before proofs) where mallory registered alice's public key through the
    API, as the old ``identity.add_key`` stored it, and then: a record signed by alice's key stored as
    mallory's, a reproduction of bob's record signed by it counted as mallory's, and alice's own
    reproduction of that record."""
    from cotk_repro.dashboard.auth import hash_token
    from cotk_repro.dashboard.models import Reproduction, Token
    from cotk_repro.dashboard.record_writes import PendingRecord
    from cotk_repro.dashboard.store import dumps

    db = Database(db_url)
    db.upgrade("0004")
    alice_key, bob_key = make_key(tmp_path / "a"), make_key(tmp_path / "b")
    apub = alice_key.with_suffix(".pub")
    afp = fingerprint_of(apub)
    tokens = {n: f"cotk_old_{n}" for n in ("alice", "mallory", "bob")}
    ids = {}

    def users(conn):
        for n in ("alice", "mallory", "bob"):
            ids[n] = conn.execute(
                insert(User).values(name=n, created_at="2026-01-01T00:00:00.000Z")
            ).inserted_primary_key[0]
            conn.execute(
                insert(Token).values(
                    user_id=ids[n], token_hash=hash_token(tokens[n]), created_at="2026-01-01T00:00:00.000Z"
                )
            )
        bpub = bob_key.with_suffix(".pub")
        for owner, pub, fp in ((ids["mallory"], apub, afp), (ids["bob"], bpub, fingerprint_of(bpub))):
            t, b = pub.read_text().split()[:2]
            conn.execute(
                insert(SshKey.__table__).values(
                    user_id=owner,
                    fingerprint=fp,
                    key_type=t,
                    public_key=f"{t} {b}",
                    comment="",
                    created_at="2026-01-02T00:00:00.000Z",
                )
            )

    db.write(users)
    recs = {
        "alices": make_record({"bleu": (0.4, H)}, task="old", dataset="d", name="alices-system"),
        "bobs": make_record({"bleu": (0.2, H)}, task="old", dataset="d", name="bobs-system"),
    }
    signer = {
        "alices": (alice_key, ids["mallory"], afp),
        "bobs": (bob_key, ids["bob"], fingerprint_of(bob_key.with_suffix(".pub"))),
    }
    pending = [
        PendingRecord(
            record_id=r["id"],
            task="old",
            dataset="d",
            project_name=r["project"]["name"],
            status="ok",
            body=dumps(r),
            results=(("bleu", r["results"]["bleu"]["value"], H),),
            owner_id=signer[k][1],
            uploader_id=signer[k][1],
            signature=sign_record(r, key_from_path(signer[k][0], "t")),
            fingerprint=signer[k][2],
        )
        for k, r in recs.items()
    ]
    db.write(lambda conn: write_old_records(conn, pending))

    def repro(conn):
        pk = conn.execute(select(Record.id).where(Record.record_id == recs["bobs"]["id"])).scalar()
        v = {"record_id": recs["bobs"]["id"], "verdict": "reproduced"}
        conn.execute(
            insert(Reproduction.__table__).values(
                record_pk=pk,
                user_id=ids["mallory"],
                submitted_at="2026-01-03T00:00:00.000Z",
                verdict="reproduced",
                body=json.dumps({**v, "verdict": "reproduced"}),
                client_verdict="reproduced",
                signature=sign_reproduction(v, key_from_path(alice_key, "t")),
                key_fingerprint=afp,
                by_author=False,
                superseded=False,
            )
        )
        conn.execute(update(Record.__table__).where(Record.id == pk).values(reproduced_by=1))

    db.write(repro)
    assert db.current_revision() == "0004"
    db.dispose()
    return {"alice_key": alice_key, "afp": afp, "tokens": tokens, "recs": recs, "bob_key": bob_key}


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_migration_a_squatted_key_signs_nothing_until_alice_proves_it_then_moves_with_its_records(
    kind, tmp_path, tmp_path_factory
):
    class Req:
        param = kind

    gen = db_url_for(Req, tmp_path_factory, "old")
    db_url = next(gen)
    try:
        old = _old_dashboard(db_url, tmp_path)
        afp, tokens, recs = old["afp"], old["tokens"], old["recs"]
        url, stop = start_in_thread(db_url, rate_limit=None)  # migrates to head
        try:
            before = requests.get(url + API + "/records/" + recs["alices"]["id"], timeout=10).json()
            assert before["user"] == "mallory"  # what the squat did
            listed = requests.get(url + API + "/users/mallory/keys", timeout=10).json()
            assert [(k["fingerprint"], k["proof"]) for k in listed] == [(afp, None)]
            # after the upgrade the squatted key signs nothing (bob's key, stored the same way, neither)
            new = make_record({"bleu": (0.5, H)}, task="old", dataset="d")
            body = {"record": new, "signature": sign_record(new, key_from_path(old["alice_key"], "t"))}
            r = requests.post(url + API + "/records", json=body, headers=auth(tokens["mallory"]), timeout=10)
            assert r.status_code == 403 and "without proof" in r.json()["detail"], r.text
            # alice proves possession through the CLI: the key moves to her with what it signed
            home = tmp_path / "alice-home"
            env = {
                **key_env(old["alice_key"], home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "COTK_REPRO_DASHBOARD_TOKEN": tokens["alice"],
            }
            res = run_cli("keys", "add", "--dashboard", url, env=env, timeout=120)
            assert res.returncode == 0 and "registered to mallory without proof" in res.stderr, res
            after = requests.get(url + API + "/records/" + recs["alices"]["id"], timeout=10).json()
            assert after["user"] == "alice" and after["key"] == afp
            bobs = requests.get(url + API + "/records/" + recs["bobs"]["id"], timeout=10).json()
            assert [(p["user"], p["key"]) for p in bobs["reproductions"]] == [("alice", afp)]
            assert bobs["reproduced_by"] == 1
            page = requests.get(url + "/records/" + recs["alices"]["id"], timeout=10).text
            assert 'id="signer">alice<' in page and afp in page
            # mallory's registration is revoked (shown moved to alice); alice's key now signs
            gone = requests.get(url + API + "/users/mallory/keys", timeout=10).json()
            assert [(k["fingerprint"], k["moved_to"], bool(k["revoked_at"])) for k in gone] == [(afp, "alice", True)]
            r = requests.post(url + API + "/records", json=body, headers=auth(tokens["alice"]), timeout=10)
            assert r.status_code == 201 and r.json()["owner"] == "alice", r.text
            db = open_database(db_url, migrate=False)
            try:
                audit = db.read(
                    lambda c: c.execute(
                        select(
                            KeyAudit.fingerprint,
                            KeyAudit.action,
                            KeyAudit.records,
                            KeyAudit.reproductions,
                            KeyAudit.detail,
                        )
                    ).all()
                )
            finally:
                db.dispose()
            assert [tuple(a[:4]) for a in audit] == [(afp, "moved", 1, 1)] and "mallory" in audit[0][4]
            # bob's key, stored unproven too, is vouched for again by the administrator's command
            rb = run_cli("dashboard", "add-key", "bob", str(old["bob_key"].with_suffix(".pub")), "--db", db_url)
            assert rb.returncode == 0, rb
            bob_listed = requests.get(url + API + "/users/bob/keys", timeout=10).json()
            assert [k["proof"] for k in bob_listed] == ["operator"]
        finally:
            stop()
    finally:
        gen.close()


def test_login_register_key_signs_the_challenge_through_ssh_agent(server, people, db_url, tmp_path):
    """The signing key is a passphrase-protected key held by a real ssh-agent (COTK_REPRO_SIGNING_KEY names
    its .pub): `login --register-key` saves the token and proves possession in one go."""
    from signing_support import agent_add, ssh_agent

    db = open_database(db_url)
    try:
        token = add_user(db, "agnes")[0]
    finally:
        db.dispose()
    key = make_key(tmp_path / "agnes", passphrase="s3cret")
    home = tmp_path / "agnes-home"
    with ssh_agent(tmp_path) as agent:
        agent_add(key, "s3cret", agent, tmp_path)
        env = {
            **key_env(key.with_suffix(".pub"), home),
            **agent,
            "XDG_CONFIG_HOME": str(home / ".config"),
            "COTK_REPRO_DASHBOARD_TOKEN": "",
        }
        res = run_cli("login", "--dashboard", server, "--token", token, "--register-key", env=env, timeout=120)
    assert res.returncode == 0, res
    fp = fingerprint_of(key.with_suffix(".pub"))
    assert f"registered the key {fp} for agnes" in res.stderr
    assert registered(db_url)[fp] == "agnes"
