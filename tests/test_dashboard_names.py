"""Names are identifiers (issue 32, attacks 4 and 8): look-alike, invisible, control-character and case-only
spellings of a metric, task, dataset, project or user name are refused, so nobody opens a second "bleu"
leaderboard; metrics no loaded plugin declares are refused; user names are matched in full."""

from __future__ import annotations

import pytest
from conftest import run_cli
from dashboard_support import db_url_for, fake_hash, make_record
from starlette.testclient import TestClient

from cotk_repro.dashboard.app import create_app
from cotk_repro.dashboard.auth import AuthError, add_user, list_users
from cotk_repro.dashboard.db import Database, open_database
from cotk_repro.dashboard.names import keys

API = "/api/v1"
H = fake_hash("names-refs")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path_factory):
    yield from db_url_for(request, tmp_path_factory, "names")


@pytest.fixture(scope="module")
def client(db_url):
    db = open_database(db_url)
    token = add_user(db, "uploader")[0]
    db.dispose()
    with TestClient(create_app(db_url, rate_limit=None, allow_unsigned=True, migrate=False)) as c:
        c.headers["Authorization"] = f"Bearer {token}"
        yield c


def upload(client, results, **kw):
    return client.post(API + "/records", json=make_record(results, **kw))


def test_look_alike_metric_names_are_refused_and_the_real_one_keeps_its_board(client):
    assert upload(client, {"bleu": (0.3, H)}, task="names-m", dataset="d").status_code == 201
    for spelling, words in (
        ("bleu\u200b", "U+200B"),
        ("bl\u0435u", "looks like 'bleu'"),
        ("\u202eueLb", "U+202E"),
        ("bleu\n", "U+000A"),
        ("BLEU", "differs only by case from 'bleu'"),
        ("\uff42\uff4c\uff45\uff55", "not in Unicode NFKC form"),
        ("b1eu", "looks like 'bleu'"),
    ):
        r = upload(client, {spelling: (0.42, H)}, task="names-m", dataset="d")
        assert r.status_code == 422, (spelling, r.text)
        detail = r.json()["detail"]
        assert isinstance(detail, str) and words in detail, (spelling, detail)
    # a metric no loaded plugin declares: the record is kept (it is signed as a whole), its value never ranked
    r = upload(client, {"bleu": (0.31, H), "my-own-metric": (0.42, H)}, task="names-m", dataset="d")
    assert r.status_code == 201 and r.json()["unranked"] == ["my-own-metric"], r.text
    tasks = [t for t in client.get(API + "/tasks").json() if t["task"] == "names-m"]
    assert [sorted(m if isinstance(m, str) else m["metric"] for m in t["metrics"]) for t in tasks] == [["bleu"]]
    board = client.get(API + "/leaderboard", params={"task": "names-m", "dataset": "d", "metric": "my-own-metric"})
    assert board.status_code == 200 and board.json()["groups"] == []
    assert (
        len(
            client.get(API + "/leaderboard", params={"task": "names-m", "dataset": "d", "metric": "bleu"}).json()[
                "groups"
            ][0]["entries"]
        )
        == 2
    )


@pytest.mark.parametrize(
    "field,first,others",
    [
        ("task", "summarize", ["Summarize", "SUMMARIZE", "summ\u0430rize", "summarize\u200d", "summarize\u2028"]),
        ("dataset", "coco", ["COCO", "c\u043eco", "coco\t", "\ufeffcoco"]),
        ("name", "my-system", ["My-System", "my-\u0455ystem", "my-system\u202e"]),
    ],
)
def test_task_dataset_and_project_names_are_identifiers(client, field, first, others):
    def rec(value):
        kw = {"task": "names-t", "dataset": "names-d", "name": "names-p"}
        kw[field] = value
        return kw

    assert upload(client, {"bleu": (0.2, H)}, **rec(first)).status_code == 201
    for value in others:
        r = upload(client, {"bleu": (0.2, H)}, **rec(value))
        assert r.status_code == 422, (value, r.text)
        assert first in r.json()["detail"] or "U+" in r.json()["detail"], r.json()
    assert upload(client, {"bleu": (0.25, H)}, **rec(first)).status_code == 201  # the name itself still works


def test_user_names_are_matched_in_full_and_kept_apart(db_url, tmp_path):
    db = open_database(db_url)
    try:
        add_user(db, "walter")
        for bad, words in (
            ("walter\n", "not a valid user name"),
            ("WALTER", "differs only by case from 'walter'"),
            ("wa1ter", "looks like 'walter'"),
            ("waIter", "looks like 'walter'"),
            ("w\u0430lter", "not a valid user name"),
        ):
            with pytest.raises(AuthError, match=words):
                add_user(db, bad)
        assert [u["name"] for u in list_users(db)].count("walter") == 1
        assert not [u for u in list_users(db) if u["name"].casefold() == "walter" and u["name"] != "walter"]
    finally:
        db.dispose()
    cli_db = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    assert run_cli("dashboard", "add-user", "alice", "--db", cli_db).returncode == 0
    res = run_cli("dashboard", "add-user", "alice\n", "--db", cli_db)
    assert res.returncode == 2 and "not a valid user name" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("dashboard", "add-user", "Alice", "--db", cli_db)
    assert res.returncode == 2 and "differs only by case" in res.stderr


def test_the_skeleton_comes_from_the_confusables_table():
    same = [
        ("bleu", "bl\u0435u"),
        ("bleu", "b1eu"),
        ("bleu", "bIeu"),
        ("coco", "COCO"),
        ("mouse", "rnouse"),
        ("perplexity", "perp\u217cexity"),
    ]
    for a, b in same:
        assert keys(a) & keys(b), (a, b)
    for a, b in (("bleu", "self-bleu"), ("distinct-2", "distinct-3"), ("rouge-l", "rouge-1x")):
        assert not keys(a) & keys(b), (a, b)


def test_upgrading_registers_the_names_already_stored(tmp_path):
    from dashboard_support import write_old_records

    from cotk_repro.dashboard.record_writes import PendingRecord
    from cotk_repro.dashboard.store import dumps

    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    db = Database(url)
    db.upgrade("0005")
    token = add_user(db, "old")[0]
    uid = db.read(lambda c: c.exec_driver_sql("SELECT id FROM users").scalar())
    rec = make_record({"bleu": (0.3, H)}, task="oldtask", dataset="olddata", name="oldproj")
    db.write(
        lambda conn: write_old_records(
            conn,
            [
                PendingRecord(
                    record_id=rec["id"],
                    task="oldtask",
                    dataset="olddata",
                    project_name="oldproj",
                    status="ok",
                    body=dumps(rec),
                    results=(("bleu", 0.3, H),),
                    owner_id=uid,
                    uploader_id=uid,
                    signature=None,
                    fingerprint=None,
                )
            ],
        )
    )
    db.dispose()
    with TestClient(create_app(url, rate_limit=None, allow_unsigned=True)) as c:  # upgrades to head
        c.headers["Authorization"] = f"Bearer {token}"
        r = c.post(API + "/records", json=make_record({"bleu": (0.3, H)}, task="OldTask", dataset="olddata"))
        assert r.status_code == 422 and "'oldtask'" in r.json()["detail"], r.text
        r = c.post(API + "/records", json=make_record({"bleu": (0.3, H)}, task="oldtask", dataset="olddata"))
        assert r.status_code == 201, r.text


def test_look_alikes_uploaded_at_the_same_time_one_wins(db_url):
    """The check runs inside the writers' transaction: eight spellings of one new project name sent at once
    (over real HTTP, batched by the group commit) give exactly one stored spelling."""
    import threading

    import requests

    from cotk_repro.dashboard.server import start_in_thread

    db = open_database(db_url)
    token = add_user(db, "racer")[0]
    db.dispose()
    spellings = [
        "race-proj",
        "RACE-PROJ",
        "race-pr\u043ej",
        "Race-Proj",
        "r\u0430ce-proj",
        "race-Proj",
        "rac\u0435-proj",
        "RACE-proj",
    ]
    bodies = [make_record({"bleu": (0.2, H)}, task="race", dataset="d", name=s) for s in spellings]
    url, stop = start_in_thread(db_url, rate_limit=None, allow_unsigned=True, migrate=False)
    codes: dict[str, int] = {}
    barrier = threading.Barrier(len(bodies))

    def send(spelling, body):
        barrier.wait()
        codes[spelling] = requests.post(
            url + API + "/records", json=body, timeout=30, headers={"Authorization": f"Bearer {token}"}
        ).status_code

    try:
        threads = [threading.Thread(target=send, args=(s, b)) for s, b in zip(spellings, bodies)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(codes.values()) == [201] + [422] * 7, codes
        listed = requests.get(url + API + "/records", params={"task": "race"}, timeout=10).json()["records"]
        assert [r["project"] for r in listed] == [s for s, c in codes.items() if c == 201]
    finally:
        stop()
