"""The Typer app at the root of ``cotk-repro``: its commands loaded, one command line run, failures as one sentence.

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
    import warnings

    from typer import Abort, TyperException

    from ..errors import CotkError, CotkWarning
    from . import output
    from .argv import asks_for_help
    from .typerapp import app
except KeyboardInterrupt:
    _interrupted_at_start()

_loaded = False
_python_showwarning = warnings.showwarning


def load_commands() -> None:
    """Define the core commands on `app` and add every plugin's (once per process)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from . import _speedups, core  # noqa: F401 - core defines the core commands on `app`

    _speedups.install()
    from ..plugins import get_plugins

    get_plugins().add_commands(app)


def keep_only(name: str) -> bool:
    """Drop every command but ``name`` from `app` (a process that runs one command line); returns whether it did.

    Typer builds a Click command for each registered command before it dispatches, a few milliseconds each;
    when the command line names one command exactly, the others are never used. Nothing is dropped when
    ``name`` matches no command or several (Typer's own error or help then lists them all), or when a plugin
    added a group without a name (its commands join the root's and may take a name of ours).
    """
    from typer.main import get_command_name

    if any(
        not (g.name or getattr(getattr(g.typer_instance, "info", None), "name", None)) for g in app.registered_groups
    ):
        return False  # a group without a name merges its commands into the root: they may shadow one of ours
    commands = [
        c for c in app.registered_commands if (c.name or get_command_name(getattr(c.callback, "__name__", ""))) == name
    ]
    groups = [
        g
        for g in app.registered_groups
        if (g.name or getattr(getattr(g.typer_instance, "info", None), "name", None)) == name
    ]
    if len(commands) + len(groups) != 1:
        return False
    app.registered_commands[:] = commands
    app.registered_groups[:] = groups
    return True


def usage_error(exc: Exception) -> str:
    """Click's usage error (Typer's vendored Click) as one sentence: its message and where the command's help is,
    instead of Typer's box of three lines and a frame."""
    message = str(getattr(exc, "format_message", lambda: str(exc))()).strip().rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    return f"{message} (see `{ctx.command_path} -h`)"


def _show_warning(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
    """A CotkWarning (library code's word to the user, e.g. a metric's) as one ``Warning:`` line; others as Python
    shows them."""
    if issubclass(category, CotkWarning):
        output.warn(str(message))
    else:
        _python_showwarning(message, category, *args, **kwargs)  # type: ignore[arg-type]


def run(args: list[str], *, one_command: bool = False) -> None:
    """Run the command line ``args``; a CotkError (or any other failure) becomes one error line and its exit code.

    ``one_command``: this process runs nothing else, so the commands it does not name need not be built.
    """
    if "--debug" in args:
        output.set_debug(True)
    warnings.showwarning = _show_warning
    if asks_for_help(args):
        from ._speedups import import_rich_help

        import_rich_help()
        output.widen_help_when_piped()
    try:
        load_commands()
        if one_command and not asks_for_help(args):
            named = next((a for a in args if not a.startswith("-")), None)
            if named is not None:
                keep_only(named)
        # not standalone: Click hands its usage errors back instead of drawing them in a box (usage_error)
        code = app(args=args, prog_name="cotk-repro", standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool) and code:  # typer.Exit(code), Ctrl-C (130)
            sys.exit(code)
    except SystemExit as exc:
        if exc.code == 130:  # Typer turns Ctrl-C into a silent exit 130: say what happened
            output.error("interrupted (Ctrl-C)")
        try:  # what is still buffered meets a reader that went away: that is not a failure
            sys.stdout.flush()
        except BrokenPipeError:
            output.closed_pipe()
        except (OSError, ValueError):
            pass
        raise
    except TyperException as exc:  # Click's errors: an unknown option or command, a missing or invalid argument
        output.error(usage_error(exc))
        sys.exit(getattr(exc, "exit_code", 2))
    except Abort:
        output.error("aborted")
        sys.exit(1)
    except BrokenPipeError:  # a plain write to a closed stdout (`cotk-repro show ID | head`)
        output.closed_pipe()
    except CotkError as exc:
        if output.debug_enabled():
            traceback.print_exc()
        output.error(exc.message, exc.hint, exc.log)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        output.error("interrupted (Ctrl-C)")
        sys.exit(130)
    except ModuleNotFoundError as exc:  # a dependency removed or never installed: name what to install
        from ..core.missing import missing_dependency

        sentence = missing_dependency(exc)
        if output.debug_enabled() or sentence is None:
            traceback.print_exc()
        if sentence is None:
            output.error(
                f"unexpected ModuleNotFoundError: {exc}", hint="cotk-repro's own files are incomplete; reinstall it"
            )
        else:
            output.error(sentence)
        sys.exit(2)
    except Exception as exc:
        if output.debug_enabled():
            traceback.print_exc()
        output.error(f"unexpected {type(exc).__name__}: {exc}", hint="rerun with --debug for the traceback")
        sys.exit(2)
