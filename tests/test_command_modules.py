"""A built-in command module that fails to import is an error naming it, never a silently missing command."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import cotk_repro.builtins.commands as c
c.COMMAND_MODULES = c.COMMAND_MODULES + ("cotk_repro.cli.deleted_cmd",)
from cotk_repro.cli import main
main(["plugins"])
"""


def test_missing_command_module_is_an_error_naming_it():
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True)
    assert proc.returncode == 2, proc
    assert "cotk_repro.cli.deleted_cmd" in proc.stderr and "failed to import" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_every_listed_command_module_registers():
    proc = subprocess.run([sys.executable, "-m", "cotk_repro", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for command in ("evaluate", "metrics", "compare", "publish", "reproduce", "dashboard"):
        assert command in proc.stdout
