"""The ``cotk-repro`` command line: a thin Typer app (:mod:`.root`); the work lives below it.

This module imports nothing heavy: ``app`` and the commands load on first use, so that the console script
can answer a ``--help`` it has rendered before (:mod:`.help_cache`) without importing Typer, Rich or a plugin.
"""

from __future__ import annotations

import sys
from typing import Any

from .argv import asks_for_help

__all__ = ["asks_for_help", "launch", "main"]


def __getattr__(name: str) -> Any:  # ``from cotk_repro.cli import app`` loads the Typer app on first use
    if name == "app":
        from .root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _load_commands() -> None:
    from .root import load_commands

    load_commands()


def _interrupted() -> None:
    """Ctrl-C before the command line's own handling is in place (while ``root`` is imported): one sentence, 130."""
    sys.stderr.write("Error: interrupted (Ctrl-C)\n")
    sys.exit(130)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI on `argv`; a CotkError (or any other failure) becomes one error line and its exit code."""
    from ..core import interrupts

    interrupts.install()  # see launch()
    try:
        from .root import run
    except KeyboardInterrupt:
        _interrupted()
    run(list(sys.argv[1:] if argv is None else argv))


def launch() -> None:
    """The ``cotk-repro`` console script and ``python -m cotk_repro``: one command line per process.

    Help that this interpreter, install and terminal rendered before is printed from the help cache; any other
    command line runs (help it prints is remembered), building only the command it names.
    """
    from ..core import interrupts

    interrupts.install()  # a Ctrl-C swallowed while the commands are imported still stops a run
    args = sys.argv[1:]
    if args in (["--version"], ["-V"]):  # nothing to import for it: the version is a constant of the package
        from .._version import __version__

        sys.stdout.write(f"cotk-repro {__version__}\n")
        return
    if asks_for_help(args):
        from . import help_cache

        if help_cache.replay(args):
            return
        with help_cache.recording(args):
            try:
                from .root import run
            except KeyboardInterrupt:
                _interrupted()
            run(args)
        return
    try:
        from .root import run
    except KeyboardInterrupt:
        _interrupted()
    run(args, one_command=True)
