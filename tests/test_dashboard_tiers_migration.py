"""Migration 0008 fills ``records.dirty`` and ``results.tier`` from the records already stored (their JSON and
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
    assert db.current_revision() == "0010_pinned"
    rows = db.read(
        lambda c: c.execute(
            text("SELECT r.id, r.dirty, s.tier FROM records r JOIN results s ON s.record_pk = r.id ORDER BY r.id")
        ).all()
    )
    assert [(bool(d), t) for _, d, t in rows] == [(True, 1), (False, 1), (False, 0), (False, 0), (False, 0), (True, 1)]
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
