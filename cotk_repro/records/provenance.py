"""Which local record folders this installation wrote: a mark that no repository, template or archive can carry.

A project's ``.cotk-repro/runs/`` can hold folders somebody else put there (committed to a template, a fork,
a merged pull request). ``publish`` signs and pushes the record it picks, so it must never pick one of
those. When cotk-repro writes a record folder it writes :data:`MARK` beside ``record.json``: ``2:`` and the hex
HMAC-SHA256, under a random key of this user's kept outside every project (``provenance.key`` in the user
data dir, mode 0600, made on first use), of the project's resolved root and ``record.json``'s bytes. Only a
folder whose mark matches *in this project* is this installation's; ``publish``, ``runs`` and ``show`` read
no other. Binding the project matters: a committed ``.cotk-repro`` that is a symbolic link to another
project's (refused anyway by :class:`.store.RunStore`) or a copy of it carries genuine marks, but of the
other project.

Marks made before (the bare hex HMAC of ``record.json`` alone) are re-made, bound to the project, the
first time the project reads the folder (:func:`written_here`): such a folder was written by this
installation, and reaching it now needs a ``.cotk-repro`` that is a real folder of the project.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

MARK = ".written-here"
KEY_NAME = "provenance.key"
_DOMAIN = b"cotk-repro record folder\0"
_DOMAIN_V2 = b"cotk-repro record folder in project\0"
#: the prefix of a mark bound to its project
VERSION = "2:"


def _key_path() -> Path:
    from ..core.userconfig import data_dir

    return data_dir() / KEY_NAME


def _key(create: bool) -> bytes | None:
    path = _key_path()
    try:
        data = path.read_bytes()
        return data if len(data) >= 32 else None
    except FileNotFoundError:
        if not create:
            return None
    except OSError:
        return None
    try:  # a new key, published with a hard link so that a concurrent reader never sees half of it
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{KEY_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        finally:
            tmp.unlink(missing_ok=True)
        return path.read_bytes()
    except OSError:
        return None


def _digest(key: bytes, record_json: bytes) -> str:
    """The mark of versions before project binding (``record.json`` only): read, never written."""
    return hmac.new(key, _DOMAIN + record_json, hashlib.sha256).hexdigest()


def _bound_digest(key: bytes, root: Path, record_json: bytes) -> str:
    where = str(Path(root).resolve()).encode("utf-8", "surrogateescape")
    message = _DOMAIN_V2 + len(where).to_bytes(4, "big") + where + record_json
    return VERSION + hmac.new(key, message, hashlib.sha256).hexdigest()


def mark(folder: Path, record_json: bytes, root: Path) -> bool:
    """Mark ``folder`` (its ``record.json`` holds ``record_json``) as written here, for the project at ``root``;
    False when the key cannot be made (the record then stays local: publish refuses it with a sentence)."""
    key = _key(create=True)
    if key is None:
        return False
    (folder / MARK).write_text(_bound_digest(key, root, record_json) + "\n", encoding="ascii")
    return True


def written_here(folder: Path, record_json: bytes, root: Path) -> bool:
    """Whether ``folder``'s mark matches ``record_json`` in the project at ``root`` under this user's key (a
    mark of an earlier version that matches ``record_json`` is re-made bound to ``root``)."""
    from ..core.safe_read import UnsafeFileError, read_regular

    key = _key(create=False)
    if key is None:
        return False
    try:
        found = read_regular(folder / MARK, 256).decode("ascii", "replace").strip()
    except (OSError, UnsafeFileError):
        return False
    if found.startswith(VERSION):
        return hmac.compare_digest(found, _bound_digest(key, root, record_json))
    if not hmac.compare_digest(found, _digest(key, record_json)):
        return False
    try:  # an earlier version's mark, genuine: bind it to this project from now on
        (folder / MARK).write_text(_bound_digest(key, root, record_json) + "\n", encoding="ascii")
    except OSError:
        pass
    return True
