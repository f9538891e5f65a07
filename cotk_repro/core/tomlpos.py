"""Line numbers for keys of a TOML file, so config errors can say where they are.

``tomllib`` parses without positions. :func:`key_lines` scans the text once and
maps key paths (tuples of table keys and array-of-tables indices, the same paths
you would use to walk the parsed dict) to 1-based line numbers::

    [[dataset]]          # ("dataset", 0) -> 1
    name = "news"        # ("dataset", 0, "name") -> 2
    options = { n = 4 }  # ("dataset", 0, "options") and (..., "options", "n") -> 3

It understands table and array-of-tables headers, dotted and quoted keys, inline
tables (nested) and skips the bodies of multi-line strings and arrays. It is a
locator, not a validator: the file has already been parsed by ``tomllib``.
"""

from __future__ import annotations

import re
import sys
from typing import Any

Path_ = tuple[Any, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _parse_key(text: str, i: int) -> tuple[list[str], int]:
    """Parse a (dotted) key starting at ``text[i]``; return its parts and the index after it."""
    parts: list[str] = []
    n = len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if c == '"' and text[j] == "\\" and j + 1 < n else 1
            raw = text[i + 1 : j]
            parts.append(_basic_key(raw) if c == '"' else raw)
            i = j + 1
        else:
            m = _BARE.match(text, i)
            if not m:
                break
            parts.append(m.group(0))
            i = m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == ".":
            i += 1
            continue
        break
    return parts, i


def _basic_key(raw: str) -> str:
    """A double-quoted key's text with its escapes read as TOML reads them (``"k\\u00e9"`` is ``ké``)."""
    if "\\" not in raw:
        return raw
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        value: str = tomllib.loads(f'k = "{raw}"')["k"]
        return value
    except (tomllib.TOMLDecodeError, KeyError):
        return raw


def _skip_string(text: str, i: int) -> int:
    """``text[i]`` opens a string; return the index after it (single-line strings only)."""
    q = text[i]
    if text.startswith(q * 3, i):
        end = text.find(q * 3, i + 3)
        return len(text) if end < 0 else end + 3
    j = i + 1
    while j < len(text) and text[j] != q:
        if q == '"' and text[j] == "\\":
            j += 1
        j += 1
    return j + 1


def key_lines(text: str) -> dict[Path_, int]:
    """Map every key path of the TOML ``text`` to the line (1-based) where it is defined."""
    lines: dict[Path_, int] = {}
    counts: dict[Path_, int] = {}  # array-of-tables path (without index) -> count so far
    current: Path_ = ()
    lineno = 0
    raw_lines = text.splitlines(keepends=True)
    idx = 0
    depth_open = 0  # open brackets of a multi-line array value
    in_ml: str | None = None  # open multi-line string quote
    while idx < len(raw_lines):
        line = raw_lines[idx]
        idx += 1
        lineno += 1
        if in_ml is not None:
            if in_ml in line:
                in_ml = None
            continue
        if depth_open:
            depth_open += _bracket_balance(line)
            if depth_open < 0:
                depth_open = 0
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("[["):
            parts, _ = _parse_key(stripped, 2)
            base = _resolve(parts, counts, lines)
            key = tuple(base)
            n = counts.get(key, 0)
            counts[key] = n + 1
            current = key + (n,)
            lines.setdefault(key, lineno)
            lines[current] = lineno
            continue
        if stripped.startswith("["):
            parts, _ = _parse_key(stripped, 1)
            current = tuple(_resolve(parts, counts, lines))
            lines.setdefault(current, lineno)
            continue
        parts, j = _parse_key(stripped, 0)
        if not parts or j >= len(stripped) or stripped[j] != "=":
            continue
        path = current + tuple(parts)
        for k in range(len(current) + 1, len(path) + 1):
            lines.setdefault(path[:k], lineno)
        value = stripped[j + 1 :].lstrip()
        if value.startswith('"""') or value.startswith("'''"):
            q = value[:3]
            if value.count(q) < 2:
                in_ml = q
            continue
        if value.startswith("{"):
            _inline_table(value, path, lineno, lines)
        elif value.startswith("["):
            bal = _bracket_balance(value)
            if bal > 0:
                depth_open = bal
    return lines


def _resolve(parts: list[str], counts: dict[Path_, int], lines: dict[Path_, int]) -> list[Any]:
    """Turn header parts into a path, inserting the latest index of arrays of tables."""
    out: list[Any] = []
    for k, p in enumerate(parts):
        out.append(p)
        n = counts.get(tuple(out))
        if n is not None and k < len(parts) - 1:
            out.append(n - 1)
    return out


def _bracket_balance(text: str) -> int:
    bal = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c in "\"'":
            i = _skip_string(text, i)
            continue
        if c == "#":
            break
        if c in "[{":
            bal += 1
        elif c in "]}":
            bal -= 1
        i += 1
    return bal


def _inline_table(text: str, path: Path_, lineno: int, lines: dict[Path_, int]) -> None:
    """Record the keys of an inline table (and nested ones) that starts at ``text[0] == '{'``."""
    stack: list[Path_] = [path]
    i = 1
    expect_key = True
    last_key: Path_ | None = None
    while i < len(text) and stack:
        c = text[i]
        if c in " \t,":
            if c == ",":
                expect_key = True
            i += 1
            continue
        if c == "}":
            stack.pop()
            expect_key = False
            i += 1
            continue
        if c == "#":
            break
        if expect_key:
            parts, j = _parse_key(text, i)
            if not parts:
                i += 1
                continue
            last_key = stack[-1] + tuple(parts)
            lines.setdefault(last_key, lineno)
            i = j
            if i < len(text) and text[i] == "=":
                i += 1
            expect_key = False
            while i < len(text) and text[i] in " \t":
                i += 1
            if i < len(text) and text[i] == "{":
                stack.append(last_key)
                expect_key = True
                i += 1
            continue
        if c in "\"'":
            i = _skip_string(text, i)
            continue
        if c == "[":
            # skip an array value, nested brackets included
            depth = 0
            while i < len(text):
                ch = text[i]
                if ch in "\"'":
                    i = _skip_string(text, i)
                    continue
                if ch in "[{":
                    depth += 1
                elif ch in "]}":
                    depth -= 1
                    if depth == 0:
                        i += 1
                        break
                i += 1
            continue
        i += 1


def line_of(lines: dict[Path_, int], path: Path_) -> int | None:
    """The line of ``path``, or of its longest prefix that has one."""
    path = tuple(path)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None
