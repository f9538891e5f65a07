"""The wheelhouse: the recorded packages as wheels, made on the host, cached, reused.

Index packages are fetched with the host's pip (so proxies, private indexes and CA
bundles are the host's business) into a pool under the user cache dir, one pool per
Python version and machine: ``<cache>/wheelhouse/cp311-x86_64/``. Only the wheels a
lock needs and the pool lacks are downloaded; a second reproduce downloads nothing.

* same Python minor version as the host: ``pip wheel --no-deps`` (saves the index's
  wheels; builds a wheel on the host for the rare sdist-only package);
* another version: ``pip download --only-binary=:all: --python-version X.Y --no-deps``.

Editable, local-path, VCS and URL installs (``install`` in the record) are built into
wheels: from the checkout when a project there has that name, from this cotk-repro's
own source when it is cotk-repro of the same version or one of its first-party plugins
(``plugins/<dist>/``) of the same version, else from the index when the version was
released there; otherwise the error says which package cannot be rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import __version__
from ..capture.environment import normalize_name
from ..core.git import tail
from ..core.userconfig import cache_dir
from . import ReproduceError

NON_INDEX = ("editable", "local", "vcs", "url")


def _norm_version(v: str) -> str:
    try:
        from packaging.version import Version

        return str(Version(v))
    except Exception:  # noqa: BLE001 - packaging missing or a non-PEP 440 version
        return v


def split_packages(packages: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    index = [(p["name"], p["version"]) for p in packages if p.get("install") not in NON_INDEX]
    local = [p for p in packages if p.get("install") in NON_INDEX]
    return index, local


def pool_dir(python_mm: str) -> Path:
    tag = "cp" + python_mm.replace(".", "")
    return cache_dir() / "wheelhouse" / f"{tag}-{platform.machine().lower()}"


def wheel_key(filename: str) -> tuple[str, str] | None:
    if not filename.endswith(".whl"):
        return None
    parts = filename[:-4].split("-")
    if len(parts) < 5:
        return None
    return normalize_name(parts[0]), _norm_version(parts[1])


def pool_index(pool: Path) -> dict[tuple[str, str], Path]:
    found: dict[tuple[str, str], Path] = {}
    if pool.is_dir():
        for f in pool.iterdir():
            key = wheel_key(f.name)
            if key:
                found.setdefault(key, f)
    return found


def host_mm() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def _pip(args: list[str], log: Path, step: str, what: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    with log.open("ab") as fh:
        fh.write(("$ " + " ".join(cmd) + "\n").encode())
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, "PIP_NO_INPUT": "1"})
    if proc.returncode != 0:
        text = log.read_text(encoding="utf-8", errors="replace")
        raise ReproduceError(f"{what} failed (pip exited with status {proc.returncode}; full log: {log})",
                             log=tail(text, 25), step=step)


def ensure_index_wheels(packages: list[tuple[str, str]], python_mm: str, log: Path,
                        on_status: Callable[[str], None] = lambda _m: None) -> dict[tuple[str, str], Path]:
    """Every (name, version) as a wheel in the pool; returns key -> wheel path."""
    pool = pool_dir(python_mm)
    pool.mkdir(parents=True, exist_ok=True)
    have = pool_index(pool)
    missing = [(n, v) for n, v in packages if (n, _norm_version(v)) not in have]
    if missing:
        on_status(f"downloading {len(missing)} of {len(packages)} recorded packages into {pool}")
        reqs = [f"{n}=={v}" for n, v in missing]
        if python_mm == host_mm():
            _pip(["wheel", "--no-deps", "--wheel-dir", str(pool), *reqs], log, "wheel download",
                 "downloading the recorded packages")
        else:
            _pip(["download", "--no-deps", "--only-binary=:all:", "--python-version", python_mm,
                  "--dest", str(pool), *reqs], log, "wheel download", "downloading the recorded packages")
        have = pool_index(pool)
    out = {}
    for n, v in packages:
        key = (n, _norm_version(v))
        if key not in have:
            raise ReproduceError(f"no wheel of {n}=={v} for Python {python_mm} was found after the download",
                                 step="wheel download", log=tail(log.read_text(errors="replace"), 25))
        out[key] = have[key]
    return out


# -- editable / local installs ---------------------------------------------------

def _project_name(folder: Path) -> str | None:
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            name = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {}).get("name")
        except (ValueError, OSError):
            name = None
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
    todo = [(code, 0)]
    while todo:
        folder, d = todo.pop(0)
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
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        version = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8")).get("project", {}).get("version")
    except (ValueError, OSError):
        return None
    return _norm_version(version) if isinstance(version, str) else None


def local_identity(local: list[dict[str, Any]], tree: str) -> list[str]:
    """What decides the local wheels' content, for image/venv cache keys (no building)."""
    ids = []
    for p in local:
        plugin = first_party_plugin(p["name"], p["version"])
        if p["name"] == "cotk-repro":
            ids.append(f"cotk-repro=={p['version']}@self:{self_fingerprint()}")
        elif plugin is not None:
            ids.append(f"{p['name']}=={p['version']}@plugin:{_tree_digest(plugin, ('.',))[:16]}")
        else:
            ids.append(f"{p['name']}=={p['version']}@tree:{tree}")
    return ids


def _build_wheel(src: Path, dest: Path, log: Path, name: str, version: str) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    _pip(["wheel", "--no-deps", "--wheel-dir", str(dest), str(src)], log, "local wheel build",
         f"building a wheel of {name}=={version} from {src}")
    wheels = [w for w in dest.glob("*.whl") if wheel_key(w.name) and wheel_key(w.name)[0] == name]
    if not wheels:
        raise ReproduceError(f"building a wheel of {name} from {src} produced no wheel", step="local wheel build")
    return wheels[0]


def ensure_local_wheels(local: list[dict[str, Any]], code: Path, tree: str, python_mm: str, log: Path,
                        on_status: Callable[[str], None] = lambda _m: None) -> list[Path]:
    wheels = []
    for p in local:
        name, version, kind = p["name"], p["version"], p.get("install")
        in_checkout = find_in_checkout(code, name)
        if in_checkout is not None:
            dest = cache_dir() / "local-wheels" / f"{name}-{version}-{tree[:16]}"
            cached = list(dest.glob("*.whl")) if dest.is_dir() else []
            if cached:
                wheels.append(cached[0])
                continue
            on_status(f"building a wheel of {name} ({kind} install) from the checkout")
            wheels.append(_build_wheel(in_checkout, dest, log, name, version))
            continue
        if name == "cotk-repro" and version == __version__ and self_source() is not None:
            dest = cache_dir() / "local-wheels" / f"cotk-repro-{version}-{self_fingerprint()}"
            cached = list(dest.glob("*.whl")) if dest.is_dir() else []
            if cached:
                wheels.append(cached[0])
                continue
            on_status(f"building a wheel of cotk-repro {version} ({kind} install) from {self_source()}")
            wheels.append(_build_wheel(self_source(), dest, log, name, version))
            continue
        plugin = first_party_plugin(name, version)
        if plugin is not None:
            dest = cache_dir() / "local-wheels" / f"{name}-{version}-{_tree_digest(plugin, ('.',))[:16]}"
            cached = list(dest.glob("*.whl")) if dest.is_dir() else []
            if not cached:
                on_status(f"building a wheel of the first-party plugin {name} {version} from {plugin}")
            wheels.append(cached[0] if cached else _build_wheel(plugin, dest, log, name, version))
            continue
        # maybe it was released meanwhile
        try:
            found = ensure_index_wheels([(name, version)], python_mm, log, on_status)
            wheels.append(next(iter(found.values())))
        except ReproduceError:
            raise ReproduceError(
                f"the record's package {name}=={version} was a {kind} install that is neither in the checkout "
                f"nor on the package index, so it cannot be rebuilt", step="local wheel build",
                hint="its author can publish that package or add its source to the repository") from None
    return wheels


@dataclass
class Wheelhouse:
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


def build_wheelhouse(packages: list[dict[str, Any]], code: Path, tree: str, python_mm: str, log: Path,
                     on_status: Callable[[str], None] = lambda _m: None) -> Wheelhouse:
    index, local = split_packages(packages)
    return Wheelhouse(index=ensure_index_wheels(index, python_mm, log, on_status),
                      local=ensure_local_wheels(local, code, tree, python_mm, log, on_status))
