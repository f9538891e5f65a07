"""Content hashes of model and tokenizer files, cached by path, size and modification time.

A model's identity is the SHA-256 of its weights (``*.safetensors``), a tokenizer's the SHA-256 of its
files; names, not paths, enter the hash, so the same files give the same hash on any machine. Hashing a
large checkpoint takes seconds, so each file's digest is cached (in memory and in
``<cache_dir>/lm-file-hashes.json``) under its absolute path, size and ``st_mtime_ns``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from cotk_repro.core.canonical import hash_object

_MEMO: dict[str, str] = {}
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
)


def _cache_file() -> Path | None:
    try:
        from cotk_repro.core.userconfig import cache_dir
    except ImportError:  # pragma: no cover - an older core
        return None
    return Path(cache_dir()) / "lm-file-hashes.json"


def _load_disk() -> dict[str, str]:
    path = _cache_file()
    if path is None or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_disk(entries: dict[str, str]) -> None:
    path = _cache_file()
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs time


def file_sha256(path: Path) -> str:
    """SHA-256 of one file's bytes, cached by (absolute path, size, mtime)."""
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    if key in _MEMO:
        return _MEMO[key]
    disk = _load_disk()
    if key not in disk:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        disk[key] = h.hexdigest()
        _save_disk(disk)
    _MEMO[key] = disk[key]
    return disk[key]


def files_hash(label: str, files: Iterable[Path], *, name: str | None = None) -> str:
    """One hash over ``{file name: sha256}`` of ``files`` (just the names, never the folders; ``name``
    replaces the name of a single file, e.g. ``tokenizer.json`` for a renamed tokenizer file)."""
    files = list(files)
    if name is not None and len(files) == 1:
        digests = {name: file_sha256(files[0])}
    else:
        digests = {p.name: file_sha256(p) for p in sorted(files, key=lambda p: p.name)}
    return hash_object({"cotk-repro-lm/files": label, "files": digests})


def json_fields_hash(path: Path, drop: Iterable[str]) -> str:
    """One hash over a JSON file's content less the keys ``drop`` (at any depth): its values, never its layout or
    key order. ValueError (one line) when it is not readable JSON."""
    dropped = frozenset(drop)

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in dropped}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{Path(path).name} is not readable JSON: {exc}") from None
    return hash_object({"cotk-repro-lm/json": Path(path).name, "content": strip(data)})


def weight_files(folder: Path) -> list[Path]:
    return sorted(Path(folder).glob("*.safetensors"))


def tokenizer_files(folder: Path) -> list[Path]:
    return [Path(folder) / n for n in TOKENIZER_FILES if (Path(folder) / n).is_file()]
