"""One ranking rule (competition ranking, SQL ``rank()``, by tier then value): :func:`cotk_repro.core.ranking.rank`
against an independent reference (scipy's ``rankdata(method="min")``), then compare, the dashboard's table (SQL
``rank()``) and its paginated leaderboard against the function on the same cells with ties, and with signed,
unsigned, dirty-tree and unpinned (an endpoint's model) results mixed, on SQLite and PostgreSQL."""

from __future__ import annotations

import random

import pytest
import requests
from dashboard_support import db_url_for, fake_hash, make_record, make_verdict
from signing_support import make_key

from cotk_repro.compare.engine import Cell
from cotk_repro.compare.groups import analyze_column
from cotk_repro.core.ranking import TRUSTED, UNTRUSTED, page_ranks, rank, tier
from cotk_repro.core.signing import key_from_path, sign_record
from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.server import start_in_thread
from cotk_repro.records import finalize

rankdata = pytest.importorskip("scipy.stats", reason="the reference ranking is scipy's (pip install scipy)").rankdata

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


def test_a_lower_tier_ranks_first_and_ties_share_a_rank_only_within_a_tier():
    assert tier(signed=True, dirty=False) == tier(signed=True, dirty=False, pinned=True) == TRUSTED
    assert (
        tier(signed=False, dirty=False) == tier(signed=True, dirty=True) == tier(signed=False, dirty=True) == UNTRUSTED
    )
    assert tier(signed=True, dirty=False, pinned=False) == UNTRUSTED  # a signature vouches for no weights
    # the dirty 0.9 never ranks above the clean 0.5; 0.5 of tier 0 and 0.5 of tier 1 do not tie
    assert rank([0.5, 0.9, 0.5, 0.1], tiers=[0, 1, 1, 0]) == [1, 3, 4, 2]
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 12)
        values = [rng.choice([0.0, 0.25, 0.5, 1.0, 2.5]) for _ in range(n)]
        tiers = [rng.choice([0, 1]) for _ in range(n)]
        # the reference: scipy ranks one number that orders by tier first (values lie in [0, 2.5])
        assert rank(values, higher_is_better=False, tiers=tiers) == list(
            rankdata([t * 10 + v for t, v in zip(tiers, values)], method="min").astype(int)
        )
        assert rank(values, tiers=tiers) == list(
            rankdata([t * 10 - v for t, v in zip(tiers, values)], method="min").astype(int)
        )


def test_a_page_reads_the_whole_ranking():
    rng = random.Random(11)
    for _ in range(200):
        values = sorted((rng.choice([1.0, 2.0, 3.0]) for _ in range(rng.randint(1, 10))), reverse=True)
        whole = rank(values)
        per = rng.randint(1, 4)
        for offset in range(0, len(values), per):
            page = values[offset : offset + per]
            first = 1 + sum(v > page[0] for v in values)
            assert page_ranks(page, offset=offset, first_rank=first) == whole[offset : offset + per]
        # with tiers: the list sorted by (tier, value best first)
        rows = sorted(
            ((rng.choice([0, 1]), rng.choice([1.0, 2.0, 3.0])) for _ in range(rng.randint(1, 10))),
            key=lambda r: (r[0], -r[1]),
        )
        tiers, values = [t for t, _ in rows], [v for _, v in rows]
        whole = rank(values, tiers=tiers)
        for offset in range(0, len(values), per):
            t0, v0 = rows[offset]
            first = 1 + sum(t < t0 or (t == t0 and v > v0) for t, v in rows)
            assert (
                page_ranks(
                    values[offset : offset + per], offset=offset, first_rank=first, tiers=tiers[offset : offset + per]
                )
                == whole[offset : offset + per]
            )


def test_compare_ranks_with_the_function():
    cells = [
        Cell(system=f"s{i}", dataset="d", column="bleu", metric="bleu", key="bleu", value=v, hash=BLEU)
        for i, v in enumerate(BLEU_VALUES)
    ]
    analyze_column(cells, higher_is_better=True)
    assert [c.rank for c in cells] == rank(BLEU_VALUES) == [2, 5, 2, 8, 5, 5, 1, 2]


def test_compare_ranks_an_unpinned_cell_below_every_pinned_one():
    pinned = [True, False, True, True, True, True, False, True]  # the best value (0.9) and a 0.3 are unpinned
    cells = [
        Cell(system=f"s{i}", dataset="d", column="bleu", metric="bleu", key="bleu", value=v, hash=BLEU, pinned=p)
        for i, (v, p) in enumerate(zip(BLEU_VALUES, pinned))
    ]
    analyze_column(cells, higher_is_better=True)
    tiers = [tier(signed=True, dirty=False, pinned=p) for p in pinned]
    assert [c.rank for c in cells] == rank(BLEU_VALUES, tiers=tiers) == [1, 8, 1, 6, 4, 4, 7, 1]
    assert [bool(c.flag and c.flag.startswith("unpinned")) for c in cells] == [not p for p in pinned]
    assert all(c.rank < u.rank for c in cells if c.pinned for u in cells if not u.pinned)


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


# -- signed, unsigned, dirty-tree and unpinned results on one board ------------------------------------------
# (value, signed, dirty, pinned): the best BLEU (0.95) is signed and clean but unpinned (an endpoint's model), the
# next (0.9) dirty and 0.8 unsigned; ties inside each tier and across them
TIERED = [
    (0.5, True, False, True),
    (0.9, True, True, True),
    (0.8, False, False, True),
    (0.5, True, False, True),
    (0.3, True, False, True),
    (0.5, False, False, True),
    (0.9, False, True, True),
    (0.3, True, True, True),
    (0.1, True, False, True),
    (0.95, True, False, False),
    (0.5, True, False, False),
]
TIER_HASH = fake_hash("rank-tiers")


@pytest.fixture(scope="module")
def tiered_board(db_url, tmp_path_factory):
    from cotk_repro.dashboard.identity import add_key

    url, stop = start_in_thread(db_url, allow_unsigned=True)
    key = make_key(tmp_path_factory.mktemp("tier-keys"))
    db = open_database(db_url)
    token = add_user(db, "tina")[0]
    add_key(db, "tina", key.with_suffix(".pub").read_text())
    db.dispose()
    signing_key = key_from_path(key, "test")
    ids = []
    for i, (value, signed, dirty, pinned) in enumerate(TIERED):
        rec = make_record({"bleu": (value, TIER_HASH)}, name=f"tier{i}", task="tiers", dataset="d", dirty=dirty)
        if not pinned:
            rec["results"]["bleu"]["pinned"] = False
            rec = finalize({k: v for k, v in rec.items() if k != "id"})
        body = {"record": rec, "signature": sign_record(rec, signing_key)} if signed else rec
        r = requests.post(url + API + "/records", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert r.status_code == 201, r.text
        assert r.json()["signed"] is signed
        ids.append(rec["id"])
    yield url, ids
    stop()


def test_dirty_unsigned_and_unpinned_results_never_rank_above_a_clean_signed_pinned_one(tiered_board):
    url, ids = tiered_board
    tiers = [tier(signed=s, dirty=d, pinned=p) for _, s, d, p in TIERED]
    expected = dict(zip(ids, rank([v for v, _, _, _ in TIERED], tiers=tiers)))
    # the unpinned 0.95 ranks 5th, then the dirty 0.9s, all below the four clean signed pinned values
    assert expected[ids[9]] == 5 and expected[ids[1]] == expected[ids[6]] == 6
    assert expected[ids[0]] == 1 and expected[ids[8]] == 4
    assert expected[ids[10]] == expected[ids[5]] != expected[ids[0]]  # 0.5 unpinned ties 0.5 unsigned, not 0.5 pinned
    table = requests.get(
        url + API + "/table", params={"task": "tiers", "dataset": "d", "per_page": 100}, timeout=30
    ).json()
    assert {row["id"]: row["cells"]["bleu"]["rank"] for row in table["rows"]} == expected
    assert {row["id"]: (row["signed"], row["dirty"], row["cells"]["bleu"]["pinned"]) for row in table["rows"]} == {
        rid: (s, d, p) for rid, (_, s, d, p) in zip(ids, TIERED)
    }
    by_rank = requests.get(
        url + API + "/table", params={"task": "tiers", "dataset": "d", "sort": "bleu"}, timeout=30
    ).json()
    assert [row["id"] for row in by_rank["rows"]] == sorted(ids, key=lambda i: (expected[i], ids.index(i)))
    for per_page in (1, 2, 4, 100):  # pages that start inside a tie and across the tiers' boundary
        seen = {}
        for page in range(1, len(ids) // per_page + 2):
            board_page = requests.get(
                url + API + "/leaderboard",
                params={"task": "tiers", "dataset": "d", "metric": "bleu", "page": page, "per_page": per_page},
                timeout=30,
            ).json()
            for entry in board_page["groups"][0]["entries"] if board_page["groups"] else []:
                seen[entry["id"]] = entry["rank"]
                assert entry["dirty"] is TIERED[ids.index(entry["id"])][2]
                assert entry["pinned"] is TIERED[ids.index(entry["id"])][3]
                assert entry["tier"] == tiers[ids.index(entry["id"])]
        assert seen == expected, per_page
    # the pages show the marker beside the record
    html = requests.get(
        url + "/leaderboard", params={"task": "tiers", "dataset": "d", "metric": "bleu"}, timeout=30
    ).text
    assert html.count('class="badge dirty"') == sum(d for _, _, d, _ in TIERED)
    assert html.count('class="badge unpinned"') == sum(not p for _, _, _, p in TIERED)
    html = requests.get(url + "/leaderboard", params={"task": "tiers", "dataset": "d"}, timeout=30).text
    assert html.count('class="badge dirty"') == sum(d for _, _, d, _ in TIERED)
    assert html.count('class="badge unpinned"') == sum(not p for _, _, _, p in TIERED)


# -- the attacker's records: pinned is derived, verified is earned (issues 45.5 and 47.1) ----------------------
# (value, kind, expected pinned, expected tier): a record that claims pinned with an openai system, one that
# leaves out its system but whose signature names it, one that leaves out its system altogether (its own code's
# outputs: the uploader's word, tier 1 at most), a dirty one, and an honest one a stranger reproduced (tier 0)
ATTACKS = [
    (0.97, "openai-claims-pinned", False, 2),
    (0.96, "openai-signature-tag", False, 2),
    (0.99, "no-system", True, 1),
    (0.98, "dirty", True, 2),
    (0.5, "honest", True, 1),
    (0.2, "verified", True, 0),
]
ATTACK_HASH = fake_hash("rank-attacks")
OPENAI = {"generator": "openai", "version": "1", "settings": {"model": "gpt-x", "base_url": "http://x"}}


@pytest.fixture(scope="module")
def attack_board(db_url, tmp_path_factory):
    from cotk_repro.core.signing import sign_reproduction
    from cotk_repro.dashboard.identity import add_key

    url, stop = start_in_thread(db_url, allow_unsigned=True, verified_by=1)
    keys = tmp_path_factory.mktemp("attack-keys")
    mallory_key, vera_key = make_key(keys / "mallory"), make_key(keys / "vera")
    db = open_database(db_url)
    tokens = {}
    for name, key in (("mallory", mallory_key), ("vera", vera_key)):
        tokens[name] = add_user(db, name)[0]
        add_key(db, name, key.with_suffix(".pub").read_text())
    db.dispose()
    signing = key_from_path(mallory_key, "test")
    ids = []
    for i, (value, kind, _pinned, _tier) in enumerate(ATTACKS):
        rec = make_record(
            {"bleu": (value, ATTACK_HASH)}, name=f"atk{i}", task="attacks", dataset="d", dirty=kind == "dirty"
        )
        body = {k: v for k, v in rec.items() if k != "id"}
        if kind == "openai-claims-pinned":
            body["system"] = {**OPENAI, "pinned": True}
            body["results"]["bleu"]["pinned"] = True
        elif kind == "openai-signature-tag":
            body["results"]["bleu"]["signature"] = "bleu|n=4|system:openai@0123456789ab"
        rec = finalize(body)
        r = requests.post(
            url + API + "/records",
            json={"record": rec, "signature": sign_record(rec, signing)},
            headers={"Authorization": f"Bearer {tokens['mallory']}"},
            timeout=30,
        )
        assert r.status_code == 201, r.text
        ids.append(rec["id"])
        if kind == "verified":  # a stranger (vera, her key vouched for) reproduces it: identical numbers
            verdict = make_verdict(rec["id"], "reproduced", metric="bleu", value=value, h=ATTACK_HASH)
            r = requests.post(
                url + API + f"/records/{rec['id']}/reproductions",
                json={"reproduction": verdict, "signature": sign_reproduction(verdict, key_from_path(vera_key, "t"))},
                headers={"Authorization": f"Bearer {tokens['vera']}"},
                timeout=30,
            )
            assert r.status_code == 201 and r.json()["standing"] == "verified", r.text
    yield url, ids
    stop()


def test_pinned_is_derived_and_only_a_reproduction_earns_the_top_tier(attack_board):
    url, ids = attack_board
    tiers = [t for _, _, _, t in ATTACKS]
    assert tiers == [
        tier(signed=True, dirty=k == "dirty", pinned=p, standing="verified" if k == "verified" else "unverified")
        for _, k, p, _ in ATTACKS
    ]
    expected = dict(zip(ids, rank([v for v, _, _, _ in ATTACKS], tiers=tiers)))
    # the reproduced 0.2 ranks first; the record that left out its system ranks below it, with the honest ones
    assert expected[ids[5]] == 1 and expected[ids[2]] == 2 and expected[ids[4]] == 3
    assert min(expected[ids[0]], expected[ids[1]]) > expected[ids[4]]  # the openai claims rank last
    params = {"task": "attacks", "dataset": "d"}
    table = requests.get(url + API + "/table", params={**params, "per_page": 100}, timeout=30).json()
    cells = {row["id"]: row["cells"]["bleu"] for row in table["rows"]}
    assert {rid: c["rank"] for rid, c in cells.items()} == expected
    assert {rid: (c["pinned"], c["tier"], c["verified"]) for rid, c in cells.items()} == {
        rid: (p, t, t == 0) for rid, (_, _, p, t) in zip(ids, ATTACKS)
    }
    for per_page in (1, 2, 4, 100):  # every page of the leaderboard
        seen = {}
        for page in range(1, len(ids) // per_page + 2):
            board_page = requests.get(
                url + API + "/leaderboard",
                params={**params, "metric": "bleu", "page": page, "per_page": per_page},
                timeout=30,
            ).json()
            for entry in board_page["groups"][0]["entries"] if board_page["groups"] else []:
                _, kind, pinned, t = ATTACKS[ids.index(entry["id"])]
                seen[entry["id"]] = entry["rank"]
                assert (entry["pinned"], entry["tier"], entry["verified"]) == (pinned, t, t == 0), kind
        assert seen == expected, per_page
    # order=value ignores the tiers (each entry still says its own)
    by_value = requests.get(
        url + API + "/leaderboard", params={**params, "metric": "bleu", "order": "value"}, timeout=30
    ).json()
    entries = by_value["groups"][0]["entries"]
    assert by_value["order"] == "value"
    assert [e["rank"] for e in entries] == sorted(rank([v for v, _, _, _ in ATTACKS]))
    assert [e["value"] for e in entries] == sorted((v for v, _, _, _ in ATTACKS), reverse=True)
    # the pages: one verified badge, the two openai records unpinned, the by-value view in value order
    html = requests.get(url + "/leaderboard", params={**params, "metric": "bleu"}, timeout=30).text
    assert html.count('class="badge verified tier-0"') == 1
    assert html.count('class="badge unpinned"') == 2
    assert html.index("atk5") < html.index("atk2") < html.index("atk0")
    html = requests.get(url + "/leaderboard", params={**params, "metric": "bleu", "order": "value"}, timeout=30).text
    assert html.index("atk2") < html.index("atk3") < html.index("atk0") < html.index("atk5")
    html = requests.get(url + "/leaderboard", params=params, timeout=30).text
    assert html.count('class="badge verified tier-0"') == 1 and html.count('class="badge unpinned"') == 2
    record_page = requests.get(url + f"/records/{ids[5]}", timeout=30).text
    assert 'id="tier-badge"' in record_page and ">verified<" in record_page


def test_standing_follows_the_majority_and_never_one_stranger_alone():
    from cotk_repro.core.ranking import standing

    k1, k2 = 1, 2
    assert standing(None, 0, 0, k1) == "unverified"
    assert standing(None, 1, 0, k1) == standing(True, 0, 0, k2) == "verified"  # K strangers, or the pool alone
    assert standing(None, 1, 0, k2) == "unverified" and standing(None, 2, 0, k2) == "verified"
    assert standing(None, 0, 1, k2) == "unverified"  # one stranger's "differs" alone lowers nothing
    assert standing(True, 0, 1, k2) == "verified"  # nor removes the pool's mark
    assert standing(True, 0, 2, k2) == "disputed"
    assert standing(None, 2, 1, k2) == "disputed"  # K agree, one liar: no majority of K+1 yet
    assert standing(None, 3, 1, k2) == "verified"  # the liar outvoted
    assert standing(None, 1, 3, k2) == standing(None, 0, 3, k2) == "refuted"
    for pool in (None, True, False):  # the tier follows: disputed and refuted rank with the rest
        for agree in range(4):
            for differ in range(4):
                state = standing(pool, agree, differ, k2)
                t = tier(signed=True, dirty=False, standing=state)
                assert t == {"verified": 0, "unverified": 1}.get(state, 2)
                assert tier(signed=True, dirty=False, pinned=False, standing=state) == 2


def test_pinned_is_the_worse_of_the_claim_and_the_description():
    from cotk_repro.core.ranking import system_pinned

    assert system_pinned(None) and system_pinned({"generator": "hf", "pinned": True})
    assert not system_pinned({"generator": "openai", "pinned": True})
    assert not system_pinned({"generator": "hf", "pinned": False})
    assert not system_pinned(None, ["bleu|n=4|system:openai@0123456789ab"])
    assert system_pinned(None, ["bleu|n=4|system:hf@0123456789ab", None])
    assert not system_pinned({"generator": "hf"}, [], [True, False])
