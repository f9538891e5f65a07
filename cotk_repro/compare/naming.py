"""File and HTML-id names of compare's outputs: one rule for every writer (report, charts, figures, html)."""

from __future__ import annotations

import re


def safe_name(name: str) -> str:
    """Replace every character not safe in a file name with `_`."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name)


def curve_stem(name: str) -> str:
    """The file name (without suffix) of a per-epoch metric's figure: ``curve-<name>``."""
    return f"curve-{safe_name(name)}"
