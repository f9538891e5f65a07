"""Text-format descriptors and streaming readers for gold references, samples and inputs.

A :class:`TextFormat` says how to turn one line of a file into the text the
metrics see: tags to strip, whether the text is already tokenized (space
separated) or must be tokenized with a registered tokenizer, a sentence
separator inside a line, lowercasing, and (gold text files only) a separator
between several references on one line. Every text reaching a metric is a
single-space-joined token sequence, so gold and samples are treated alike.

Files are read as streams, one line at a time: counting lines and hashing a file
never holds it whole in memory.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import CotkError

#: keys of a format descriptor and their types (for config validation)
FORMAT_KEYS: dict[str, Any] = {
    "tokenized": bool,
    "tokenizer": str,
    "strip_tags": list,
    "strip_pattern": str,
    "sentence_separator": str,
    "sentence_joiner": str,
    "reference_separator": str,
    "lowercase": bool,
}


class TextFileError(CotkError):
    """A gold, sample or input file is unreadable or malformed."""


@dataclass(frozen=True)
class TextFormat:
    #: lines are already tokenized with spaces; when false, ``tokenizer`` tokenizes them
    """How to turn the lines of a text file into sentences: tokenizing, tags to strip, separators, case."""

    tokenized: bool = True
    #: a registered tokenizer name, used only when ``tokenized`` is false
    tokenizer: str = "nltk"
    #: literal strings removed wherever they occur (e.g. ``<eos>``, ``<pad>``)
    strip_tags: tuple[str, ...] = ()
    #: a regular expression whose matches are removed (e.g. ``</?[a-z]+>`` for markup)
    strip_pattern: str | None = None
    #: a marker between sentences inside one line; replaced by ``sentence_joiner``
    sentence_separator: str | None = None
    sentence_joiner: str = " "
    #: gold text files only: several references on one line, separated by this string
    reference_separator: str | None = None
    lowercase: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: TextFormat | None = None) -> TextFormat:
        values = asdict(base) if base is not None else {}
        for key, value in data.items():
            values[key] = tuple(value) if key == "strip_tags" else value
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["strip_tags"] = list(self.strip_tags)
        return d


@dataclass
class Normalizer:
    """Applies a :class:`TextFormat` to lines. Build with :func:`normalizer`."""

    fmt: TextFormat
    _pattern: re.Pattern | None = None
    _tokenize: Callable[[str], list[str]] | None = field(default=None, repr=False)

    def __call__(self, text: str) -> str:
        fmt = self.fmt
        for tag in fmt.strip_tags:
            if tag:
                text = text.replace(tag, " ")
        if self._pattern is not None:
            text = self._pattern.sub(" ", text)
        if fmt.sentence_separator:
            text = fmt.sentence_joiner.join(part.strip() for part in text.split(fmt.sentence_separator))
        if fmt.lowercase:
            text = text.lower()
        tokens = text.split() if self._tokenize is None else self._tokenize(text)
        return " ".join(tokens)

    def references(self, text: str) -> list[str]:
        """One gold text line -> its references (split on ``reference_separator`` when set)."""
        sep = self.fmt.reference_separator
        parts = text.split(sep) if sep else [text]
        return [self(p) for p in parts]


def normalizer(fmt: TextFormat) -> Normalizer:
    """A callable ``line -> normalized text`` for ``fmt`` (resolves the tokenizer and regex)."""
    pattern = re.compile(fmt.strip_pattern) if fmt.strip_pattern else None
    tokenize = None
    if not fmt.tokenized:
        from ..plugins import get_component

        tokenize = get_component("tokenizer", fmt.tokenizer)().tokenize
    return Normalizer(fmt, pattern, tokenize)


# -- streaming -------------------------------------------------------------------


def iter_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 text file without their line ends (``\\n`` or ``\\r\\n``), one at a time.

    A final line without a newline counts; a trailing newline does not add an empty line.
    """
    from ..core.textinput import cr_only_message, encoding_problem, nul_message

    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise TextFileError(f"cannot read {path}: {exc.strerror}") from None
    with fh:
        problem = encoding_problem(fh.peek(4096)[:4096] if hasattr(fh, "peek") else b"")
        if problem:
            raise TextFileError(f"{path} {problem}")
        for lineno, raw in enumerate(fh, 1):
            if lineno == 1 and not raw.endswith(b"\n") and b"\r" in raw:
                raise TextFileError(cr_only_message(str(path)))
            if raw.endswith(b"\n"):
                raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TextFileError(f"{path}: line {lineno} is not UTF-8 text ({exc.reason})") from None
            if "\x00" in text:
                raise TextFileError(nul_message(str(path), lineno, text.index("\x00") + 1))
            yield text[1:] if lineno == 1 and text.startswith("\ufeff") else text


def batched(items: Iterable[Any], size: int | None) -> Iterator[list[Any]]:
    """Lists of ``size`` consecutive items (the last one shorter); ``size`` None: one list of everything."""
    if size is None:
        yield list(items)
        return
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def count_lines(path: Path) -> int:
    """Number of lines as :func:`iter_lines` yields them, read in binary chunks."""
    n = 0
    last = b"\n"
    try:
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(1 << 20)
                if not chunk:
                    break
                n += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError as exc:
        raise TextFileError(f"cannot read {path}: {exc.strerror}") from None
    if last != b"\n":
        n += 1
    return n


def file_sha256(path: Path) -> str:
    """Return the SHA-256 hex digest of a file; raise TextFileError if it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        raise TextFileError(f"cannot read {path}: {exc.strerror}") from None
    return h.hexdigest()


def iter_gold(path: Path, fmt: TextFormat) -> Iterator[list[str]]:
    """References per line of a gold file: ``*.jsonl`` lines ``{"references": [...]}``, else text."""
    norm = normalizer(fmt)
    if Path(path).suffix.lower() == ".jsonl":
        for lineno, line in enumerate(iter_lines(path), 1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TextFileError(f"{path}: line {lineno} is not valid JSON ({exc.msg})") from None
            refs = obj.get("references") if isinstance(obj, dict) else None
            if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
                raise TextFileError(
                    f'{path}: line {lineno} must be an object {{"references": ["...", ...]}} with at least one string'
                )
            yield [norm(r) for r in refs]
    else:
        for line in iter_lines(path):
            yield norm.references(line)


def iter_texts(path: Path, fmt: TextFormat) -> Iterator[str]:
    """Normalized sample (or input) lines."""
    norm = normalizer(fmt)
    for line in iter_lines(path):
        yield norm(line)


# -- documents (generator inputs) ---------------------------------------------------


def document_normalizer(fmt: TextFormat) -> Callable[[str], str]:
    """A callable ``document -> normalized document`` for generator inputs: the format applied to each
    sentence, with the declared ``sentence_separator`` kept (as `` SEP ``) so that a generator such as a
    summarizer still sees where sentences end."""
    sep = fmt.sentence_separator
    if not sep:
        return normalizer(fmt)
    inner = normalizer(replace(fmt, sentence_separator=None))
    joiner = f" {sep} "
    return lambda text: joiner.join(p for p in map(inner, text.split(sep)) if p)


def document_files(folder: Path) -> list[Path]:
    """The documents of an inputs folder: its ``*.txt`` files, sorted by name."""
    return sorted(p for p in Path(folder).iterdir() if p.suffix == ".txt" and p.is_file())


def iter_documents(path: Path, fmt: TextFormat) -> Iterator[str]:
    """Normalized generator inputs: one per line of a file, or one per ``*.txt`` file of a folder (its
    non-empty lines joined by the format's ``sentence_separator``, else by a space)."""
    norm = document_normalizer(fmt)
    if Path(path).is_dir():
        glue = f" {fmt.sentence_separator} " if fmt.sentence_separator else " "
        for file in document_files(path):
            yield norm(glue.join(line.strip() for line in iter_lines(file) if line.strip()))
    else:
        for line in iter_lines(path):
            yield norm(line)


def count_documents(path: Path) -> int:
    """How many documents :func:`iter_documents` yields."""
    return len(document_files(path)) if Path(path).is_dir() else count_lines(path)


def inputs_sha256(path: Path) -> str:
    """SHA-256 of an inputs file, or of an inputs folder's document names and contents."""
    if not Path(path).is_dir():
        return file_sha256(path)
    h = hashlib.sha256(b"cotk-repro/documents/v1\n")
    for file in document_files(path):
        h.update(file.name.encode("utf-8") + b"\0" + file_sha256(file).encode("ascii") + b"\n")
    return h.hexdigest()


def read_texts(path: Path, fmt: TextFormat) -> list[str]:
    """Read all sentences of a samples file, cleaned as `fmt` says."""
    return list(iter_texts(path, fmt))


def read_gold(path: Path, fmt: TextFormat) -> list[list[str]]:
    """Read a gold file as one list of references per line, cleaned as `fmt` says."""
    return list(iter_gold(path, fmt))
