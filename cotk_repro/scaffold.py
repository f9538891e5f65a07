"""``cotk-repro init``: a project scaffold rendered from a registered :class:`ProjectTemplate`.

Templates register through the ``register_templates`` hook (the built-in ``minimal``
and ``demo`` as well as plugins' templates). A template's files come from one or more
folders, later folders overriding earlier ones, so templates can share files. Files
ending in ``.j2`` are rendered with Jinja2 (the suffix dropped); others are copied.
Names starting with ``dot-`` become dotfiles (wheels drop real dotfiles). Nothing is
overwritten without ``force``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import CotkError
from .first_party import PLUGINS as FIRST_PARTY
from .first_party import missing_sentence


@dataclass(frozen=True)
class ProjectTemplate:
    """A project template: where its files are and what ``init --list-templates`` says about it."""

    name: str
    description: str
    folders: tuple[Path, ...]
    task: str | None = None  # None: the --task option decides
    dataset: str = ""  # the dataset layout the project reads
    metrics: tuple[str, ...] = ()
    dependencies: tuple[str, ...] = ()
    context: Mapping[str, Any] = field(default_factory=dict)  # extra Jinja2 variables

    def summary(self, plugin: str | None = None) -> dict[str, Any]:
        """What ``init --list-templates --json`` prints for this template."""
        return {
            "name": self.name,
            "description": self.description,
            "task": self.task,
            "dataset": self.dataset,
            "metrics": list(self.metrics),
            "dependencies": list(self.dependencies),
            "plugin": plugin,
        }


#: the templates of cotk-repro's first-party plugins, by name -> the distribution that brings them: a name here
#: that is not registered is a plugin to install, not a typo (tests/test_init.py checks the table against them)
FIRST_PARTY_TEMPLATES: dict[str, str] = {
    name: distribution for distribution, kinds in FIRST_PARTY.items() for name in kinds.get("template", ())
}


def registered_templates() -> dict[str, Any]:
    """Every registered template by name, as plugin components (``.obj`` is the template)."""
    from .plugins import registry

    return registry("template")


def available_templates() -> list[str]:
    """Return the sorted names of the registered project templates."""
    return sorted(registered_templates())


def get_template(name: str) -> ProjectTemplate:
    """Return the registered project template `name`; raise CotkError naming the available ones."""
    templates = registered_templates()
    if name not in templates:
        from .plugins import refusal

        refused = refusal("template", name)
        if refused is not None:
            raise CotkError(refused)
        missing = missing_sentence("template", name)
        if missing is not None:
            raise CotkError(f"{missing}; available now: {', '.join(sorted(templates))}")
        raise CotkError(f"unknown template {name!r}; available: {', '.join(sorted(templates))}")
    return templates[name].obj


def _target_name(rel: Path) -> Path:
    parts = [("." + p[4:]) if p.startswith("dot-") else p for p in rel.parts]
    name = parts[-1]
    if name.endswith(".j2"):
        parts[-1] = name[:-3]
    return Path(*parts)


def plan(template: str | ProjectTemplate) -> list[tuple[Path, Path, Path]]:
    """(source, folder it comes from, relative target) for every file of a template."""
    tpl = get_template(template) if isinstance(template, str) else template
    chosen: dict[Path, tuple[Path, Path]] = {}
    for folder in tpl.folders:
        folder = Path(folder)
        if not folder.is_dir():
            raise CotkError(f"template {tpl.name!r} is broken: its folder {folder} is missing")
        for src in sorted(folder.rglob("*")):
            if src.is_file() and "__pycache__" not in src.parts and src.suffix != ".pyc":
                chosen[_target_name(src.relative_to(folder))] = (src, folder)
    return [(src, folder, rel) for rel, (src, folder) in sorted(chosen.items())]


def _render(tpl: ProjectTemplate, folder: Path, src: Path, context: dict[str, Any]) -> str:
    """One ``.j2`` file of a project template, through the project's Jinja environment (its includes from the
    template's own folders, which a plugin's template may keep outside ``templates/``)."""
    import jinja2

    from .core.templating import environment

    env = environment().overlay(loader=jinja2.FileSystemLoader([str(f) for f in tpl.folders]))
    return env.from_string(src.read_text(encoding="utf-8")).render(**context)


def scaffold(
    directory: Path, *, task: str | None = None, template: str = "minimal", force: bool = False, name: str | None = None
) -> list[Path]:
    """Render ``template`` into ``directory`` (``git init`` it when it is not in a repository)."""
    directory = Path(directory).resolve()
    tpl = get_template(template)
    files = plan(tpl)
    existing = [t for _, _, t in files if (directory / t).exists()]
    if existing and not force:
        shown = ", ".join(str(t) for t in existing)
        raise CotkError(f"{directory} already has {shown}; pass --force to overwrite")
    if directory.exists() and not directory.is_dir():
        raise CotkError(f"{directory} exists and is not a folder")
    context = {
        **tpl.context,
        "name": name or directory.name,
        "task": task or tpl.task or "language-generation",
        "template": tpl.name,
    }
    # render everything first: a template error must not leave a half-written project
    contents: list[tuple[Path, bytes]] = []
    for src, folder, rel in files:
        data = _render(tpl, folder, src, context).encode("utf-8") if src.name.endswith(".j2") else src.read_bytes()
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
        import subprocess

        try:
            subprocess.run(["git", "init", "-q", "--", str(directory)], check=True, capture_output=True)  # noqa: S603, S607 - git from PATH; the directory the user typed, after --
        except (OSError, subprocess.CalledProcessError) as exc:
            raise CotkError(f"git init failed in {directory}: {exc}") from None
    return written


def _inside_git(directory: Path) -> bool:
    # subprocess here, not at the top: every command loads this module with the built-in plugins (its
    # ProjectTemplate), and a data load otherwise never imports subprocess (5 ms)
    import subprocess

    try:
        r = subprocess.run(  # noqa: S603 - git from PATH; the directory the user typed, as -C's value
            ["git", "-C", str(directory), "rev-parse", "--is-inside-work-tree"],  # noqa: S607
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        raise CotkError("git is not installed; cotk-repro needs git to record code") from None
    return r.returncode == 0 and r.stdout.strip() == "true"
