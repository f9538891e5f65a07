"""Paths a record names (entry, cwd, result file), kept inside the checkout.

The record is somebody else's JSON: ``command.entry`` may say ``/usr/bin/x`` or
``../../tmp/host.py``. Every path is resolved (symbolic links included) against the
checkout and refused when it lands outside it, for every runtime.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from . import ReproduceError


def inside_checkout(code: Path, path: Path, what: str) -> Path:
    """``path`` resolved; a ReproduceError when it is outside ``code``."""
    root = code.resolve()
    resolved = path.resolve()
    if resolved != root and not resolved.is_relative_to(root):
        raise ReproduceError(
            f"{what} leads outside the checkout ({path.relative_to(code) if path.is_relative_to(code) else path} "
            "resolves elsewhere), so the record is not run",
            step="checkout",
        )
    return resolved


def _relative(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ReproduceError(
            f"the record's {what} {str(value)[:80]!r} is not a path (empty, or control characters)", step="checkout"
        )
    p = PurePosixPath(value)
    if p.is_absolute() or value.startswith("~") or "\\" in value:
        raise ReproduceError(
            f"the record's {what} {value!r} is an absolute path, outside the checkout, so the record is not run",
            step="checkout",
        )
    return value


def check_command(code: Path, command: Any) -> None:
    """The record's entry, cwd and result file all lie inside the checkout ``code``."""
    if not isinstance(command, dict):
        raise ReproduceError("the record's command is not an object", step="checkout")
    cwd = _relative(command.get("cwd") or ".", "command.cwd")
    run_dir = inside_checkout(code, code / cwd, f"the record's command.cwd {cwd!r}")
    entry = _relative(command.get("entry"), "command.entry")
    inside_checkout(code, run_dir / entry, f"the record's command.entry {entry!r}")
    result = _relative(command.get("result_file") or "result.json", "command.result_file")
    inside_checkout(code, run_dir / result, f"the record's command.result_file {result!r}")
    args = command.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, (str, int, float)) for a in args):
        raise ReproduceError("the record's command.args is not a list of strings", step="checkout")
