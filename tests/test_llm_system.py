"""The system's identity and the *unpinned* tier (issue 41): :mod:`cotk_repro.llm.system` stamps a metric's result
with the system that made the outputs; a system served by an endpoint (its model id pins no weights) marks its
results unpinned, and the marker travels through ``save_result``, a real ``cotk-repro run``, the record (covered
by its id), a real dashboard upload and ``compare``'s reports, where such a result never ranks above a pinned one.

Whether a record *should* carry the marker cannot be checked by any reader (an endpoint's outputs look like any
other); what is tested is that the marker cannot be edited out of a record unseen and that it only ever lowers a
rank."""

from __future__ import annotations

import copy
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
import requests
from dashboard_support import fake_hash, make_record
from signing_support import make_key

from cotk_repro.core.canonical import hash_object
from cotk_repro.core.results import normalize_results, parse_result_dict, save_result
from cotk_repro.errors import RecordError, RunError
from cotk_repro.llm.system import describe_system, stamp_system, system_tag
from cotk_repro.plugins import reset_plugins
from cotk_repro.records import finalize, validate_record

H = fake_hash("llm-system-refs")
ENDPOINT = {
    "generator": "openai",
    "version": "1",
    "settings": {"base_url": "http://127.0.0.1:8000/v1", "model": "tiny", "max_new_tokens": 8, "stop": []},
    "pinned": False,
}
LOCAL = {
    "generator": "hf",
    "version": "1",
    "settings": {"model": "tiny", "weights_sha256": "ab" * 32, "tokenizer_sha256": "cd" * 32, "max_new_tokens": 8},
    "pinned": True,
}
RESULT = {"bleu": 0.25, "bleu hashvalue": H, "bleu signature": "bleu|v:1|n:4", "bleu per-sentence": [0.1, 0.4]}


class _Endpoint:
    name, version, pinned, batch_size = "openai", "1", False, 4
    settings = ENDPOINT["settings"]


class _Plain:  # a plain callable generator: name and settings come from its registration
    def __call__(self, text):
        return text


def test_describe_system_names_the_generator_its_settings_and_whether_it_is_pinned():
    assert describe_system(_Endpoint(), "openai") == ENDPOINT
    plain = describe_system(_Plain(), "reverse-fn", settings={"sep": " ", "odd": object()})
    assert plain["generator"] == "reverse-fn" and plain["pinned"] is True and plain["version"] == ""
    assert plain["settings"]["sep"] == repr(" ")  # not JSON: every value as its repr, the way the cache keys them
    hash_object(plain)  # JSON as it stands


def test_stamp_system_signs_the_system_keeps_the_hash_and_marks_an_unpinned_one():
    stamped = stamp_system(RESULT, ENDPOINT)
    tag = "system:openai@" + hash_object(ENDPOINT["settings"])[:12]
    assert system_tag(ENDPOINT) == tag
    assert stamped["bleu signature"] == "bleu|v:1|n:4|" + tag
    assert stamped["bleu hashvalue"] == H  # the systems are what is compared: one hash for both
    assert stamped["bleu pinned"] is False and "bleu per-sentence pinned" not in stamped  # values only
    assert stamp_system(stamped, ENDPOINT) == stamped  # once
    assert RESULT["bleu signature"] == "bleu|v:1|n:4"  # the input is left alone
    local = stamp_system(RESULT, LOCAL)
    assert not any(k.endswith(" pinned") for k in local)
    assert local["bleu signature"].endswith("|system:hf@" + hash_object(LOCAL["settings"])[:12])
    # another weights digest: another system in the signature
    other = stamp_system(RESULT, {**LOCAL, "settings": {**LOCAL["settings"], "weights_sha256": "ef" * 32}})
    assert other["bleu signature"] != local["bleu signature"]
    assert parse_result_dict(stamped, skip_extras=True)["bleu"]["pinned"] is False
    assert "pinned" not in parse_result_dict(local, skip_extras=True)["bleu"]
    with pytest.raises(RunError, match="'pinned' must be true or false"):
        stamp_system(RESULT, {**ENDPOINT, "pinned": "no"})
    with pytest.raises(RunError, match="'pinned' of 'bleu' must be true or false"):
        parse_result_dict({"bleu": 0.2, "bleu pinned": "false"})


def test_save_result_writes_the_system_and_marks_every_result_of_an_unpinned_one(tmp_path):
    class Proto:
        sha256 = "12" * 32

    scored = {k: v for k, v in RESULT.items() if "per-sentence" not in k}  # save_result takes numbers only
    path = save_result(
        [stamp_system(scored, ENDPOINT), {"distinct-1": 0.5}], tmp_path / "r.json", system=ENDPOINT, protocol=Proto()
    )
    doc = json.loads(path.read_text())
    assert doc["system"] == ENDPOINT and doc["protocol"] == {"sha256": "12" * 32}
    # the stamped metric and the one computed beside it: both made from the endpoint's outputs
    assert doc["results"]["bleu"]["pinned"] is False and doc["results"]["distinct-1"]["pinned"] is False
    assert normalize_results(doc)["results"] == doc["results"]
    # a rich file whose system is unpinned: every result unpinned, even one that does not say so
    del doc["results"]["distinct-1"]["pinned"]
    assert normalize_results(doc)["results"]["distinct-1"]["pinned"] is False
    # a pinned system writes no marker (absent means pinned; a pinned record's bytes are as before)
    doc = json.loads(save_result(stamp_system(scored, LOCAL), tmp_path / "p.json", system=LOCAL).read_text())
    assert "pinned" not in doc["results"]["bleu"] and doc["system"]["pinned"] is True
    for bad, words in (({**ENDPOINT, "pinned": 0}, "'pinned' must be true or false"), ([1], "must be an object")):
        with pytest.raises(RunError, match=words):
            normalize_results({**doc, "system": bad}, "r.json")


ENTRY = textwrap.dedent(
    """
    from cotk_repro import save_result
    from cotk_repro.llm.system import stamp_system
    SYSTEM = {system!r}
    save_result(stamp_system({{"bleu": 0.9, "bleu hashvalue": "{h}", "bleu signature": "bleu|v:1"}}, SYSTEM),
                "result.json", system=SYSTEM)
    """
)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    from cotk_repro.core.signing import key_from_path
    from cotk_repro.dashboard.auth import add_user
    from cotk_repro.dashboard.db import open_database
    from cotk_repro.dashboard.identity import add_key
    from cotk_repro.dashboard.server import start_in_thread

    folder = tmp_path_factory.mktemp("llm-system-dash")
    db_url = f"sqlite:///{folder / 'dash.sqlite3'}"
    url, stop = start_in_thread(db_url, allow_unsigned=True)
    key = make_key(folder / "keys")
    db = open_database(db_url)
    token = add_user(db, "ulla")[0]
    add_key(db, "ulla", key.with_suffix(".pub").read_text())
    db.dispose()
    yield url, token, key_from_path(key, "test")
    stop()


def _post(dashboard, record, *, signed=True):
    from cotk_repro.core.signing import sign_record

    url, token, key = dashboard
    body = {"record": record, "signature": sign_record(record, key)} if signed else record
    return requests.post(url + "/api/v1/records", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _board(dashboard, task):
    r = requests.get(
        dashboard[0] + "/api/v1/leaderboard", params={"task": task, "dataset": "d", "metric": "bleu"}, timeout=30
    )
    assert r.status_code == 200, r.text
    return r.json()["groups"][0]["entries"]


def test_the_marker_survives_run_the_record_and_the_upload_and_ranks_below_a_pinned_result(
    make_project, cli, dashboard
):
    config = '[project]\nname = "endpoint-eval"\ntask = "llm"\ndataset = "d"\n'
    root = make_project({"main.py": ENTRY.format(system=ENDPOINT, h=H), "cotk-repro.toml": config})
    res = cli("run", cwd=root)
    assert res.returncode == 0, res
    [folder] = (root / ".cotk-repro" / "runs").iterdir()
    record = json.loads((folder / "record.json").read_text())
    assert record["system"] == ENDPOINT
    assert record["results"]["bleu"]["pinned"] is False
    assert record["results"]["bleu"]["signature"] == "bleu|v:1|" + system_tag(ENDPOINT)
    validate_record(copy.deepcopy(record))

    # a stranger edits the marker out (claiming the better tier): the id no longer matches, refused everywhere
    forged = copy.deepcopy(record)
    del forged["results"]["bleu"]["pinned"], forged["system"]
    with pytest.raises(RecordError, match="does not match its content"):
        validate_record(forged)
    r = _post(dashboard, forged, signed=False)
    assert r.status_code == 422 and "does not match its content" in r.json()["detail"], r.text
    # ...and given a fresh id it is another record, which the author's signature does not cover
    from cotk_repro.core.signing import sign_record

    refreshed = finalize({k: v for k, v in forged.items() if k != "id"})
    r = requests.post(
        dashboard[0] + "/api/v1/records",
        json={"record": refreshed, "signature": sign_record(record, dashboard[2])},
        headers={"Authorization": f"Bearer {dashboard[1]}"},
        timeout=30,
    )
    assert r.status_code == 422 and "does not match the signed content" in r.json()["detail"], r.text

    # a malformed marker is refused in one sentence
    bad = copy.deepcopy(record)
    bad["results"]["bleu"]["pinned"] = "false"
    r = _post(dashboard, finalize({k: v for k, v in bad.items() if k != "id"}), signed=False)
    assert r.status_code == 422 and "results.bleu.pinned" in r.json()["detail"], r.text

    # the run's record, signed, and a pinned record with a far worse value, same comparability hash
    pinned = make_record({"bleu": (0.1, H)}, name="local-eval", task="llm", dataset="d")
    assert _post(dashboard, record).status_code == 201
    assert _post(dashboard, pinned).status_code == 201
    entries = _board(dashboard, "llm")
    # tiers since issue 47: 1 signed, clean and pinned (not verified by a reproduction), 2 the rest
    assert [(e["id"], e["rank"], e["tier"], e["pinned"], e["signed"]) for e in entries] == [
        (pinned["id"], 1, 1, True, True),
        (record["id"], 2, 2, False, True),
    ]
    page = requests.get(
        dashboard[0] + "/leaderboard", params={"task": "llm", "dataset": "d", "metric": "bleu"}, timeout=30
    ).text
    assert page.count('class="badge unpinned"') == 1
    page = requests.get(dashboard[0] + "/records/" + record["id"], timeout=30).text
    assert 'class="badge unpinned"' in page


def test_signing_an_unpinned_record_later_does_not_promote_it(dashboard):
    """An unsigned upload is tier 2; its signed upload moves its pinned results to tier 1, never an unpinned one."""
    rec = make_record({"bleu": (0.8, H), "distinct-1": (0.9, None)}, name="later", task="later", dataset="d")
    rec["results"]["bleu"]["pinned"] = False
    rec = finalize({k: v for k, v in rec.items() if k != "id"})
    worse = make_record({"bleu": (0.2, H)}, name="later-pinned", task="later", dataset="d")
    assert _post(dashboard, rec, signed=False).status_code == 201
    assert _post(dashboard, worse, signed=False).status_code == 201
    assert [e["tier"] for e in _board(dashboard, "later")] == [2, 2]
    assert _post(dashboard, rec).status_code in (200, 201)
    assert _post(dashboard, worse).status_code in (200, 201)
    entries = _board(dashboard, "later")
    assert [(e["id"], e["tier"], e["signed"], e["pinned"]) for e in entries] == [
        (worse["id"], 1, True, True),
        (rec["id"], 2, True, False),
    ]


def test_a_record_cannot_claim_a_better_tier_than_its_worse_marker(dashboard):
    """``"pinned": true`` on a result whose record's system says ``false``: the worse claim wins, everywhere."""
    from cotk_repro.records.view import RecordView

    rec = make_record({"bleu": (0.7, H)}, name="claims", task="claims", dataset="d")
    rec["results"]["bleu"]["pinned"] = True
    rec["system"] = ENDPOINT
    rec = finalize({k: v for k, v in rec.items() if k != "id"})
    assert RecordView.of(rec).pinned("bleu") is False
    assert _post(dashboard, rec).status_code == 201
    [entry] = _board(dashboard, "claims")
    assert (entry["signed"], entry["pinned"], entry["tier"]) == (True, False, 2)  # the last of three tiers


# -- compare: a generator that is not pinned ---------------------------------------------------------------------

PLUGIN = '''
from cotk_repro.hookspecs import hookimpl
from cotk_repro.core.canonical import hash_object


class Length:
    """Mean output length in words (higher is better), one hash for every system."""

    name, version, settings = "toy-words", "1", {}

    def compute(self, hypotheses, references=None):
        return {"toy-words": sum(len(h.split()) for h in hypotheses) / len(hypotheses),
                "toy-words hashvalue": hash_object("toy-words"), "toy-words signature": "toy-words|v:1"}


class Echo:
    """A local system: each input as it is."""

    name, version, batch_size = "echo", "1", 8

    def __init__(self, times=1):
        self.settings = {"times": times}
        self.times = times

    def generate(self, inputs):
        return [" ".join([x] * self.times) for x in inputs]


class Endpoint(Echo):
    """A stand-in for a model served by an endpoint: what stands behind its model id can change."""

    name, pinned = "toy-endpoint", False


@hookimpl
def register_metrics(register):
    register("toy-words", Length)


@hookimpl
def register_generators(register):
    register("echo", Echo)
    register("toy-endpoint", Endpoint)
'''

CONFIG = """
[report]
out = "reports"
title = "pinned"
charts = false

[[dataset]]
name = "news"
path = "data/news"

[[metric]]
name = "toy-words"
references = "none"

[[system]]
name = "local"
generator = "echo"

[[system]]
name = "endpoint"
generator = "toy-endpoint"
settings = {{ times = 3 }}

[[system]]
name = "local-twice"
generator = "echo"
settings = {{ times = 2 }}
"""


@pytest.fixture
def toy_site(tmp_path):
    import importlib

    site = tmp_path / "site"
    site.mkdir()
    (site / "cotk_pinned_toy.py").write_text(PLUGIN, encoding="utf-8")
    dist = site / "cotk_pinned_toy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cotk-pinned-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cotk_repro]\ncotk_pinned_toy = cotk_pinned_toy\n")
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    reset_plugins()
    yield site
    sys.path.remove(str(site))
    sys.modules.pop("cotk_pinned_toy", None)
    reset_plugins()


def _project(root: Path) -> Path:
    (root / "data" / "news" / "gold").mkdir(parents=True)
    (root / "data" / "news" / "inputs.txt").write_text("a b\nc d e\nf\n")
    (root / "data" / "news" / "gold" / "refs.txt").write_text("x\ny\nz\n")
    (root / "bench.toml").write_text(CONFIG.format())
    return root / "bench.toml"


def test_compare_ranks_an_endpoint_below_every_pinned_system_and_flags_it(tmp_path, toy_site, cli):
    from cotk_repro.compare import evaluate_config, load_config
    from cotk_repro.compare.report import write_report

    cfg = load_config(_project(tmp_path))
    result = evaluate_config(cfg, jobs=1)
    assert not result.failures, result.failures
    assert result.unpinned == {("endpoint", "news")}
    write_report(result, charts=False, html=True)
    out = tmp_path / "reports"
    cells = {c["system"]: c for c in json.loads((out / "results.json").read_text())["cells"]}
    # mean words: local 2, local-twice 4, endpoint 6 (the best value), all one hash (group A)
    assert {s: (c["value"], c["group"]) for s, c in cells.items()} == {
        "local": (2.0, "A"),
        "local-twice": (4.0, "A"),
        "endpoint": (6.0, "A"),
    }
    assert {s: c["rank"] for s, c in cells.items()} == {"local-twice": 1, "local": 2, "endpoint": 3}
    assert cells["endpoint"]["pinned"] is False and cells["endpoint"]["flag"].startswith("unpinned")
    assert "pinned" not in cells["local"] and cells["local"]["flag"] is None
    systems = {s["name"]: s["pinned"] for s in json.loads((out / "results.json").read_text())["systems"]}
    assert systems == {"local": True, "endpoint": False, "local-twice": True}
    html = (out / "report.html").read_text()
    assert html.count('<span class="unpinned" title=') == 2  # its cell in the corpus table and the metric table
    tex = (out / "report.tex").read_text()
    assert r"6.0000$^{\ddagger}$" in tex and r"\textbf{4.0000}" in tex and "unpinned" in tex
    csv_flag = [line for line in (out / "results.csv").read_text().splitlines() if line.startswith("endpoint,")]
    assert "unpinned" in csv_flag[0]
    # the cache metadata says it, so a rerun from the cache ranks it the same
    again = evaluate_config(load_config(tmp_path / "bench.toml"), jobs=1)
    assert set(again.generated.values()) == {"cache"} and again.unpinned == {("endpoint", "news")}
    # the command's own table
    path = os.pathsep.join([str(toy_site), os.environ.get("PYTHONPATH", "")])
    res = cli("compare", str(tmp_path / "bench.toml"), env={"PYTHONPATH": path})
    assert res.returncode == 0, res
    assert "6.0000 #3 (unpinned)" in res.stdout and "endpoint / news / toy-words: unpinned" in res.stdout
