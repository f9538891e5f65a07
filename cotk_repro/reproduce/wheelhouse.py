"""The wheelhouse: the record's validated packages as wheels, cached, reused; nothing built on the host.

The host only downloads **binary** wheels of index packages
(``pip download --only-binary=:all: --no-deps``, which runs no build backend) into a
pool under the user cache dir, one pool per Python version and machine:
``<cache>/wheelhouse/cp311-x86_64/``. Only the wheels a lock needs and the pool lacks
are downloaded; a second reproduce downloads nothing.

What needs building runs somebody else's build code, so it is built by a *builder*:

* an index package with no wheel: its sdist is looked up and downloaded (never
  prepared by pip, see :mod:`.sdist`), then built;
* an editable / local / VCS / URL install: built from the checkout when a project
  there has that name (its folder inside the checkout), from this cotk-repro's own
  source when it is cotk-repro or one of its first-party plugins (``plugins/<dist>/``)
  of the same version (our code, built here), from this cotk-repro's installed files
  when it was installed from a wheel (:mod:`.selfwheel`), else
  taken from the index as a binary wheel when that version was released.

The docker runtime's builder is :class:`.sandbox.SandboxBuilder` (a container without
network). The venv runtime has none: it builds on this host only when the user passed
``--trust-remote-code``, and otherwise says to use docker.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..capture.environment import normalize_name
from ..core.git import tail
from ..core.userconfig import cache_dir
from . import ReproduceError
from .lock import Package


def _norm_version(v: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        return str(Version(v))
    except InvalidVersion:
        return v


def split_packages(packages: list[Package]) -> tuple[list[Package], list[Package]]:
    """Split the record's packages into (index packages, local packages)."""
    return [p for p in packages if not p.local], [p for p in packages if p.local]


def pool_dir(python_mm: str) -> Path:
    """Return the cache folder of downloaded wheels for Python `X.Y` on this machine type."""
    tag = "cp" + python_mm.replace(".", "")
    return cache_dir() / "wheelhouse" / f"{tag}-{platform.machine().lower()}"


def wheel_key(filename: str) -> tuple[str, str] | None:
    """Return (normalized name, version) from a wheel file name, or None if it is not a wheel."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[:-4].split("-")
    if len(parts) < 5:
        return None
    return normalize_name(parts[0]), _norm_version(parts[1])


def pool_index(pool: Path) -> dict[tuple[str, str], Path]:
    """Map (name, version) to the wheel file for every wheel in the folder `pool`."""
    found: dict[tuple[str, str], Path] = {}
    if pool.is_dir():
        for f in pool.iterdir():
            key = wheel_key(f.name)
            if key:
                found.setdefault(key, f)
    return found


def host_mm() -> str:
    """Return this interpreter's Python version as `X.Y`."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _pip(args: list[str], log: Path, step: str, what: str, *, check: bool = True) -> int:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    with log.open("ab") as fh:
        fh.write(("$ " + " ".join(cmd) + "\n").encode())
        fh.flush()
        proc = subprocess.run(  # noqa: S603 - pip download commands built here; package specs passed validate_lock (canonical name==version)
            cmd, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, "PIP_NO_INPUT": "1"}, check=False
        )
    if proc.returncode != 0 and check:
        text = log.read_text(encoding="utf-8", errors="replace")
        raise ReproduceError(
            f"{what} failed (pip exited with status {proc.returncode}; full log: {log})", log=tail(text, 25), step=step
        )
    return proc.returncode


def download_binary(pins: list[str], dest: Path, python_mm: str, log: Path, *, deps: bool = False) -> int:
    """``pip download --only-binary=:all:``: wheels only, so no build backend runs on this host."""
    return _pip(
        [
            "download",
            "--only-binary=:all:",
            *([] if deps else ["--no-deps"]),
            "--python-version",
            python_mm,
            "--dest",
            str(dest),
            *pins,
        ],
        log,
        "wheel download",
        "downloading the recorded packages",
        check=False,
    )


def ensure_index_wheels(
    packages: list[Package], python_mm: str, log: Path, on_status: Callable[[str], None] = lambda _m: None
) -> tuple[dict[tuple[str, str], Path], list[Package]]:
    """The binary wheels of ``packages`` in the pool: (key -> wheel, the packages that have none)."""
    from ..core.filelock import locked

    pool = pool_dir(python_mm)
    pool.mkdir(parents=True, exist_ok=True)
    have = pool_index(pool)
    missing = [p for p in packages if (p.name, _norm_version(p.version)) not in have]
    if missing:
        # one download into the pool at a time (two reproductions at once): pip copies a wheel into --dest in
        # place, and the other process must never index a half-copied one
        with locked(pool.with_name(pool.name + ".lock")):
            have = pool_index(pool)
            missing = [p for p in packages if (p.name, _norm_version(p.version)) not in have]
            if missing:
                on_status(f"downloading {len(missing)} of {len(packages)} recorded packages into {pool}")
                if download_binary([p.pin for p in missing], pool, python_mm, log) != 0 and len(missing) > 1:
                    for p in missing:  # one unavailable package fails the batch: fetch the others one by one
                        if (p.name, _norm_version(p.version)) not in pool_index(pool):
                            download_binary([p.pin], pool, python_mm, log)
            have = pool_index(pool)
    found = {
        (p.name, _norm_version(p.version)): have[(p.name, _norm_version(p.version))]
        for p in packages
        if (p.name, _norm_version(p.version)) in have
    }
    return found, [p for p in packages if (p.name, _norm_version(p.version)) not in have]


# -- editable / local installs ---------------------------------------------------


def _pyproject(folder: Path) -> dict[str, Any]:
    """The folder's pyproject.toml as a dict (empty when it is missing or unreadable)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return {}


def _project_name(folder: Path) -> str | None:
    name = _pyproject(folder).get("project", {}).get("name")
    if name:
        return normalize_name(name)
    cfg = folder / "setup.cfg"
    if cfg.is_file():
        m = re.search(r"^\s*name\s*=\s*(\S+)", cfg.read_text(encoding="utf-8", errors="replace"), re.M)
        if m:
            return normalize_name(m.group(1))
    setup = folder / "setup.py"
    if setup.is_file():
        m = re.search(r"name\s*=\s*['\"]([^'\"]+)['\"]", setup.read_text(encoding="utf-8", errors="replace"))
        if m:
            return normalize_name(m.group(1))
    return None


def find_in_checkout(code: Path, name: str, depth: int = 3) -> Path | None:
    """The folder of the checkout whose Python project is called ``name``."""
    root = code.resolve()
    todo = [(code, 0)]
    while todo:
        folder, d = todo.pop(0)
        if folder.is_symlink() or not folder.resolve().is_relative_to(root):
            continue
        if _project_name(folder) == name:
            return folder
        if d < depth:
            try:
                subs = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
            except OSError:
                continue
            todo.extend((p, d + 1) for p in subs if p.name not in ("node_modules", "venv", "site-packages"))
    return None


def self_source() -> Path | None:
    """This cotk-repro's source tree, when it runs from one (editable install or checkout)."""
    root = Path(__file__).resolve().parents[2]
    if _project_name(root) == "cotk-repro" and (root / "cotk_repro").is_dir():
        return root
    return None


def self_fingerprint() -> str:
    """An identity of this cotk-repro's source: its version and the content of its files.

    Content, not modification times, so that a touch or a fresh checkout of the same
    source keeps the cached wheel (and the images and venvs built with it).
    """
    root = self_source()
    h = hashlib.sha256(__version__.encode())
    if root is not None:
        h.update(_tree_digest(root, ("cotk_repro", "templates")).encode())
        h.update((root / "pyproject.toml").read_bytes())
    else:
        from .selfwheel import fingerprint, installed_self

        dist = installed_self()
        if dist is not None:  # installed from a wheel: the installed files are its content
            h.update(fingerprint(dist).encode())
    return h.hexdigest()[:16]


def _tree_digest(root: Path, subs: tuple[str, ...]) -> str:
    """SHA-256 over the paths and contents of the files under ``root/sub`` (byte code left out)."""
    h = hashlib.sha256()
    for sub in subs:
        for p in sorted((root / sub).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"):
                try:
                    data = p.read_bytes()
                except OSError:
                    continue
                h.update(f"{p.relative_to(root).as_posix()}:{len(data)}\n".encode())
                h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def first_party_plugin(name: str, version: str) -> Path | None:
    """The folder of a first-party plugin (``plugins/<dist>/`` of this cotk-repro's source) with that name and version.

    A user who installed one from the source tree (``pip install -e plugins/...``) records it as
    an editable install; it is rebuilt from here, like cotk-repro itself.
    """
    root = self_source()
    if root is None or not (root / "plugins").is_dir():
        return None
    for folder in sorted(p for p in (root / "plugins").iterdir() if p.is_dir()):
        if _project_name(folder) == name and _project_version(folder) == _norm_version(version):
            return folder
    return None


def _project_version(folder: Path) -> str | None:
    meta = _pyproject(folder)
    version = meta.get("project", {}).get("version")
    path = meta.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
    if version is None and isinstance(path, str):  # dynamic: hatch reads __version__ from a file of the plugin
        try:
            m = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", (folder / path).read_text(encoding="utf-8"), re.M)
        except OSError:
            m = None
        version = m.group(1) if m else None
    return _norm_version(version) if isinstance(version, str) else None


def local_identity(local: list[Package], tree: str) -> list[str]:
    """What decides the local wheels' content, for image/venv cache keys (no building)."""
    ids = []
    for p in local:
        plugin = first_party_plugin(p.name, p.version)
        if p.name == "cotk-repro":
            ids.append(f"cotk-repro=={p.version}@self:{self_fingerprint()}")
        elif plugin is not None:
            ids.append(f"{p.pin}@plugin:{_tree_digest(plugin, ('.',))[:16]}")
        else:
            ids.append(f"{p.pin}@tree:{tree}")
    return ids


def _cached_wheel(dest: Path) -> Path | None:
    cached = sorted(dest.glob("*.whl")) if dest.is_dir() else []
    return cached[0] if cached else None


def _host_wheel(src: Path, dest: Path, log: Path, pkg: Package) -> Path:
    """``pip wheel`` on this host: only for code the user trusts (this cotk-repro, --trust-remote-code).

    Two processes at once (two reproductions, two test workers) build one source once: pip builds in the source
    folder (``build/``), so builds of one source are serialised by a lock named after its path, and the wheel is
    built into a folder of its own and moved into ``dest`` whole (a reader never globs a half-copied wheel)."""
    from ..core.filelock import locked

    def found() -> list[Path]:
        return [w for w in dest.glob("*.whl") if (key := wheel_key(w.name)) and key[0] == pkg.name]

    source_lock = cache_dir() / "locks" / f"wheel-{hashlib.sha256(str(src.resolve()).encode()).hexdigest()[:16]}"
    with locked(source_lock):
        if wheels := found():  # another process built it while this one waited
            return wheels[0]
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".build-") as tmp:
            _pip(
                ["wheel", "--no-deps", "--wheel-dir", tmp, str(src)],
                log,
                "local wheel build",
                f"building a wheel of {pkg.pin} from {src}",
            )
            dest.mkdir(parents=True, exist_ok=True)
            for built in Path(tmp).glob("*.whl"):
                os.replace(built, dest / built.name)
        wheels = found()
    if not wheels:
        raise ReproduceError(f"building a wheel of {pkg.name} from {src} produced no wheel", step="local wheel build")
    return wheels[0]


@dataclass
class Builders:
    """Who may build what: ``sandbox`` (a :class:`.sandbox.SandboxBuilder`) or, with the user's
    ``--trust-remote-code``, this host."""

    python_mm: str
    log: Path
    sandbox: Any = None
    trust_host: bool = False
    on_status: Callable[[str], None] = lambda _m: None

    def build(self, pkg: Package, source: Path, dest: Path, why: str) -> Path:
        """A wheel of ``pkg`` built from ``source`` (folder or sdist) into ``dest``."""
        if self.sandbox is not None:
            from .sandbox import build_requirements

            self.on_status(f"building a wheel of {pkg.pin} ({why}) in the sandbox")
            deps = self.build_deps(build_requirements(source))
            return self.sandbox.build(pkg, source, deps, dest, self.log)
        if self.trust_host:
            self.on_status(f"building a wheel of {pkg.pin} ({why}) on this host (--trust-remote-code)")
            return _host_wheel(source, dest, self.log, pkg)
        raise ReproduceError(
            f"the record's package {pkg.pin} ({why}) has to be built, which runs its build code; "
            "the venv runtime has no sandbox to build it in",
            step="local wheel build",
            hint="use --runtime docker (it builds in a container without network), or pass "
            "--trust-remote-code to build it on this host",
        )

    def build_deps(self, requires: list[str]) -> list[Path]:
        """The build requirements as binary wheels (with their dependencies), cached per set."""
        key = hashlib.sha256("\n".join(sorted(requires)).encode()).hexdigest()[:16]
        dest = pool_dir(self.python_mm).with_name(pool_dir(self.python_mm).name + "-build") / key
        from ..core.filelock import locked

        if not (dest / ".complete").is_file():
            with locked(dest.with_name(dest.name + ".lock")):  # another process may be downloading the same set
                if not (dest / ".complete").is_file():
                    dest.mkdir(parents=True, exist_ok=True)
                    self.on_status(f"downloading the build requirements {', '.join(requires)}")
                    if download_binary(requires, dest, self.python_mm, self.log, deps=True) != 0:
                        raise ReproduceError(
                            f"downloading the build requirements ({', '.join(requires)}) as wheels failed "
                            f"(full log: {self.log})",
                            log=tail(self.log.read_text(errors="replace"), 25),
                            step="wheel download",
                        )
                    (dest / ".complete").write_text("ok")
        return sorted(dest.glob("*.whl"))


def ensure_local_wheels(local: list[Package], code: Path, tree: str, builders: Builders) -> list[Path]:
    """Build (or reuse cached) wheels of the record's local packages; raise ReproduceError if one cannot be."""
    wheels = []
    for p in local:
        in_checkout = find_in_checkout(code, p.name)
        if in_checkout is not None:
            dest = cache_dir() / "local-wheels" / f"{p.name}-{p.version}-{tree[:16]}"
            wheels.append(_cached_wheel(dest) or builders.build(p, in_checkout, dest, f"{p.install} install"))
            continue
        if p.name == "cotk-repro" and p.version == __version__ and (source := self_source()) is not None:
            dest = cache_dir() / "local-wheels" / f"cotk-repro-{p.version}-{self_fingerprint()}"
            cached = _cached_wheel(dest)
            if cached is None:
                builders.on_status(f"building a wheel of cotk-repro {p.version} ({p.install} install) from {source}")
                cached = _host_wheel(source, dest, builders.log, p)
            wheels.append(cached)
            continue
        if p.name == "cotk-repro" and p.version == __version__:
            from .selfwheel import installed_self, repack

            dist = installed_self()
            if dist is not None:  # this cotk-repro, installed from a wheel: its installed files packed again
                dest = cache_dir() / "local-wheels" / f"cotk-repro-{p.version}-{self_fingerprint()}"
                cached = _cached_wheel(dest)
                if cached is None:
                    builders.on_status(f"packing the installed cotk-repro {p.version} ({p.install} install) as a wheel")
                    cached = repack(dist, dest)
                wheels.append(cached)
                continue
        plugin = first_party_plugin(p.name, p.version)
        if plugin is not None:  # ours too: built here, like cotk-repro
            dest = cache_dir() / "local-wheels" / f"{p.name}-{p.version}-{_tree_digest(plugin, ('.',))[:16]}"
            cached = _cached_wheel(dest)
            if cached is None:
                builders.on_status(f"building a wheel of the first-party plugin {p.pin} from {plugin}")
                cached = _host_wheel(plugin, dest, builders.log, p)
            wheels.append(cached)
            continue
        found, missing = ensure_index_wheels([p], builders.python_mm, builders.log, builders.on_status)
        if missing:  # maybe it was released meanwhile; it was not
            raise ReproduceError(
                f"the record's package {p.pin} was a {p.install} install that is neither in the checkout "
                f"nor on the package index, so it cannot be rebuilt",
                step="local wheel build",
                hint="its author can publish that package or add its source to the repository",
            )
        wheels.append(next(iter(found.values())))
    return wheels


def ensure_sdist_wheels(missing: list[Package], builders: Builders) -> dict[tuple[str, str], Path]:
    """Index packages without a wheel: their sdists downloaded (not prepared) and built by a builder."""
    from .sdist import fetch_sdist

    out = {}
    for p in missing:
        sdist = fetch_sdist(p.name, p.version, cache_dir() / "sdists")
        if sdist is None:
            raise ReproduceError(
                f"downloading the recorded packages failed: no wheel of {p.pin} for Python "
                f"{builders.python_mm} and no source distribution of it on the configured indexes "
                f"(full log: {builders.log})",
                log=tail(builders.log.read_text(errors="replace"), 25),
                step="wheel download",
            )
        out[(p.name, _norm_version(p.version))] = builders.build(
            p, sdist, pool_dir(builders.python_mm), "no wheel on the index"
        )
    return out


@dataclass
class Wheelhouse:
    """The wheels a rerun installs from: index wheels by (name, version) plus local ones."""

    index: dict[tuple[str, str], Path] = field(default_factory=dict)
    local: list[Path] = field(default_factory=list)

    def materialize(self, dest: Path) -> Path:
        """``dest/`` with the index wheels and ``dest/local/`` with the local ones (hard links when possible)."""
        dest.mkdir(parents=True, exist_ok=True)
        for src in self.index.values():
            _link(src, dest / src.name)
        if self.local:
            (dest / "local").mkdir(exist_ok=True)
            for src in self.local:
                _link(src, dest / "local" / src.name)
        return dest


def _link(src: Path, dst: Path) -> None:
    if dst.exists():
        return
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def build_wheelhouse(packages: list[Package], code: Path, tree: str, builders: Builders) -> Wheelhouse:
    """Every validated package as a wheel: binary downloads, then the builds (sandbox or trusted host)."""
    index, local = split_packages(packages)
    found, missing = ensure_index_wheels(index, builders.python_mm, builders.log, builders.on_status)
    found.update(ensure_sdist_wheels(missing, builders))
    return Wheelhouse(index=found, local=ensure_local_wheels(local, code, tree, builders))
