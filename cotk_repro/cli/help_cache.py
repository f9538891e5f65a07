"""``--help`` text remembered on disk, so that printing it again needs neither Typer, Rich nor a plugin.

Rendering ``cotk-repro --help`` imports Typer and Rich and loads every plugin (a quarter of a second);
bare Python starts in a tenth of that. The text depends only on what this module keys it by, and each
entry lists the files of every module that was loaded to render it:

- the key: the command line, cotk-repro's version, the interpreter, each import-path folder with the
  distributions it holds (``*.dist-info`` and ``*.egg-info`` with their ``entry_points.txt``'s size and
  time, ``*.pth``: installing, upgrading, reinstalling or removing a plugin changes them), whether each
  standard stream is a terminal and its size, and the environment variables Typer, Click and Rich read;
- the check on replay: each listed file still has the size and modification time it had (an edited
  plugin, an upgraded Typer, a changed command module render anew).

Only help is remembered: a command line that exits 0, wrote nothing on stderr (a broken plugin's warning
is printed each time) and printed less than a MiB of text that starts with ``Usage:``. ``COTK_REPRO_HELP_CACHE=0`` turns the
cache off; a cache that cannot be read or written only costs the render.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._version import __version__

FORMAT = 1
_ENV_NAMES = (
    "COLUMNS",
    "LINES",
    "TERMINAL_WIDTH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "GITHUB_ACTIONS",
    "DATABRICKS_RUNTIME_VERSION",
    "CI",
)
_ENV_PREFIXES = ("COTK_REPRO_", "TYPER_", "_TYPER_", "CLICK_", "JUPYTER_")
_ENV_PARTS = ("COLOR", "TERM", "TTY")  # NO_COLOR, FORCE_COLOR, PY_COLORS, TERM, COLORTERM, TTY_COMPATIBLE, ...
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_KEEP_AT_MOST = 1 << 20  # help is a few KiB: a command line that prints more is not help, and is not copied


def enabled() -> bool:
    """Return whether the help cache is on (``COTK_REPRO_HELP_CACHE=0`` turns it off)."""
    return os.environ.get("COTK_REPRO_HELP_CACHE", "1").lower() not in ("0", "false", "no", "off")


def _distributions(folder: str) -> list[list[Any]] | None:
    """What in an import-path folder says which distributions (and so which plugins) are installed: each
    ``*.dist-info`` / ``*.egg-info`` with its ``entry_points.txt``'s size and time (a plugin reinstalled at the
    same version with another command changes them), each ``*.egg-link`` / ``*.pth``."""
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return None
    out: list[list[Any]] = []
    for name in sorted(names):
        lowered = name.lower()
        if lowered.endswith((".dist-info", ".egg-info")):
            try:
                st = os.stat(os.path.join(folder or ".", name, "entry_points.txt"))
                out.append([name, st.st_mtime_ns, st.st_size])
            except OSError:
                out.append([name])
        elif lowered.endswith((".egg-link", ".pth", ".egg")):
            out.append([name])
    return out


def _terminal(fd: int) -> list[int] | None:
    try:
        if not os.isatty(fd):
            return None
        size = os.get_terminal_size(fd)
        return [size.columns, size.lines]
    except OSError:
        return None


def key(args: list[str]) -> str:
    """The cache key of the help that ``args`` prints here (see the module's docstring)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES) or any(part in k for part in _ENV_PARTS)
    }
    streams: list[list[Any] | None] = [_terminal(fd) for fd in (0, 1, 2)]
    streams.append([getattr(s, "encoding", None) for s in (sys.stdout, sys.stderr)])
    facts = [
        FORMAT,
        __version__,
        sys.executable,
        sys.version,
        args,
        env,
        streams,
        [[p, _distributions(p)] for p in sys.path],
    ]
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()


def _path(digest: str):
    from ..core.userconfig import cache_dir

    return cache_dir() / "help" / digest


def _loaded_files() -> list[list[Any]]:
    files = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            try:
                st = os.stat(path)
            except OSError:
                continue
            files.append([path, st.st_mtime_ns, st.st_size])
    return sorted(files)


def replay(args: list[str]) -> bool:
    """Print the help ``args`` asks for from the cache; returns False (printing nothing) on a miss."""
    if not enabled():
        return False
    try:
        entry = json.loads(_path(key(args)).read_bytes())
        files, text = entry["files"], entry["text"]
        for path, mtime, size in files:
            st = os.stat(path)
            if st.st_mtime_ns != mtime or st.st_size != size:
                return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `cotk-repro --help | head -1`: stop quietly (exit 0), as a render does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0) from None
    return True


class _Tee:
    """A text stream that passes everything to ``stream`` and keeps a copy (isatty, fileno, ... delegated)."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.parts: list[str] = []
        self.kept = 0
        self.overflow = False  # more than _KEEP_AT_MOST was written: not help, nothing more is copied

    def write(self, text: str) -> int:
        written = self.stream.write(text)  # first: bytes raise TypeError, as Click's probe for a binary stream expects
        if not self.overflow:
            self.kept += len(text)
            if self.kept > _KEEP_AT_MOST:
                self.overflow, self.parts = True, []
            else:
                self.parts.append(text)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _looks_like_help(text: str) -> bool:
    return _ANSI.sub("", text).lstrip().startswith("Usage:")  # colour codes dropped before the first word


@contextmanager
def recording(args: list[str]) -> Iterator[None]:
    """Run the body (which renders the help ``args`` asks for) and remember what it printed, if it was help."""
    if not enabled():
        yield
        return
    digest = key(args)  # the import path as it was before anything was imported
    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    sys.stdout, sys.stderr = out, err
    code: Any = 0
    try:
        yield
    except SystemExit as exc:
        code = exc.code
        raise
    finally:
        sys.stdout, sys.stderr = out.stream, err.stream
        text = "".join(out.parts)
        if code in (0, None) and not err.kept and not out.overflow and _looks_like_help(text):
            _store(digest, {"files": _loaded_files(), "text": text})


def _store(digest: str, entry: dict[str, Any]) -> None:
    from ..core.fileio import atomic_write

    try:
        path = _path(digest)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(entry).encode("utf-8", "surrogatepass"))
    except OSError:
        pass
