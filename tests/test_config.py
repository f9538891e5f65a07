"""Project configuration: cotk-repro.toml, [tool.cotk-repro] in pyproject.toml, strict keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cotk_repro.core.config import load_config
from cotk_repro.errors import ConfigError

ENTRY = 'import json, sys\njson.dump({"n": len(sys.argv) - 1}, open("out.json", "w"))\n'


def test_cotk_repro_toml_drives_run(make_project, cli):
    root = make_project(
        {
            "exp.py": ENTRY,
            "cotk-repro.toml": '[project]\nname = "demo"\ntask = "lg"\ndataset = "coco"\n'
            '[run]\nentry = "exp.py"\nargs = ["a", "b"]\nresult = "out.json"\n',
            ".gitignore": ".cotk-repro/\nout.json\n",
        }
    )
    res = cli("run", "--json", cwd=root)
    assert res.returncode == 0, res
    rec = json.loads(res.stdout)
    assert rec["project"] == {"name": "demo", "task": "lg", "dataset": "coco"}
    assert rec["command"]["entry"] == "exp.py" and rec["results"]["n"]["value"] == 2


def test_pyproject_tool_table(make_project, cli):
    root = make_project(
        {
            "exp.py": ENTRY,
            "pyproject.toml": '[project]\nname = "x"\n[tool.cotk-repro.project]\ntask = "dialog"\n'
            '[tool.cotk-repro.run]\nentry = "exp.py"\nresult = "out.json"\n',
            ".gitignore": ".cotk-repro/\nout.json\n",
        }
    )
    res = cli("run", "--json", cwd=root)
    assert res.returncode == 0, res
    rec = json.loads(res.stdout)
    assert rec["project"]["task"] == "dialog" and rec["project"]["name"] == root.name


def test_defaults_without_config(tmp_path):
    cfg = load_config(tmp_path)
    assert cfg.source is None and cfg.get("run", "entry") == "main.py" and cfg.get("run", "result") == "result.json"
    assert cfg.tolerance_settings() == (None, None, {})  # each metric's declared tolerance applies


def test_cotk_repro_toml_wins_over_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.cotk-repro.run]\nentry = "a.py"\n')
    (tmp_path / "cotk-repro.toml").write_text('[run]\nentry = "b.py"\n')
    assert load_config(tmp_path).get("run", "entry") == "b.py"


def test_per_metric_tolerances(tmp_path):
    (tmp_path / "cotk-repro.toml").write_text(
        "[reproduce]\nrtol = 0.01\n[reproduce.tolerances.perplexity]\nrtol = 0.1\natol = 2\n"
    )
    cfg = load_config(tmp_path)
    assert cfg.tolerance_settings() == (0.01, None, {"perplexity": {"rtol": 0.1, "atol": 2.0}})
    # they may only tighten what each metric declares (tests/test_tolerances.py has the rules)


@pytest.mark.parametrize(
    ("filename", "text", "fragments"),
    [
        ("cotk-repro.toml", "[run]\nentyr = 'x.py'\n", ["cotk-repro.toml:2: unknown key 'run.entyr'"]),
        ("cotk-repro.toml", "[runn]\nentry = 'x.py'\n", ["cotk-repro.toml:1: unknown key 'runn'"]),
        (
            "cotk-repro.toml",
            "[reproduce.tolerances.bleu]\nrtoll = 1\n",
            ["cotk-repro.toml:2: unknown key 'reproduce.tolerances.bleu.rtoll' (known here: atol, rtol)"],
        ),
        ("pyproject.toml", "[tool.cotk-repro.project]\nnmae = 'x'\n", ["pyproject.toml:2: unknown key 'project.nmae'"]),
        (
            "cotk-repro.toml",
            "[run]\nargs = 'not a list'\n",
            ["cotk-repro.toml:2: 'run.args' must be a list, got 'not a list'"],
        ),
        (
            "cotk-repro.toml",
            "[run]\nentry = 'x.py'\nargs = ['a', 1]\n",
            ["toml:3: 'run.args' must be a list of strings"],
        ),
        ("cotk-repro.toml", "reproduce = 3\n", ["cotk-repro.toml:1: 'reproduce' must be a table"]),
        ("cotk-repro.toml", "[publish]\npush = 'yes'\n", ["toml:2: 'publish.push' must be true or false, got 'yes'"]),
        ("cotk-repro.toml", "[project]\nname = 7\n", ["toml:2: 'project.name' must be a string, got 7"]),
        (
            "cotk-repro.toml",
            "[reproduce]\nrtol = true\n",
            ["cotk-repro.toml:2: 'reproduce.rtol' must be a number, got True"],
        ),
        ("cotk-repro.toml", "[run]\nentry = [\n", ["invalid TOML"]),
        (
            "cotk-repro.toml",
            "[publish]\nrecords_ref = 'refs/heads/results'\n",
            ["cotk-repro.toml:2: 'publish.records_ref' must be a full ref ending in 'cotk-repro-records'"],
        ),
        ("cotk-repro.toml", "[publish]\nrecords_ref = 'team-cotk-repro-records'\n", ["must be a full ref"]),
    ],
)
def test_config_errors(make_project, cli, filename, text, fragments):
    root = make_project({"main.py": "pass\n", filename: text})
    for command in (("run",), ("diff", "a.json", "b.json")):
        res = cli(*command, cwd=root)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res
        [line] = [x for x in res.stderr.splitlines() if x.startswith("Error: ")]
        for fragment in fragments:
            assert fragment in line, res
    assert not (root / ".cotk-repro").exists()
    with pytest.raises(ConfigError):
        load_config(root)


CHECK = (
    "import sys\nfrom cotk_repro.core.config import load_config\ncfg = load_config(sys.argv[1])\n"
    "print('pydantic' in sys.modules, cfg.get('run', 'entry'))\n"
)


def test_a_config_that_passed_is_not_validated_again_until_it_changes(tmp_path):
    """The memo of valid files spares `run` pydantic; it never hides an error in a changed file."""
    project = tmp_path / "p"
    project.mkdir()
    config = project / "cotk-repro.toml"
    config.write_text("[run]\nentry = 'x.py'\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("COTK_REPRO_CACHE", None)

    def load() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", CHECK, str(project)], capture_output=True, text=True, env=env)

    assert load().stdout.split() == ["True", "x.py"]  # validated with pydantic
    assert load().stdout.split() == ["False", "x.py"]  # remembered: pydantic not imported
    config.write_text("[run]\nentry = 'x.py'\nentyr = 'y.py'\n")
    res = load()
    assert res.returncode != 0 and "cotk-repro.toml:3: unknown key 'run.entyr'" in res.stderr
    config.write_text("[run]\nentry = 'y.py'\n")
    assert load().stdout.split() == ["True", "y.py"]
    config.write_text("[run]\nentry = 'x.py'\n")  # the first bytes again: remembered
    assert load().stdout.split() == ["False", "x.py"]
