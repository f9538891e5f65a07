"""A dependency missing at run time, as one sentence that names what to install.

A user who removed a package (or installed a plugin without its extras) meets a ``ModuleNotFoundError``
deep in some lazy import. The installed distributions' own metadata says who needs it: cotk-repro
itself, one of its extras (``cotk-repro[postgres]``), or a plugin. The sentence names that.
"""

from __future__ import annotations

import re

#: import names whose distribution is called otherwise
_DISTRIBUTION_OF = {
    "git": "GitPython",
    "sqlalchemy": "SQLAlchemy",
    "PIL": "pillow",
    "yaml": "PyYAML",
    "sklearn": "scikit-learn",
    "confusable_homoglyphs": "confusable-homoglyphs",
    "bert_score": "bert-score",
    "mauve": "mauve-text",
    "psycopg": "psycopg",
    "jinja2": "jinja2",
    "markupsafe": "markupsafe",
    "dateutil": "python-dateutil",
}
#: the one torch line (the CPU build; docs/templates.md): a plain `pip install torch` is a CUDA build
TORCH_LINE = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def who_needs(distribution: str) -> tuple[str, str | None] | None:
    """(the installed distribution that requires ``distribution``, the extra it is in or None), cotk-repro first."""
    import importlib.metadata as md

    from packaging.requirements import InvalidRequirement, Requirement

    wanted = _canonical(distribution)
    names = ["cotk-repro"]
    try:
        names += sorted(
            {ep.dist.metadata["Name"] for ep in md.entry_points(group="cotk_repro") if ep.dist is not None}
            - {"cotk-repro"}
        )
    except Exception:
        pass
    for name in names:
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for line in requires:
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            if _canonical(req.name) != wanted:
                continue
            extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", str(req.marker or ""))
            return name, extra.group(1) if extra else None
    return None


def missing_dependency(exc: ModuleNotFoundError) -> str | None:
    """The sentence for ``exc`` when a third-party module is missing; None for cotk-repro's own modules."""
    module = (exc.name or "").split(".")[0]
    if not module or module.startswith("cotk_repro"):
        return None
    distribution = _DISTRIBUTION_OF.get(module, module.replace("_", "-"))
    if module == "torch":
        return f"torch is not installed; install its CPU build: {TORCH_LINE}"
    found = who_needs(distribution)
    if found is None:
        return f"the Python package {distribution} is not installed (no module named {module!r}): pip install {distribution}"
    owner, extra = found
    if extra:
        return (
            f"{owner}[{extra}] needs the Python package {distribution}, which is not installed: "
            f"pip install '{owner}[{extra}]'"
        )
    return (
        f"{owner} needs the Python package {distribution}, which is not installed (removed?): "
        f"pip install '{distribution}' (or reinstall {owner})"
    )
