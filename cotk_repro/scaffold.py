"""``cotk-repro init``: a project scaffold rendered from ``templates/project/<template>/``.

Files ending in ``.j2`` are rendered with Jinja2 (the suffix dropped); others are
copied. Names starting with ``dot-`` become dotfiles (wheels drop real dotfiles).
Nothing is overwritten without ``force``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .errors import CotkError
from .core.templating import render, templates_dir


def available_templates() -> list[str]:
    root = templates_dir() / "project"
    return sorted(p.name for p in root.iterdir() if p.is_dir())


def _target_name(rel: Path) -> Path:
    parts = [("." + p[4:]) if p.startswith("dot-") else p for p in rel.parts]
    name = parts[-1]
    if name.endswith(".j2"):
        parts[-1] = name[:-3]
    return Path(*parts)


def plan(template: str) -> list[tuple[Path, Path]]:
    """(source, relative target) for every file of a template."""
    root = templates_dir() / "project" / template
    if not root.is_dir():
        raise CotkError(f"unknown template {template!r}; available: {', '.join(available_templates())}")
    return [(src, _target_name(src.relative_to(root))) for src in sorted(root.rglob("*")) if src.is_file()]


def scaffold(directory: Path, *, task: str, template: str = "minimal", force: bool = False,
             name: str | None = None) -> list[Path]:
    directory = Path(directory).resolve()
    files = plan(template)
    existing = [t for _, t in files if (directory / t).exists()]
    if existing and not force:
        shown = ", ".join(str(t) for t in existing)
        raise CotkError(f"{directory} already has {shown}; pass --force to overwrite")
    if directory.exists() and not directory.is_dir():
        raise CotkError(f"{directory} exists and is not a folder")
    context = {"name": name or directory.name, "task": task, "template": template}
    root = templates_dir()
    # render everything first: a template error must not leave a half-written project
    contents: list[tuple[Path, bytes]] = []
    for src, rel in files:
        if src.name.endswith(".j2"):
            data = render(src.relative_to(root).as_posix(), **context).encode("utf-8")
        else:
            data = src.read_bytes()
        contents.append((directory / rel, data))
    try:
        directory.mkdir(parents=True, exist_ok=True)
        written = []
        for target, data in contents:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written.append(target)
    except OSError as exc:
        raise CotkError(f"cannot write the project into {directory}: {exc.strerror}") from None
    if not _inside_git(directory):
        try:
            subprocess.run(["git", "init", "-q", str(directory)], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise CotkError(f"git init failed in {directory}: {exc}") from None
    return written


def _inside_git(directory: Path) -> bool:
    try:
        r = subprocess.run(["git", "-C", str(directory), "rev-parse", "--is-inside-work-tree"],
                           capture_output=True, text=True)
    except OSError:
        raise CotkError("git is not installed; cotk-repro needs git to record code") from None
    return r.returncode == 0 and r.stdout.strip() == "true"
