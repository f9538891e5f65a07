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
