"""A wheel of the cotk-repro that runs, when it was installed from a wheel (not run from a source tree).

A record made by a cotk-repro installed from a local wheel file lists it as a ``local`` install
(PEP 610). Its source tree is not on this machine, and the wheel file it came from may be gone;
but the installed files are exactly the wheel's files (``RECORD`` lists them with their hashes).
This module packs them again into a wheel: the package and the ``*.dist-info`` metadata, without
what the installer added (``INSTALLER``, ``REQUESTED``, ``direct_url.json``, the console scripts
it generated, byte code). Same files, same hashes: the reproduction installs the same cotk-repro.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path
from typing import Any

from .._version import __version__

#: what an installer writes into a dist-info folder (not part of the wheel)
_INSTALLER_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
_EPOCH = (1980, 1, 1, 0, 0, 0)


def installed_self() -> Any | None:
    """The importlib.metadata distribution of the running cotk-repro, when it is the installed one."""
    import importlib.metadata as md

    try:
        dist = md.distribution("cotk-repro")
    except md.PackageNotFoundError:
        return None
    here = Path(__file__).resolve().parents[1] / "__init__.py"
    try:
        if Path(str(dist.locate_file("cotk_repro/__init__.py"))).resolve() != here or dist.version != __version__:
            return None
    except OSError:
        return None
    return dist


def _members(dist: Any) -> list[tuple[str, Path]]:
    """(path in the wheel, file on disk) of every installed file that came from the wheel."""
    info = None
    out = []
    for f in dist.files or []:
        rel = f.as_posix()
        if rel.startswith("../") or rel.startswith("/") or "__pycache__" in rel or rel.endswith((".pyc", ".pyo")):
            continue  # scripts the installer generated, byte code
        top, _, rest = rel.partition("/")
        if top.endswith(".dist-info"):
            info = top
            if rest in _INSTALLER_FILES:
                continue
        out.append((rel, Path(dist.locate_file(rel))))
    if info is None:
        raise OSError(f"the installed {dist.metadata['Name']} has no .dist-info folder in its RECORD")
    return sorted(out)


def fingerprint(dist: Any) -> str:
    """SHA-256 (16 hex digits) over the installed files' paths and contents."""
    h = hashlib.sha256(__version__.encode())
    for rel, path in _members(dist):
        data = path.read_bytes()
        h.update(f"{rel}:{len(data)}\n".encode())
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


def _tag(dist: Any) -> str:
    text = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
    return tags[0] if tags else "py3-none-any"


def repack(dist: Any, dest: Path) -> Path:
    """Write the wheel of an installed distribution (here: the running cotk-repro) into ``dest``; its path."""
    members = _members(dist)
    info = next(rel.split("/", 1)[0] for rel, _ in members if rel.split("/", 1)[0].endswith(".dist-info"))
    dest.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    wheel = dest / f"{stem}-{dist.version}-{_tag(dist)}.whl"
    tmp = wheel.with_suffix(".part")
    record = []
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, path in members:
            data = path.read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{rel},sha256={digest},{len(data)}")
            zf.writestr(zipfile.ZipInfo(rel, date_time=_EPOCH), data)
        record.append(f"{info}/RECORD,,")
        zf.writestr(zipfile.ZipInfo(f"{info}/RECORD", date_time=_EPOCH), "\n".join(record) + "\n")
    tmp.replace(wheel)
    return wheel
