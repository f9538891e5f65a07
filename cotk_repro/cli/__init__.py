"""The ``cotk-repro`` command line: a thin Typer app; the work lives below it.

Core commands are defined in :mod:`cotk_repro.cli.core`; the rest (data,
evaluate, publish, reproduce, dashboard, compare, demo, ...) are added through
the ``register_commands`` hook by the built-in plugin
:mod:`cotk_repro.builtins.commands`, exactly as third-party plugins add theirs.
"""

from __future__ import annotations

import sys


def _interrupted_at_start() -> None:
    sys.stderr.write("Error: interrupted (Ctrl-C)\n")
    sys.exit(130)


try:  # Ctrl-C while the imports run (the first half second): one sentence and 130, not a traceback
    import traceback

    import typer

    from ..errors import CotkError
    from . import output
except KeyboardInterrupt:
    _interrupted_at_start()

app = typer.Typer(
    name="cotk-repro",
    help="Fast development and fair evaluation of text generation: hashed metrics, "
    "immutable run records, publish and one-command reproduce.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors (also COTK_REPRO_DEBUG=1)."),
) -> None:
    output.set_debug(debug)


_loaded = False


def _load_commands() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from . import _speedups, core  # noqa: F401 - core defines the core commands on `app`

    _speedups.install()
    from ..plugins import get_plugins

    get_plugins().add_commands(app)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI on `argv`; a CotkError (or any other failure) becomes one error line and its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--debug" in args:
        output.set_debug(True)
    if not args or "--help" in args or "-h" in args:
        from ._speedups import import_rich_help

        import_rich_help()
        output.widen_help_when_piped()
    try:
        _load_commands()
        app(args=args, prog_name="cotk-repro")
    except SystemExit as exc:
        if exc.code == 130:  # Typer turns Ctrl-C into a silent exit 130: say what happened
            output.error("interrupted (Ctrl-C)")
        raise
    except CotkError as exc:
        if output.debug_enabled():
            traceback.print_exc()
        output.error(exc.message, exc.hint, exc.log)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        output.error("interrupted (Ctrl-C)")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - last resort: one sentence, not a traceback
        if output.debug_enabled():
            traceback.print_exc()
        output.error(f"unexpected {type(exc).__name__}: {exc}", hint="rerun with --debug for the traceback")
        sys.exit(2)
