"""Dashboard identity = the SSH key: owners are signers, mirrors, server-computed verdicts,
"reproduced by N" that nobody can forge, value checks, and every refusal the issue lists."""

from __future__ import annotations

import base64
import json
import math

import pytest
import requests
from conftest import run_cli
from dashboard_support import db_url_for, fake_hash, make_record, prove_key
from signing_support import fingerprint_of, make_key

from cotk_repro import __version__
from cotk_repro.core.signing import key_from_path, sign_record, sign_reproduction
from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.identity import add_key, revoke_key
from cotk_repro.dashboard.server import start_in_thread

API = "/api/v1"
H = fake_hash("coco-test-refs")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path_factory):
    yield from db_url_for(request, tmp_path_factory, "sig")


@pytest.fixture(scope="module")
def users(db_url, tmp_path_factory):
    """alice, bob, carol: a token and a registered ed25519 key each (bob's key is RSA)."""
    db = open_database(db_url)
    keys = tmp_path_factory.mktemp("keys")
    out = {}
    for name, kt in (("alice", "ed25519"), ("bob", "rsa"), ("carol", "ed25519")):
        token, _ = add_user(db, name)
        path = make_key(keys / name, key_type=kt)
        add_key(db, name, path.with_suffix(".pub").read_text())
        out[name] = {"token": token, "key": key_from_path(path, "test"), "path": path}
    db.dispose()
    return out


@pytest.fixture(scope="module")
def server(db_url, users):
    url, stop = start_in_thread(db_url, rate_limit=None)
    yield url
    stop()


@pytest.fixture(scope="module")
def open_server(db_url, users):
    """The same database served by a dashboard configured to accept unsigned uploads."""
    url, stop = start_in_thread(db_url, rate_limit=None, allow_unsigned=True, migrate=False)
    yield url
    stop()


def auth(user):
    return {"Authorization": f"Bearer {user['token']}"}


def signed(record, user):
    return {"record": record, "signature": sign_record(record, user["key"])}


def post(server, body, user, path="/records"):
    return requests.post(server + API + path, json=body, headers=auth(user), timeout=30)


def get(server, rid):
    return requests.get(server + API + "/records/" + rid, timeout=30).json()


def rerun_verdict(record, value, claimed="reproduced", h=H, metric="bleu"):
    """A reproduction as `reproduce --json` writes it, its rerun measuring ``value``."""
    return {
        "schema": "cotk-repro/reproduction",
        "schema_version": 1,
        "record_id": record["id"],
        "verdict": claimed,
        "runtime": "docker",
        "metrics": [],
        "environment_differences": [],
        "tolerances": {metric: {"rtol": 1e-6, "atol": 1e-12}},
        "rerun": {
            "results": {metric: {"value": value, "hash": h, "signature": None, "metric": metric, "version": "1"}},
            "python": "3.11.2",
            "started_at": "2026-01-01T00:00:00Z",
            "duration_s": 1.0,
        },
        "error": None,
        "cotk_repro_version": __version__,
    }


def reproduce(server, record, user, value, claimed="reproduced", signer=None):
    v = rerun_verdict(record, value, claimed)
    body = {"reproduction": v, "signature": sign_reproduction(v, (signer or user)["key"])}
    return post(server, body, user, f"/records/{record['id']}/reproductions")


def test_the_owner_is_the_signer_never_the_first_uploader(server, users):
    alice, bob = users["alice"], users["bob"]
    rec = make_record({"bleu": (0.31, H)}, task="own", dataset="d")
    first = post(server, signed(rec, alice), bob)  # bob races alice with alice's signed record
    assert first.status_code == 201, first.text
    assert first.json()["owner"] == "alice" and first.json()["mirror"] is True
    again = post(server, signed(rec, alice), alice)
    assert again.status_code == 200 and again.json()["owner"] == "alice" and again.json()["mirror"] is False
    got = get(server, rec["id"])
    assert got["user"] == "alice" and got["signed"] is True and got["mirrored_by"] == ["bob"]
    assert got["key"] == fingerprint_of(alice["path"].with_suffix(".pub"))
    assert got["record"] == rec
    listed = requests.get(server + API + "/records", params={"task": "own", "user": "bob"}, timeout=10).json()
    assert listed["total"] == 0  # a mirror is not bob's record


def test_unsigned_upload_is_refused_where_signatures_are_required(server, users):
    rec = make_record({"bleu": (0.2, H)}, task="unsigned", dataset="d")
    r = post(server, rec, users["alice"])
    assert r.status_code == 403
    assert "accepts only signed records" in r.json()["detail"]
    assert requests.get(server + API + "/records/" + rec["id"], timeout=10).status_code == 404


def test_unsigned_accepted_when_configured_shown_unsigned_then_claimed_by_the_signer(open_server, users):
    alice, bob = users["alice"], users["bob"]
    rec = make_record({"bleu": (0.2, H)}, task="open", dataset="d")
    r = post(open_server, rec, bob)  # bob uploads alice's record unsigned first
    assert r.status_code == 201 and r.json()["signed"] is False and r.json()["owner"] == "bob"
    board = requests.get(
        open_server + API + "/leaderboard", params={"task": "open", "dataset": "d", "metric": "bleu"}, timeout=10
    ).json()
    [entry] = board["groups"][0]["entries"]
    assert entry["signed"] is False and entry["signer"] is None
    # the author's signed upload takes it over: whoever uploads first no longer owns it
    r = post(open_server, signed(rec, alice), alice)
    assert r.status_code == 200 and r.json()["owner"] == "alice"
    got = get(open_server, rec["id"])
    assert got["user"] == "alice" and got["signed"] is True


def test_tampered_record_is_refused(server, users):
    alice = users["alice"]
    rec = make_record({"bleu": (0.25, H)}, task="tamper", dataset="d")
    sig = sign_record(rec, alice["key"])
    from cotk_repro.records import finalize

    forged = finalize({**rec, "results": {"bleu": {**rec["results"]["bleu"], "value": 0.999}}})
    r = post(server, {"record": forged, "signature": sig}, alice)
    assert r.status_code == 422
    assert "does not match the signed content" in r.json()["detail"]
    # a record signature used for a reproduction: other namespace
    v = rerun_verdict(rec, 0.25)
    r = post(server, {"reproduction": v, "signature": sig}, alice, f"/records/{rec['id']}/reproductions")
    assert r.status_code in (404, 422)


def test_signature_by_a_key_nobody_registered_or_a_revoked_key(server, users, db_url, tmp_path):
    stranger = key_from_path(make_key(tmp_path / "stranger"), "test")
    rec = make_record({"bleu": (0.2, H)}, task="keys", dataset="d")
    r = post(server, {"record": rec, "signature": sign_record(rec, stranger)}, users["alice"])
    assert r.status_code == 403 and "not registered on this dashboard" in r.json()["detail"]
    # carol registers a second key, then revokes it: what it signs from now on is refused
    db = open_database(db_url, migrate=False)
    path = make_key(tmp_path / "carol2")
    add_key(db, "carol", path.with_suffix(".pub").read_text())
    second = key_from_path(path, "test")
    ok = post(server, {"record": rec, "signature": sign_record(rec, second)}, users["carol"])
    assert ok.status_code == 201
    revoke_key(db, "carol", second.public.fingerprint)
    db.dispose()
    rec2 = make_record({"bleu": (0.21, H)}, task="keys", dataset="d")
    r = post(server, {"record": rec2, "signature": sign_record(rec2, second)}, users["carol"])
    assert r.status_code == 403 and "revoked" in r.json()["detail"]


def _blob_with_key_type(sig_text: str, key_type: bytes) -> str:
    body = "".join(sig_text.strip().splitlines()[1:-1])
    blob = base64.b64decode(body)
    pub_len = int.from_bytes(blob[10:14], "big")
    pub = blob[14 : 14 + pub_len]
    old_type_len = int.from_bytes(pub[:4], "big")
    new_pub = len(key_type).to_bytes(4, "big") + key_type + pub[4 + old_type_len :]
    new = blob[:10] + len(new_pub).to_bytes(4, "big") + new_pub + blob[14 + pub_len :]
    return "-----BEGIN SSH SIGNATURE-----\n" + base64.b64encode(new).decode() + "\n-----END SSH SIGNATURE-----\n"


def test_unknown_key_type_and_malformed_signature(server, users):
    alice = users["alice"]
    rec = make_record({"bleu": (0.2, H)}, task="malformed", dataset="d")
    sig = sign_record(rec, alice["key"])
    r = post(server, {"record": rec, "signature": _blob_with_key_type(sig, b"ssh-dss-foo")}, alice)
    assert r.status_code == 422 and "unknown key type 'ssh-dss-foo'" in r.json()["detail"]
    for bad in ("not a signature", sig.replace("U1NIU0lH", "AAAAAAAA"), sig[:60] + "\n-----END SSH SIGNATURE-----"):
        r = post(server, {"record": rec, "signature": bad}, alice)
        assert r.status_code == 422 and "malformed" in r.json()["detail"], (bad, r.text)
    r = post(server, {"record": rec, "signature": 42}, alice)
    assert r.status_code == 422
    # an unknown key type cannot be registered either
    r = requests.post(
        server + API + "/keys", json={"public_key": "ssh-dss AAAAB3NzaC1kc3MAAA== x"}, headers=auth(alice), timeout=10
    )
    assert r.status_code == 422


def test_keys_and_signatures_a_database_cannot_store_are_refused_not_a_500(server, users, tmp_path):
    """Found by the schemathesis fuzz: non-ASCII text in the base64 part raised a bare ValueError (500), and a
    real key whose comment holds NUL or a lone surrogate would reach PostgreSQL's text column."""
    alice = users["alice"]
    odd = make_key(tmp_path / "odd").with_suffix(".pub")
    pub = odd.read_text().split()
    sig = sign_record(make_record({"bleu": (0.2, H)}, task="nonascii", dataset="d"), alice["key"])
    for line in (
        f"{pub[0]} {pub[1][:20]}\u00a3{pub[1][20:]}",
        "ssh-ed25519 \u00c0\u00a8 x",
        f"{pub[0]} {pub[1]} bad\x00comment",
        f"{pub[0]} {pub[1]} lone\ud861surrogate",
        f"{pub[0]} {pub[1]} two\nlines",
    ):
        body = json.dumps({"public_key": line})  # json.dumps escapes the lone surrogate as JSON allows
        r = requests.post(
            server + API + "/keys", data=body, timeout=10, headers={**auth(alice), "Content-Type": "application/json"}
        )
        assert r.status_code == 422, (line, r.status_code, r.text)
    listed = requests.get(server + API + "/users/alice/keys", timeout=10).json()
    assert fingerprint_of(odd) not in [k["fingerprint"] for k in listed]
    rec = make_record({"bleu": (0.2, H)}, task="nonascii", dataset="d")
    r = post(server, {"record": rec, "signature": sig.replace("U1NIU0lH", "U1NIU0l\u00a3")}, alice)
    assert r.status_code == 422 and "malformed" in r.json()["detail"], r.text


def test_server_computes_the_verdict_and_counts_distinct_reproducers(server, users):
    alice, bob, carol = users["alice"], users["bob"], users["carol"]
    rec = make_record({"bleu": (0.3, H)}, task="repro", dataset="d")
    assert post(server, signed(rec, alice), alice).status_code == 201
    # a verdict that disagrees with its own results: the server's wins
    r = reproduce(server, rec, bob, 0.25, claimed="reproduced")
    assert r.status_code == 201 and r.json()["verdict"] == "not reproduced" and r.json()["claimed"] == "reproduced"
    assert get(server, rec["id"])["reproduced_by"] == 0
    # bob reproduces again, now matching: his newer reproduction replaces the older one
    assert reproduce(server, rec, bob, 0.3, claimed="not reproduced").json()["verdict"] == "reproduced"
    # one user posting four verdicts counts once
    for _ in range(4):
        assert reproduce(server, rec, carol, 0.3).status_code == 201
    # the author's own rerun is shown apart and never counted
    own = reproduce(server, rec, alice, 0.3)
    assert own.status_code == 201 and own.json()["by_author"] is True
    got = get(server, rec["id"])
    assert got["reproduced_by"] == 2
    current = [x for x in got["reproductions"] if not x["superseded"]]
    assert sorted((x["user"], x["by_author"], x["verdict"]["verdict"]) for x in current) == [
        ("alice", True, "reproduced"),
        ("bob", False, "reproduced"),
        ("carol", False, "reproduced"),
    ]
    assert [x["verdict"]["verdict"] for x in got["reproductions"] if x["user"] == "bob"] == [
        "not reproduced",
        "reproduced",
    ]
    assert all(x["signed"] for x in got["reproductions"])
    # the leaderboard agrees, and ?reproduced=1 keeps only independently reproduced entries
    other = make_record({"bleu": (0.9, H)}, task="repro", dataset="d")
    assert post(server, signed(other, bob), bob).status_code == 201
    q = {"task": "repro", "dataset": "d", "metric": "bleu"}
    board = requests.get(server + API + "/leaderboard", params=q, timeout=10).json()
    entries = board["groups"][0]["entries"]
    # reproduced by two strangers, rec is verified (tier 0, issue 47): it ranks above bob's better, unverified 0.9
    assert [(e["id"], e["signer"], e["reproduced_by"], e["tier"], e["verified"]) for e in entries] == [
        (rec["id"], "alice", 2, 0, True),
        (other["id"], "bob", 0, 1, False),
    ]
    assert entries[0]["reproductions"] == 2  # bob's latest and carol's latest; alice's rerun apart
    only = requests.get(server + API + "/leaderboard", params={**q, "reproduced": 1}, timeout=10).json()
    assert [e["id"] for g in only["groups"] for e in g["entries"]] == [rec["id"]]
    assert only["groups"][0]["total"] == 1 and only["reproduced_only"] is True
    # the record page shows it
    page = requests.get(server + "/records/" + rec["id"], timeout=10).text
    assert "reproduced by 2" in page and "rerun by the author" in page.lower()


def _repro_with(server, record, user, value, *, tolerances=None, row_tolerance=None):
    """bob's signed reproduction with the tolerances an attacker picks (``tolerances`` or per-row rtol/atol)."""
    v = rerun_verdict(record, value)
    if tolerances is None:
        del v["tolerances"]
    else:
        v["tolerances"] = tolerances
    if row_tolerance is not None:
        v["metrics"] = [{"metric": "bleu", "verdict": "reproduced", **row_tolerance}]
    body = {"reproduction": v, "signature": sign_reproduction(v, user["key"])}
    return post(server, body, user, f"/records/{record['id']}/reproductions")


def test_a_tolerance_above_the_cap_is_refused_naming_the_metric(server, users):
    """An attacker cannot make any rerun "reproduced" by sending a huge tolerance (docs/dashboard.md, Tolerances)."""
    alice, bob = users["alice"], users["bob"]
    rec = make_record({"bleu": (0.3, H)}, task="tolerance", dataset="d")
    assert post(server, signed(rec, alice), alice).status_code == 201
    attacks = [
        {"tolerances": {"bleu": {"rtol": 10.0, "atol": 1e-12}}},
        {"tolerances": {"bleu": {"rtol": 1e-6, "atol": 1.0}}},
        {"tolerances": {"bleu": {"rtol": 0.0100001}}},  # just above the cap
        {"row_tolerance": {"rtol": 0.5, "atol": 0.5}},
    ]  # no 'tolerances': the metric rows' own
    for attack in attacks:
        r = _repro_with(server, rec, bob, 0.01, **attack)  # a rerun 30x off
        assert r.status_code == 422, (attack, r.text)
        detail = r.json()["detail"]
        assert "'bleu'" in detail and "cap" in detail and "\n" not in detail, detail
    got = get(server, rec["id"])
    assert got["reproductions"] == [] and got["reproduced_by"] == 0
    # within the cap the server judges with the smaller of the upload's tolerance and the one bleu declares (exact):
    # a rerun 0.5 % off that claims "reproduced" with rtol 0.01 (a widened tolerance) is downgraded, the row keeps
    # what it asked for; the same value as the record is reproduced, identical
    r = _repro_with(server, rec, bob, 0.3 * 1.005, tolerances={"bleu": {"rtol": 0.01, "atol": 0.001}})
    assert r.status_code == 201 and r.json()["verdict"] == "not reproduced" and r.json()["claimed"] == "reproduced"
    row = next(x for x in get(server, rec["id"])["reproductions"][0]["verdict"]["metrics"] if x["metric"] == "bleu")
    assert (row["verdict"], row["rtol"], row["atol"], row["identical"]) == ("differs", 0.0, 0.0, False)
    assert (row["claimed_rtol"], row["claimed_atol"]) == (0.01, 0.001)
    r = _repro_with(server, rec, users["carol"], 0.3, tolerances={"bleu": {"rtol": 0.01, "atol": 0.001}})
    assert r.status_code == 201 and r.json()["verdict"] == "reproduced"
    assert get(server, rec["id"])["reproduced_by"] == 1


def test_reproduction_signed_by_another_users_key_or_of_a_missing_record(server, users):
    alice, bob = users["alice"], users["bob"]
    rec = make_record({"bleu": (0.3, H)}, task="repro2", dataset="d")
    assert post(server, signed(rec, alice), alice).status_code == 201
    r = reproduce(server, rec, bob, 0.3, signer=users["carol"])  # bob posts a verdict carol signed
    assert r.status_code == 403 and "not by one of yours" in r.json()["detail"]
    missing = make_record({"bleu": (0.3, H)}, task="repro2", dataset="d")
    r = reproduce(server, missing, bob, 0.3)
    assert r.status_code == 404 and "there is no record" in r.json()["detail"]
    # an unsigned verdict where signatures are required
    r = post(server, rerun_verdict(rec, 0.3), bob, f"/records/{rec['id']}/reproductions")
    assert r.status_code == 403 and "accepts only signed reproductions" in r.json()["detail"]
    assert get(server, rec["id"])["reproductions"] == []


def test_values_are_checked_against_the_metric(server, users):
    from cotk_repro.dashboard.verdicts import _facts

    alice = users["alice"]
    nan = make_record({"bleu": (0.2, H)}, task="values", dataset="d")
    body = json.dumps(signed(nan, alice)).replace('"value": 0.2', '"value": NaN')
    r = requests.post(
        server + API + "/records", data=body, headers={**auth(alice), "Content-Type": "application/json"}, timeout=10
    )
    assert r.status_code == 422
    huge = make_record({"bleu": (1e308, H)}, task="values", dataset="d")
    r = post(server, signed(huge, alice), alice)
    assert r.status_code == 422 and "bleu" in r.json()["detail"]
    lo, hi = _facts("bleu").value_range
    assert not (lo <= 1e308 <= hi)
    ok = make_record({"bleu": (hi, H)}, task="values", dataset="d")
    assert post(server, signed(ok, alice), alice).status_code == 201
    ppl = _facts("perplexity")
    assert ppl.value_range[0] == 1.0 and math.isinf(ppl.value_range[1])
    low = make_record({"perplexity": (0.5, H)}, task="values", dataset="d")
    r = post(server, signed(low, alice), alice)
    assert r.status_code == 422 and "perplexity" in r.json()["detail"]
    high = make_record({"perplexity": (81.4, H)}, task="values", dataset="d")
    assert post(server, signed(high, alice), alice).status_code == 201
    # a rerun's values are checked the same way
    rr = post(
        server,
        {
            "reproduction": rerun_verdict(high, 0.5, metric="perplexity"),
            "signature": sign_reproduction(rerun_verdict(high, 0.5, metric="perplexity"), alice["key"]),
        },
        alice,
        f"/records/{high['id']}/reproductions",
    )
    assert rr.status_code == 422 and "perplexity" in rr.json()["detail"]


def test_users_add_their_own_keys_and_they_are_listed_with_fingerprints(server, users, tmp_path):
    bob = users["bob"]
    path = make_key(tmp_path / "bob2", comment="bob@laptop")
    pub = path.with_suffix(".pub").read_text()
    r = prove_key(server, bob["token"], path)
    assert r.status_code == 201, r.text
    fp = fingerprint_of(path.with_suffix(".pub"))
    assert r.json()["fingerprint"] == fp
    again = prove_key(server, users["alice"]["token"], path)  # alice holds it too (a shared key): not moved
    assert again.status_code == 422 and "registered already" in again.json()["detail"]
    assert requests.post(server + API + "/keys", json={"public_key": pub}, timeout=10).status_code == 401
    listed = requests.get(server + API + "/users/bob/keys", timeout=10).json()
    assert fp in [k["fingerprint"] for k in listed]
    assert fingerprint_of(bob["path"].with_suffix(".pub")) in [k["fingerprint"] for k in listed]
    page = requests.get(server + "/users/bob", timeout=10)
    assert page.status_code == 200 and fp in page.text and "bob@laptop" in page.text
    # the new key signs bob's uploads
    rec = make_record({"bleu": (0.2, H)}, task="bobkeys", dataset="d")
    r = post(server, {"record": rec, "signature": sign_record(rec, key_from_path(path, "t"))}, bob)
    assert r.status_code == 201 and r.json()["owner"] == "bob"
    # and bob can revoke it himself
    d = requests.delete(server + API + "/keys/" + fp, headers=auth(bob), timeout=10)
    assert d.status_code == 204
    rec2 = make_record({"bleu": (0.2, H)}, task="bobkeys", dataset="d")
    assert (
        post(server, {"record": rec2, "signature": sign_record(rec2, key_from_path(path, "t"))}, bob).status_code == 403
    )


def test_add_user_with_ssh_key_on_the_command_line(tmp_path):
    db = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    key = make_key(tmp_path / "k")
    res = run_cli("dashboard", "add-user", "dora", "--ssh-key", str(key.with_suffix(".pub")), "--db", db)
    assert res.returncode == 0, res
    assert res.stdout.strip().startswith("cotk_")
    listed = run_cli("dashboard", "keys", "dora", "--db", db, "--json")
    assert [k["fingerprint"] for k in json.loads(listed.stdout)] == [fingerprint_of(key.with_suffix(".pub"))]
    bad = tmp_path / "bad.pub"
    bad.write_text("ssh-foo AAAA\n")
    res = run_cli("dashboard", "add-user", "eve", "--ssh-key", str(bad), "--db", db)
    assert res.returncode == 2 and "bad.pub" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("dashboard", "revoke-key", "dora", "SHA256:nope", "--db", db)
    assert res.returncode == 2 and "has no key" in res.stderr


def test_leaderboard_page_puts_unsigned_and_unreproduced_entries_apart(open_server, users):
    alice, bob, carol = users["alice"], users["bob"], users["carol"]
    trusted = make_record({"bleu": (0.3, H)}, task="page", dataset="d", name="trusted-system")
    lonely = make_record({"bleu": (0.5, H)}, task="page", dataset="d", name="lonely-system")
    unsigned = make_record({"bleu": (0.7, H)}, task="page", dataset="d", name="unsigned-system")
    assert post(open_server, signed(trusted, alice), alice).status_code == 201
    assert post(open_server, signed(lonely, bob), bob).status_code == 201
    assert post(open_server, unsigned, carol).status_code == 201
    assert reproduce(open_server, trusted, carol, 0.3).json()["verdict"] == "reproduced"
    html = requests.get(
        open_server + "/leaderboard", params={"task": "page", "dataset": "d", "metric": "bleu"}, timeout=10
    ).text
    # three tiers (issue 47): verified by carol's reproduction, signed only, and the rest
    trusted_part, _, rest = html.partition('class="signed-entries"')
    signed_part, _, apart = rest.partition('class="apart-entries"')
    assert "trusted-system" in trusted_part and "lonely-system" not in trusted_part
    assert "lonely-system" in signed_part and "unsigned-system" in apart and "lonely-system" not in apart
    assert "unsigned</span>" in apart.split("unsigned-system", 1)[1].split("</tr>", 1)[0]
    only = requests.get(
        open_server + "/leaderboard",
        timeout=10,
        params={"task": "page", "dataset": "d", "metric": "bleu", "reproduced": 1},
    ).text
    assert "trusted-system" in only and "lonely-system" not in only and "unsigned-system" not in only


def test_keys_stored_before_the_input_check_are_still_listed(server, db_url, users, tmp_path):
    """A comment with a control character, which add_key now refuses, may sit in an older dashboard's table:
    listing the user's keys still works and shows it."""
    from sqlalchemy import insert, select

    from cotk_repro.dashboard.models import SshKey, User

    pub = make_key(tmp_path / "old").with_suffix(".pub")
    kt, b64 = pub.read_text().split()[:2]
    db = open_database(db_url)
    try:

        def tx(conn):
            uid = conn.execute(select(User.id).where(User.name == "carol")).scalar()
            conn.execute(
                insert(SshKey).values(
                    user_id=uid,
                    fingerprint=fingerprint_of(pub),
                    key_type=kt,
                    public_key=f"{kt} {b64}",
                    comment="old\x1bcomment",
                    created_at="2026-01-01T00:00:00Z",
                )
            )
            db.bump(conn)

        db.write(tx)
    finally:
        db.dispose()
    r = requests.get(server + API + "/users/carol/keys", timeout=10)
    assert r.status_code == 200 and fingerprint_of(pub) in [k["fingerprint"] for k in r.json()], r.text


def test_record_page_says_identical_within_tolerance_or_differs(server, users):
    """The server's rows say identical and the tolerance judged with; the record page words them as reproduce does:
    bleu (exact) identical, ppl (no registered metric: 1e-6 relative) within tolerance, nist (exact) differs."""
    alice, bob = users["alice"], users["bob"]
    rec = make_record({"bleu": (0.3, H), "ppl": (100.0, H), "nist": (2.0, H)}, task="words", dataset="d")
    assert post(server, signed(rec, alice), alice).status_code == 201
    v = rerun_verdict(rec, 0.3)
    del v["tolerances"]
    for name, value in (("ppl", 100.00001), ("nist", 2.0000001)):
        v["rerun"]["results"][name] = {"value": value, "hash": H, "signature": None, "metric": name, "version": "1"}
    body = {"reproduction": v, "signature": sign_reproduction(v, bob["key"])}
    r = post(server, body, bob, f"/records/{rec['id']}/reproductions")
    assert r.status_code == 201 and r.json()["verdict"] == "not reproduced"
    rows = {m["metric"]: m for m in get(server, rec["id"])["reproductions"][0]["verdict"]["metrics"]}
    assert (rows["bleu"]["identical"], rows["bleu"]["rtol"], rows["bleu"]["atol"]) == (True, 0.0, 0.0)
    assert (rows["ppl"]["verdict"], rows["ppl"]["identical"], rows["ppl"]["rtol"]) == ("reproduced", False, 1e-6)
    assert rows["nist"]["verdict"] == "differs"
    page = requests.get(server + "/records/" + rec["id"], timeout=10).text
    assert ">identical<" in page and "within tolerance (moved by 1e-05)" in page and "differs (moved by 1e-07)" in page
    assert "exact" in page and "rtol 1e-06, atol 1e-12" in page
