"""The typed contracts of cotk_repro/protocols.py: every hook kind refuses a broken component with one sentence
naming its plugin and accepts a good one; every built-in and first-party component honours its protocol."""

from __future__ import annotations

import json
import os
import sys
import typing
from pathlib import Path

import pytest
from conftest import run_cli
from test_plugins import _Plugin, extra_distribution

from cotk_repro import hookspecs, protocols
from cotk_repro.errors import PluginError
from cotk_repro.plugins import KINDS, Plugins
from cotk_repro.protocols import contract_problem, product_problem


class _Runtime:
    name, description = "r", "somewhere"

    def prepare(self, job):
        return {}

    def run(self, job):
        return None


class _NoRun:
    name, description = "r", "somewhere"

    def prepare(self, job):
        return {}


class _Target:
    name = "t"

    def publish(self, ctx):
        return {"target": "t", "status": "ok"}


class _TargetNoArg:
    name = "t"

    def publish(self):
        return {}


class _Gen:
    name, version, settings = "g", "1", {}

    def generate(self, inputs):
        return list(inputs)


class _Tok:
    @property
    def settings(self):
        return {"name": "t"}

    def tokenize(self, text):
        return text.split()


class _Metric:
    def compute(self, hypotheses, references=None):
        return {"m": 1.0}


class _MetricOneArg:
    def compute(self, hypotheses):
        return {"m": 1.0}


def _template(**changes):
    from cotk_repro.scaffold import ProjectTemplate

    return ProjectTemplate(**{"name": "t", "description": "d", "folders": (Path("."),), **changes})


#: kind -> (a good component, a broken one, words of the sentence that refuses the broken one)
CASES = {
    "tokenizer": (_Tok, lambda text: text.split(), "cannot be called with no arguments"),
    "dataloader": (lambda path, **options: None, lambda **options: None, "cannot be called with one argument"),
    "metric": (_Metric, _MetricOneArg, "its compute() cannot take 2 arguments"),
    "runtime": (_Runtime, _NoRun, "its class has no run()"),
    "publish_target": (_Target, _TargetNoArg, "its publish() cannot take 1 argument"),
    "generator": (_Gen, type("NoGenerate", (), {}), "neither generate() nor __call__()"),
    "template": (_template(), "templates/minimal", "it is a str, not a template"),
}


def _manager(**hooks) -> Plugins:
    p = Plugins(load_entry_points=False)
    p._add(_Plugin(**hooks), "wonky-dist", "0.1", builtin=False, module_name="wonky_module")
    return p


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_refuses_a_broken_component_with_one_sentence_naming_the_plugin(kind):
    good, broken, words = CASES[kind]
    hook = KINDS[kind]

    def register_all(register):
        register("good-one", good)
        register("broken-one", broken)

    p = _manager(**{hook: register_all})
    assert p.get(kind, "good-one").obj is good and p.get(kind, "good-one").plugin == "wonky-dist"
    assert "broken-one" not in p.registry(kind)
    said = kind.replace("_", " ")
    with pytest.raises(PluginError) as err:
        p.get(kind, "broken-one")
    sentence = err.value.message
    assert sentence.startswith(
        f"plugin 'wonky-dist' (wonky_module) registers the {said} 'broken-one', which does "
        f"not honour the {said} contract: "
    ), sentence
    assert words in sentence and "\n" not in sentence and sentence.count(". ") == 0, sentence
    assert p.infos["wonky-dist"].refused == [sentence] and p.infos["wonky-dist"].registers == {kind: ["good-one"]}


def test_what_a_factory_builds_is_checked_when_it_is_built():
    def register_runtimes(register):
        register("builds-good", _Runtime)
        register("builds-nothing", lambda: object())

    p = _manager(register_runtimes=register_runtimes)
    assert isinstance(p.build("runtime", "builds-good"), _Runtime)
    with pytest.raises(
        PluginError,
        match=r"^plugin 'wonky-dist' \(wonky_module\) registers the runtime "
        r"'builds-nothing', .*it built a object, which lacks name, description, "
        r"prepare, run$",
    ):
        p.build("runtime", "builds-nothing")
    assert product_problem("generator", str.upper) is None  # a plain text -> text callable is a generator
    assert product_problem("tokenizer", _Tok()) is None and "lacks settings" in product_problem("tokenizer", object())
    assert product_problem("metric", _Metric()) is None and "neither" in product_problem("metric", object())


def test_the_protocols_check_what_they_describe():
    """runtime_checkable is used only where isinstance tells something: an object lacking a member fails."""
    assert isinstance(_Runtime(), protocols.Runtime) and not isinstance(_NoRun(), protocols.Runtime)
    assert isinstance(_template(), protocols.Template) and not isinstance(object(), protocols.Template)
    assert isinstance(_Target(), protocols.PublishTarget) and isinstance(_Gen(), protocols.Generator)
    assert contract_problem("command", "x", 3) is None  # commands are a Typer app's business


def test_the_hook_specs_are_typed_by_the_protocols():
    for hook in KINDS.values():
        hints = typing.get_type_hints(getattr(hookspecs, hook))
        assert typing.get_origin(hints["register"]) is protocols.Register, hook
        assert hints["return"] is type(None)
    component = typing.get_args(typing.get_type_hints(hookspecs.register_templates)["register"])[0]
    assert component is protocols.Template


def test_every_built_in_and_first_party_component_honours_its_protocol():
    plugins = Plugins()  # the first-party plugins installed here (plugins/*) too
    seen = set()
    for kind in KINDS:
        for name, comp in plugins.registry(kind, strict=False).items():
            assert contract_problem(kind, name, comp.obj) is None, (kind, name, comp.plugin)
            seen.add(comp.plugin)
    assert all(not info.refused for info in plugins.infos.values()), [i.refused for i in plugins.infos.values()]
    for kind, name in (
        ("runtime", "docker"),
        ("runtime", "venv"),
        ("runtime", "local"),
        ("publish_target", "git"),
        ("publish_target", "dashboard"),
        ("generator", "copy"),
        ("generator", "ngram"),
        ("tokenizer", "space"),
        ("tokenizer", "nltk"),
        ("tokenizer", "13a"),
        ("metric", "bleu"),
        ("metric", "distinct"),
        ("metric", "rouge"),
    ):
        assert product_problem(kind, plugins.get(kind, name).obj()) is None, (kind, name)
    for comp in plugins.registry("template", strict=False).values():
        assert isinstance(comp.obj, protocols.Template)
    first_party = {"cotk-repro-lm", "cotk-repro-summarizers", "cotk-repro-templates", "cotk-repro-texygen"}
    if first_party & set(plugins.infos):
        assert first_party & seen


def test_the_example_plugins_components_honour_their_protocols(monkeypatch):
    example = Path(__file__).resolve().parent.parent / "plugins" / "cotk-repro-example"
    monkeypatch.syspath_prepend(str(example))
    import cotk_repro_example as ex

    found = {}
    ex.register_metrics(register=lambda n, c: found.__setitem__(("metric", n), c))
    ex.register_tokenizers(register=lambda n, c: found.__setitem__(("tokenizer", n), c))
    assert len(found) == 2
    for (kind, name), comp in found.items():
        assert contract_problem(kind, name, comp) is None and product_problem(kind, comp()) is None


WONKY = """
    from cotk_repro.hookspecs import hookimpl

    class NoTokenize:
        settings = {}

    @hookimpl
    def register_tokenizers(register):
        register("wonky-tokenizer", NoTokenize)

    @hookimpl
    def register_dataloaders(register):
        register("wonky-loader", lambda: None)

    @hookimpl
    def register_metrics(register):
        register("wonky-metric", 42)

    @hookimpl
    def register_runtimes(register):
        register("wonky-runtime", lambda name: None)

    @hookimpl
    def register_publish_targets(register):
        register("wonky-target", type("Mute", (), {"name": "mute"}))

    @hookimpl
    def register_generators(register):
        register("wonky-generator", type("Silent", (), {}))

    @hookimpl
    def register_templates(register):
        register("wonky-template", {"name": "wonky-template"})
"""


def test_a_plugin_breaking_every_contract_is_refused_where_users_meet_it(tmp_path):
    """A real installed distribution: `plugins --json` shows one refusal per kind; `evaluate` and `init`,
    naming one, exit 2 with that one sentence."""
    env = extra_distribution(tmp_path, "wonky-plugin", "wonky_plugin", WONKY)
    env["PYTHONPATH"] += os.pathsep + os.environ.get("PYTHONPATH", "")  # this checkout's cotk_repro, not another
    res = run_cli("plugins", "--json", python=sys.executable, env=env)
    assert res.returncode == 0, res
    wonky = {p["name"]: p for p in json.loads(res.stdout)}["wonky-plugin"]
    assert wonky["registers"] == {} and len(wonky["refused"]) == len(KINDS)
    assert all(r.startswith("plugin 'wonky-plugin' (wonky_plugin) registers the ") for r in wonky["refused"])
    hyps = tmp_path / "hyps.txt"
    hyps.write_text("a b\n", encoding="utf-8")
    for args, what in (
        (["evaluate", "-m", "wonky-metric", "--hyps", str(hyps)], "metric 'wonky-metric'"),
        (["evaluate", "-m", "distinct", "-t", "wonky-tokenizer", "--hyps", str(hyps)], "tokenizer 'wonky-tokenizer'"),
        (["init", str(tmp_path / "proj"), "--template", "wonky-template"], "template 'wonky-template'"),
    ):
        res = run_cli(*args, python=sys.executable, env=env, cwd=tmp_path)
        assert res.returncode == 2, res
        lines = [line for line in res.stderr.splitlines() if line.startswith("Error: ")]
        assert len(lines) == 1 and "Traceback" not in res.stderr and "unexpected" not in res.stderr, res.stderr
        assert "plugin 'wonky-plugin' (wonky_plugin)" in lines[0] and what in lines[0], lines[0]
        assert "does not honour" in lines[0]
