"""Which Docker base image reruns a record: one with the record's Python minor version, or none.

A record made with Python X.Y is rebuilt from wheels for X.Y (:mod:`.wheelhouse`), which install
only into a Python X.Y. So the base image is chosen by the record's Python minor version:

1. ``--base-image`` (or ``reproduce.base_image``, ``COTK_REPRO_BASE_IMAGE``): used as given, unless
   it is known to have another Python minor, which is refused before anything is built;
2. else ``python:X.Y-slim`` when it is on this machine or can be pulled;
3. else a local image with Python X.Y: one labelled ``org.cotk-repro.python=X.Y`` (as
   ``scripts/base-image.sh`` labels ``cotk-repro-base:bookworm``, Python 3.11, and
   ``cotk-repro-base:trixie``, Python 3.13), a ``cotk-repro-base:<suite>`` of a known Debian suite, or
   a ``python:X.Y…`` tag; the verdict's warnings say it was used instead;
4. else the reproduce stops with one sentence naming the record's Python, the Pythons of the local
   images and the two ways out (``--base-image IMAGE``, ``--runtime venv --python PATH``).

An image's Python is read from its label, else from its name; an image known by neither is
"unknown" and only used when named explicitly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..capture.dockerfile import default_base_image
from . import ReproduceError

#: the label that states an image's Python minor version (``X.Y``); scripts/base-image.sh sets it
PYTHON_LABEL = "org.cotk-repro.python"
#: the images scripts/base-image.sh builds locally (``cotk-repro-base:<suite>``)
LOCAL_BASE_REPO = "cotk-repro-base"
#: the Python minor of each Debian suite scripts/base-image.sh builds (images imported before the label)
SUITE_PYTHON = {"bookworm": "3.11", "trixie": "3.13"}
_MM = re.compile(r"3\.\d{1,2}")
_PYTHON_TAG = re.compile(r"(?:.*/)?python:(3\.\d{1,2})(?:[.-][A-Za-z0-9._-]*)?")
STEP = "base image"


def image_python(labels: dict[str, str] | None, tags: list[str]) -> str | None:
    """The Python minor version (``X.Y``) of an image with these labels and tags; None when unknown."""
    value = (labels or {}).get(PYTHON_LABEL, "")
    if _MM.fullmatch(value):
        return value
    for tag in tags:
        repo, _, name = tag.rpartition(":")
        if repo.rsplit("/", 1)[-1] == LOCAL_BASE_REPO and name in SUITE_PYTHON:
            return SUITE_PYTHON[name]
        if m := _PYTHON_TAG.fullmatch(tag):
            return m.group(1)
    return None


def local_pythons(client: Any) -> dict[str, list[str]]:
    """The local images whose Python is known: ``{"3.11": ["cotk-repro-base:bookworm", ...], ...}``,
    each list sorted with the ``cotk-repro-base`` images first. The images reproduce built are left out."""
    from .engine import LABEL, list_images

    found: dict[str, list[str]] = {}
    for img in list_images(client):
        if LABEL in (img.labels or {}):  # an image reproduce built (it inherits its base's label): no base
            continue
        tags = [t for t in (img.tags or []) if not t.endswith(":<none>")]
        mm = image_python(img.labels, tags) if tags else None
        if mm:
            found.setdefault(mm, []).extend(tags)
    for tags in found.values():
        tags.sort(key=lambda t: (t.rpartition(":")[0].rsplit("/", 1)[-1] != LOCAL_BASE_REPO, t))
    return found


def describe_available(found: dict[str, list[str]]) -> str:
    """``the local images have Python 3.11 (cotk-repro-base:bookworm) and 3.13 (cotk-repro-base:trixie)``."""
    if not found:
        return "no local image has a known Python"
    parts = [f"{mm} ({tags[0]})" for mm, tags in sorted(found.items(), key=lambda kv: _mm_key(kv[0]))]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"the local images have Python {listed}"


def _mm_key(mm: str) -> tuple[int, ...]:
    return tuple(int(x) for x in mm.split("."))


def ways_out(mm: str) -> str:
    """The two ways out of a record whose Python minor ``mm`` no image has, as the end of a sentence."""
    return (
        f"pass --base-image IMAGE with Python {mm}, or use --runtime venv --python PATH with a Python {mm} interpreter"
    )


def check_explicit(client: Any, image: str, mm: str) -> None:
    """Refuse an image the user named when it is known to have another Python minor than the record's."""
    from docker.errors import ImageNotFound

    try:
        img = client.images.get(image)
    except ImageNotFound:
        return
    has = image_python(img.labels, list(img.tags or []) or [image])
    if has is not None and has != mm:
        found = local_pythons(client)
        there = f" (here: {found[mm][0]})" if mm in found else ""
        raise ReproduceError(
            f"the base image {image} has Python {has} and the record needs Python {mm}; "
            f"pass --base-image IMAGE with Python {mm}{there}, "
            f"or use --runtime venv --python PATH with a Python {mm} interpreter",
            step=STEP,
        )


def choose_default(
    client: Any, mm: str, on_status: Callable[[str], None], warnings: list[str], *, engine_message
) -> str:
    """``python:X.Y-slim`` (local, else pulled), else a local image with Python X.Y (said in ``warnings``),
    else one sentence naming the record's Python, what there is, and the ways out (exit 2)."""
    from docker.errors import DockerException, ImageNotFound

    default = default_base_image(mm)
    try:
        client.images.get(default)
        return default
    except ImageNotFound:
        pass
    try:
        on_status(f"pulling the base image {default}")
        client.images.pull(default)
        return default
    except DockerException as exc:
        reason = engine_message(exc)
    found = local_pythons(client)
    if mm in found:
        local = found[mm][0]
        warnings.append(
            f"the base image {default} cannot be pulled ({reason}); the local {local} (Python {mm}) was "
            "used instead (--base-image picks another)"
        )
        return local
    raise ReproduceError(
        f"the record needs Python {mm}, but {default} cannot be pulled and {describe_available(found)}: "
        + ways_out(mm),
        step=STEP,
        hint=f"pulling it said: {reason[:200]}",
    )
