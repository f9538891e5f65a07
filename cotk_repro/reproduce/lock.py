"""The record's package list, validated before anything is fetched: data, never pip options.

A record is plain JSON its author can edit. Each package must be a canonical name
(PEP 503) with an exact version (PEP 440), both parsed with ``packaging``; a URL, an
``@``, a marker, extras, an option or anything else is refused (verdict ``could not
run``), naming the package. Only then do the names reach pip (as ``name==version``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.jsonbudget import shown
from . import ReproduceError

#: how a package was installed where the record was made (PEP 610); None: from an index
LOCAL_KINDS = ("editable", "local", "vcs", "url")
#: a record listing more packages than this is not installed (each is a download, a wheel and a line of the lock)
MAX_PACKAGES = 5000
_VERSION_CHARS = re.compile(r"[0-9A-Za-z.!+_-]+")


@dataclass(frozen=True)
class Package:
    """One validated entry of the lock."""

    name: str
    version: str
    install: str | None = None

    @property
    def local(self) -> bool:
        return self.install in LOCAL_KINDS

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"


def _refuse(name: Any, why: str) -> ReproduceError:
    return ReproduceError(
        f"the record's package {shown(name[:120] if isinstance(name, str) else name, 120)} cannot be installed: {why}",
        step="lock",
        hint="a record lists packages as a canonical name and an exact version; this one was "
        "edited or made by another tool, so nothing of it was fetched or run",
    )


def validate_package(entry: Any) -> Package:
    """One ``{"name", "version", "install"?}`` entry as a :class:`Package`, or a ReproduceError naming it."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    if not isinstance(entry, dict):
        raise _refuse(entry, "it is not an object with a name and a version")
    name, version, install = entry.get("name"), entry.get("version"), entry.get("install")
    if (
        not isinstance(name, str)
        or not re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", name)
        or canonicalize_name(name) != name
    ):
        raise _refuse(
            name, "its name is not a canonical package name (PEP 503: lower case letters, digits and single hyphens)"
        )
    if not isinstance(version, str) or not _VERSION_CHARS.fullmatch(version):
        raise _refuse(name, f"its version {shown(version)} is not an exact version number")
    try:
        Version(version)
    except InvalidVersion:
        raise _refuse(name, f"its version {shown(version)} is not a PEP 440 version") from None
    if install is not None and install not in LOCAL_KINDS:
        raise _refuse(name, f"its install kind {shown(install)} is not one of {', '.join(LOCAL_KINDS)}")
    return Package(name, version, install)


def validate_lock(packages: Any) -> list[Package]:
    """Every package of ``environment.packages`` validated; duplicates refused."""
    if not isinstance(packages, list):
        raise ReproduceError("the record's environment.packages is not a list", step="lock")
    if len(packages) > MAX_PACKAGES:
        raise ReproduceError(
            f"the record lists {len(packages):,} packages, more than the {MAX_PACKAGES:,} a reproduction installs",
            step="lock",
        )
    out, seen = [], set()
    for entry in packages:
        pkg = validate_package(entry)
        if pkg.name in seen:
            raise _refuse(pkg.name, "it is listed twice")
        seen.add(pkg.name)
        out.append(pkg)
    return out


def validate_python(environment: Any) -> str:
    """The record's Python as ``X.Y`` (digits only: it reaches pip's options and the Dockerfile)."""
    py = environment.get("python") if isinstance(environment, dict) else None
    mm = None
    if isinstance(py, dict):
        mm = py.get("major_minor") or ".".join(str(py.get("version") or "").split(".")[:2])
    if not isinstance(mm, str) or not re.fullmatch(r"[23]\.[0-9]{1,2}", mm):
        raise ReproduceError(f"the record's Python version {str(mm)[:40]!r} is not a version like 3.11", step="lock")
    return mm


def lock_text(packages: list[Package]) -> str:
    """The pip requirements file of the index packages (``name==version`` lines only)."""
    lines = ["# cotk-repro lock, validated by the reproducer"]
    lines += [p.pin for p in packages if not p.local]
    return "\n".join(lines) + "\n"
