"""User-level settings: dashboard credentials, the git base for ``user/repo``, caches.

These live in the platform's user config directory (``platformdirs``), never in a repository:

* Linux and other Unix: ``$XDG_CONFIG_HOME/cotk-repro/config.json`` (default
  ``~/.config/cotk-repro/config.json``);
* macOS: ``~/Library/Application Support/cotk-repro/config.json`` unless
  ``XDG_CONFIG_HOME`` is set;
* Windows: ``%APPDATA%\\cotk-repro\\config.json``.

The ``XDG_*`` variables are honoured on every platform, as before platformdirs; a folder an
earlier version used (macOS caches under ``~/.cache``) stays in use while it exists.

``COTK_REPRO_CONFIG_DIR`` overrides the folder. The file is written atomically
with mode 0600 (its folder 0700) because it holds bearer tokens.

Layout::

    {"dashboards": {"https://dash.example": {"token": "..."}},
     "default_dashboard": "https://dash.example",
     "git_base": "https://github.com/",
     "reproduce": {"timeout": 7200, "memory": "8g", "cpus": 4, "disk": "2g",
                   "base_image": "python:3.11-slim", "allow_project_image": false}}

The ``reproduce`` object holds the *reproducer's* limits and base image (:func:`reproduce_settings`):
``cotk-repro reproduce`` (and the fleet worker) use them when no flag is given; a reproduced
project's own ``[reproduce]`` table may only lower them (docs/reproduce.md, "Limits").

Caches (the wheelhouse, built wheels, venvs) live under :func:`cache_dir`:
``$COTK_REPRO_CACHE``, else ``$XDG_CACHE_HOME/cotk-repro``, else
``~/.cache/cotk-repro`` (the same folder ``scripts/base-image.sh`` uses).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .fileio import atomic_write

APP = "cotk-repro"
CONFIG_NAME = "config.json"


def _user_dir(kind: str, explicit_var: str | None, xdg_var: str, *, legacy: Path | None = None) -> Path:
    """A per-user folder of cotk-repro (``kind``: config, data or cache): an explicit override, else the XDG
    variable, else a folder an earlier version used that still exists, else the platform's (platformdirs)."""
    explicit = os.environ.get(explicit_var) if explicit_var else None
    if explicit:
        return Path(explicit)
    xdg = os.environ.get(xdg_var)
    if xdg:
        return Path(xdg) / APP
    import platformdirs

    if kind == "config":
        found = platformdirs.user_config_dir(APP, appauthor=False, roaming=True)
    elif kind == "data":
        found = platformdirs.user_data_dir(APP, appauthor=False)
    else:
        found = platformdirs.user_cache_dir(APP, appauthor=False)
    here = Path(found)
    if legacy is not None and legacy != here and legacy.is_dir() and not here.exists():
        return legacy
    return here


def config_dir() -> Path:
    """The user config folder (tokens): ``$COTK_REPRO_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/cotk-repro``, else the
    platform's."""
    return _user_dir("config", "COTK_REPRO_CONFIG_DIR", "XDG_CONFIG_HOME")


def data_dir() -> Path:
    """The user data dir: ``$XDG_DATA_HOME/cotk-repro`` (default ``~/.local/share/cotk-repro``)."""
    return _user_dir("data", None, "XDG_DATA_HOME")


def config_path() -> Path:
    """The user config file (dashboard tokens)."""
    return config_dir() / CONFIG_NAME


def cache_dir() -> Path:
    """Caches: ``$COTK_REPRO_CACHE``, else ``$XDG_CACHE_HOME/cotk-repro``, else the platform's (``~/.cache/cotk-repro``
    on Linux; on macOS ``~/.cache/cotk-repro`` while an earlier version's folder is there)."""
    legacy = Path.home() / ".cache" / APP if sys.platform == "darwin" else None
    return _user_dir("cache", "COTK_REPRO_CACHE", "XDG_CACHE_HOME", legacy=legacy)


def load() -> dict[str, Any]:
    """The user config; empty when there is none."""
    path = config_path()
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the user config {path} is unreadable ({exc}); fix or delete it") from None
    if not isinstance(data, dict):
        raise ConfigError(f"the user config {path} is not a JSON object; fix or delete it")
    return data


def save(data: dict[str, Any]) -> Path:
    """Write the user config atomically, readable by its owner only (0600)."""
    path = config_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(path.parent, 0o700)
        except OSError:
            pass
        atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + "\n", perms=0o600)
        os.chmod(path, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write the user config {path}: {exc.strerror}") from None
    return path


def normalize_url(url: str) -> str:
    """A dashboard URL as it is stored (http(s) only); ConfigError otherwise."""
    url = url.strip()
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{url!r} is not a dashboard URL (it must start with http:// or https://)")
    return url.rstrip("/")


def set_dashboard_token(url: str, token: str, *, make_default: bool = True) -> Path:
    """Store the token for a dashboard (file mode 0600); returns the config file."""
    url = normalize_url(url)
    token = token.strip()
    if not token:
        raise ConfigError("the token is empty")
    data = load()
    data.setdefault("dashboards", {})[url] = {"token": token}
    if make_default or not data.get("default_dashboard"):
        data["default_dashboard"] = url
    return save(data)


def default_dashboard() -> str | None:
    """The dashboard URL `login` made the default, if any."""
    return load().get("default_dashboard") or None


def dashboard_token(url: str, *, user_chosen: bool = True) -> str | None:
    """The token for ``url``: ``COTK_REPRO_DASHBOARD_TOKEN`` (for CI) when the user chose ``url`` (``user_chosen``:
    not only a project's committed config named it), else the token stored for exactly that URL by `login`."""
    env = os.environ.get("COTK_REPRO_DASHBOARD_TOKEN")
    if env and user_chosen:
        return env
    entry = load().get("dashboards", {}).get(normalize_url(url))
    return entry.get("token") if isinstance(entry, dict) else None


def knows_dashboard(url: str) -> bool:
    """Whether the user config holds ``url`` (normalized): the user logged in to it."""
    data = load()
    return url in (data.get("dashboards") or {}) or data.get("default_dashboard") == url


def git_base() -> str | None:
    """The configured base for ``user/repo`` sources, if any."""
    value = load().get("git_base")
    return value if isinstance(value, str) and value else None


#: the keys of the user config's ``reproduce`` object and the types each takes
REPRODUCE_KEYS: dict[str, tuple[type, ...]] = {
    "timeout": (int, float),
    "memory": (str,),
    "cpus": (int, float),
    "disk": (str,),
    "base_image": (str,),
    "allow_project_image": (bool,),
    "image_cache": (int,),
}


def reproduce_settings() -> dict[str, Any]:
    """The reproducer's own ``reproduce`` settings (limits, base image); a ConfigError naming a key that is
    unknown or of the wrong type."""
    value = load().get("reproduce")
    if value is None:
        return {}
    path = config_path()
    if not isinstance(value, dict):
        raise ConfigError(f"the user config {path}: 'reproduce' must be an object of settings")
    for key, item in value.items():
        types = REPRODUCE_KEYS.get(key)
        if types is None:
            raise ConfigError(
                f"the user config {path}: unknown key 'reproduce.{key}' (known: {', '.join(REPRODUCE_KEYS)})"
            )
        if item is not None and (not isinstance(item, types) or (isinstance(item, bool) and bool not in types)):
            raise ConfigError(
                f"the user config {path}: 'reproduce.{key}' must be "
                f"{' or '.join(t.__name__ for t in types)}, not {type(item).__name__}"
            )
    return dict(value)
