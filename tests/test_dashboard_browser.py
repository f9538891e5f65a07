"""The dashboard's pages in a real browser: Playwright driving Debian's chromium against uvicorn on 127.0.0.1."""

from __future__ import annotations

import os
from urllib.parse import urlencode

import pytest
import requests
from dashboard_support import fake_hash, make_record, make_verdict

from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.server import start_in_thread

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.browser, pytest.mark.slow]

XSS_PROJECT = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
XSS_METRIC = "<script>window.__xss = 3</script>bleu"
XSS_TASK = '"><script>window.__xss = 4</script>'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    db_url = f"sqlite:///{tmp_path_factory.mktemp('browser') / 'dash.sqlite3'}"
    db = open_database(db_url)
    tokens = {u: add_user(db, u)[0] for u in ("alice", "bob", "carol")}
    db.dispose()
    url, stop = start_in_thread(db_url, allow_unsigned=True)
    a, b = fake_hash("coco-test-refs"), fake_hash("coco-test-refs-lowercased")
    recs = {
        "alpha-system": (
            make_record({"bleu": (0.31, a)}, name="alpha-system", task="language-generation", dataset="mscoco"),
            "alice",
        ),
        "beta-system": (
            make_record({"bleu": (0.27, a)}, name="beta-system", task="language-generation", dataset="mscoco"),
            "bob",
        ),
        "gamma-system": (
            make_record({"bleu": (0.52, b)}, name="gamma-system", task="language-generation", dataset="mscoco"),
            "carol",
        ),
        "delta-system": (
            make_record({"bleu": (0.60, None)}, name="delta-system", task="language-generation", dataset="mscoco"),
            "carol",
        ),
        # a metric no loaded plugin declares is kept in the record, never ranked: its name is on the record page
        "xss": (
            make_record(
                {XSS_METRIC: (0.5, a), "self-bleu": (0.5, a)},
                name=XSS_PROJECT,
                task=XSS_TASK,
                dataset="<b>bold</b>",
                remote_url="javascript:alert(1)",
            ),
            "carol",
        ),
    }
    for rec, user in recs.values():
        r = requests.post(
            url + "/api/v1/records", json=rec, headers={"Authorization": f"Bearer {tokens[user]}"}, timeout=10
        )
        assert r.status_code == 201, r.text
    alpha = recs["alpha-system"][0]
    r = requests.post(
        f"{url}/api/v1/records/{alpha['id']}/reproductions",
        json=make_verdict(alpha["id"], value=0.31, h=a),
        headers={"Authorization": f"Bearer {tokens['bob']}"},
        timeout=10,
    )
    assert r.status_code == 201
    yield url, {k: v[0] for k, v in recs.items()}
    stop()


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Debian's chromium is not installed at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    pg = context.new_page()
    dialogs = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.dialogs = dialogs
    yield pg
    context.close()


def test_leaderboard_ranks_comparable_results_and_keeps_others_apart(site, page, artifacts_dir):
    url, recs = site
    page.goto(url + "/")
    page.get_by_role("link", name="bleu", exact=True).click()
    page.wait_for_url("**/leaderboard?**")
    ranked = page.locator("section.ranked tr.entry td.project")
    assert ranked.all_inner_texts() == ["alpha-system", "beta-system"]  # 0.31 above 0.27, same hash
    apart = page.locator("section.not-comparable")
    assert apart.count() == 2
    assert "Not comparable with the above" in apart.nth(0).inner_text()
    assert apart.nth(0).locator("td.project").all_inner_texts() == ["gamma-system"]  # higher value, other hash
    assert apart.nth(1).locator("td.project").all_inner_texts() == ["delta-system"]
    assert "unverifiable" in apart.nth(1).inner_text()
    # the reproduced entry carries its badge on the leaderboard
    assert "reproduced by 1" in page.locator("section.ranked tr.entry").nth(0).inner_text()
    page.screenshot(path=str(artifacts_dir / "dashboard-leaderboard.png"), full_page=True)
    assert (artifacts_dir / "dashboard-leaderboard.png").stat().st_size > 10_000


def test_record_page_shows_code_environment_dockerfile_and_reproduction(site, page, artifacts_dir):
    url, recs = site
    alpha = recs["alpha-system"]
    page.goto(url + "/leaderboard?task=language-generation&dataset=mscoco&metric=bleu")
    page.locator("section.ranked tr.entry").nth(0).locator("a.hash").click()
    page.wait_for_url("**/records/**")
    assert page.locator("#reproduced-badge").inner_text() == "reproduced by 1"
    commit = alpha["code"]["commit"]
    link = page.locator("#code a").first
    assert link.get_attribute("href") == f"https://github.com/example/proj/commit/{commit}"
    assert alpha["environment"]["python"]["version"] in page.locator("#environment").inner_text()
    assert page.locator("#dockerfile").inner_text().strip() == alpha["environment"]["dockerfile"].strip()
    repro = page.locator("section.reproduction")
    assert repro.count() == 1 and "reproduced" in repro.inner_text() and "bob" in repro.inner_text()
    assert "0.31" in page.locator("#results").inner_text()
    page.screenshot(path=str(artifacts_dir / "dashboard-record.png"), full_page=True)
    # the bare hex and the URL-encoded id open the same page
    page.goto(url + "/records/" + alpha["id"].removeprefix("sha256:"))
    assert page.locator("#project-name").inner_text() == "alpha-system"
    page.goto(url + "/records/sha256%3A" + alpha["id"].removeprefix("sha256:"))
    assert page.locator("#project-name").inner_text() == "alpha-system"


def test_user_supplied_text_is_shown_as_text_never_run(site, page):
    url, recs = site
    rec = recs["xss"]
    page.goto(url + "/")
    assert XSS_TASK in page.locator("#catalogue").inner_text()
    assert page.get_by_role("link", name=XSS_METRIC, exact=True).count() == 0  # unknown metric: no leaderboard
    page.goto(url + "/leaderboard?" + urlencode({"task": XSS_TASK, "dataset": "<b>bold</b>", "metric": "self-bleu"}))
    assert page.locator("#metric-name").inner_text() == "self-bleu"
    assert page.locator("section.ranked td.project").inner_text() == XSS_PROJECT
    page.goto(url + "/records/" + rec["id"])
    assert page.locator("#project-name").inner_text() == XSS_PROJECT
    assert XSS_METRIC in page.locator("#results").inner_text()
    # a javascript: remote is shown, never linked
    assert page.locator("#code a").count() == 0
    page.goto(url + "/records?user=carol")
    assert XSS_PROJECT in page.content().replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.dialogs == []
    assert page.locator("script").count() == 0 and page.locator("img").count() == 0
