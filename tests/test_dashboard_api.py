"""The dashboard JSON API over real HTTP (uvicorn in a thread), on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
import requests
from dashboard_support import db_url_for, fake_hash, make_record, make_verdict

from cotk_repro.dashboard import leaderboard as lb
from cotk_repro.dashboard.auth import add_user, hash_token, revoke_token
from cotk_repro.dashboard.server import start_in_thread
from cotk_repro.records import compute_id

API = "/api/v1"


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path_factory):
    yield from db_url_for(request, tmp_path_factory, "api")


@pytest.fixture(scope="module")
def server(db_url):
    url, stop = start_in_thread(db_url, allow_unsigned=True)
    yield url
    stop()


@pytest.fixture(scope="module")
def tokens(server, db_url):
    from cotk_repro.dashboard.db import open_database

    db = open_database(db_url)
    out = {name: add_user(db, name)[0] for name in ("alice", "bob", "carol")}
    db.dispose()
    return out


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def post_record(server, record, token, **kw):
    return requests.post(server + API + "/records", json=record, headers=auth(token), timeout=30, **kw)


def test_health_and_openapi(server):
    r = requests.get(server + API + "/health", timeout=10)
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    spec = requests.get(server + "/openapi.json", timeout=10).json()
    assert {
        "/api/v1/records",
        "/api/v1/records/{record_id}",
        "/api/v1/leaderboard",
        "/api/v1/health",
        "/api/v1/records/{record_id}/reproductions",
    } <= set(spec["paths"])
    assert r.headers["x-content-type-options"] == "nosniff"


def test_upload_is_created_then_a_noop_and_the_record_comes_back_exactly(server, tokens):
    rec = make_record({"bleu": (0.25, fake_hash("refs-1")), "perplexity": (81.5, fake_hash("ppl-1"))}, name="exact")
    first = post_record(server, rec, tokens["alice"])
    assert first.status_code == 201, first.text
    assert first.json()["id"] == rec["id"]
    assert first.json()["url"] == f"{server}/records/{rec['id']}"
    again = post_record(server, rec, tokens["bob"])  # same content, another user: still one record
    assert again.status_code == 200 and again.json()["id"] == rec["id"]
    got = requests.get(server + API + "/records/" + rec["id"], timeout=10).json()
    assert got["record"] == rec
    assert got["user"] == "alice"  # the first uploader keeps it
    assert got["reproductions"] == [] and got["url"] == first.json()["url"]
    # bare hex and URL-encoded ids name the same record
    hexpart = rec["id"].removeprefix("sha256:")
    assert requests.get(server + API + "/records/" + hexpart, timeout=10).json()["record"] == rec
    assert requests.get(server + API + "/records/" + quote(rec["id"], safe=""), timeout=10).json()["record"] == rec
    listed = requests.get(
        server + API + "/records", params={"task": "lm", "dataset": "coco", "user": "alice"}, timeout=10
    ).json()
    assert rec["id"] in [r["id"] for r in listed["records"]]


def test_upload_needs_a_valid_token(server, tokens, db_url):
    rec = make_record({"bleu": (0.1, fake_hash("refs-1"))}, name="auth")
    no_token = requests.post(server + API + "/records", json=rec, timeout=10)
    assert no_token.status_code == 401 and no_token.headers.get("www-authenticate") == "Bearer"
    assert post_record(server, rec, "cotk_not-a-real-token").status_code == 401
    assert (
        requests.post(
            server + API + "/records", json=rec, headers={"Authorization": "Basic YTpi"}, timeout=10
        ).status_code
        == 401
    )
    # a revoked token stops working; a new token for the same user works
    from cotk_repro.dashboard.db import open_database

    db = open_database(db_url)
    token, created = add_user(db, "mallory")
    assert created is True
    assert revoke_token(db, "mallory") == 1
    assert post_record(server, rec, token).status_code == 401
    token2, created2 = add_user(db, "mallory")
    assert created2 is False
    assert post_record(server, rec, token2).status_code == 201
    # tokens are stored hashed, never in clear
    from sqlalchemy import select

    from cotk_repro.dashboard.models import Token

    stored = db.read(lambda c: [r[0] for r in c.execute(select(Token.token_hash)).all()])
    assert hash_token(token2) in stored and token2 not in stored
    db.dispose()
    assert requests.get(server + API + "/records/" + rec["id"], timeout=10).json()["user"] == "mallory"


def test_invalid_records_are_refused_with_422(server, tokens):
    tok = tokens["alice"]
    good = make_record({"bleu": (0.3, fake_hash("refs-1"))}, name="invalid")
    tampered = json.loads(json.dumps(good))
    tampered["results"]["bleu"]["value"] = 0.99  # id no longer matches the content
    r = post_record(server, tampered, tok)
    assert r.status_code == 422 and "does not match" in r.json()["detail"]
    missing = {k: v for k, v in good.items() if k != "environment"}
    missing["id"] = compute_id(missing)
    assert post_record(server, missing, tok).status_code == 422
    bad_hash = json.loads(json.dumps(good))
    bad_hash["results"]["bleu"]["hash"] = "not-hex"
    bad_hash["id"] = compute_id(bad_hash)
    r = post_record(server, bad_hash, tok)
    assert r.status_code == 422 and "malformed" in r.json()["detail"]
    not_json = requests.post(
        server + API + "/records",
        data=b"{not json",
        headers={**auth(tok), "Content-Type": "application/json"},
        timeout=10,
    )
    assert not_json.status_code == 422
    nan = requests.post(
        server + API + "/records",
        data=json.dumps(good).replace("0.3", "NaN").encode(),
        headers={**auth(tok), "Content-Type": "application/json"},
        timeout=10,
    )
    assert nan.status_code == 422
    assert post_record(server, [1, 2], tok).status_code == 422
    assert post_record(server, {"schema": "something/else"}, tok).status_code == 422
    long_task = make_record({"bleu": (0.3, None)}, task="t" * 500)
    assert post_record(server, long_task, tok).status_code == 422
    # nothing was stored by any of these
    assert requests.get(server + API + "/records/" + good["id"], timeout=10).status_code == 404


def test_content_type_is_strict(server, tokens):
    rec = make_record({"bleu": (0.3, None)}, name="ctype")
    r = requests.post(
        server + API + "/records",
        data=json.dumps(rec),
        timeout=10,
        headers={**auth(tokens["alice"]), "Content-Type": "text/plain"},
    )
    assert r.status_code == 415
    r = requests.post(server + API + "/records", data={"a": "b"}, headers=auth(tokens["alice"]), timeout=10)
    assert r.status_code == 415
    ok = requests.post(
        server + API + "/records",
        data=json.dumps(rec),
        timeout=10,
        headers={**auth(tokens["alice"]), "Content-Type": "application/json; charset=utf-8"},
    )
    assert ok.status_code == 201


def test_leaderboard_groups_by_hash_best_first_largest_group_first(server, tokens):
    task, dataset = "grouping", "news"
    a, b = fake_hash("refs-A"), fake_hash("refs-B")
    specs = [  # (value, hash, uploader)
        (0.20, a, "alice"),
        (0.35, a, "bob"),
        (0.10, a, "carol"),
        (0.90, b, "alice"),
        (0.99, None, "bob"),
    ]
    ids = {}
    for i, (value, h, user) in enumerate(specs):
        rec = make_record(
            {"bleu": (value, h), "perplexity": (100.0 - 10 * i, fake_hash("ppl"))},
            task=task,
            dataset=dataset,
            name=f"sys{i}",
        )
        assert post_record(server, rec, tokens[user]).status_code == 201
        ids[value] = rec["id"]
    # a failed run is stored but never ranked
    failed = make_record({}, task=task, dataset=dataset, status="failed", name="broken")
    assert post_record(server, failed, tokens["alice"]).status_code == 201

    board = requests.get(
        server + API + "/leaderboard", params={"task": task, "dataset": dataset, "metric": "bleu"}, timeout=10
    ).json()
    assert board["higher_is_better"] is True
    assert [g["hash"] for g in board["groups"]] == [a, b, None]
    assert [g["total"] for g in board["groups"]] == [3, 1, 1]
    first = board["groups"][0]["entries"]
    assert [e["value"] for e in first] == sorted([0.20, 0.35, 0.10], reverse=True)
    assert [e["id"] for e in first] == [ids[0.35], ids[0.20], ids[0.10]]
    assert [e["user"] for e in first] == ["bob", "alice", "carol"]
    assert [e["rank"] for e in first] == [1, 2, 3]
    assert board["groups"][2]["entries"][0]["unverifiable"] is True
    assert board["groups"][2]["comparable"] is False
    assert failed["id"] not in json.dumps(board)

    ppl = requests.get(
        server + API + "/leaderboard", params={"task": task, "dataset": dataset, "metric": "perplexity"}, timeout=10
    ).json()
    assert ppl["higher_is_better"] is False
    values = [e["value"] for e in ppl["groups"][0]["entries"]]
    assert values == sorted(values) and len(values) == 5

    # pagination within groups
    page2 = requests.get(
        server + API + "/leaderboard",
        timeout=10,
        params={"task": task, "dataset": dataset, "metric": "bleu", "per_page": 2, "page": 2},
    ).json()
    assert [e["value"] for e in page2["groups"][0]["entries"]] == [0.10]
    assert page2["groups"][0]["entries"][0]["rank"] == 3

    # unknown board: empty, not an error; missing parameters: 422
    empty = requests.get(server + API + "/leaderboard", params={"task": "x", "dataset": "y", "metric": "z"}, timeout=10)
    assert empty.status_code == 200 and empty.json()["groups"] == []
    assert requests.get(server + API + "/leaderboard", params={"task": "x"}, timeout=10).status_code == 422

    cat = requests.get(server + API + "/tasks", timeout=10).json()
    entry = next(c for c in cat if c["task"] == task and c["dataset"] == dataset)
    assert entry["records"] == 6 and {m["metric"] for m in entry["metrics"]} == {"bleu", "perplexity"}


def test_self_bleu_ranks_lower_is_better_as_its_class_declares(server, tokens):
    """The leaderboard asks the metric's facts: the least repetitive system (lowest Self-BLEU) is first."""
    task, dataset = "self-bleu-direction", "news"
    h = fake_hash("self-bleu-set")
    for i, value in enumerate((0.40, 0.15, 0.70)):
        rec = make_record({"self-bleu": (value, h)}, task=task, dataset=dataset, name=f"sb{i}")
        assert post_record(server, rec, tokens["alice"]).status_code == 201
    board = requests.get(
        server + API + "/leaderboard", timeout=10, params={"task": task, "dataset": dataset, "metric": "self-bleu"}
    ).json()
    assert board["higher_is_better"] is False
    assert [e["value"] for e in board["groups"][0]["entries"]] == [0.15, 0.40, 0.70]


def test_reproductions_are_attached_and_attributed(server, tokens):
    h = fake_hash("refs-repro")
    rec = make_record({"bleu": (0.42, h)}, task="repro", dataset="d", name="reproduced-system")
    assert post_record(server, rec, tokens["alice"]).status_code == 201
    url = server + API + "/records/" + rec["id"] + "/reproductions"
    assert requests.get(server + API + "/records/" + rec["id"], timeout=10).json()["reproductions"] == []
    for user, verdict in (
        ("bob", "reproduced"),
        ("carol", "reproduced"),
        ("bob", "reproduced"),
        ("carol", "not reproduced"),
    ):
        r = requests.post(
            url, json=make_verdict(rec["id"], verdict, value=0.42, h=h), headers=auth(tokens[user]), timeout=10
        )
        assert r.status_code == 201, r.text
        assert r.json()["url"].startswith(f"{server}/records/{rec['id']}#reproduction-")
    got = requests.get(server + API + "/records/" + rec["id"], timeout=10).json()
    assert [(x["user"], x["verdict"]["verdict"]) for x in got["reproductions"]] == [
        ("bob", "reproduced"),
        ("carol", "reproduced"),
        ("bob", "reproduced"),
        ("carol", "not reproduced"),
    ]
    stored = dict(got["reproductions"][0]["verdict"])
    assert stored.pop("claimed_verdict") == "reproduced"
    assert [m["verdict"] for m in stored.pop("metrics")] == ["reproduced"]  # the server's rows
    expected = make_verdict(rec["id"], "reproduced", value=0.42, h=h)
    expected.pop("metrics")
    assert stored == expected
    # each user's latest verdict counts: bob's is "reproduced", carol's newer one "not reproduced"
    assert got["reproduced_by"] == 1
    assert [x["superseded"] for x in got["reproductions"]] == [True, True, False, False]
    board = requests.get(
        server + API + "/leaderboard", params={"task": "repro", "dataset": "d", "metric": "bleu"}, timeout=10
    ).json()
    entry = board["groups"][0]["entries"][0]
    assert entry["reproductions"] == 2 and entry["reproduced_by"] == 1
    # errors: no token, unknown record, bad verdict, verdict for another record
    assert requests.post(url, json=make_verdict(rec["id"]), timeout=10).status_code == 401
    other = "sha256:" + "0" * 64
    r = requests.post(
        server + API + f"/records/{other}/reproductions",
        json=make_verdict(other),
        headers=auth(tokens["bob"]),
        timeout=10,
    )
    assert r.status_code == 404
    bad = make_verdict(rec["id"], "maybe")
    assert requests.post(url, json=bad, headers=auth(tokens["bob"]), timeout=10).status_code == 422
    wrong = make_verdict(other)
    assert requests.post(url, json=wrong, headers=auth(tokens["bob"]), timeout=10).status_code == 422
    assert len(requests.get(server + API + "/records/" + rec["id"], timeout=10).json()["reproductions"]) == 4


def test_unknown_and_malformed_ids_are_404(server):
    assert requests.get(server + API + "/records/sha256:" + "a" * 64, timeout=10).status_code == 404
    r = requests.get(server + API + "/records/not-an-id", timeout=10)
    assert r.status_code == 404 and "not a record id" in r.json()["detail"]
    assert requests.get(server + "/records/not-an-id", timeout=10).status_code == 404


def test_record_listing_paginates(server, tokens):
    made = []
    for i in range(7):
        rec = make_record({"bleu": (i / 10, fake_hash("refs-page"))}, task="paging", dataset="p", name=f"p{i}")
        assert post_record(server, rec, tokens["carol"]).status_code == 201
        made.append(rec["id"])
    seen = []
    for page in (1, 2, 3):
        data = requests.get(
            server + API + "/records", params={"task": "paging", "per_page": 3, "page": page}, timeout=10
        ).json()
        assert data["total"] == 7 and data["pages"] == 3
        seen += [r["id"] for r in data["records"]]
    assert seen == list(reversed(made))  # newest first, each once
    assert requests.get(server + API + "/records", params={"per_page": 10_000}, timeout=10).status_code == 422
    assert requests.get(server + API + "/records", params={"page": 0}, timeout=10).status_code == 422


def test_request_size_cap_and_rate_limit(db_url, tokens):
    url, stop = start_in_thread(db_url, max_body=4096, rate_limit="3/60", migrate=False, allow_unsigned=True)
    try:
        big = make_record({"bleu": (0.5, None)}, name="big")  # the environment makes it > 4 KiB
        assert len(json.dumps(big)) > 4096
        r = post_record(url, big, tokens["alice"])
        assert r.status_code == 413 and "larger than 4096" in r.json()["detail"]

        # without a Content-Length (chunked upload), the cap still holds
        def chunks():
            data = json.dumps(big).encode()
            for i in range(0, len(data), 1000):
                yield data[i : i + 1000]

        r = requests.post(
            url + API + "/records",
            data=chunks(),
            timeout=10,
            headers={**auth(tokens["alice"]), "Content-Type": "application/json"},
        )
        assert r.status_code == 413
        assert requests.get(url + API + "/records/" + big["id"], timeout=10).status_code == 404
        # 3 writes per minute per token: the third is allowed, the fourth is not
        assert post_record(url, big, tokens["alice"]).status_code == 413
        r = post_record(url, big, tokens["alice"])
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        # another token has its own bucket; reads are not limited
        assert post_record(url, big, tokens["bob"]).status_code == 413
        assert requests.get(url + API + "/health", timeout=10).status_code == 200
    finally:
        stop()


def test_errors_never_leak_tracebacks(db_url, monkeypatch):
    from cotk_repro.dashboard import store

    def boom(*a, **k):
        raise RuntimeError("secret /home/someone/.config detail")

    url, stop = start_in_thread(db_url, migrate=False, allow_unsigned=True)
    try:
        monkeypatch.setattr(store, "get_record", boom)
        r = requests.get(url + API + "/records/sha256:" + "b" * 64, timeout=10)
        assert r.status_code == 500
        assert r.json() == {"detail": "internal server error"}
        assert "secret" not in r.text and "Traceback" not in r.text
    finally:
        stop()


def test_lower_is_better_rule():
    # the direction is the reporting metric's declared fact, not a guess from the key's spelling
    for key in ("perplexity", "self-bleu", "fw-ppl", "rv-ppl"):
        assert lb.lower_is_better(key), key
    for key in (
        "bleu",
        "distinct-2",
        "fw-bleu",
        "bw-bleu",
        "fw-bw-bleu",
        "rouge-l",
        "nist",
        "meteor",
        "ngram-entropy-3",
    ):
        assert not lb.lower_is_better(key), key
    # a key no registered metric reports ranks higher-is-better (no substring guess: "test PPL" is not ours)
    assert not lb.lower_is_better("test PPL")


def test_migrations_are_idempotent_and_at_head(db_url):
    from cotk_repro.dashboard.db import open_database

    db = open_database(db_url)
    db.upgrade()
    assert db.current_revision() == "0011_verified"
    assert re.fullmatch(r"\d+", str(db.generation()))
    db.dispose()


def test_a_second_server_on_the_same_database_sees_new_writes(server, db_url, tokens):
    """Pages are cached per process, keyed by the database generation: another worker's write shows up."""
    import time

    other, stop = start_in_thread(db_url, migrate=False, allow_unsigned=True)
    try:
        params = {"task": "two-servers", "dataset": "d", "metric": "bleu"}
        assert requests.get(other + API + "/leaderboard", params=params, timeout=10).json()["groups"] == []
        assert "two-servers" not in requests.get(other + "/", timeout=10).text
        rec = make_record({"bleu": (0.5, fake_hash("two"))}, task="two-servers", dataset="d")
        assert post_record(server, rec, tokens["alice"]).status_code == 201
        deadline = time.time() + 5
        while True:
            groups = requests.get(other + API + "/leaderboard", params=params, timeout=10).json()["groups"]
            if groups or time.time() > deadline:
                break
            time.sleep(0.05)
        assert [e["id"] for e in groups[0]["entries"]] == [rec["id"]]
        assert "two-servers" in requests.get(other + "/", timeout=10).text
    finally:
        stop()


def test_pages_render_from_the_database(server, tokens):
    h = fake_hash("pages")
    recs = [
        make_record({"bleu": (v, hh)}, task="pages", dataset="<d>", name=n)
        for v, hh, n in ((0.2, h, "first"), (0.1, h, "second"), (0.9, fake_hash("other"), "third"))
    ]
    for rec in recs:
        assert post_record(server, rec, tokens["bob"]).status_code == 201
    home = requests.get(server + "/", timeout=10)
    assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
    assert "&lt;d&gt;" in home.text and "<d>" not in home.text
    assert "default-src 'none'" in home.headers["content-security-policy"]
    page = requests.get(
        server + "/leaderboard", params={"task": "pages", "dataset": "<d>", "metric": "bleu"}, timeout=10
    ).text
    ranked, _, apart = page.partition("Not comparable with the above")
    assert ranked.index("first") < ranked.index("second") and "third" not in ranked and "third" in apart
    metrics = requests.get(server + "/leaderboard", params={"task": "pages", "dataset": "<d>"}, timeout=10).text
    assert "metric=bleu" in metrics
    rec_page = requests.get(server + "/records/" + recs[0]["id"], timeout=10)
    assert rec_page.status_code == 200 and "not reproduced yet" in rec_page.text
    listing = requests.get(server + "/records", params={"user": "bob", "task": "pages"}, timeout=10).text
    assert all(r["id"][7:19] in listing for r in recs)
    assert requests.get(server + "/records/sha256:" + "c" * 64, timeout=10).status_code == 404


def test_concurrent_cache_misses_compute_once(tmp_path):
    """After a write, many requests for one leaderboard run one computation, not one each."""
    import asyncio
    import time

    from cotk_repro.dashboard.app import Dashboard
    from cotk_repro.dashboard.db import open_database

    db = open_database(f"sqlite:///{tmp_path / 'sf.sqlite3'}")
    dash = Dashboard(db, max_body=1000)
    calls = []

    def compute():
        calls.append(1)
        time.sleep(0.2)
        return b"board"

    async def many():
        return await asyncio.gather(*[dash.cached_async(("k",), compute) for _ in range(20)])

    assert asyncio.run(many()) == [b"board"] * 20
    assert len(calls) == 1
    dash.wrote()
    db.write(db.bump)  # a write: the next lookup recomputes
    assert asyncio.run(many()) == [b"board"] * 20 and len(calls) == 2
    db.dispose()


def test_upgrading_from_the_first_schema_keeps_and_counts_old_results(tmp_path):
    """alembic upgrade 0001 -> head: the leaderboard group counts are backfilled from existing results."""
    from sqlalchemy import text

    from cotk_repro.dashboard.db import Database

    db = Database(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    db.upgrade("0001")
    assert db.current_revision() == "0001"
    a = fake_hash("old")

    def seed(conn):
        conn.execute(text("INSERT INTO users (id, name, created_at) VALUES (1, 'old', 'x')"))
        for i, (v, h) in enumerate([(0.1, a), (0.3, a), (0.2, None)], start=1):
            conn.execute(
                text(
                    "INSERT INTO records (id, record_id, user_id, task, dataset, project_name, status, "
                    "submitted_at, body) VALUES (:i, :rid, 1, 't', 'd', :name, 'ok', 'x', '{}')"
                ),
                {"i": i, "rid": f"sha256:{i:064x}", "name": f"p{i}"},
            )
            conn.execute(
                text(
                    "INSERT INTO results (record_pk, task, dataset, metric, hash, value) "
                    "VALUES (:i, 't', 'd', 'bleu', :h, :v)"
                ),
                {"i": i, "h": h, "v": v},
            )

    db.write(seed)
    db.upgrade()
    assert db.current_revision() == "0011_verified"
    board = db.read(lambda c: lb.build(c, "t", "d", "bleu"))
    assert [(g["hash"], g["total"]) for g in board["groups"]] == [(a, 2), (None, 1)]
    assert [e["value"] for e in board["groups"][0]["entries"]] == [0.3, 0.1]
    db.dispose()


def test_a_result_uploaded_with_an_interval_shows_it_and_overlaps_are_marked(server, tokens):
    """``evaluate --ci`` intervals travel with the record: its page and the leaderboard (JSON and page) show them,
    and an entry whose interval overlaps the one above says so; the rank stays by value."""
    from cotk_repro.records import finalize

    task, dataset, h = "intervals", "news", fake_hash("refs-ci")
    specs = [(0.40, 0.05), (0.38, 0.01), (0.20, 0.02), (0.10, None)]  # (value, half-width or no interval)
    ids = []
    for i, (value, half) in enumerate(specs):
        rec = make_record({"chrf": (value, h)}, task=task, dataset=dataset, name=f"ci{i}")
        if half is not None:
            rec["results"]["chrf"]["ci"] = {"mean": value, "half_width": half, "samples": 1000, "seed": 12345}
            rec = finalize({k: v for k, v in rec.items() if k != "id"})
        posted = post_record(server, rec, tokens["alice"])
        assert posted.status_code == 201, posted.text
        ids.append(rec["id"])
    board = requests.get(
        server + API + "/leaderboard", params={"task": task, "dataset": dataset, "metric": "chrf"}, timeout=10
    ).json()
    entries = board["groups"][0]["entries"]
    assert [e["id"] for e in entries] == ids and [e["rank"] for e in entries] == [1, 2, 3, 4]
    assert [e.get("ci", {}).get("half_width") for e in entries] == [0.05, 0.01, 0.02, None]
    assert [e.get("overlaps_above") for e in entries] == [None, True, False, None]
    page = requests.get(f"{server}/records/{ids[0]}", timeout=10).text
    assert "± 0.05" in page
    assert "≈ above" in requests.get(server + board_path(task, dataset, "chrf"), timeout=10).text


def board_path(task: str, dataset: str, metric: str) -> str:
    from cotk_repro.dashboard.pages import board_url

    return board_url(task, dataset, metric)
