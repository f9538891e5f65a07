"""Every command in the docs runs as written: the documentation harness (tests/docs_harness.py) over README.md,
docs/*.md and plugins/*/README.md, one session per file, and proof that a doc which drifts fails it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, REPO_ROOT
from docs_harness import DocError, doc_files, output_matches, parse, run_doc

DOCS = doc_files()


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(REPO_ROOT)) for p in DOCS])
def test_docs_blocks_run_as_written(path):
    rel = str(path.relative_to(REPO_ROOT))
    report = run_doc(path.read_text(encoding="utf-8"), rel)
    assert not report.failures, "\n\n".join(str(f) for f in report.failures)


def test_docs_every_block_runs_or_says_why_not():
    """Parsing alone: every fence names its language, every marker is known, every skip has a reason."""
    counts = {"ran": 0, "skipped": 0}
    for path in DOCS:
        for step in parse(path.read_text(encoding="utf-8"), str(path)):
            if step.kind == "block" and step.lang in {"bash", "sh", "shell", "console", "python", "py", "pycon"}:
                counts["skipped" if "skip" in step.attrs else "ran"] += 1
    assert counts["ran"] >= 30, counts  # a floor: the docs' runnable blocks do not quietly turn into skips


# -- the harness itself: a drifted doc fails ------------------------------------------------------------------

MSCOCO = "tests/fixtures/cotk-small/mscoco"


def _hashes_doc(raw_hash: str, option: str = "--tokenizer nltk") -> str:
    return f"""# Hashes

```console
$ cotk-repro data hashes {MSCOCO} {option} --json | python -c 'import json,sys; print(json.load(sys.stdin)["hash_codes"]["raw"])'
{raw_hash}
```
"""


def _raw_hash() -> str:
    from cotk_repro import data

    return data.load("language-generation", FIXTURES / "cotk-small" / "mscoco").hash_codes["raw"]


def test_docs_harness_passes_a_true_doc_and_fails_a_changed_hash():
    raw = _raw_hash()
    assert not run_doc(_hashes_doc(raw), "true.md").failures
    drifted = raw[:-1] + ("0" if raw[-1] != "0" else "1")
    report = run_doc(_hashes_doc(drifted), "drifted.md")
    assert len(report.failures) == 1
    assert drifted in report.failures[0].what and raw in report.failures[0].what


def test_docs_harness_fails_a_removed_option():
    report = run_doc(_hashes_doc("...", option="--no-such-option"), "removed.md")
    assert len(report.failures) == 1
    assert "(expected 0)" in report.failures[0].what and "No such option: --no-such-option" in report.failures[0].what


def test_docs_harness_fails_the_shipped_data_doc_with_one_hash_changed():
    text = (REPO_ROOT / "docs" / "data.md").read_text(encoding="utf-8")
    setting = re.search(r"│ setting +│ ([0-9a-f]{64}) │", text)
    assert setting, "docs/data.md shows the mscoco fixture's hashes"
    block = text[text.index("```console\n$ cotk-repro data hashes tests/fixtures") :]
    block = block[: block.index("```\n", 4) + 4]
    assert not run_doc(block, "data.md").failures
    changed = block.replace(setting.group(1), "0" * 64)
    report = run_doc(changed, "data.md")
    assert report.failures and "0" * 64 in report.failures[0].what


def test_docs_harness_checks_exit_status_and_error_lines():
    doc = """```console
$ cotk-repro evaluate --hyps missing.txt --refs missing.txt -m bleu
Error: ...
$ cotk-repro --version
cotk-repro ...
```
<!-- docs: exit=3 -->
```bash
false || exit 3
```
"""
    assert not run_doc(doc, "exit.md").failures
    # an error the doc does not show is a failure, and so is an exit status other than the marked one
    report = run_doc(doc.replace("Error: ...\n", "").replace("exit=3", "exit=4"), "exit.md")
    assert len(report.failures) == 2, report.failures


def test_docs_harness_sessions_keep_state_in_order(tmp_path):
    doc = """<!-- docs: setup
mkdir sub && echo hidden > sub/seen.txt
-->
```bash
cd sub && export GREETING=hello
```
```console
$ cat seen.txt; echo $GREETING
hidden
hello
```
```python
answer = 6 * 7
```
```python
>>> answer
42
```
<!-- docs: file=conf.toml -->
```toml
x = 1
```
```bash
grep -q 'x = 1' conf.toml
```
"""
    report = run_doc(doc, "state.md")
    assert not report.failures, report.failures
    assert len(report.ran) == 5


def test_docs_harness_refuses_unreadable_markup():
    with pytest.raises(DocError, match="names its language"):
        parse("```\nls\n```\n")
    with pytest.raises(DocError, match="says why"):
        parse("<!-- docs: skip -->\n```bash\nls\n```\n")
    with pytest.raises(DocError, match="unknown docs marker"):
        parse("<!-- docs: skipp reason=x -->\n```bash\nls\n```\n")
    skipped = run_doc('<!-- docs: skip reason="needs a GPU" -->\n```bash\nexit 1\n```\n', "skip.md")
    assert skipped.skipped == ["skip.md:2: needs a GPU"] and not skipped.failures


def test_docs_output_matching_wildcards():
    assert output_matches("a ... c\n...\nlast", "a b b c\nx\ny\nlast\n")
    assert output_matches("│ x │   1 │", "│ x │ 1 │")
    assert not output_matches("a\nb", "a\nb\nc")
    assert not output_matches("hash 1234", "hash 1235")


# -- docs/dashboard.md: "prints the URL on stdout (one line, so scripts can read it)" -----------------------------


@pytest.mark.slow
def test_docs_dashboard_serve_prints_only_the_url_on_stdout(tmp_path):
    """Access-log lines go to stderr, so `url=$(cotk-repro dashboard serve ... | head -1)` style scripts and
    anything that reads stdout see the URL alone, even after requests were served."""
    import urllib.request

    out = (tmp_path / "stdout").open("w+")
    err = (tmp_path / "stderr").open("w+")
    env = {**os.environ, "COTK_REPRO_DEBUG": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cotk_repro", "dashboard", "serve", "--db", f"sqlite:///{tmp_path}/d.sqlite3"]
        + ["--port", "0"],
        stdout=out,
        stderr=err,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "stdout").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
        url = (tmp_path / "stdout").read_text().strip()
        assert url.startswith("http://127.0.0.1:"), url
        for path in ("/", "/api/v1/records", "/nope"):
            try:
                urllib.request.urlopen(url.rstrip("/") + path, timeout=10).read()
            except urllib.error.HTTPError:
                pass
        time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert (tmp_path / "stdout").read_text().splitlines() == [url]
    assert "GET /api/v1/records" in (tmp_path / "stderr").read_text()  # the access log is on, on stderr
