"""The GitHub Actions workflow that reproduces a project's latest published record on every push.

``cotk-repro init --ci github`` and ``cotk-repro ci github`` write ``.github/workflows/cotk-repro.yml``
from ``templates/ci/github.yml``: on push and pull request it installs cotk-repro, reproduces the latest
record published on the repository's records ref with the Docker runtime, writes the verdict table to the
job summary, and fails the check when a metric did not reproduce (exit 1) or the run could not happen
(exit 2). The file is a template of our own, checked by actionlint in the tests.
"""

from __future__ import annotations

from pathlib import Path

from .errors import CotkError

WORKFLOW = Path(".github") / "workflows" / "cotk-repro.yml"
PROVIDERS = ("github",)


def write_workflow(root: Path, provider: str = "github", *, force: bool = False) -> Path:
    """Write the CI workflow for ``provider`` under ``root``; refuse to overwrite an edited one without force."""
    from . import __version__
    from .core.fileio import atomic_write
    from .core.templating import render

    if provider not in PROVIDERS:
        raise CotkError(f"unknown CI provider {provider!r}; known: {', '.join(PROVIDERS)}")
    path = Path(root) / WORKFLOW
    text = render("ci/github.yml", version=__version__)
    if path.exists() and not force and path.read_text(encoding="utf-8", errors="replace") != text:
        raise CotkError(f"{WORKFLOW} exists and differs; pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
    return path
