"""The dashboard fits and tells the truth at a glance, in a real browser (Playwright + Debian's chromium).

Nine metrics with long signatures on one task: at 1024 and 1600 px the page itself never scrolls sideways
(tables scroll inside their own box), the record page shows the exact `cotk-repro reproduce` command for
this dashboard's address, the signer, a dirty-tree marker, and human times with the ISO time on hover;
`/leaderboard` without parameters lists the tasks and datasets; a dirty-tree record with the better scores
ranks below the clean, signed one, marked. Screenshots go to the test artifacts.
"""

from __future__ import annotations

import pytest
import requests
from dashboard_support import fake_hash, make_record
from test_dashboard_browser import browser  # noqa: F401 - the shared chromium fixture

from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.server import start_in_thread

pytestmark = [pytest.mark.browser, pytest.mark.slow]
METRICS = [
    "bleu",
    "self-bleu",
    "distinct-1",
    "distinct-2",
    "ngram-entropy-1",
    "ngram-entropy-2",
    "meteor",
    "chrf",
    "ter",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from signing_support import make_key

    from cotk_repro.core.signing import key_from_path, sign_record
    from cotk_repro.dashboard.identity import add_key

    db_url = f"sqlite:///{tmp_path_factory.mktemp('fit') / 'dash.sqlite3'}"
    db = open_database(db_url)
    token = add_user(db, "alice")[0]
    key = make_key(tmp_path_factory.mktemp("fit-keys"))
    add_key(db, "alice", key.with_suffix(".pub").read_text())
    db.dispose()
    url, stop = start_in_thread(db_url, allow_unsigned=True)
    records = []
    for i, dirty in enumerate((False, True)):
        rec = make_record(
            {m: (0.1 + 0.01 * i + 0.001 * j, fake_hash(m)) for j, m in enumerate(METRICS)},
            name=f"a-rather-long-project-name-number-{i}",
            task="language-generation",
            dataset="mscoco-captions-2014",
        )
        if dirty:
            from cotk_repro.records.store import compute_id

            rec["code"]["dirty"] = True
            rec["id"] = compute_id(rec)
        # the clean record is signed; the dirty one (better on every higher-is-better metric) is not
        body = rec if dirty else {"record": rec, "signature": sign_record(rec, key_from_path(key, "test"))}
        r = requests.post(url + "/api/v1/records", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert r.status_code == 201, r.text
        records.append(rec)
    yield url, records
    stop()


def _no_page_overflow(page) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px"


@pytest.mark.parametrize("width", [1024, 1600])
def test_wide_tables_scroll_inside_their_box_and_the_record_page_says_how_to_reproduce(
    site, browser, width, artifacts_dir
):
    url, records = site
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{url}/leaderboard?task=language-generation&dataset=mscoco-captions-2014")
        assert page.locator("th.metric").count() == len(METRICS)
        _no_page_overflow(page)
        page.screenshot(path=str(artifacts_dir / f"dashboard-task-table-{width}.png"), full_page=True)
        last = page.locator("th.metric").last
        box = page.locator("div.scroll").first
        # every column is reachable: scrolling the table's own box brings the last metric into view
        box.evaluate("el => el.scrollLeft = el.scrollWidth")
        assert last.is_visible()

        clean, dirty = records
        page.goto(f"{url}/records/{dirty['id']}")
        _no_page_overflow(page)
        command = page.locator("#reproduce-command").inner_text()
        assert command == f"cotk-repro reproduce {url}/records/{dirty['id']}"
        assert page.locator("#dirty-badge").is_visible()
        t = page.locator("time").first
        assert t.get_attribute("title") == t.get_attribute("datetime") and "UTC" in t.inner_text()
        page.screenshot(path=str(artifacts_dir / f"dashboard-record-{width}.png"), full_page=True)
        page.goto(f"{url}/records/{clean['id']}")
        assert page.locator("#dirty-badge").count() == 0
    finally:
        context.close()


def test_leaderboard_without_parameters_lists_tasks_and_datasets(site):
    url, _ = site
    html = requests.get(f"{url}/leaderboard", timeout=10).text
    assert "(no task)" not in html
    assert "language-generation" in html and "mscoco-captions-2014" in html


def test_reproduce_command_uses_the_requests_own_address_not_a_cached_one(site):
    url, records = site
    rid = records[0]["id"]
    port = url.rsplit(":", 1)[1]
    first = requests.get(f"http://localhost:{port}/records/{rid}", timeout=10).text
    second = requests.get(
        f"http://127.0.0.1:{port}/records/{rid}", headers={"Host": 'evil.example"><x'}, timeout=10
    ).text
    third = requests.get(f"http://127.0.0.1:{port}/records/{rid}", timeout=10).text
    assert f"cotk-repro reproduce http://localhost:{port}/records/{rid}" in first
    assert 'evil.example"><x' not in second  # a hostile Host header is never markup (and stays in its response)
    assert f"cotk-repro reproduce http://127.0.0.1:{port}/records/{rid}" in third and "evil" not in third


def test_a_dirty_record_with_the_better_score_ranks_below_the_clean_signed_one(site, browser):
    url, records = site
    clean, dirty = records
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{url}/leaderboard?task=language-generation&dataset=mscoco-captions-2014&sort=bleu")
        rows = page.locator("table.results-table tbody tr")
        assert [rows.nth(i).get_attribute("data-record") for i in range(rows.count())] == [clean["id"], dirty["id"]]
        first, second = rows.nth(0), rows.nth(1)
        assert first.locator('td.cell[data-metric="bleu"]').get_attribute("data-rank") == "1"
        assert second.locator('td.cell[data-metric="bleu"]').get_attribute("data-rank") == "2"
        assert second.locator(".badge.dirty").is_visible() and first.locator(".badge.dirty").count() == 0
        assert dirty["results"]["bleu"]["value"] > clean["results"]["bleu"]["value"]  # the better score, below

        page.goto(f"{url}/leaderboard?task=language-generation&dataset=mscoco-captions-2014&metric=bleu")
        entries = page.locator("tr.entry")
        assert [entries.nth(i).get_attribute("data-record") for i in range(entries.count())] == [
            clean["id"],
            dirty["id"],
        ]
        assert entries.nth(1).locator(".badge.dirty").is_visible()
        assert [entries.nth(i).locator("td.num").first.inner_text() for i in range(2)] == ["1", "2"]
    finally:
        context.close()
