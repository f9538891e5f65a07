"""cli/_speedups.py applies to the pinned Typer, and it is what keeps pydantic out of a command's start-up."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import REPO_ROOT

CODE = """
import sys
import cotk_repro.cli._speedups as sp
if sys.argv[1] == "off":
    sp.install = lambda: False
from cotk_repro.cli import main
try:
    main(["show", "latest"])   # a str argument: coerced by Typer before the command fails (no repository)
except SystemExit:
    pass
from typer import core
patched = getattr(core._TyperParameter.get_runtime_param, "_cotk_repro", False)
print(patched, "pydantic" in sys.modules)
"""


def run(mode: str, cwd) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", CODE, mode], capture_output=True, text=True, cwd=cwd)
    return tuple(proc.stdout.split())


def test_speedups_apply_to_the_pinned_typer_and_keep_pydantic_out(tmp_path):
    assert run("on", tmp_path) == ("True", "False")


def test_without_them_typer_imports_pydantic(tmp_path):
    """When this fails, Typer no longer needs the patch: delete cli/_speedups.py and this file."""
    assert run("off", tmp_path) == ("False", "True")


HELP_CODE = """
import io, sys, contextlib
from cotk_repro.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--help"])
    except SystemExit:
        pass
deferred = [m for m in ("rich.markdown", "rich.traceback") if m in sys.modules]
import typer.rich_utils as ru
import rich.markdown, rich.traceback
real = type(ru.Markdown("*x*")) is rich.markdown.Markdown
try:
    raise ValueError("boom")
except ValueError as exc:
    tb = ru.Traceback.from_exception(type(exc), exc, exc.__traceback__)
print("Commands" in out.getvalue(), deferred == [], real, isinstance(tb, rich.traceback.Traceback),
      rich.markdown.__name__ == "rich.markdown" and hasattr(rich.markdown, "Heading"))
"""


def test_help_renders_without_loading_rich_markdown_and_traceback(tmp_path):
    """`--help` skips two heavy rich modules Typer imports but does not use for it; both still work when needed."""
    proc = subprocess.run([sys.executable, "-c", HELP_CODE], capture_output=True, text=True, cwd=tmp_path)
    assert proc.stdout.split() == ["True"] * 5, proc.stdout + proc.stderr


def test_run_json_imports_neither_rich_nor_pydantic_nor_importlib_metadata_before_the_entry(make_project):
    """`run --json` prints JSON and plain messages: Rich is never imported; pydantic is not (the config file passed
    before, or there is none); importlib.metadata only after the entry started (the entry records the order)."""
    root = make_project({"main.py": "import json\njson.dump({'x': 1.0}, open('result.json', 'w'))\n"})
    code = (
        "import runpy, sys\nsys.argv = ['cotk-repro', 'run', '-q', '--json']\nimport subprocess\n"
        "real = subprocess.Popen.__init__\n"
        "def spy(self, *a, **k):\n"
        "    if 'main.py' in str(a[0]):\n"
        "        print('AT-ENTRY', sorted(m for m in ('rich', 'pydantic', 'importlib.metadata') if m in sys.modules),"
        " file=sys.stderr)\n"
        "    return real(self, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "try:\n    runpy.run_module('cotk_repro', run_name='__main__')\nfinally:\n"
        "    print('AT-END', sorted(m for m in ('rich', 'pydantic') if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0, proc.stderr
    lines = {
        line.split(" ", 1)[0]: line.split(" ", 1)[1]
        for line in proc.stderr.splitlines()
        if line.startswith(("AT-ENTRY", "AT-END"))
    }
    assert lines == {"AT-ENTRY": "[]", "AT-END": "[]"}, proc.stderr


BUDGET_SITES = {  # file: how it states the `cotk-repro run` overhead budget
    "benchmarks/run_overhead.py": r"^TARGET_S = ([0-9.]+)$",
    "docs/core.md": r"target: at most ([0-9.]+) s more",
    "README.md": r"target ≤ ([0-9.]+) s overhead",
    "cotk_repro/cli/_speedups.py": r"overhead budget \(([0-9.]+) s",
    "tests/test_plugins.py": r"must cost <= ([0-9.]+) s more",
}


def test_the_start_up_budget_is_the_same_everywhere():
    """One budget for `run`'s start-up: the benchmark's TARGET_S, and every text that states it."""
    found = {}
    for path, pattern in BUDGET_SITES.items():
        figures = re.findall(pattern, (REPO_ROOT / path).read_text(encoding="utf-8"), re.MULTILINE)
        assert figures, f"{path} no longer states the budget as {pattern!r}"
        found[path] = {float(f) for f in figures}
    assert len(set().union(*found.values())) == 1, found
