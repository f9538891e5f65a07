"""cli/_speedups.py applies to the pinned Typer, and it is what keeps pydantic out of a command's start-up."""

from __future__ import annotations

import subprocess
import sys

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
