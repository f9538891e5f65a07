"""The Typer app at the root of ``cotk-repro`` and its own options (``--debug``, ``--version``).

Its own module, below :mod:`.root` (which loads the commands onto it and runs a command line) and
:mod:`.core` (which defines the core commands on it), so neither imports the other at import time.
"""

from __future__ import annotations

import typer

from . import output

app = typer.Typer(
    name="cotk-repro",
    help="Fast development and fair evaluation of text generation: hashed metrics, "
    "immutable run records, publish and one-command reproduce.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        typer.echo(f"cotk-repro {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors (also COTK_REPRO_DEBUG=1)."),
    version: bool = typer.Option(
        False, "--version", "-V", help="Print cotk-repro's version and exit.", is_eager=True, callback=_print_version
    ),
) -> None:
    output.set_debug(debug)
