"""``cotk-repro init``: a project scaffold rendered from ``templates/project/<template>/``.

Files ending in ``.j2`` are rendered with Jinja2 (the suffix dropped); others are
copied. Names starting with ``dot-`` become dotfiles (wheels drop real dotfiles).
Nothing is overwritten without ``force``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .errors import CotkError
from .templating import render, templates_dir


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
    directory.mkdir(parents=True, exist_ok=True)
    context = {"name": name or directory.name, "task": task, "template": template}
    written = []
    for src, rel in files:
        target = directory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        root = templates_dir()
        if src.name.endswith(".j2"):
            target.write_text(render(src.relative_to(root).as_posix(), **context), encoding="utf-8")
        else:
            target.write_bytes(src.read_bytes())
        written.append(target)
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
