"""Build wheels from source inside a container: the only place a package's build code runs.

sdist-only packages and the record's local / editable packages have build backends,
which are code of whoever wrote the record. They run here: in a container of the same
base image as the reproduction, without network, as ``nobody``, with CPU, memory,
process, disk and time limits (:mod:`.container`). The host only downloads the build requirements as *binary*
wheels (``pip download --only-binary=:all:``, which runs nothing) and copies the
source in; the finished wheel is copied out and checked to be the package asked for.
"""

from __future__ import annotations

import re
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ReproduceError
from .container import Confined
from .engine import NOBODY
from .lock import Package

#: what pip assumes for a project without [build-system] (PEP 518)
DEFAULT_BUILD_REQUIRES = ["setuptools>=40.8.0", "wheel"]
_OWNER = 65534


def build_requirements(source: Path) -> list[str]:
    """``[build-system] requires`` of a source folder or sdist archive, validated (no URLs)."""
    from packaging.requirements import InvalidRequirement, Requirement

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    text = _pyproject_text(source)
    if text is None:
        return list(DEFAULT_BUILD_REQUIRES)
    try:
        requires = tomllib.loads(text).get("build-system", {}).get("requires")
    except ValueError as exc:
        raise ReproduceError(
            f"the pyproject.toml of {source.name} is not valid TOML ({exc})", step="sandbox build"
        ) from None
    if requires is None:
        return list(DEFAULT_BUILD_REQUIRES)
    out = []
    for item in requires if isinstance(requires, list) else [requires]:
        try:
            req = Requirement(str(item))
        except InvalidRequirement:
            raise ReproduceError(
                f"the build requirement {str(item)[:80]!r} of {source.name} is not a valid requirement",
                step="sandbox build",
            ) from None
        if req.url:
            raise ReproduceError(
                f"the build requirement {str(item)[:80]!r} of {source.name} is a URL; only index packages are fetched",
                step="sandbox build",
            )
        out.append(str(req))
    return out


def _pyproject_text(source: Path) -> str | None:
    if source.is_dir():
        p = source / "pyproject.toml"
        return p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None
    if source.name.endswith(".tar.gz"):
        with tarfile.open(source) as tar:
            for m in tar:
                if m.isfile() and m.name.count("/") == 1 and m.name.endswith("/pyproject.toml"):
                    fh = tar.extractfile(m)
                    return fh.read().decode("utf-8", "replace") if fh else None
    return None


def _owned(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (info.isfile() or info.isdir() or info.issym()):
        return None
    info.uid = info.gid = _OWNER
    info.uname = info.gname = ""
    return info


def _context(tar: tarfile.TarFile, source: Path, deps: list[Path]) -> None:
    """The build's input under /build (the container's size-capped scratch volume): deps/, src/, out/."""
    for d in ("out", "deps", "src"):
        info = tarfile.TarInfo(d)
        info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, _OWNER, _OWNER
        tar.addfile(info)
    for w in deps:
        tar.add(str(w), arcname=f"deps/{w.name}", filter=_owned)
    if source.is_dir():
        tar.add(str(source), arcname="src/project", filter=_owned)
    else:
        tar.add(str(source), arcname=f"src/{source.name}", filter=_owned)


@dataclass
class SandboxBuilder:
    """Builds wheels in containers of ``image`` with the reproduction's limits (:mod:`.container`: read-only
    root, /build and /tmp size-capped tmpfs, output kept to a tail, the wheel streamed out with a cap)."""

    client: Any
    image: str
    timeout: float
    memory: str
    cpus: float
    python_mm: str
    disk: str = "1g"

    def build(self, pkg: Package, source: Path, deps: list[Path], dest: Path, log: Path) -> Path:
        """Build ``pkg`` from ``source`` (a folder or an sdist) into ``dest``; returns the wheel."""
        from .limits import size_bytes

        target = "/build/src/project" if source.is_dir() else f"/build/src/{source.name}"
        script = (
            "python3 -m venv /tmp/b && /tmp/b/bin/python -m pip wheel --use-pep517 --no-deps --no-index "
            f"--find-links /build/deps --wheel-dir /build/out {target}"
        )
        step = f"sandbox build of {pkg.name}"
        box = Confined(
            self.client,
            self.image,
            kind="build",
            timeout=self.timeout,
            memory=self.memory,
            cpus=self.cpus,
            disk=self.disk,
            home="/build",
            user=NOBODY,
        )
        try:
            box.start(step)
            box.put("/build", lambda tar: _context(tar, source, deps), log.parent, step)
            res = box.exec(
                ["/bin/sh", "-c", script],
                workdir="/build",
                step=step,
                tail=256 * 1024,
                environment={
                    "HOME": "/tmp",
                    "PIP_NO_INPUT": "1",
                    "PIP_NO_CACHE_DIR": "1",
                    "PIP_CONFIG_FILE": "/dev/null",
                    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                },
            )
            text = res.stdout.text() + res.stderr.text()
            with log.open("a", encoding="utf-8") as fh:
                fh.write(f"$ (sandbox {self.image}) {script}\n{text}\n")
            tail = "\n".join(text.strip().splitlines()[-25:]) or None
            if res.timed_out:
                raise ReproduceError(
                    f"building a wheel of {pkg.pin} in the sandbox ran past the time limit of "
                    f"{self.timeout:g} s ({res.seconds:.0f} s) and was stopped",
                    log=tail,
                    step=step,
                    hint="raise it with --timeout SECONDS",
                )
            if res.disk_full:
                raise ReproduceError(
                    f"building a wheel of {pkg.pin} in the sandbox ran out of disk space (limit "
                    f"{self.disk} for /build and for /tmp)",
                    log=tail,
                    step=step,
                    hint="raise it with --disk, e.g. --disk 4g",
                )
            if res.oom:
                raise ReproduceError(
                    f"building a wheel of {pkg.pin} in the sandbox ran out of memory (limit {self.memory})",
                    log=tail,
                    step=step,
                    hint="raise it with --memory",
                )
            if res.rc != 0:
                raise ReproduceError(
                    f"building a wheel of {pkg.pin} in the sandbox failed (exit {res.rc}; full log: {log})",
                    log=tail,
                    step=step,
                )
            box.freeze()
            found = box.copy_files(
                "/build/out",
                lambda m: _wheel_destination(m, pkg, dest),
                size_bytes(self.disk) or 0,
                f"the wheel of {pkg.pin}",
                step,
            )
        finally:
            box.remove()
        if not found:
            raise ReproduceError(f"the sandbox build of {pkg.pin} produced no wheel", step=step)
        return found[0]


def _wheel_destination(member: tarfile.TarInfo, pkg: Package, dest: Path) -> Path | None:
    """Where a file of the build's output goes: the wheel of ``pkg`` into ``dest``; anything else nowhere
    (a wheel of another package or version is refused)."""
    from packaging.utils import InvalidWheelFilename, canonicalize_version, parse_wheel_filename

    base = member.name.rsplit("/", 1)[-1]
    if not (base.endswith(".whl") and re.fullmatch(r"[\w.+!-]+", base)):
        return None
    try:
        name, version, _build, _tags = parse_wheel_filename(base)
    except InvalidWheelFilename:
        return None
    if name != pkg.name or canonicalize_version(version) != canonicalize_version(pkg.version):
        raise ReproduceError(
            f"the sandbox build of {pkg.pin} produced {base}, a wheel of another package or version",
            step=f"sandbox build of {pkg.name}",
        )
    return dest / base
