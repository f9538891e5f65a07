"""Built-in command groups beyond the core, added through the ``register_commands`` hook.

Each module named here exposes ``register(cli)``; a module that is not there yet
is skipped, so an issue can land its commands independently.
"""

from __future__ import annotations

import importlib

from ..hookspecs import hookimpl

COMMAND_MODULES = (
    "cotk_repro.cli.data_cmd",
    "cotk_repro.cli.evaluate_cmd",
    "cotk_repro.cli.metrics_cmd",
    "cotk_repro.cli.compare_cmd",
    "cotk_repro.cli.publish_cmd",
    "cotk_repro.cli.reproduce_cmd",
    "cotk_repro.cli.dashboard_cmd",
    "cotk_repro.cli.demo_cmd",
    "cotk_repro.cli.signing_cmd",
)


@hookimpl
def register_commands(cli):
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(cli)
