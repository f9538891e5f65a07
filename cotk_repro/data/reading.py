"""Streaming readers: text files in blocks of lines, JSONL records; errors name file and line.

Files are read in binary blocks (a few MiB), cut at the last line break, decoded
strictly as UTF-8, so memory does not grow with the file and a bad byte is reported
with its line and column. The rules are the one reading of every input
(:mod:`cotk_repro.core.textinput`, docs/inputs.md): a leading BOM is dropped, UTF-16 is
refused by name, NUL with its line and column, CR-only line ends with a sentence.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ..core.textinput import cr_only_message, encoding_problem, nul_message, nul_position
from .errors import DataError

BLOCK_BYTES = 1 << 22  # 4 MiB
BOM = b"\xef\xbb\xbf"

Progress = Callable[[int], None]


def _decode(part: bytes, path: Path, first_line: int) -> str:
    try:
        text = part.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + part.count(b"\n", 0, exc.start)
        col = exc.start - (part.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = part[exc.start : exc.start + 1].hex()
        raise DataError(f"{path} line {line} is not valid UTF-8 (byte 0x{bad} at column {col})") from None
    if b"\x00" in part:
        line, col = nul_position(text, first_line) or (first_line, 1)
        raise DataError(nul_message(str(path), line, col))
    return text


def iter_line_blocks(
    path: Path, progress: Progress | None = None, block_bytes: int | None = None
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(first_line_number, lines)`` blocks; lines without their ``\\n`` / ``\\r\\n``."""
    path = Path(path)
    block_bytes = block_bytes or BLOCK_BYTES
    line_no = 1
    rest = b""
    first = True
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    with f:
        while True:
            block = f.read(block_bytes)
            if progress is not None and block:
                progress(len(block))
            if first:
                first = False
                problem = encoding_problem(block)
                if problem:
                    raise DataError(f"{path} {problem}")
                if block.startswith(BOM):
                    block = block[len(BOM) :]
            if not block:
                break
            data = rest + block if rest else block
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            part, rest = data[:cut], data[cut + 1 :]
            text = _decode(part, path, line_no)
            lines = text.split("\n")
            if "\r" in text:
                lines = [s[:-1] if s.endswith("\r") else s for s in lines]
            yield line_no, lines
            line_no += len(lines)
    if rest:
        if line_no == 1 and b"\r" in rest:  # no \n in the whole file, and CRs: CR-only line ends
            raise DataError(cr_only_message(str(path)))
        text = _decode(rest, path, line_no)
        yield line_no, [text[:-1] if text.endswith("\r") else text]


def count_nonblank_lines(path: Path) -> int:
    """Count the lines of `path` that are not empty or whitespace only."""
    n = 0
    for _, lines in iter_line_blocks(path):
        n += sum(1 for s in lines if s and not s.isspace())
    return n


def iter_jsonl(path: Path, fields: tuple[str, ...], progress: Progress | None = None) -> Iterator[tuple[int, list]]:
    """Yield ``(line_number, [value of each field])`` for each non-blank JSONL line.

    A field must be a string, except ``session`` (a non-empty list of strings).
    """
    path = Path(path)
    for first, lines in iter_line_blocks(path, progress):
        for i, line in enumerate(lines):
            if not line or line.isspace():
                continue
            n = first + i
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path} line {n} is not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise DataError(
                    f"{path} line {n} must hold a JSON object with {_names(fields)}, got {type(obj).__name__}"
                )
            values = []
            for field in fields:
                if field not in obj:
                    raise DataError(f"{path} line {n} lacks the field {field!r}")
                value = obj[field]
                if field == "session":
                    if not isinstance(value, list) or not value or not all(isinstance(u, str) for u in value):
                        raise DataError(f"{path} line {n}: 'session' must be a non-empty list of strings")
                elif not isinstance(value, str):
                    raise DataError(f"{path} line {n}: field {field!r} must be a string, got {type(value).__name__}")
                values.append(value)
            yield n, values


def _names(fields: tuple[str, ...]) -> str:
    return " and ".join(repr(f) for f in fields)


def file_size(path: Path) -> int:
    """Return the size of `path` in bytes, or 0 if it cannot be read."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
