"""Built-in command groups beyond the core, added through the ``register_commands`` hook.

Each module named here exposes ``register(cli)``. A module that fails to import (or is
missing) is an error naming it, after the others are registered: a broken install must not
look like a command that never existed.
"""

from __future__ import annotations

import importlib

from ..errors import PluginError
from ..hookspecs import hookimpl

COMMAND_MODULES = (
    "cotk_repro.cli.data_cmd",
    "cotk_repro.cli.evaluate_cmd",
    "cotk_repro.cli.significance_cmd",
    "cotk_repro.cli.metrics_cmd",
    "cotk_repro.cli.compare_cmd",
    "cotk_repro.cli.generate_cmd",
    "cotk_repro.cli.publish_cmd",
    "cotk_repro.cli.reproduce_cmd",
    "cotk_repro.cli.dashboard_cmd",
    "cotk_repro.cli.demo_cmd",
    "cotk_repro.cli.signing_cmd",
    "cotk_repro.cli.share_cmd",
)


@hookimpl
def register_commands(cli):
    """Let every built-in command module add its subcommands to `cli`; raise PluginError if one fails to import."""
    failed = []
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{name} ({type(exc).__name__}: {exc})")
            continue
        module.register(cli)
    if failed:
        raise PluginError(
            f"the command module {failed[0]} failed to import"
            + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else "")
        )
