"""Plugins: real throwaway plugin distributions installed with pip, broken plugins, name clashes, docs."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO_ROOT, run_cli

from cotk_repro import hookspecs
from cotk_repro.errors import PluginError
from cotk_repro.plugins import BUILTIN_PLUGINS, KINDS, Plugins

ENTRY = 'import json\njson.dump({"toy": 1.0}, open("result.json", "w"))\n'


def make_distribution(folder: Path, name: str, version: str, module: str, body: str) -> Path:
    """A tiny plugin package: pyproject.toml with an entry point in group cotk_repro, one module."""
    pkg = folder / name
    (pkg / module).mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent(f"""
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "{name}"
        version = "{version}"

        [project.entry-points.cotk_repro]
        {module} = "{module}"

        [tool.hatch.build.targets.wheel]
        packages = ["{module}"]
    """)
    )
    (pkg / module / "__init__.py").write_text(textwrap.dedent(body))
    return pkg


def pip_install(python: str, package: Path, *extra: str) -> None:
    # hatchling from the test environment when there is one (no network needed), else pip fetches it
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    proc = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            *isolation,
            *extra,
            str(package),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr


EXAMPLE = REPO_ROOT / "plugins" / "cotk-repro-example"  # the first-party example plugin (not set up globally)


def _site_dirs() -> list[str]:
    """Where this interpreter finds its packages: the venv's or the system's site dirs, and the user's."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def parent_env_venv(venv: Path) -> str:
    """A fresh venv at ``venv`` that sees this interpreter's packages (cotk-repro and its deps); its python.

    Not ``--system-site-packages``: inside an activated venv that would expose the *base* interpreter's
    packages, not the venv's. A ``.pth`` file adds the running interpreter's own site dirs instead (with
    ``site.addsitedir``, so their editable-install ``.pth`` files work too), inside a venv or outside one.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    lines = [f"import site; site.addsitedir({d!r})" for d in _site_dirs()]
    Path(purelib, "_cotk_repro_parent_env.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return python


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory) -> str:
    """A fresh venv that sees this interpreter's packages (cotk-repro and its deps) plus the example plugin."""
    python = parent_env_venv(tmp_path_factory.mktemp("plugin-venv") / "venv")
    pip_install(python, EXAMPLE)
    return python


def extra_distribution(tmp_path: Path, name: str, module: str, body: str) -> dict[str, str]:
    """Install another plugin distribution into a folder; the env that puts it on the path."""
    target = tmp_path / f"site-{name}"
    pip_install(
        sys.executable, make_distribution(tmp_path / "src", name, "0.0.1", module, body), "--target", str(target)
    )
    return {"PYTHONPATH": str(target)}


def plugins_json(python: str, env: dict | None = None, cwd: Path | None = None):
    res = run_cli("plugins", "--json", python=python, env=env, cwd=cwd)
    return res, json.loads(res.stdout) if res.stdout.strip() else None


def test_installed_plugin_is_listed_with_version_and_metric(plugin_venv):
    res, data = plugins_json(plugin_venv)
    assert res.returncode == 0, res
    by_name = {p["name"]: p for p in data}
    toy = by_name["cotk-repro-example"]
    assert toy["version"] == "0.1.0" and toy["status"] == "ok" and toy["builtin"] is False
    assert toy["registers"] == {"metric": ["toy-metric"], "tokenizer": ["toy-tokenizer"]}
    assert set(BUILTIN_PLUGINS) <= set(by_name)
    # the human table too
    res = run_cli("plugins", python=plugin_venv)
    assert (
        res.returncode == 0
        and "cotk-repro-example" in res.stdout
        and "0.1.0" in res.stdout
        and "toy-metric" in res.stdout
    )


def test_plugin_not_visible_outside_its_venv():
    res, data = plugins_json(sys.executable)
    assert "cotk-repro-example" not in {p["name"] for p in data}


def test_builtins_only_switch_skips_entry_points(plugin_venv):
    res, data = plugins_json(plugin_venv, env={"COTK_REPRO_BUILTINS_ONLY": "1"})
    assert res.returncode == 0
    names = {p["name"] for p in data}
    assert names == set(BUILTIN_PLUGINS)


def test_record_lists_loaded_plugins_and_local_install(plugin_venv, make_project):
    root = make_project({"main.py": ENTRY})
    res = run_cli("run", "--json", cwd=root, python=plugin_venv)
    assert res.returncode == 0, res
    rec = json.loads(res.stdout)
    plugins = rec["environment"]["plugins"]
    assert {"name": "cotk-repro-example", "version": "0.1.0"} in plugins
    assert {p["name"] for p in plugins} >= set(BUILTIN_PLUGINS)
    pkgs = {p["name"]: p for p in rec["environment"]["packages"]}
    assert pkgs["cotk-repro-example"] == {
        "name": "cotk-repro-example",
        "version": "0.1.0",
        "install": "local",
    }  # PEP 610


def test_broken_plugin_is_listed_and_the_rest_works(plugin_venv, tmp_path, make_project):
    env = extra_distribution(tmp_path, "broken-plugin", "broken_plugin", "import module_that_does_not_exist_xyz\n")
    res, data = plugins_json(plugin_venv, env=env)
    assert res.returncode == 0, res
    by_name = {p["name"]: p for p in data}
    broken = by_name["broken-plugin"]
    assert broken["status"] == "broken" and "module_that_does_not_exist_xyz" in broken["error"]
    assert by_name["cotk-repro-example"]["status"] == "ok"
    res = run_cli("plugins", python=plugin_venv, env=env)
    assert res.returncode == 0 and "BROKEN" in res.stdout
    # other commands keep working, and the record lists only what loaded
    root = make_project({"main.py": ENTRY})
    res = run_cli("run", "--json", cwd=root, python=plugin_venv, env=env)
    assert res.returncode == 0, res
    names = {p["name"] for p in json.loads(res.stdout)["environment"]["plugins"]}
    assert "cotk-repro-example" in names and "broken-plugin" not in names
    assert run_cli("runs", "--json", cwd=root, python=plugin_venv, env=env).returncode == 0


def test_two_plugins_one_metric_name(plugin_venv, tmp_path, make_project):
    clash = """
        from cotk_repro.hookspecs import hookimpl

        @hookimpl
        def register_metrics(register):
            register("toy-metric", object)
    """
    env = extra_distribution(tmp_path, "clash-plugin", "clash_plugin", clash)
    res, data = plugins_json(plugin_venv, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    message = [line for line in res.stderr.splitlines() if line.startswith("Error: ")]
    assert len(message) == 1
    assert "'toy-metric'" in message[0] and "cotk-repro-example" in message[0] and "clash-plugin" in message[0]
    by_name = {p["name"]: p for p in data}  # the conflict is named on both plugins
    for name in ("clash-plugin", "cotk-repro-example"):
        assert len(by_name[name]["conflicts"]) == 1 and "'toy-metric'" in by_name[name]["conflicts"][0], name
    # run refuses before anything runs or is written
    root = make_project({"main.py": ENTRY})
    res = run_cli("run", cwd=root, python=plugin_venv, env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "cotk-repro-example" in res.stderr and "clash-plugin" in res.stderr and "'toy-metric'" in res.stderr
    assert not (root / ".cotk-repro").exists() and not (root / "result.json").exists()


def test_the_example_plugins_metric_and_tokenizer_work_through_evaluate(plugin_venv, tmp_path):
    hyps = tmp_path / "hyps.txt"
    hyps.write_text("A b c\na B\n", encoding="utf-8")
    res = run_cli("evaluate", "-m", "toy-metric", "--hyps", str(hyps), "--json", python=plugin_venv)
    assert res.returncode == 0, res
    out = json.loads(res.stdout)
    values = out.get("results", out)
    assert values["toy-metric"] == 2.5  # (3 + 2) / 2 tokens
    assert len(values["toy-metric hashvalue"]) == 64
    # its tokenizer lower-cases: "A"/"a" and "b"/"B" are one token each -> 3 distinct unigrams of 5
    res = run_cli(
        "evaluate", "-m", "distinct", "-t", "toy-tokenizer", "--hyps", str(hyps), "--json", python=plugin_venv
    )
    assert res.returncode == 0, res
    out = json.loads(res.stdout)
    assert out.get("results", out)["distinct-1"] == 3 / 5
    res = run_cli("metrics", "--json", python=plugin_venv)
    facts = {m["name"]: m for m in json.loads(res.stdout)}["toy-metric"]
    assert facts["needs_references"] is False and facts["higher_is_better"] is True


def test_a_component_that_does_not_honour_its_contract_is_refused_naming_the_plugin(plugin_venv, tmp_path):
    body = """
        from cotk_repro.hookspecs import hookimpl

        class NoCompute:
            name = "lazy-metric"
            version = "1"

        @hookimpl
        def register_metrics(register):
            register("lazy-metric", NoCompute)

        @hookimpl
        def register_tokenizers(register):
            register("split-tokenizer", str.split)
    """
    env = extra_distribution(tmp_path, "careless-plugin", "careless_plugin", body)
    res, data = plugins_json(plugin_venv, env=env)
    assert res.returncode == 0, res
    careless = {p["name"]: p for p in data}["careless-plugin"]
    assert careless["registers"] == {}
    assert len(careless["refused"]) == 2 and all("careless-plugin" in r for r in careless["refused"])
    hyps = tmp_path / "hyps.txt"
    hyps.write_text("a b\n", encoding="utf-8")
    for args, what in (
        (["-m", "lazy-metric"], "metric 'lazy-metric'"),
        (["-m", "distinct", "-t", "split-tokenizer"], "tokenizer 'split-tokenizer'"),
    ):
        res = run_cli("evaluate", *args, "--hyps", str(hyps), python=plugin_venv, env=env)
        assert res.returncode == 2, res
        lines = [line for line in res.stderr.splitlines() if line.startswith("Error: ")]
        assert len(lines) == 1 and "Traceback" not in res.stderr and "unexpected" not in res.stderr, res.stderr
        assert "plugin 'careless-plugin'" in lines[0] and what in lines[0] and "does not honour" in lines[0]
    res = run_cli("metrics", "--json", python=plugin_venv, env=env)
    assert "lazy-metric" not in {m["name"] for m in json.loads(res.stdout)}


# -- in-process: the manager's bookkeeping ---------------------------------------------------------


class _Plugin:
    def __init__(self, **hooks):
        for name, fn in hooks.items():
            setattr(self, name, hookspecs.hookimpl(fn))


def _metric_factory(**options):
    """A placeholder metric factory: takes its options as keywords, as the registration contract asks."""
    return None


def _manager_with(*plugins: tuple[str, object]) -> Plugins:
    p = Plugins(load_entry_points=False)
    for name, plugin in plugins:
        p._add(plugin, name, "9.9", builtin=False, module_name=name)
    return p


def test_duplicate_name_error_names_both_plugins():
    a = _Plugin(register_metrics=lambda register: register("m", 1))
    b = _Plugin(register_metrics=lambda register: register("m", 2))
    p = _manager_with(("plugin-a", a), ("plugin-b", b))
    with pytest.raises(PluginError, match=r"metric 'm' is registered by two plugins: 'plugin-a' and 'plugin-b'"):
        p.registry("metric")
    assert len(p.conflicts()) == 1
    assert p.registry("tokenizer") is not None  # other kinds unaffected


def test_a_built_in_name_stays_the_built_ins(monkeypatch):
    """A plugin that registers a built-in's name is a clash that plugins/run report, and never replaces the
    built-in: the lookup gives the built-in whether the plugins are loaded (the manager's answer) or not yet (the
    built-in modules' own hooks, no plugin loaded)."""
    import cotk_repro.plugins as plugins_module
    from cotk_repro.builtins import dataloaders as builtin_loaders
    from cotk_repro.builtins import tokenizers as builtin_tokenizers
    from cotk_repro.data.tokenizers import WordPunctTokenizer, get_tokenizer

    thief = _Plugin(
        register_tokenizers=lambda register: register("nltk", lambda: "stolen"),
        register_dataloaders=lambda register: register("language-generation", lambda *a, **k: "stolen"),
    )
    p = _manager_with(("thief", thief))
    assert p.get("tokenizer", "nltk").obj is builtin_tokenizers.nltk
    assert p.get("dataloader", "language-generation").obj is builtin_loaders.language_generation
    assert any("'nltk'" in c and "'thief'" in c for c in p.conflicts())
    with pytest.raises(PluginError, match="registered by two plugins"):
        p.registry("tokenizer")  # listing the kind still refuses the clash
    monkeypatch.setattr(plugins_module, "_PLUGINS", p)  # loaded: the manager answers
    assert plugins_module.get_component("dataloader", "language-generation") is builtin_loaders.language_generation
    assert type(get_tokenizer("nltk")) is WordPunctTokenizer
    monkeypatch.setattr(plugins_module, "_PLUGINS", None)  # not loaded: answered without loading them
    assert plugins_module.get_component("tokenizer", "nltk") is builtin_tokenizers.nltk
    assert type(get_tokenizer("nltk")) is WordPunctTokenizer
    assert plugins_module._PLUGINS is None
    assert plugins_module.builtin_component("tokenizer", "no-such") is None


def test_hook_that_raises_marks_plugin_broken():
    def bad(register):
        raise RuntimeError("kaput")

    good = _Plugin(register_metrics=lambda register: register("fine", _metric_factory))
    p = _manager_with(("bad", _Plugin(register_metrics=bad)), ("good", good))
    assert p.get("metric", "fine").plugin == "good"
    assert p.infos["bad"].broken and "kaput" in p.infos["bad"].error
    assert "bad" not in {x["name"] for x in p.loaded()}


def test_unknown_component_lists_registered_names():
    p = _manager_with(("x", _Plugin(register_metrics=lambda register: register("alpha", _metric_factory))))
    with pytest.raises(PluginError, match=r"unknown metric 'beta'; registered: .*alpha"):
        p.get("metric", "beta")


def test_invalid_hookimpl_is_broken_not_fatal():
    p = _manager_with(("weird", _Plugin(register_metrics=lambda registr: None)))  # wrong argument name
    assert p.infos["weird"].broken


# -- documentation -------------------------------------------------------------------------------


def _hookspecs():
    return [
        (name, fn) for name, fn in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(fn, "cotk_repro_spec")
    ]


def test_every_hook_is_documented():
    specs = _hookspecs()
    assert {n for n, _ in specs} >= set(KINDS.values()) | {"register_commands"}
    docs = (REPO_ROOT / "docs" / "core.md").read_text(encoding="utf-8")
    undocumented = [n for n, fn in specs if not (fn.__doc__ or "").strip()]
    assert not undocumented, f"hookspecs without a docstring: {undocumented}"
    missing = [n for n, _ in specs if f"`{n}" not in docs]
    assert not missing, f"hooks not described in docs/core.md: {missing}"


def test_builtin_plugins_are_cheap_to_import():
    """Built-in plugins and command modules must not import heavy libraries at start-up.

    Every CLI call loads them (benchmarks/run_overhead.py: `run` must cost <= 0.2 s more than
    `python entry.py`); heavy imports belong inside factories and command functions.
    """
    code = (
        "import sys; import cotk_repro.plugins as p; p.get_plugins().conflicts();"
        "import cotk_repro.cli as c; c._load_commands();"
        "heavy = [m for m in ('numpy', 'nltk', 'torch', 'fastapi', 'uvicorn', 'sqlalchemy', 'alembic',"
        " 'matplotlib', 'docker', 'git', 'requests', 'httpx', 'jinja2', 'pydantic', 'psycopg')"
        " if m in sys.modules]; print(','.join(heavy))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "COTK_REPRO_BUILTINS_ONLY": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "", f"registering the built-ins imported: {proc.stdout.strip()}"


def _as_importlib_metadata_sees_them(path: list[str], group: str) -> list[tuple[str, str, str, str]]:
    """The independent reference: importlib.metadata's entry points of ``group`` on ``path``."""
    import importlib.metadata as md

    return sorted(
        (ep.dist.metadata["Name"], ep.dist.version, ep.name, ep.value)
        for ep in md.entry_points(group=group)
        if ep.dist is not None and any(str(getattr(ep.dist, "_path", "")).startswith(p) for p in path)
    )


def test_entry_points_read_from_files_agree_with_importlib_metadata(tmp_path, monkeypatch):
    """The file scan that spares start-up importlib.metadata finds what it finds: dist-info and egg-info, the
    first of two same-named distributions on the path, comments and other groups skipped; a zip defers."""
    from cotk_repro.core.entrypoints import scan
    from cotk_repro.plugins import ENTRY_POINT_GROUP as G

    def dist(folder, stem, name, version, entry_points, header="METADATA"):
        info = folder / stem
        info.mkdir(parents=True)
        (info / header).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not-this\n")
        if entry_points is not None:
            (info / "entry_points.txt").write_text(entry_points)

    site, later, src = tmp_path / "site", tmp_path / "later", tmp_path / "src"
    dist(site, "other-1.0.dist-info", "other", "1.0", "[console_scripts]\nx = y:z\n")
    dist(site, "plain-2.0.dist-info", "plain", "2.0", None)
    dist(
        site,
        "my_plugin-0.1.dist-info",
        "My.Plugin",
        "0.1",
        f"# comment\n[console_scripts]\nmine = nope:x\n\n[{G}]\nmine = mine.plugin:hooks.impl\n"
        f"second = mine.other [extra]\n",
    )
    dist(later, "my_plugin-0.2.dist-info", "my-plugin", "0.2", f"[{G}]\nmine = shadowed\n")  # shadowed
    dist(src, "dev.egg-info", "dev", "0.0.1", f"[{G}]\ndev = dev\n", header="PKG-INFO")
    path = [str(site), str(tmp_path / "missing"), str(later), str(src)]
    found = sorted((e.dist, e.version, e.name, e.value) for e in scan(G, path))
    assert found == [
        ("My.Plugin", "0.1", "mine", "mine.plugin:hooks.impl"),
        ("My.Plugin", "0.1", "second", "mine.other [extra]"),
        ("dev", "0.0.1", "dev", "dev"),
    ]
    monkeypatch.setattr(sys, "path", path)
    assert found == _as_importlib_metadata_sees_them(path, G)
    assert scan(G, [str(site / "plain-2.0.dist-info")]) == []
    archive = tmp_path / "plugins.zip"  # cannot tell without reading it: importlib.metadata decides
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    assert scan(G, [str(site), str(archive)]) is None
    (tmp_path / "eggs" / "old_plugin-1.0-py3.11.egg").mkdir(parents=True)  # metadata in EGG-INFO: deferred too
    assert scan(G, [str(site), str(tmp_path / "eggs")]) is None
    # and in this very environment it agrees with importlib.metadata
    monkeypatch.undo()
    here = sorted((e.dist, e.version, e.name, e.value) for e in scan(G))
    assert here == _as_importlib_metadata_sees_them(sys.path, G)


def test_an_entry_point_loads_its_module_attribute(tmp_path, monkeypatch):
    from cotk_repro.core.entrypoints import EntryPoint

    (tmp_path / "ep_pkg").mkdir()
    (tmp_path / "ep_pkg" / "__init__.py").write_text("")
    (tmp_path / "ep_pkg" / "mod.py").write_text("class Hooks:\n    impl = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert EntryPoint("d", "1", "n", "ep_pkg.mod:Hooks.impl").load() == 42
    assert EntryPoint("d", "1", "n", "ep_pkg.mod [extra]").load().Hooks.impl == 42
    with pytest.raises(ValueError, match="malformed entry point"):
        EntryPoint("d", "1", "n", "not a value!").load()


def test_the_contract_is_judged_at_registration_without_calling_the_component():
    from cotk_repro.metrics import Metric
    from cotk_repro.plugins import Plugins, contract_problem

    plugins = Plugins(load_entry_points=False)
    for kind in ("metric", "tokenizer"):  # every built-in honours it
        for name, comp in plugins.registry(kind).items():
            assert contract_problem(kind, name, comp.obj) is None, (kind, name)
    assert "cannot be called with no arguments" in contract_problem("tokenizer", "t", str.split)
    assert "not a class or a factory" in contract_problem("metric", "m", 3)

    class Inherits(Metric):
        name = "inherits"

    class Computes(Metric):
        def compute(self, hypotheses, references=None):
            return {}

    class Plain:
        def forward(self, batch):
            pass

        def close(self):
            return {}

    assert "overrides neither" in contract_problem("metric", "inherits", Inherits)
    assert contract_problem("metric", "computes", Computes) is None
    assert contract_problem("metric", "plain", Plain) is None
    assert "neither forward()/close() nor compute()" in contract_problem("metric", "obj", object)

    def parametrized(arg, **options):
        return arg

    assert contract_problem("tokenizer", "pre:", parametrized) is None
    assert "no arguments" in contract_problem("tokenizer", "pre", parametrized)


def test_plugins_metrics_and_runs_json_share_one_top_level_shape(make_project):
    """`plugins --json`, `metrics --json` and `runs --json`: each a JSON list of objects, one per item."""
    root = make_project({"main.py": ENTRY, "cotk-repro.toml": '[run]\nentry = "main.py"\n'})
    assert run_cli("run", cwd=root).returncode == 0
    shapes = {}
    for command, key in (("plugins", "name"), ("metrics", "name"), ("runs", "id")):
        res = run_cli(command, "--json", cwd=root)
        assert res.returncode == 0, res
        data = json.loads(res.stdout)
        assert isinstance(data, list) and data and all(isinstance(item, dict) and key in item for item in data), command
        shapes[command] = type(data)
    assert len(set(shapes.values())) == 1
    plugins = json.loads(run_cli("plugins", "--json", cwd=root).stdout)
    assert {"registers", "refused", "conflicts", "status"} <= set(plugins[0])
