"""The layers of docs/architecture.md, read from the source: the import graph of ``cotk_repro/``.

Every ``import`` and ``from ... import`` counts, at module level or inside a function (a lazy import is
still a dependency). The test fails on any import circle between modules, on an import from ``reproduce``
into ``publish``, from ``data`` into ``metrics``, from ``llm`` or ``generation`` into ``compare`` (and from
``generation`` into ``llm``), and from any library package into ``cli``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "cotk_repro"


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """``{"cotk_repro.x.y": path}`` of every module under ``root`` (a package is named by its ``__init__``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The modules of ``known`` that one import statement of module ``name`` loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    # `from pkg import sub` loads pkg.sub when it is a module, else it reads a name of pkg
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(root)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name].update(t for t in imported(name, path, node, known) if t in known and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def crossings(graph: dict[str, set[str]], source: str, target: str) -> list[str]:
    return sorted(f"{a} -> {b}" for a, bs in graph.items() for b in bs if package(a) == source and package(b) == target)


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_no_import_circle(graph):
    assert circles(graph) == []


@pytest.mark.parametrize("source,target", [("reproduce", "publish"), ("data", "metrics")])
def test_forbidden_layer_crossings(graph, source, target):
    assert crossings(graph, source, target) == []


def test_generation_has_one_home_below_compare_and_llm(graph):
    """The generator registry's factory call, the generation cache and run_cached live in cotk_repro.generation,
    which imports neither compare nor llm; llm never imports compare (it used to, for the cache: an import up a
    floor); both use the one home."""
    assert "cotk_repro.generation" in graph
    assert crossings(graph, "generation", "compare") == crossings(graph, "generation", "llm") == []
    assert crossings(graph, "llm", "compare") == []
    assert "cotk_repro.generation" in graph["cotk_repro.compare.generate"]
    assert "cotk_repro.generation" in graph["cotk_repro.llm.generate"]
    # the cache is defined once: no other module defines run_cached or cache_key
    defining = sorted(
        name
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name in ("run_cached", "cache_key", "make_generator")
    )
    assert defining == ["cotk_repro.generation"] * 3


def test_library_code_never_imports_the_cli(graph):
    # only the entry points stand above the CLI: the package's __main__ and the CLI itself
    above = {"cli", "__main__"}
    assert [e for pkg in sorted({package(m) for m in graph} - above) for e in crossings(graph, pkg, "cli")] == []


def test_the_checks_see_what_they_look_for(tmp_path):
    """The graph reader on a made-up package: a lazy import counts, a circle and a crossing are found."""
    pkg = tmp_path / "cotk_repro"
    for rel, text in {
        "__init__.py": "",
        "data/__init__.py": "",
        "data/loaders.py": "def f():\n    from ..metrics.hashes import h\n",
        "metrics/__init__.py": "",
        "metrics/hashes.py": "from ..data import loaders\n",
        "cli/__init__.py": "from . import root\n",
        "cli/root.py": "import cotk_repro.cli\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    g = import_graph(pkg)
    assert circles(g) == [
        ["cotk_repro.cli", "cotk_repro.cli.root"],
        ["cotk_repro.data.loaders", "cotk_repro.metrics.hashes"],
    ]
    assert crossings(g, "data", "metrics") == ["cotk_repro.data.loaders -> cotk_repro.metrics.hashes"]
