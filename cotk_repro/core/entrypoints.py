"""Entry points of one group, read from the distributions' own files on the import path.

Every command loads the plugins, and :func:`importlib.metadata.entry_points` reads every installed
distribution through the email parser (25 ms here, a tenth of `cotk-repro run`'s overhead) to find the few
that declare ``[cotk_repro]``. This reads only the ``entry_points.txt`` of each ``*.dist-info`` /
``*.egg-info`` folder, and the name and version headers of the distributions that declare the group.
Like importlib.metadata, the first distribution of a (normalized) name on the path wins, a name read from
the folder's stem. Where it cannot tell (an import-path entry that is a zip archive, or an egg), :func:`scan`
returns None and the caller asks importlib.metadata.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

_NORMALIZE = re.compile(r"[-_.]+")
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(?::\s*(?P<attr>[\w.]+)\s*)?(?:\[.*\]\s*)?$")


@dataclass(frozen=True)
class EntryPoint:
    """One declared entry point: its distribution's name and version, its name and its ``module:attr`` value."""

    dist: str
    version: str
    name: str
    value: str

    def load(self) -> Any:
        """Import the module and return the attribute the value names (as importlib.metadata's ``load``)."""
        match = _VALUE.match(self.value.strip())
        if match is None:
            raise ValueError(f"malformed entry point value {self.value!r}")
        obj: Any = importlib.import_module(match.group("module"))
        for part in filter(None, (match.group("attr") or "").split(".")):
            obj = getattr(obj, part)
        return obj


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """``name = value`` pairs of the ``[group]`` section of an ``entry_points.txt`` (INI, as setuptools writes it)."""
    out: list[tuple[str, str]] = []
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
        elif current == group and "=" in line:
            name, value = line.split("=", 1)
            out.append((name.strip(), value.strip()))
    return out


def name_and_version(metadata: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from a METADATA / PKG-INFO text, read from its headers only.

    ``importlib.metadata``'s ``dist.metadata`` parses the whole file (long descriptions included) with the
    email parser; the two headers come before the first blank line.
    """
    name = version = None
    end = metadata.find("\n\n")
    for line in (metadata if end < 0 else metadata[:end]).splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "name" and name is None:
            name = value.strip()
        elif key == "version" and version is None:
            version = value.strip()
        if name and version:
            break
    return name, version


def read_text(path: str, *, stop_at: bytes | None = None) -> str | None:
    """A small file's text (UTF-8, bad bytes replaced), or None when it cannot be read; with ``stop_at``, only
    as far as the first block that holds it. Plain ``os.read``: a text-mode ``open`` costs 4x as much, which
    shows when a run reads two files of each of ~200 distributions."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = b""
        while True:
            block = os.read(fd, 8192)
            data += block
            if not block or (stop_at is not None and stop_at in data):
                return data.decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def read_metadata(folder: str, *, headers_only: bool = False) -> str:
    """The METADATA (or PKG-INFO) text of a ``*.dist-info`` / ``*.egg-info`` folder, "" when unreadable.

    With ``headers_only``, the text up to the first blank line, and at most a block more: the long description
    that follows is most of the bytes (2 MB over 176 distributions here).
    """
    for path in (os.path.join(folder, "METADATA"), os.path.join(folder, "PKG-INFO")):
        text = read_text(path, stop_at=b"\n\n" if headers_only else None)
        if text is not None:
            return text
    return ""


def normalize_name(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return _NORMALIZE.sub("-", name).lower()


def _stem_name(folder_name: str) -> str:
    """``my_plugin-0.1.dist-info`` -> ``my_plugin``; ``dev.egg-info`` -> ``dev``."""
    return folder_name.rsplit(".", 1)[0].split("-")[0]


def metadata_folders(path: list[str] | None = None) -> list[str] | None:
    """Every ``*.dist-info`` / ``*.egg-info`` on ``path`` (default ``sys.path``), in import order, each folder's
    entries sorted; None where it cannot tell (a zip archive or an egg on the path: importlib.metadata reads those)."""
    out: list[str] = []
    for entry in sys.path if path is None else path:
        folder = entry or "."
        try:
            names = sorted(os.listdir(folder))
        except NotADirectoryError:
            return None
        except OSError:
            continue  # missing or unreadable: importlib.metadata finds nothing there either
        for name in names:
            lowered = name.lower()
            if lowered.endswith(".egg"):
                return None  # an egg (folder or file) keeps its metadata in EGG-INFO
            if lowered.endswith((".dist-info", ".egg-info")):
                out.append(os.path.join(folder, name))
    return out


def scan(group: str, path: list[str] | None = None) -> list[EntryPoint] | None:
    """Every entry point of ``group`` declared on ``path`` (default ``sys.path``); None where it cannot tell."""
    folders = metadata_folders(path)
    if folders is None:
        return None
    needle = f"[{group}]"
    seen: set[str] = set()
    out: list[EntryPoint] = []
    for info in folders:
        name = os.path.basename(info)
        key = normalize_name(_stem_name(name))
        if key in seen:
            continue  # an earlier folder on the path has this distribution: that one is imported
        seen.add(key)
        text = read_text(os.path.join(info, "entry_points.txt"))
        if text is None or needle not in text:
            continue
        dist, version = name_and_version(read_metadata(info, headers_only=True))
        for ep_name, value in _section(text, group):
            out.append(EntryPoint(dist or _stem_name(name), version or "unknown", ep_name, value))
    return out
