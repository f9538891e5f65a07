"""Project configuration: cotk-repro.toml, [tool.cotk-repro] in pyproject.toml, strict keys."""

from __future__ import annotations

import json

import pytest

from cotk_repro.core.config import load_config
from cotk_repro.errors import ConfigError

ENTRY = 'import json, sys\njson.dump({"n": len(sys.argv) - 1}, open("out.json", "w"))\n'


def test_cotk_repro_toml_drives_run(make_project, cli):
    root = make_project({
        "exp.py": ENTRY,
        "cotk-repro.toml": '[project]\nname = "demo"\ntask = "lg"\ndataset = "coco"\n'
                           '[run]\nentry = "exp.py"\nargs = ["a", "b"]\nresult = "out.json"\n',
        ".gitignore": ".cotk-repro/\nout.json\n",
    })
    res = cli("run", "--json", cwd=root)
    assert res.returncode == 0, res
    rec = json.loads(res.stdout)
    assert rec["project"] == {"name": "demo", "task": "lg", "dataset": "coco"}
    assert rec["command"]["entry"] == "exp.py" and rec["results"]["n"]["value"] == 2


def test_pyproject_tool_table(make_project, cli):
    root = make_project({
        "exp.py": ENTRY,
        "pyproject.toml": '[project]\nname = "x"\n[tool.cotk-repro.project]\ntask = "dialog"\n'
                          '[tool.cotk-repro.run]\nentry = "exp.py"\nresult = "out.json"\n',
        ".gitignore": ".cotk-repro/\nout.json\n",
    })
    res = cli("run", "--json", cwd=root)
    assert res.returncode == 0, res
    rec = json.loads(res.stdout)
    assert rec["project"]["task"] == "dialog" and rec["project"]["name"] == root.name


def test_defaults_without_config(tmp_path):
    cfg = load_config(tmp_path)
    assert cfg.source is None and cfg.get("run", "entry") == "main.py" and cfg.get("run", "result") == "result.json"
    assert cfg.tolerance("bleu") == (1e-6, 1e-12)


def test_cotk_repro_toml_wins_over_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.cotk-repro.run]\nentry = "a.py"\n')
    (tmp_path / "cotk-repro.toml").write_text('[run]\nentry = "b.py"\n')
    assert load_config(tmp_path).get("run", "entry") == "b.py"


def test_per_metric_tolerances(tmp_path):
    (tmp_path / "cotk-repro.toml").write_text(
        "[reproduce]\nrtol = 0.01\n[reproduce.tolerances.perplexity]\nrtol = 0.1\natol = 2\n")
    cfg = load_config(tmp_path)
    assert cfg.tolerance("perplexity") == (0.1, 2.0)
    assert cfg.tolerance("bleu") == (0.01, 1e-12)
    assert cfg.tolerance("perplexity", rtol=0.5) == (0.5, 2.0)  # the command line wins


@pytest.mark.parametrize(
    ("filename", "text", "fragments"),
    [
        ("cotk-repro.toml", "[run]\nentyr = 'x.py'\n", ["unknown key 'run.entyr'", "cotk-repro.toml"]),
        ("cotk-repro.toml", "[runn]\nentry = 'x.py'\n", ["unknown key 'runn'", "cotk-repro.toml"]),
        ("cotk-repro.toml", "[reproduce.tolerances.bleu]\nrtoll = 1\n",
         ["unknown key 'reproduce.tolerances.bleu.rtoll'"]),
        ("pyproject.toml", "[tool.cotk-repro.project]\nnmae = 'x'\n", ["unknown key 'project.nmae'", "pyproject.toml"]),
        ("cotk-repro.toml", "[run]\nargs = 'not a list'\n", ["'run.args' must be a list"]),
        ("cotk-repro.toml", "[reproduce]\nrtol = true\n", ["'reproduce.rtol' must be a number"]),
        ("cotk-repro.toml", "[run]\nentry = [\n", ["invalid TOML"]),
        ("cotk-repro.toml", "[publish]\nrecords_ref = 'refs/heads/results'\n",
         ["'publish.records_ref' must be a full ref ending in 'cotk-repro-records'", "cotk-repro.toml"]),
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
