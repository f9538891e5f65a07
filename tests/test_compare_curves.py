"""Values reported per epoch (result keys ``NAME@epoch-N``) are curves in compare's report, never table columns.

A toy plugin (written to a temporary site, found through its entry point like any plugin) gives a metric
whose result carries a fixed curve beside its final value, and a "training" generator whose ``result()``
reports one; the expected points are the fixture's own numbers. The real case (the Texygen models trained
at toy sizes) is plugins/cotk-repro-texygen/tests/test_texygen_curves.py.
"""

from __future__ import annotations

import csv
import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from cotk_repro.plugins import reset_plugins

PLUGIN = '''
from cotk_repro.hookspecs import hookimpl

H = "ab" * 32
CURVE = {1: 0.5, 2: 0.75, 10: 0.875}


class Scored:
    """A final value and its curve (the form a training run's result file has)."""
    higher_is_better = True
    references = "none"

    def __init__(self):
        self.n = 0

    def forward(self, data):
        self.n += len(data["hyps"])

    def close(self):
        out = {"acc": 1.0, "acc hashvalue": H, "acc signature": "acc|v:1"}
        for epoch, value in CURVE.items():
            out[f"acc@epoch-{epoch}"] = value
            out[f"acc@epoch-{epoch} hashvalue"] = H
        return out


class Trained:
    name, version, batch_size = "trained", "1", None

    def __init__(self, epochs=3):
        self.settings = {"epochs": epochs}
        self.calls = 0

    def generate(self, inputs):
        self.calls += 1
        return [x[::-1] for x in inputs]

    def result(self):
        return {**{f"loss@epoch-{e}": 1.0 / e for e in range(1, self.settings["epochs"] + 1)},
                "loss": 0.1, "per-line": [1, 2]}


@hookimpl
def register_metrics(register):
    register("toy-acc", Scored)


@hookimpl
def register_generators(register):
    register("trained", Trained)
'''


@pytest.fixture
def toy_site(tmp_path):
    import importlib

    site = tmp_path / "site"
    site.mkdir()
    (site / "cotk_curves_toy.py").write_text(PLUGIN, encoding="utf-8")
    dist = site / "cotk_curves_toy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cotk-curves-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cotk_repro]\ncotk_curves_toy = cotk_curves_toy\n")
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    reset_plugins()
    yield site
    sys.path.remove(str(site))
    sys.modules.pop("cotk_curves_toy", None)
    reset_plugins()


def _bench(root, systems: str) -> None:
    (root / "data" / "gold").mkdir(parents=True)
    (root / "data" / "gold" / "refs.txt").write_text("a b\nc d\n", encoding="utf-8")
    (root / "data" / "inputs.txt").write_text("one\ntwo\n", encoding="utf-8")
    (root / "s1.txt").write_text("a b\nc\n", encoding="utf-8")
    (root / "bench.toml").write_text(
        '[report]\ntitle = "t"\ncache = "cache"\n[[dataset]]\nname = "d"\n'
        'path = "data"\n' + systems + '[[metric]]\nname = "toy-acc"\n',
        encoding="utf-8",
    )


def test_a_metrics_epoch_keys_are_a_curve_and_not_columns(toy_site, tmp_path):
    from cotk_repro.compare import compare

    _bench(
        tmp_path, '[[system]]\nname = "first"\nsamples = "s1.txt"\n[[system]]\nname = "second"\nsamples = "s1.txt"\n'
    )
    result, files = compare(tmp_path / "bench.toml", out=tmp_path / "r", jobs=1)
    assert not result.failures, result.failures
    assert result.all_columns() == ["toy-acc"]  # the final value only
    assert result.curves == {
        "acc": {("first", "d"): [(1, 0.5), (2, 0.75), (10, 0.875)], ("second", "d"): [(1, 0.5), (2, 0.75), (10, 0.875)]}
    }
    out = tmp_path / "r"
    svg = (out / "curve-acc.svg").read_text(encoding="utf-8")
    root = ET.fromstring(svg)
    for system in ("first", "second"):
        assert system in re.findall(r"<!-- (.+?) -->", svg)
        line = root.find(f".//{{http://www.w3.org/2000/svg}}g[@id='curve-{system}']")
        assert len(line.findall(".//{http://www.w3.org/2000/svg}use")) == 3
    assert (out / "curve-acc.pdf").read_bytes().startswith(b"%PDF")
    assert (out / "curve-acc.png").read_bytes().startswith(b"\x89PNG")
    header = next(csv.reader((out / "corpus-d.csv").open(encoding="utf-8")))
    assert header == ["system", "toy-acc"]
    assert not any(
        "@epoch" in c["column"] or "@epoch" in (c["key"] or "")
        for c in json.loads((out / "results.json").read_text())["cells"]
    )
    data = json.loads((out / "results.json").read_text())
    assert {"metric": "acc", "system": "first", "dataset": "d", "points": [[1, 0.5], [2, 0.75], [10, 0.875]]} in data[
        "curves"
    ]
    assert {"curves.csv", "curve-acc.svg", "curve-acc.pdf", "curve-acc.png"} <= set(data["files"])


def test_a_training_generators_own_result_is_drawn_and_cached(toy_site, tmp_path):
    from cotk_repro.compare import compare

    _bench(tmp_path, '[[system]]\nname = "gen"\ngenerator = "trained"\nsettings = { epochs = 4 }\n')
    result, _ = compare(tmp_path / "bench.toml", out=tmp_path / "r", jobs=1)
    assert not result.failures, result.failures
    assert result.curves["loss"] == {("gen", "d"): [(e, 1.0 / e) for e in range(1, 5)]}
    cached = list((tmp_path / "cache" / "trained").glob("*.result.json"))
    assert len(cached) == 1 and "per-line" not in json.loads(cached[0].read_text())  # numbers only
    again, _ = compare(tmp_path / "bench.toml", out=tmp_path / "r2", jobs=1)
    assert again.generated == {("gen", "d"): "cache"} and again.curves == result.curves
    cached[0].unlink()  # an entry without its result is not reused: the curve would be missing
    third, _ = compare(tmp_path / "bench.toml", out=tmp_path / "r3", jobs=1)
    assert third.generated == {("gen", "d"): "generated"} and third.curves == result.curves


def test_without_curves_no_curve_files(toy_site, tmp_path):
    from cotk_repro.compare import compare

    _bench(tmp_path, '[[system]]\nname = "first"\nsamples = "s1.txt"\n')
    (tmp_path / "bench.toml").write_text((tmp_path / "bench.toml").read_text().replace("toy-acc", "distinct"))
    result, files = compare(tmp_path / "bench.toml", out=tmp_path / "r", jobs=1)
    assert result.curves == {} and not any(f.name.startswith("curve") for f in files)
    assert 'id="curves"' not in (tmp_path / "r" / "report.html").read_text(encoding="utf-8")
