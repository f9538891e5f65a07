"""The option tables in docs/*.md say exactly the options each command's ``--help`` shows (scripts/docs_options.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "docs_options.py"


def _module():
    spec = importlib.util.spec_from_file_location("docs_options", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


docs_options = _module()
Command, Option = docs_options.Command, docs_options.Option


def _needs_every_plugin() -> None:
    """The docs document every first-party plugin's commands: without one installed its tables cannot match."""
    import importlib.util

    from cotk_repro.first_party import PLUGINS

    absent = [d for d in PLUGINS if importlib.util.find_spec(d.replace("-", "_")) is None]
    if absent:
        pytest.skip(f"the docs document the plugins {', '.join(absent)}, which are not installed")


def test_the_docs_option_tables_match_the_commands():
    """`scripts/docs_options.py --check` on the real docs and the real commands (built-ins and first-party plugins)."""
    _needs_every_plugin()
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300
    )
    assert proc.returncode == 0, f"{proc.stdout[-6000:]}\n{proc.stderr[-3000:]}"


HELP_CODE = """
import contextlib, io, sys
from cotk_repro.cli import main
for path in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main([*path.split(), "--help"] if path != "cotk-repro" else ["--help"])
        except SystemExit:
            pass
    print("=== " + path)
    print(out.getvalue())
"""


def _help_options(text: str) -> set[str]:
    """Option names in the rows of a rendered ``--help`` (the names column, not mentions inside help text)."""
    names = set()
    for line in text.splitlines():
        row = line.lstrip()
        if not row.startswith("│"):
            continue
        cell = row[1:]
        lead = len(cell) - len(cell.lstrip(" *"))
        if lead > 4 or not cell.lstrip(" *").startswith("-"):
            continue  # a wrapped line of help text, or an argument
        for token in cell.lstrip(" *").split():
            if not token.startswith("-"):
                break
            names.add(token)
    return names - {"--help", "-h"}


def test_each_table_names_what_the_rendered_help_shows():
    """Independent of the script's introspection: the names in each docs table against those `--help` prints."""
    _needs_every_plugin()
    tables: dict[str, set[str]] = {}
    for path in sorted((REPO_ROOT / "docs").glob("*.md")):
        for m in docs_options.BLOCK.finditer(path.read_text(encoding="utf-8")):
            rows = [ln for ln in m["body"].splitlines()[2:] if ln.startswith("|")]
            tables[m["name"]] = {n for ln in rows for n in docs_options.names_in(docs_options._split_row(ln)[0])}
    assert {"evaluate", "reproduce", "compare", "dashboard serve", "run", "cotk-repro"} <= set(tables)
    env = {**os.environ, "COLUMNS": "250", "COTK_REPRO_HELP_CACHE": "0", "NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", HELP_CODE, *tables], capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    helps = dict(re.findall(r"^=== ([^\n]+)\n(.*?)(?=^=== |\Z)", proc.stdout, re.MULTILINE | re.DOTALL))
    differ = {
        name: {
            "only in docs": sorted(names - _help_options(helps[name])),
            "only in --help": sorted(_help_options(helps[name]) - names),
        }
        for name, names in tables.items()
        if names != _help_options(helps[name])
    }
    assert not differ, differ
    assert _help_options(helps["reproduce"]) >= {"--allow-project-image", "--no-project-image", "--json"}


# -- the generator on a docs folder of its own ------------------------------------------------------------

COMMANDS = {
    "evaluate": Command(
        "evaluate",
        [
            Option(["--hyps"], "FILE", "Hypotheses, one per line.", None),
            Option(["--metric", "-m"], "METRIC", "A metric (repeatable).", "`bleu`"),
            Option(["--json"], None, "Print JSON.", None),
            Option(["--secret"], None, "Not shown.", None, hidden=True),
        ],
    ),
    "serve": Command("serve", [Option(["--access-log", "--no-access-log"], None, "Log every request.", "on")]),
}

PAGE = """# Evaluate

<!-- options: evaluate -->
| option | meaning |
|---|---|
| `--hyps FILE` | the generated sentences, **hand-written** |
| `--metric NAME` | a metric |
| `--gone N` | an option the command no longer takes |
<!-- /options -->

text after the table
"""


def _run(tmp_path, write: bool, capsys) -> tuple[int, str, str]:
    rc = docs_options.run(write=write, docs=tmp_path, commands=COMMANDS)
    out, err = capsys.readouterr()
    return rc, out, err


def test_check_finds_drift_and_write_repairs_it_keeping_the_hand_written_text(tmp_path, capsys):
    page = tmp_path / "evaluate.md"
    page.write_text(PAGE, encoding="utf-8")
    rc, out, err = _run(tmp_path, False, capsys)
    assert rc == 1 and "--write" in err
    assert "-| `--gone N` |" in out and "+| `--json` | Print JSON. |" in out
    assert page.read_text(encoding="utf-8") == PAGE  # --check writes nothing
    assert not (tmp_path / "cli.md").exists()

    assert _run(tmp_path, True, capsys)[0] == 0
    text = page.read_text(encoding="utf-8")
    assert "| `--hyps FILE` | the generated sentences, **hand-written** |" in text  # kept as written
    assert "| `--metric NAME`, `-m` | a metric |" in text  # the alias it lacked
    assert "--gone" not in text and "--secret" not in text  # gone; hidden from --help
    assert "| `--json` | Print JSON. |" in text and text.endswith("<!-- /options -->\n\ntext after the table\n")
    reference = (tmp_path / "cli.md").read_text(encoding="utf-8")  # a command no page had a table for
    assert "## `cotk-repro serve`" in reference
    assert "| `--access-log / --no-access-log` | Log every request. Default: on. |" in reference
    assert _run(tmp_path, False, capsys)[0] == 0  # and now nothing differs


def test_a_row_naming_a_gone_option_beside_a_real_one_is_rewritten_from_the_real_one(tmp_path, capsys):
    (tmp_path / "a.md").write_text(PAGE.replace("`--metric NAME`", "`--metric NAME`, `--metrics-old`"), "utf-8")
    _run(tmp_path, True, capsys)
    assert "| `--metric METRIC`, `-m` | a metric |" in (tmp_path / "a.md").read_text(encoding="utf-8")


def test_a_block_naming_no_command_is_an_error(tmp_path, capsys):
    (tmp_path / "a.md").write_text(PAGE.replace("options: evaluate", "options: evalute"), encoding="utf-8")
    rc, _, err = _run(tmp_path, True, capsys)
    assert rc == 1 and "<!-- options: evalute --> names no command with options" in err
    assert "(known: evaluate, serve)" in err


@pytest.mark.parametrize(
    "cell, names",
    [
        ("`--out DIR`, `-o DIR`", ["--out", "-o"]),
        ("`--runtime docker\\|venv\\|local`", ["--runtime"]),
        ("`--access-log / --no-access-log`", ["--access-log", "--no-access-log"]),
        ("`--rtol R`, `--atol A`", ["--rtol", "--atol"]),
        ("`--json [FILE]`", ["--json"]),
    ],
)
def test_names_in_a_first_cell(cell, names):
    assert docs_options.names_in(cell) == names
