"""Find and download a source distribution without letting pip prepare it.

``pip download`` of an sdist runs the package's build backend (to read its metadata)
on this host; so the reproducer looks the file up itself: on the indexes and
find-links pip is configured with (``pip config list``: index-url, extra-index-url,
find-links; PyPI when none), as a PEP 503 page (``<index>/<name>/``) or a folder of
files. The archive is only downloaded (and its sha256 checked when the index gives
one); it is built into a wheel inside the sandbox.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from ..capture.environment import normalize_name

DEFAULT_INDEX = "https://pypi.org/simple/"
SDIST_SUFFIXES = (".tar.gz", ".zip")
_HREF = re.compile(r"<a\s[^>]*href=[\"']([^\"']+)[\"']", re.I)


def pip_locations() -> tuple[list[str], list[str]]:
    """(index URLs, find-links locations) from the host pip's configuration."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_NO_INPUT": "1"},
        timeout=60,
        check=False,
    )  # no config: none
    values: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        values.setdefault(name, []).extend(value.strip().strip("'\"").split())
    indexes = (values.get("index-url") or [DEFAULT_INDEX])[:1] + values.get("extra-index-url", [])
    return indexes, values.get("find-links", [])


def _is_sdist_of(filename: str, name: str, version: str) -> bool:
    for suffix in SDIST_SUFFIXES:
        if filename.endswith(suffix):
            stem = filename[: -len(suffix)]
            dist, _, ver = stem.rpartition("-")
            return normalize_name(dist) == name and ver == version
    return False


def _read(url: str) -> bytes | None:
    if url.startswith("file:"):
        path = Path(unquote(urlsplit(url).path))
        if path.is_dir():
            path = path / "index.html"
        try:
            return path.read_bytes()
        except OSError:
            return None
    import requests

    try:
        resp = requests.get(url, timeout=(10, 120), headers={"Accept": "text/html"})
    except requests.RequestException:
        return None
    return resp.content if resp.status_code == 200 else None


def _candidates(name: str, indexes: list[str], find_links: list[str]):
    for index in indexes:
        page_url = index.rstrip("/") + f"/{name}/"
        page = _read(page_url)
        if page:
            for href in _HREF.findall(page.decode("utf-8", "replace")):
                yield urljoin(page_url, html.unescape(href))
    for loc in find_links:
        folder = Path(unquote(urlsplit(loc).path)) if loc.startswith("file:") else Path(loc)
        if "://" not in loc or loc.startswith("file:"):
            if folder.is_dir():
                yield from (p.resolve().as_uri() for p in sorted(folder.iterdir()))


def fetch_sdist(name: str, version: str, dest: Path) -> Path | None:
    """Download the sdist of ``name==version`` into ``dest``; None when no index has one."""
    indexes, find_links = pip_locations()
    for url in _candidates(name, indexes, find_links):
        base, _, fragment = url.partition("#")
        filename = unquote(base.rsplit("/", 1)[-1])
        if "/" in filename or not _is_sdist_of(filename, name, version):
            continue
        data = _read(base)
        if data is None:
            continue
        m = re.search(r"sha256=([0-9a-f]{64})", fragment)
        if m and hashlib.sha256(data).hexdigest() != m.group(1):
            continue
        dest.mkdir(parents=True, exist_ok=True)
        tmp = dest / (filename + ".part")
        tmp.write_bytes(data)
        shutil.move(str(tmp), str(dest / filename))
        return dest / filename
    return None
