"""Rendering for the command line: consoles, errors, JSON, tables, progress."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# Not a terminal (a pipe, a file, CI): Rich would wrap at 80 columns and split URLs, ids and numbers over
# two lines. Use $COLUMNS when it is set, else a width nothing reaches (tables size to their content).
NO_WRAP_WIDTH = 100_000
HELP_WIDTH = 120  # --help's panels fill the width they are given: a readable one when not on a terminal


def piped_width(stream: Any) -> int | None:
    """The console width for ``stream``: None (Rich measures it) on a terminal, else $COLUMNS or no wrap."""
    if stream.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() else NO_WRAP_WIDTH


def __getattr__(name: str) -> Any:  # ``output.console`` / ``output.err_console``
    if name not in ("console", "err_console"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _console(name)


def _console(name: str) -> Console:
    """``console`` (stdout) or ``err_console`` (stderr), made on first use: Rich costs ~40 ms to import, and a
    command that prints only JSON and plain messages never needs it."""
    made = globals().get(name)
    if made is not None:
        return made
    from rich.console import Console

    stream = sys.stdout if name == "console" else sys.stderr
    made = Console(stderr=name == "err_console", highlight=False, width=piped_width(stream))
    if name == "console":
        made.on_broken_pipe = closed_pipe  # type: ignore[method-assign]  # Rich's own exits 1, which here means "not reproduced"
    globals()[name] = made
    return made


_UNSAFE = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def safe(text: Any, *, keep_newlines: bool = False) -> str:
    """``text`` with every control, format or separator character written as an escape (``\\x1b``,
    ``\\u202e``), so that text from a record, a repository or a server never drives the terminal (screen
    clears, window titles, hidden or reversed text). ``keep_newlines``: line feeds (and tabs) stay."""
    text = str(text)
    if text.isprintable():
        return text
    import unicodedata

    out = []
    for ch in text:
        if keep_newlines and ch in "\n\t":
            out.append(ch)
        elif ch == " " or unicodedata.category(ch) not in _UNSAFE:
            out.append(ch)
        else:
            out.append(ascii(ch)[1:-1])
    return "".join(out)


def closed_pipe() -> None:
    """The reader of stdout went away (``cotk-repro show ID | head``): it had what it wanted, so exit 0 quietly.

    Later writes (and the interpreter's last flush) go to /dev/null instead of raising again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise SystemExit(0)


def _to_stderr(text: str) -> None:
    """One message on stderr (markup, highlighting and wrapping off; control characters escaped)."""
    sys.stderr.write(safe(text, keep_newlines=True) + "\n")
    sys.stderr.flush()


def widen_help_when_piped() -> None:
    """Typer's --help, when stdout is not a terminal: $COLUMNS or 120 columns, not 80 (no cut option names)."""
    if sys.stdout.isatty() or os.environ.get("TERMINAL_WIDTH"):
        return
    from ._speedups import import_rich_help

    columns = os.environ.get("COLUMNS", "")
    import_rich_help().MAX_WIDTH = int(columns) if columns.isdigit() else HELP_WIDTH


_state = {"debug": os.environ.get("COTK_REPRO_DEBUG", "") not in ("", "0")}


def set_debug(value: bool) -> None:
    """Turn debug output (tracebacks on errors) on; once on it stays on."""
    _state["debug"] = _state["debug"] or value


def debug_enabled() -> bool:
    """Return whether debug output (tracebacks on errors) is on."""
    return _state["debug"]


def print_json(data: Any) -> None:
    """Write `data` to stdout as indented UTF-8 JSON (unknown types as str)."""
    try:
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # before Click sees it: it would exit 1, "not reproduced"
        closed_pipe()


def error(message: str, hint: str | None = None, log: str | None = None) -> None:
    """Print `Error: message (hint)` on stderr, after the log text if given."""
    if log:
        _to_stderr(log.rstrip())
    text = f"Error: {message}"
    if hint:
        text += f" ({hint})"
    _to_stderr(text)


def warn(message: str) -> None:
    """Print `Warning: message` on stderr."""
    _to_stderr(f"Warning: {message}")


def info(message: str) -> None:
    """Progress chatter: to stderr, so that stdout stays clean for --json."""
    _to_stderr(message)


def prepare_tables() -> None:
    """Load what printing a table to stdout needs (Rich's console and table modules, ~30 ms), ahead of time:
    ``run`` does it while the entry runs."""
    _console("console")
    import rich.table  # noqa: F401


def table(title: str | None, columns: list[str], rows: list[list[Any]], *, width: int | None = None) -> Table:
    """Build a rich Table with the given title, columns and rows (None shown as empty).

    Cells are plain text: Rich markup in them is shown, not interpreted, and control characters are escaped
    (:func:`safe`); a cell that already is a Rich renderable (styled by the caller) is kept."""
    from rich.table import Table
    from rich.text import Text

    # the title wraps at the table's width: at least as wide as the title's longest word, so that a record id
    # (sha256:<64 hex>) in it stays whole and copyable (as far as the terminal is wide enough)
    shown = safe(title) if title is not None else None
    t = Table(
        title=Text(shown) if shown is not None else None,
        show_lines=False,
        min_width=max((len(w) for w in shown.split()), default=0) if shown else None,
    )
    for c in columns:
        t.add_column(c, overflow="fold")
    console = _console("console")
    if width is None and console.is_terminal:  # on a terminal; piped output keeps Rich's layout ($COLUMNS or none)
        width = console.width
    for r in _break_tokens(columns, rows, width) if width else rows:
        t.add_row(*[cell(v) for v in r])
    return t


_PIECE = re.compile(r"[^|/]+[|/]*|[|/]+")


def _break_tokens(columns: list[str], rows: list[list[Any]], width: int) -> list[list[Any]]:
    """Rows whose long tokens (a signature ``bleu|n:4|...``, a URL: no spaces) are broken after a ``|`` or ``/`` to fit
    the terminal, where Rich would cut them mid-field: one column at a time, the widest such column first."""
    from rich.text import Text

    texts = [[v if isinstance(v, str) else None for v in r] for r in rows]

    def widest(i: int) -> int:
        cells = [c for t in texts if i < len(t) and (c := t[i]) is not None]
        return max([len(columns[i])] + [len(line) for c in cells for line in c.split("\n")])

    def token(v: str | None) -> bool:
        return v is not None and len(v) > 16 and not any(ch.isspace() for ch in v) and ("|" in v or "/" in v)

    out = [list(r) for r in rows]
    candidates = [i for i in range(len(columns)) if any(i < len(t) and token(t[i]) for t in texts)]
    for i in sorted(candidates, key=widest, reverse=True):
        others = sum(widest(j) for j in range(len(columns)) if j != i)
        room = width - others - (3 * len(columns) + 1)  # Rich's borders and padding
        if room >= widest(i) or room < 12:
            continue
        for r, t in zip(out, texts):
            if i < len(t) and token(t[i]):
                lines, line = [], ""
                for piece in _PIECE.findall(t[i] or ""):
                    if line and len(line) + len(piece) > room:
                        lines.append(line)
                        line = ""
                    line += piece
                lines.append(line)
                t[i] = "\n".join(lines)
                r[i] = Text("\n".join(safe(x) for x in lines))  # its own lines, each escaped
    return out


def cell(value: Any) -> Any:
    """A table cell: a string as plain :class:`rich.text.Text` (no markup, control characters escaped)."""
    from rich.text import Text

    if value is None:
        return Text("")
    if hasattr(value, "__rich_console__") or hasattr(value, "__rich__"):
        return value
    return Text(safe(value))


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 dataset``, ``6 systems``."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def fmt_value(v: Any) -> str:
    """Format a value for a table: floats to 6 significant digits, None as empty."""
    if isinstance(v, float):
        return f"{v:.6g}"
    return "" if v is None else str(v)


def fmt_hash(h: str | None, n: int = 12) -> str:
    """Return the first `n` characters of a hash, or `unverifiable` when there is none."""
    return h[:n] if h else "unverifiable"


@contextmanager
def progress(description: str, total: float | None = None, *, thread: bool = True) -> Iterator[Any]:
    """A progress bar on a terminal; silent (but still usable) elsewhere.

    Yields an ``advance(n=1)`` callable. ``thread=False``: no refresh thread, the bar is redrawn when it advances
    (the data loader forks helper processes only while no other thread runs).
    """
    if not _console("err_console").is_terminal:  # Rich's rule: a tty, or FORCE_COLOR / TTY_COMPATIBLE
        yield lambda n=1: None
        return
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=_console("err_console"),
        transient=True,
        auto_refresh=thread,
    ) as bar:
        task = bar.add_task(description, total=total)
        if thread:
            yield lambda n=1: bar.advance(task, n)
        else:

            def advance(n: float = 1) -> None:
                bar.advance(task, n)
                bar.refresh()

            bar.refresh()
            yield advance
