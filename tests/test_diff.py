"""`cotk-repro diff`: verdicts, tolerances (command line and config), files and records as inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cotk_repro.records.diffing import compare_results, overall, within

H1, H2 = "a" * 64, "b" * 64


def write(path: Path, obj) -> str:
    path.write_text(json.dumps(obj))
    return str(path)


def diff_json(cli, cwd, a, b, *opts):
    res = cli("diff", a, b, "--json", *opts, cwd=cwd)
    assert "Traceback" not in res.stderr, res
    return res, json.loads(res.stdout)


def verdicts(data) -> dict[str, str]:
    return {m["metric"]: m["verdict"] for m in data["metrics"]}


def test_every_verdict_from_result_files(tmp_path, cli):
    a = write(
        tmp_path / "a.json",
        {
            "same": 0.5,
            "same hashvalue": H1,
            "off": 0.5,
            "off hashvalue": H1,
            "other-hash": 0.5,
            "other-hash hashvalue": H1,
            "nohash": 0.5,
            "gone": 1.0,
            "gone hashvalue": H1,
        },
    )
    b = write(
        tmp_path / "b.json",
        {
            "same": 0.5,
            "same hashvalue": H1,
            "off": 0.6,
            "off hashvalue": H1,
            "other-hash": 0.5,
            "other-hash hashvalue": H2,
            "nohash": 0.5,
            "nohash hashvalue": H1,
            "new": 2.0,
        },
    )
    res, data = diff_json(cli, tmp_path, a, b)
    assert res.returncode == 1
    assert verdicts(data) == {
        "same": "reproduced",
        "off": "differs",
        "other-hash": "not comparable",
        "nohash": "unverifiable",
        "gone": "missing",
        "new": "extra",
    }
    assert data["verdict"] == "not reproduced"
    off = next(m for m in data["metrics"] if m["metric"] == "off")
    assert off["a_value"] == 0.5 and off["b_value"] == 0.6 and off["abs_diff"] == pytest.approx(0.1)
    assert off["rtol"] == 1e-6 and off["atol"] == 1e-12
    # human output: a table with the verdicts, same exit status
    res = cli("diff", a, b, cwd=tmp_path)
    assert res.returncode == 1
    for word in ("reproduced", "differs", "not comparable", "unverifiable", "missing", "not reproduced"):
        assert word in res.stdout


@pytest.mark.parametrize(
    ("b_extra", "code", "verdict"),
    [
        ({}, 0, "reproduced"),
        ({"x hashvalue": None}, 0, "reproduced"),  # unverifiable only: not negative
    ],
)
def test_exit_zero_when_nothing_negative(tmp_path, cli, b_extra, code, verdict):
    a = write(tmp_path / "a.json", {"x": 1.0, "x hashvalue": H1, "y": 2.0})
    b = write(tmp_path / "b.json", {"x": 1.0 + 1e-9, "x hashvalue": H1, "y": 2.0, **b_extra})
    res, data = diff_json(cli, tmp_path, a, b)
    assert res.returncode == code and data["verdict"] == verdict
    assert verdicts(data)["y"] == "unverifiable"


def test_tolerances_on_the_command_line(tmp_path, cli):
    a = write(tmp_path / "a.json", {"ppl": 100.0, "ppl hashvalue": H1})
    b = write(tmp_path / "b.json", {"ppl": 100.5, "ppl hashvalue": H1})
    assert diff_json(cli, tmp_path, a, b)[0].returncode == 1
    res, data = diff_json(cli, tmp_path, a, b, "--rtol", "0.01")
    assert res.returncode == 0 and verdicts(data) == {"ppl": "reproduced"} and data["metrics"][0]["rtol"] == 0.01
    res, data = diff_json(cli, tmp_path, a, b, "--atol", "0.5")
    assert res.returncode == 0
    res, data = diff_json(cli, tmp_path, a, b, "--atol", "0.49")
    assert res.returncode == 1


def test_per_metric_tolerances_from_config(make_project, cli):
    root = make_project({"cotk-repro.toml": "[reproduce.tolerances.ppl]\natol = 1.0\n"})
    a = write(root / "a.json", {"ppl": 100.0, "ppl hashvalue": H1, "bleu": 0.3, "bleu hashvalue": H2})
    b = write(root / "b.json", {"ppl": 100.5, "ppl hashvalue": H1, "bleu": 0.3001, "bleu hashvalue": H2})
    res, data = diff_json(cli, root, a, b)
    assert res.returncode == 1 and verdicts(data) == {"ppl": "reproduced", "bleu": "differs"}
    rows = {m["metric"]: m for m in data["metrics"]}
    assert rows["ppl"]["atol"] == 1.0 and rows["bleu"]["atol"] == 1e-12
    # the command line overrides the config
    res, data = diff_json(cli, root, a, b, "--atol", "1")
    assert res.returncode == 0 and verdicts(data) == {"ppl": "reproduced", "bleu": "reproduced"}


def test_records_as_inputs(make_project, cli):
    entry = (
        'import json, sys\njson.dump({"m": float(sys.argv[1]), "m hashvalue": "'
        + H1
        + '"}, open("result.json", "w"))\n'
    )
    root = make_project({"main.py": entry})
    ids = []
    for value in ("0.5", "0.5", "0.7"):
        res = cli("run", "--json", "--", value, cwd=root)
        assert res.returncode == 0, res
        ids.append(json.loads(res.stdout)["id"])
    res, data = diff_json(cli, root, ids[0], ids[1][7:19])
    assert res.returncode == 0 and data["verdict"] == "reproduced" and data["a"] == ids[0] and data["b"] == ids[1]
    assert data["environment_differences"] == []
    res, data = diff_json(cli, root, ids[0], "latest")
    assert res.returncode == 1 and verdicts(data) == {"m": "differs"}
    # a record file and a run folder, and mixing a record with a result file
    folder = root / ".cotk-repro" / "runs" / ids[0][7:]
    res, data = diff_json(cli, root, str(folder / "record.json"), str(folder))
    assert res.returncode == 0
    res, data = diff_json(cli, root, str(folder / "record.json"), write(root / "r.json", {"m": 0.5, "m hashvalue": H1}))
    assert res.returncode == 0 and data["b"] is None


def test_diff_from_outside_a_project(tmp_path, cli):
    a = write(tmp_path / "a.json", {"m": 1.0})
    assert cli("diff", a, a, cwd=tmp_path).returncode == 0
    res = cli("diff", a, "deadbeef", cwd=tmp_path)
    assert res.returncode == 2 and "no project here" in res.stderr


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ('{"m": "x"}', "not a finite number"),
        ('{"schema": "cotk-repro/record", "id": "sha256:00"}', "lacks"),
    ],
)
def test_diff_bad_inputs(tmp_path, cli, content, fragment):
    (tmp_path / "bad.json").write_text(content)
    a = write(tmp_path / "a.json", {"m": 1.0})
    res = cli("diff", a, str(tmp_path / "bad.json"), cwd=tmp_path)
    assert res.returncode == 2 and fragment in res.stderr and "Traceback" not in res.stderr
    res = cli("diff", a, str(tmp_path / "missing.json"), cwd=tmp_path)
    assert res.returncode == 2 and "no such file" in res.stderr


def test_tampered_record_refused(make_project, cli):
    root = make_project({"main.py": 'import json\njson.dump({"m": 1.0}, open("result.json", "w"))\n'})
    rec = json.loads(cli("run", "--json", cwd=root).stdout)
    rec["results"]["m"]["value"] = 2.0
    tampered = write(root / "t.json", rec)
    res = cli("diff", "latest", tampered, cwd=root)
    assert res.returncode == 2 and "does not match its content" in res.stderr


def test_within_and_overall():
    assert within(1.0, 1.0 + 1e-7, 1e-6, 0)
    assert not within(1.0, 1.1, 1e-6, 1e-12)
    assert within(0.0, 1e-13, 0, 1e-12)
    rows = compare_results({"a": {"value": 1.0, "hash": H1}}, {"a": {"value": 1.0, "hash": H1}}, lambda m: (0, 0))
    assert overall(rows) == "reproduced"
    assert overall([]) == "not reproduced"  # nothing compared is not a reproduction
    extra_only = compare_results({}, {"a": {"value": 1.0, "hash": None}}, lambda m: (0, 0))
    assert [r.verdict for r in extra_only] == ["extra"] and overall(extra_only) == "not reproduced"
