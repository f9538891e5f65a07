"""The project's one Jinja environment over ``templates/`` (Dockerfile, the compare report, the dashboard's pages).

Every template loads one way: by its path under ``templates/`` (``compare/report.html``,
``dashboard/record.html``). ``.html`` templates are autoescaped; everything else (Dockerfiles) is rendered
as is. Undefined names are errors; a user of the environment that renders documents uploaded by others,
where optional keys may be absent, derives a lenient view of it with :func:`environment` ``(lenient=True)``
(the same loader, escaping and filters: Jinja's ``Environment.overlay``).

In a source checkout the templates are the top-level ``templates/`` folder; in a
wheel they are shipped as ``cotk_repro/templates``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

_PKG = Path(__file__).resolve().parent.parent  # the cotk_repro package


@lru_cache(maxsize=1)
def templates_dir() -> Path:
    """The folder the templates are loaded from."""
    for candidate in (_PKG / "templates", _PKG.parent / "templates"):
        if (candidate / "Dockerfile.j2").is_file():
            return candidate
    raise FileNotFoundError("cotk-repro's templates folder is missing from this installation")


@lru_cache(maxsize=2)
def environment(lenient: bool = False) -> jinja2.Environment:
    """The Jinja environment over ``templates/``; ``lenient``: missing names render empty, block tags leave no
    blank lines (for pages of uploaded documents), else a missing name is an error."""
    import jinja2

    if lenient:
        return environment().overlay(
            undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False
        )
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "htm", "xml"), default=False),
    )


def render(template_name: str, /, **context: Any) -> str:
    """Render ``templates/<template_name>`` with ``context``."""
    text: str = environment().get_template(template_name).render(**context)
    return text


def render_remembered(template_name: str, /, **context: str) -> str:
    """:func:`render` of a self-contained template with string values, remembered on disk under the cache folder.

    Keyed by the template's bytes, the context and cotk-repro's version, so a changed template or value renders
    anew. Every ``cotk-repro run`` renders the same Dockerfile: this spares it importing Jinja (a third of a
    bare Python start). A cache that cannot be read or written only costs the render.
    """
    import hashlib
    import json

    from .._version import __version__
    from .fileio import atomic_write
    from .userconfig import cache_dir

    source = (templates_dir() / template_name).read_bytes()
    key = hashlib.sha256(source + json.dumps([template_name, __version__, context], sort_keys=True).encode())
    path = cache_dir() / "rendered" / key.hexdigest()
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    text = render(template_name, **context)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
    except OSError:
        pass
    return text
