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
    """--rtol/--atol only tighten a metric's declared tolerance; --widen-tolerance judges with them as given and the
    verdict says so. ``ppl`` is no registered metric: it has the undeclared default (1e-6, 1e-12)."""
    a = write(tmp_path / "a.json", {"ppl": 100.0, "ppl hashvalue": H1})
    b = write(tmp_path / "b.json", {"ppl": 100.5, "ppl hashvalue": H1})
    assert diff_json(cli, tmp_path, a, b)[0].returncode == 1
    res, data = diff_json(cli, tmp_path, a, b, "--rtol", "0.01")  # wider than declared: not taken without consent
    assert res.returncode == 1 and data["metrics"][0]["rtol"] == 1e-6 and data["metrics"][0]["widened"] is False
    # ... and never silently (issue 38): one warning naming the metric, the value and the flag that widens
    [warning] = [ln for ln in res.stderr.splitlines() if ln.startswith("Warning:")]
    assert "--rtol 0.01 was not used for ppl" in warning and "--widen-tolerance" in warning, res
    res, data = diff_json(cli, tmp_path, a, b, "--rtol", "1e-9", "--atol", "1")  # rtol tightens: used; atol not
    assert "--rtol" not in res.stderr and "--atol 1 was not used for ppl" in res.stderr, res
    res, data = diff_json(cli, tmp_path, a, b, "--rtol", "0.01", "--widen-tolerance")
    assert "Warning:" not in res.stderr, res
    row = data["metrics"][0]
    assert res.returncode == 0 and verdicts(data) == {"ppl": "reproduced"} and row["rtol"] == 0.01
    assert row["widened"] is True and row["identical"] is False and data["tolerance_widened"] is True
    res, data = diff_json(cli, tmp_path, a, b, "--atol", "0.49", "--widen-tolerance")
    assert res.returncode == 1
    res = cli("diff", a, b, "--atol", "0.5", "--widen-tolerance", cwd=tmp_path)
    assert res.returncode == 0 and "within tolerance (moved by 0.5, widened)" in res.stdout, res
    assert "tolerance widened (--widen-tolerance) for: ppl" in res.stdout


def test_per_metric_tolerances_from_config(make_project, cli):
    """The project's config may tighten a metric's tolerance; a wider per-metric value is refused (exit 2, naming
    the metric and both values) unless the reproducer widens."""
    root = make_project({"cotk-repro.toml": "[reproduce]\nrtol = 1e-9\n[reproduce.tolerances.ppl]\natol = 1.0\n"})
    a = write(root / "a.json", {"ppl": 100.0, "ppl hashvalue": H1, "bleu": 0.3, "bleu hashvalue": H2})
    b = write(root / "b.json", {"ppl": 100.5, "ppl hashvalue": H1, "bleu": 0.3001, "bleu hashvalue": H2})
    res = cli("diff", a, b, "--json", cwd=root)
    assert res.returncode == 2 and res.stdout == "", res
    assert "ppl with atol 1, wider than the atol 1e-12 its metric declares" in " ".join(res.stderr.split())
    assert "Traceback" not in res.stderr and "--widen-tolerance" in res.stderr
    res, data = diff_json(cli, root, a, b, "--widen-tolerance")
    assert res.returncode == 1 and verdicts(data) == {"ppl": "reproduced", "bleu": "differs"}
    rows = {m["metric"]: m for m in data["metrics"]}
    assert rows["ppl"]["atol"] == 1.0 and rows["ppl"]["widened"] is True
    # bleu is exact (declared 0, 0): the project-wide rtol 1e-9 never widens it
    assert (rows["bleu"]["rtol"], rows["bleu"]["atol"], rows["bleu"]["widened"]) == (0.0, 0.0, False)
    assert rows["ppl"]["rtol"] == 1e-9  # the project-wide value tightens the undeclared default


def test_a_model_metric_within_its_tolerance_and_a_counting_metric_that_moved(tmp_path, cli):
    """coherence declares rtol 1e-5: a move of 3e-7 relative is "within tolerance (moved by X)"; bleu is exact: a
    move of one ulp differs; an unchanged value is identical."""
    pytest.importorskip("cotk_repro_lm", reason="coherence's tolerance is the cotk-repro-lm plugin's (not installed)")
    a = write(
        tmp_path / "a.json",
        {"coherence": 0.5, "coherence hashvalue": H1, "bleu": 0.3, "bleu hashvalue": H2, "distinct-1": 0.25},
    )
    b = write(
        tmp_path / "b.json",
        {
            "coherence": 0.5 * (1 + 3e-7),
            "coherence hashvalue": H1,
            "bleu": 0.30000000000000004,
            "bleu hashvalue": H2,
            "distinct-1": 0.25,
        },
    )
    res, data = diff_json(cli, tmp_path, a, b)
    rows = {m["metric"]: m for m in data["metrics"]}
    assert res.returncode == 1 and data["verdict"] == "not reproduced"
    assert rows["coherence"]["verdict"] == "reproduced" and rows["coherence"]["identical"] is False
    assert (rows["coherence"]["rtol"], rows["coherence"]["atol"]) == (1e-5, 1e-6)
    assert rows["bleu"]["verdict"] == "differs" and (rows["bleu"]["rtol"], rows["bleu"]["atol"]) == (0.0, 0.0)
    assert rows["distinct-1"]["identical"] is True and rows["distinct-1"]["verdict"] == "unverifiable"
    res = cli("diff", a, b, cwd=tmp_path)
    assert "within tolerance (moved by 1.5e-07)" in res.stdout and "differs (moved by 5.6e-17)" in res.stdout, res
    assert "unverifiable, identical" in res.stdout and "exact" in res.stdout


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
