"""The project's one Jinja environment over ``templates/`` (Dockerfile, scaffold, the compare report).

``.html`` templates are autoescaped; everything else (Dockerfiles, scaffold files) is rendered as is.
Undefined names are errors.

In a source checkout the templates are the top-level ``templates/`` folder; in a
wheel they are shipped as ``cotk_repro/templates``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

_PKG = Path(__file__).resolve().parent.parent  # the cotk_repro package


@lru_cache(maxsize=1)
def templates_dir() -> Path:
    for candidate in (_PKG / "templates", _PKG.parent / "templates"):
        if (candidate / "Dockerfile.j2").is_file():
            return candidate
    raise FileNotFoundError("cotk-repro's templates folder is missing from this installation")


@lru_cache(maxsize=1)
def _env():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "htm", "xml"), default=False),
    )


def render(template_name: str, /, **context: Any) -> str:
    """Render ``templates/<template_name>`` with ``context``."""
    return _env().get_template(template_name).render(**context)
