"""Caches and rate limits key on identity (issue 32, attacks 3 and 6): one cache entry per record whatever
the spelling of its id or the Host header, a cache bounded in bytes, and rate-limit buckets per
authenticated user or, for anything else (no token, a junk header), per client address."""

from __future__ import annotations

import random

import pytest
from dashboard_support import fake_hash, make_record
from starlette.testclient import TestClient

from cotk_repro.dashboard.app import create_app
from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database

API = "/api/v1"
H = fake_hash("limits-refs")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A SQLite dashboard accepting unsigned uploads with alice, bob and 12 records of alice's."""
    url = f"sqlite:///{tmp_path_factory.mktemp('limits') / 'dash.sqlite3'}"
    db = open_database(url)
    tokens = {n: add_user(db, n)[0] for n in ("alice", "bob")}
    db.dispose()
    records = [make_record({"bleu": (0.1 + i / 100, H)}, task="limits", dataset="d") for i in range(12)]
    with TestClient(create_app(url, rate_limit=None, allow_unsigned=True, migrate=False)) as c:
        for rec in records:
            r = c.post(API + "/records", json=rec, headers={"Authorization": f"Bearer {tokens['alice']}"})
            assert r.status_code == 201, r.text
    return url, tokens, records


def spellings(rid: str, n: int):
    rng = random.Random(7)
    hexpart = rid.split(":", 1)[1]
    for i in range(n):
        mixed = "".join(ch.upper() if rng.random() < 0.5 else ch for ch in hexpart)
        yield (("SHA256:" if i % 3 == 0 else "sha256:" if i % 3 == 1 else "") + mixed)


def test_random_case_spellings_and_host_headers_share_one_cache_entry(seeded):
    url, _tokens, records = seeded
    app = create_app(url, rate_limit=None, migrate=False)
    dash = app.state.dashboard
    rid = records[0]["id"]
    with TestClient(app) as c:
        first = c.get(API + "/records/" + rid)
        assert first.status_code == 200 and first.json()["record"]["id"] == rid
        assert first.json()["url"].endswith("/records/" + rid)
        c.get("/records/" + rid)
        entries, size = dash.cache_entries(), dash.cached_bytes
        for n, spelling in enumerate(spellings(rid, 60)):
            r = c.get(API + "/records/" + spelling, headers={"Host": f"h{n}.example"})
            assert r.status_code == 200 and r.json()["record"]["id"] == rid
            assert r.json()["url"] == f"http://h{n}.example/records/{rid}"  # the URL still follows the request
            assert c.get("/records/" + spelling).status_code == 200
        assert dash.cache_entries() == entries and dash.cached_bytes == size
        # what is not an id is answered without a cache entry
        for n in range(20):
            assert c.get(API + f"/records/not-an-id-{n}").status_code == 404
            assert c.get(f"/records/not-an-id-{n}").status_code == 404
        assert dash.cache_entries() == entries


def test_the_cache_is_bounded_in_bytes(seeded):
    url, _tokens, records = seeded
    app = create_app(url, rate_limit=None, migrate=False)
    dash = app.state.dashboard
    with TestClient(app) as c:
        one = len(c.get(API + "/records/" + records[0]["id"]).content)
        dash.cache_bytes = 3 * one + 3000  # room for about three records
        for rec in records:
            assert c.get(API + "/records/" + rec["id"]).status_code == 200
            assert dash.cached_bytes <= dash.cache_bytes
        assert 1 <= dash.cache_entries() <= 4
        # the newest stays cached (served without a database read); a value over the whole budget is not kept
        assert ("record-api", records[-1]["id"]) in dash._cache
        dash.cache_bytes = 100
        assert c.get(API + "/records/" + records[0]["id"]).status_code == 200
        assert ("record-api", records[0]["id"]) not in dash._cache


def test_junk_authorization_headers_share_the_clients_anonymous_read_bucket(seeded):
    url, tokens, _records = seeded
    with TestClient(create_app(url, rate_limit=None, read_rate_limit="5/60", migrate=False)) as c:
        codes = [
            c.get(API + "/health", headers={"Authorization": value}).status_code
            for value in (
                "Bearer junk1",
                "Bearer junk2",
                "junk",
                "Basic YTpi",
                "Bearer cotk_nope",
                "bearer x",
                "Bearer",
                "",
            )
        ]
        assert codes == [200] * 5 + [429] * 3
        assert c.get(API + "/health").status_code == 429  # and no header at all: the same bucket
        # a valid token is its own user's bucket, whatever the scheme's case
        alice = [
            c.get(API + "/health", headers={"Authorization": f"{scheme} {tokens['alice']}"}).status_code
            for scheme in ("Bearer", "bearer", "BEARER", "BeArEr", "bearer", "Bearer")
        ]
        assert alice == [200] * 5 + [429]
        assert c.get(API + "/health", headers={"Authorization": f"Bearer {tokens['bob']}"}).status_code == 200


def test_one_token_gets_one_write_bucket_whatever_the_schemes_case(seeded):
    url, tokens, _records = seeded
    with TestClient(create_app(url, rate_limit="3/60", migrate=False, allow_unsigned=True)) as c:
        codes = []
        for scheme in ("Bearer", "bearer", "BEARER", "bEARER"):
            rec = make_record({"bleu": (0.5, H)}, task="limits-w", dataset="d")
            codes.append(
                c.post(API + "/records", json=rec, headers={"Authorization": f"{scheme} {tokens['bob']}"}).status_code
            )
        assert codes == [201, 201, 201, 429]
        # junk tokens do not open buckets of their own: they share the client's, which they drain
        junk = [
            c.post(API + "/records", json={}, headers={"Authorization": f"Bearer junk{i}"}).status_code
            for i in range(4)
        ]
        assert junk == [401, 401, 401, 429]
