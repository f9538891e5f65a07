"""One exclusive lock between processes on one machine: ``with locked(path): ...`` (POSIX ``flock``).

For what two processes of this user may do at once to one folder of the user cache dir (two reproductions, two
test workers): build one wheel, fill one wheelhouse, make one venv. The lock file is created beside what it
guards and left there (removing it could let a third process lock a new file while the second holds the old).
Where ``fcntl`` is missing (Windows) it does not lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created, with its folder) while the block runs."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
