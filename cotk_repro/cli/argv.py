"""What a command line asks for, read before anything is imported (the help cache decides on it)."""

from __future__ import annotations


def asks_for_help(args: list[str]) -> bool:
    """Return whether the command line ``args`` prints help: none given, or -h/--help before any ``--``."""
    own = args[: args.index("--")] if "--" in args else args
    return not args or "--help" in own or "-h" in own
