"""Atomic file writes: the one way cotk-repro replaces a file, so a reader never sees half of one."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", *, perms: int | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path``, on error it is removed.

    ``mode``: ``"w"`` (UTF-8 text, ``\\n`` line ends) or ``"wb"``; ``perms``: the file's mode bits (e.g. 0o600),
    set before any byte is written.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', not {mode!r}")
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # created like an ordinary file (0666 less the umask) unless perms says otherwise
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if perms is None else perms)
    try:
        if perms is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, perms)
        with os.fdopen(fd, "wb") if mode == "wb" else os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike[str], data: str | bytes, *, perms: int | None = None) -> Path:
    """Replace ``path`` with ``data`` (text as UTF-8) atomically; returns the path."""
    with atomic_open(path, "wb" if isinstance(data, bytes) else "w", perms=perms) as fh:
        fh.write(data)
    return Path(path)
