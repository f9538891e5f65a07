"""Migrations 0008 and 0011 fill ``records.dirty`` and ``results.tier`` from the records already stored (their JSON and
their signatures), on SQLite and PostgreSQL, and the leaderboard then ranks the old records by tier."""

from __future__ import annotations

import json

import pytest
from dashboard_support import db_url_for, fake_hash
from sqlalchemy import text

from cotk_repro.dashboard import leaderboard as lb
from cotk_repro.dashboard.db import Database

H = fake_hash("tiers-migration")
# (value, key fingerprint or None, body): the best value is dirty, the second unsigned
OLD = [
    (0.9, "SHA256:k", {"code": {"dirty": True}}),
    (0.8, None, {"code": {"dirty": None}}),
    (0.5, "SHA256:k", {"code": {"dirty": None}}),
    (0.4, "SHA256:k", {"code": {}}),
    (0.7, "SHA256:k", "not json {"),
    (0.6, None, {"code": {"dirty": True}}),
]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path_factory):
    yield from db_url_for(request, tmp_path_factory, "tiers")


def test_upgrade_fills_dirty_and_tier_from_the_stored_records(db_url):
    db = Database(db_url)
    db.upgrade("0006")

    def seed(conn):
        conn.execute(text("INSERT INTO users (id, name, created_at) VALUES (1, 'old', 'x')"))
        for i, (v, fp, body) in enumerate(OLD, start=1):
            conn.execute(
                text(
                    "INSERT INTO records (id, record_id, user_id, task, dataset, project_name, status, "
                    "submitted_at, body, key_fingerprint) VALUES (:i, :rid, 1, 't', 'd', :name, 'ok', "
                    "'x', :body, :fp)"
                ),
                {
                    "i": i,
                    "rid": f"sha256:{i:064x}",
                    "name": f"p{i}",
                    "fp": fp,
                    "body": body if isinstance(body, str) else json.dumps(body),
                },
            )
            conn.execute(
                text(
                    "INSERT INTO results (record_pk, task, dataset, metric, hash, value) "
                    "VALUES (:i, 't', 'd', 'bleu', :h, :v)"
                ),
                {"i": i, "h": H, "v": v},
            )
        conn.execute(
            text("INSERT INTO board_groups (task, dataset, metric, hash, n) VALUES ('t', 'd', 'bleu', :h, :n)"),
            {"h": H, "n": len(OLD)},
        )

    db.write(seed)
    db.upgrade()
    assert db.current_revision() == "0011_verified"
    rows = db.read(
        lambda c: c.execute(
            text("SELECT r.id, r.dirty, s.tier FROM records r JOIN results s ON s.record_pk = r.id ORDER BY r.id")
        ).all()
    )
    # three tiers since 0011_verified: none of these is verified, so signed and clean is tier 1, the rest 2
    assert [(bool(d), t) for _, d, t in rows] == [(True, 2), (False, 2), (False, 1), (False, 1), (False, 1), (True, 2)]
    board = db.read(lambda c: lb.build(c, "t", "d", "bleu"))
    entries = board["groups"][0]["entries"]
    # signed and clean first (0.7, 0.5, 0.4), then the others by value (0.9 dirty, 0.8 unsigned, 0.6 both)
    assert [(e["value"], e["rank"], e["dirty"]) for e in entries] == [
        (0.7, 1, False),
        (0.5, 2, False),
        (0.4, 3, False),
        (0.9, 4, True),
        (0.8, 5, False),
        (0.6, 6, True),
    ]
    db.dispose()


def test_0011_derives_pinned_and_fills_the_tier_from_the_stored_reproductions(db_url):
    """Records stored at 0010: one claiming pinned with an openai system, one a stranger reproduced (signed with a
    vouched key), one reproduced only by its author, one reproduced by an unsigned stranger."""
    db = Database(db_url)
    db.upgrade("0010_pinned")
    openai = {"system": {"generator": "openai", "settings": {"model": "m"}, "pinned": True}, "code": {}}
    records = [(0.9, openai), (0.2, {"code": {}}), (0.8, {"code": {}}), (0.7, {"code": {}})]

    def seed(conn):
        for uid, name in ((1, "owner"), (2, "stranger"), (3, "nokey")):
            conn.execute(text("INSERT INTO users (id, name, created_at) VALUES (:i, :n, 'x')"), {"i": uid, "n": name})
        for uid, fp in ((1, "SHA256:o"), (2, "SHA256:s")):
            conn.execute(
                text(
                    "INSERT INTO ssh_keys (user_id, fingerprint, key_type, public_key, comment, created_at, proof) "
                    "VALUES (:u, :fp, 'ssh-ed25519', 'k', '', 'x', 'operator')"
                ),
                {"u": uid, "fp": fp},
            )
        for i, (v, body) in enumerate(records, start=1):
            conn.execute(
                text(
                    "INSERT INTO records (id, record_id, user_id, task, dataset, project_name, status, "
                    "submitted_at, body, key_fingerprint) VALUES (:i, :rid, 1, 't', 'd', :name, 'ok', 'x', :body, "
                    "'SHA256:o')"
                ),
                {"i": i, "rid": f"sha256:{i:064x}", "name": f"p{i}", "body": json.dumps(body)},
            )
            conn.execute(
                text(
                    "INSERT INTO results (record_pk, task, dataset, metric, hash, value, tier, pinned) "
                    "VALUES (:i, 't', 'd', 'bleu', :h, :v, 0, true)"
                ),
                {"i": i, "h": H, "v": v},
            )
        for pk, uid, fp, by_author in ((2, 2, "SHA256:s", False), (3, 1, "SHA256:o", True), (4, 3, None, False)):
            conn.execute(
                text(
                    "INSERT INTO reproductions (record_pk, user_id, submitted_at, verdict, body, key_fingerprint, "
                    "by_author, superseded) VALUES (:pk, :u, 'x', 'reproduced', '{}', :fp, :a, false)"
                ),
                {"pk": pk, "u": uid, "fp": fp, "a": by_author},
            )
        conn.execute(
            text("INSERT INTO board_groups (task, dataset, metric, hash, n) VALUES ('t', 'd', 'bleu', :h, 4)"), {"h": H}
        )

    db.write(seed)
    db.upgrade()
    rows = db.read(
        lambda c: c.execute(
            text(
                "SELECT r.standing, s.pinned, s.tier FROM records r JOIN results s ON s.record_pk = r.id ORDER BY r.id"
            )
        ).all()
    )
    assert [(st, bool(p), t) for st, p, t in rows] == [
        ("unverified", False, 2),  # claimed pinned, described openai: the worse claim wins
        ("verified", True, 0),  # a stranger's signed reproduction (K = 1)
        ("unverified", True, 1),  # the author's own rerun counts for nothing
        ("unverified", True, 1),  # nor does an unsigned one
    ]
    board = db.read(lambda c: lb.build(c, "t", "d", "bleu"))
    assert [(e["value"], e["rank"], e["tier"], e["verified"]) for e in board["groups"][0]["entries"]] == [
        (0.2, 1, 0, True),
        (0.8, 2, 1, False),
        (0.7, 3, 1, False),
        (0.9, 4, 2, False),
    ]
    # a dashboard served with K = 2 re-derives: one stranger no longer verifies
    from cotk_repro.dashboard.standing import use_verified_by

    assert use_verified_by(db, 2) and not use_verified_by(db, 2)
    assert db.read(lambda c: c.execute(text("SELECT standing FROM records WHERE id = 2")).scalar()) == "unverified"
    db.dispose()
