"""Every module says its one job in its docstring's first line; public names of the done packages have docstrings."""

from __future__ import annotations

import ast
from pathlib import Path

import cotk_repro

PACKAGE = Path(cotk_repro.__file__).parent
#: packages (folders) and top-level modules (``*.py``) whose public functions and classes all have a docstring
DOCUMENTED = (
    "builtins",
    "capture",
    "cli",
    "compare",
    "compat",
    "core",
    "dashboard",
    "data",
    "metrics",
    "publish",
    "records",
    "reproduce",
    "__init__.py",
    "__main__.py",
    "demo.py",
    "errors.py",
    "hookspecs.py",
    "plugins.py",
    "scaffold.py",
    "verify.py",
)


def test_every_module_says_its_job_in_its_first_line():
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        first = doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""
        if len(first) < 10:
            missing.append(str(path.relative_to(PACKAGE.parent)))
    assert not missing, f"modules without a first docstring line saying their job: {missing}"


def test_public_functions_and_classes_have_docstrings():
    missing = [f"{name} (listed in DOCUMENTED, not found)" for name in DOCUMENTED if not (PACKAGE / name).exists()]
    for package in DOCUMENTED:
        root = PACKAGE / package
        for path in [root] if root.is_file() else sorted(root.rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if (
                    isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and not node.name.startswith("_")
                    and not ast.get_docstring(node)
                    and not _is_overload(node)  # a typing.overload stub: the implementation below has the docstring
                ):
                    missing.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    assert not missing, f"public names without a docstring: {missing}"


def _is_overload(node: ast.AST) -> bool:
    decorators = getattr(node, "decorator_list", [])
    return any(
        (isinstance(d, ast.Name) and d.id == "overload") or (isinstance(d, ast.Attribute) and d.attr == "overload")
        for d in decorators
    )
