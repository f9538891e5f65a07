"""The last bytes of a stream: what is kept of output nobody bounded (a stranger's entry printing for hours).

:class:`Tail` holds at most twice its cap in memory while it is written and the last ``cap`` bytes after;
:class:`TailFile` is a binary file-like sink that writes such a tail to a file when it is closed.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

#: bytes kept of each of an entry's stdout and stderr (the last ones)
TAIL = 4 * 1024 * 1024


class Tail:
    """The last ``cap`` bytes of a stream, and how many bytes it had in all."""

    def __init__(self, cap: int = TAIL):
        self.cap = cap
        self.total = 0
        self._buf = bytearray()

    def write(self, data: bytes) -> None:
        if not data:
            return
        self.total += len(data)
        if len(data) >= self.cap:
            self._buf[:] = data[-self.cap :]
            return
        self._buf += data
        if len(self._buf) > 2 * self.cap:
            del self._buf[: -self.cap]

    def value(self) -> bytes:
        return bytes(self._buf[-self.cap :])

    @property
    def dropped(self) -> int:
        return max(0, self.total - self.cap)

    def text(self) -> str:
        head = f"[... {self.dropped} earlier bytes not kept: only the last {self.cap} are]\n" if self.dropped else ""
        return head + self.value().decode("utf-8", "replace")

    def dump(self, fh: BinaryIO) -> None:
        """Write the tail to the binary file ``fh``, after a line saying how much came before it."""
        if self.dropped:
            fh.write(f"[... {self.dropped} earlier bytes not kept: only the last {self.cap} are]\n".encode())
        fh.write(self.value())

    def last_lines(self, n: int = 20) -> str | None:
        return "\n".join(self.value().decode("utf-8", "replace").strip().splitlines()[-n:]) or None


class TailFile:
    """A sink with ``write``/``flush``/``close`` that keeps the last ``cap`` bytes and writes them to ``path``
    when closed (the log of a stranger's output: bounded on disk and in memory)."""

    def __init__(self, path: Path, cap: int = TAIL):
        self.path = Path(path)
        self.tail = Tail(cap)
        self.closed = False
        self.path.write_bytes(b"")

    def write(self, data: bytes) -> int:
        self.tail.write(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            with self.path.open("wb") as fh:
                self.tail.dump(fh)
