"""One ranking rule (competition ranking, SQL ``rank()``): :func:`cotk_repro.core.ranking.rank` against an
independent reference (scipy's ``rankdata(method="min")``), then compare, the dashboard's table (SQL
``rank()``) and its paginated leaderboard against the function on the same cells with ties, on SQLite and
PostgreSQL."""

from __future__ import annotations

import random

import pytest
import requests
from scipy.stats import rankdata

from dashboard_support import db_url_for, fake_hash, make_record

from cotk_repro.compare.engine import Cell
from cotk_repro.compare.groups import analyze_column
from cotk_repro.core.ranking import page_ranks, rank
from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.server import start_in_thread

API = "/api/v1"
BLEU, PPL = fake_hash("rank-bleu"), fake_hash("rank-ppl")
# ties inside and across what become page boundaries at per_page=2 and 3
BLEU_VALUES = [0.5, 0.3, 0.5, 0.1, 0.3, 0.3, 0.9, 0.5]
PPL_VALUES = [40.0, 40.0, 12.0, 90.0, 12.0, 40.0, 7.0, 90.0]


def test_rank_is_competition_ranking():
    assert rank([0.9, 0.5, 0.5, 0.1]) == [1, 2, 2, 4]  # ties share, the next rank skips
    assert rank([3.0, 1.0, 1.0, 2.0], higher_is_better=False) == [4, 1, 1, 3]
    assert rank([]) == []
    rng = random.Random(7)
    for _ in range(200):
        values = [rng.choice([0.0, 0.25, 0.5, 1.0, 2.5]) for _ in range(rng.randint(1, 12))]
        assert rank(values, higher_is_better=False) == list(rankdata(values, method="min").astype(int))
        assert rank(values) == list(rankdata([-v for v in values], method="min").astype(int))


def test_a_page_reads_the_whole_ranking():
    rng = random.Random(11)
    for _ in range(200):
        values = sorted((rng.choice([1.0, 2.0, 3.0]) for _ in range(rng.randint(1, 10))), reverse=True)
        whole = rank(values)
        per = rng.randint(1, 4)
        for offset in range(0, len(values), per):
            page = values[offset:offset + per]
            first = 1 + sum(v > page[0] for v in values)
            assert page_ranks(page, offset=offset, first_rank=first) == whole[offset:offset + per]


def test_compare_ranks_with_the_function():
    cells = [Cell(system=f"s{i}", dataset="d", column="bleu", metric="bleu", key="bleu", value=v, hash=BLEU)
             for i, v in enumerate(BLEU_VALUES)]
    analyze_column(cells, higher_is_better=True)
    assert [c.rank for c in cells] == rank(BLEU_VALUES) == [2, 5, 2, 8, 5, 5, 1, 2]


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path_factory):
    yield from db_url_for(request, tmp_path_factory, "ranking")


@pytest.fixture(scope="module")
def board(db_url):
    url, stop = start_in_thread(db_url, allow_unsigned=True)
    db = open_database(db_url)
    token = add_user(db, "alice")[0]
    db.dispose()
    ids = []
    for i, (b, p) in enumerate(zip(BLEU_VALUES, PPL_VALUES)):
        rec = make_record({"bleu": (b, BLEU), "perplexity": (p, PPL)}, name=f"sys{i}", task="ties", dataset="d")
        r = requests.post(url + API + "/records", json=rec, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert r.status_code == 201, r.text
        ids.append(rec["id"])
    yield url, ids
    stop()


def _get(url, path, **params):
    r = requests.get(url + API + path, params={"task": "ties", "dataset": "d", **params}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("metric,values,higher", [("bleu", BLEU_VALUES, True), ("perplexity", PPL_VALUES, False)])
def test_table_and_leaderboard_rank_as_the_function(board, metric, values, higher):
    url, ids = board
    expected = dict(zip(ids, rank(values, higher_is_better=higher)))
    table = _get(url, "/table", per_page=100)
    assert {row["id"]: row["cells"][metric]["rank"] for row in table["rows"]} == expected
    for per_page in (1, 2, 3, 100):  # pages that start inside a tie
        seen = {}
        for page in range(1, len(ids) // per_page + 2):
            board_page = _get(url, "/leaderboard", metric=metric, page=page, per_page=per_page)
            for entry in board_page["groups"][0]["entries"] if board_page["groups"] else []:
                seen[entry["id"]] = entry["rank"]
        assert seen == expected, per_page
