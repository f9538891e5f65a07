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


KEEP = """
import json, sys
from cotk_repro.cli import root
root.load_commands()
names = lambda: sorted([c.name or c.callback.__name__ for c in root.app.registered_commands]
                       + [g.name for g in root.app.registered_groups])
before = names()
out = {"unknown": root.keep_only("no-such-command"), "after_unknown": names() == before}
out["group"] = root.keep_only("dashboard")
out["left"] = names()
print(json.dumps(out))
"""


def test_a_process_running_one_command_builds_only_that_command():
    """keep_only drops the other commands when the name matches one exactly, and nothing otherwise."""
    proc = subprocess.run([sys.executable, "-c", KEEP], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    import json

    out = json.loads(proc.stdout)
    assert out == {"unknown": False, "after_unknown": True, "group": True, "left": ["dashboard"]}


def test_the_console_script_still_runs_a_plugin_command_and_a_group_subcommand(tmp_path):
    """Through `python -m cotk_repro` (the console script's path): a group's subcommand and an unknown name."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cotk_repro",
            "dashboard",
            "users",
            "--db",
            f"sqlite:///{tmp_path / 'd.sqlite3'}",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stdout.strip().startswith("["), proc.stderr
    proc = subprocess.run([sys.executable, "-m", "cotk_repro", "no-such-command"], capture_output=True, text=True)
    assert proc.returncode == 2 and "No such command" in proc.stderr and "dashboard" not in proc.stderr


UNNAMED = """
import json, typer
from cotk_repro.cli import root
root.load_commands()
extra = typer.Typer()

@extra.command("runs")
def plugin_runs():
    print("the plugin's runs")

root.app.add_typer(extra)  # no name: its commands join the root's, and `runs` shadows the core command
print(json.dumps(root.keep_only("runs")))
"""


def test_a_group_without_a_name_keeps_every_command():
    """Found in review: dropping all but the core `runs` would run it where Typer runs the plugin's."""
    proc = subprocess.run([sys.executable, "-c", UNNAMED], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "false", proc.stderr
