"""The Dockerfile of a run, rendered from ``templates/Dockerfile.j2``."""

from __future__ import annotations

import json

from .._version import __version__
from ..core.canonical import sha256_hex
from ..core.templating import render_remembered


def default_base_image(python_major_minor: str) -> str:
    """Return the official slim Python image tag for a `X.Y` Python version."""
    return f"python:{python_major_minor}-slim"


def render_dockerfile(
    *, python_major_minor: str, entry: str, args: list[str], cwd: str, base_image: str | None = None
) -> tuple[str, str]:
    """Return (Dockerfile text, its sha256 hex)."""
    text = render_remembered(
        "Dockerfile.j2",
        cotk_repro_version=__version__,
        python_version=python_major_minor,
        base_image=base_image or default_base_image(python_major_minor),
        cwd=cwd,
        entrypoint_json=json.dumps(["python", entry, *args]),
    )
    return text, sha256_hex(text)
