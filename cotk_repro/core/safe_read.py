"""Reading a file somebody else may have planted: a regular file only, no symbolic link followed, size bounded.

A project's folders (its ``.cotk-repro/``, its config) can come from a clone, a template or an archive, so
a name there may be a symbolic link to ``~/.netrc`` or ``/proc/self/environ``, a FIFO that blocks forever,
or a file of many gigabytes. :func:`read_regular` opens the name itself (``O_NOFOLLOW``; ``O_NONBLOCK`` so
a FIFO cannot hang the open), checks on the open descriptor that it is a regular file no larger than the
limit, and reads at most that many bytes.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..errors import CotkError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class UnsafeFileError(CotkError):
    """A file that is not read: a symbolic link, not a regular file, or larger than its limit."""


def read_regular(path: Path | str, limit: int, what: str | None = None, *, follow_links: bool = False) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes, read without following a symbolic link
    (``follow_links``: through one, for a file whose name the user's own project may link elsewhere).

    Raises :class:`UnsafeFileError` (one sentence naming ``what``) for a link, a non-regular file or a file over
    ``limit``; :class:`FileNotFoundError` when there is nothing there; other :class:`OSError` as they come."""
    what = what or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | (0 if follow_links else _NOFOLLOW) | _NONBLOCK)
    except OSError as exc:
        if not follow_links and (exc.errno == errno.ELOOP or os.path.islink(path)):
            raise UnsafeFileError(f"{what} is a symbolic link, so it is not read") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFileError(f"{what} is not a regular file, so it is not read")
        if info.st_size > limit:
            raise UnsafeFileError(f"{what} is {info.st_size:,} bytes, over the {limit:,}-byte limit, so it is not read")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew while being read
            raise UnsafeFileError(f"{what} is over the {limit:,}-byte limit, so it is not read")
        return data
    finally:
        os.close(fd)
