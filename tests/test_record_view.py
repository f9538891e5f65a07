"""records/view.py: the typed read view of a record reads what the pydantic model reads, never changes the
record (its id and signed bytes stay those of the canonical dict), and never raises on a stranger's malformed one."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys

import pytest
from dashboard_support import make_record

from cotk_repro.core.canonical import canonical_json
from cotk_repro.records import RecordView, compute_id, finalize
from cotk_repro.records.model import Record


def _record() -> dict:
    record = make_record({"bleu": (0.25, "ab" * 32), "distinct-1": (3, None)})
    record["code"]["dirty"] = True
    record["environment"]["python"]["major_minor"] = "3.11"
    record["data"] = {"raw": "ab" * 32}
    record["future_key"] = {"kept": True}  # a newer writer's key: read past, kept, hashed
    return finalize(record)


def test_the_view_reads_what_the_pydantic_model_reads():
    """The independent reference: the record model (records/model.py) parses the same dict."""
    record = _record()
    view, model = RecordView.of(record), Record.model_validate(record)
    assert view.id == model.id and view.status == model.status and view.error == model.error
    assert (view.code.commit, view.code.branch, view.code.remote_url, view.code.dirty) == (
        model.code.commit,
        model.code.branch,
        model.code.remote_url,
        model.code.dirty,
    )
    assert (view.project.name, view.project.task, view.project.dataset) == (
        model.project.name,
        model.project.task,
        model.project.dataset,
    )
    assert view.command.entry == model.command.entry and list(view.command.args) == (model.command.args or [])
    assert view.command.exit_status == model.command.exit_status
    assert view.environment.python_version == model.environment.python.version
    assert view.environment.python_major_minor == "3.11"
    assert list(view.results) == list(model.results)
    for name, r in view.results.items():
        m = model.results[name]
        assert (r.value, r.hash, r.signature, r.metric, r.version) == (
            m.value,
            m.hash,
            m.signature,
            m.metric,
            m.version,
        )
    assert view.results["distinct-1"].value == 3 and type(view.results["distinct-1"].value) is int  # as written
    assert view.data == record["data"] and view.ok


def test_the_view_never_changes_the_record_or_its_signed_bytes():
    record = _record()
    before, bytes_before = copy.deepcopy(record), canonical_json(record)
    view = RecordView.of(record)
    assert record == before and canonical_json(record) == bytes_before and compute_id(record) == record["id"]
    assert view.raw is record and view.command.recorded is record["command"]
    assert view.environment.recorded is record["environment"]
    assert view.recorded_results() == record["results"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.id = "sha256:" + "0" * 64  # type: ignore[misc]


@pytest.mark.parametrize(
    "hostile",
    [
        None,
        [],
        "record",
        7,
        {},
        {"id": 5, "status": ["ok"], "error": {"x": 1}},
        {"code": "main", "project": [1], "command": 3, "environment": "linux", "results": ["bleu"], "data": "x"},
        {
            "code": {"commit": 1, "dirty": "yes", "remote_url": ["u"]},
            "results": {"bleu": 0.3, "rouge": {"value": "1"}},
            "environment": {"python": "3.11", "packages": "numpy", "plugins": [1, {"name": "p"}], "platform": []},
            "command": {"args": "a b", "exit_status": True, "duration_s": "1"},
        },
    ],
)
def test_a_malformed_record_reads_as_none_and_never_raises(hostile):
    view = RecordView.of(hostile)
    for value in (
        view.id,
        view.status,
        view.error,
        view.code.commit,
        view.code.remote_url,
        view.code.dirty,
        view.project.name,
        view.command.entry,
        view.command.exit_status,
        view.command.duration_s,
        view.environment.python_version,
        view.data,
    ):
        assert value is None
    assert view.command.args == () and view.environment.packages == () and not view.ok
    assert all(r.value is None for r in view.results.values())
    assert view.environment.plugins in ((), ({"name": "p"},))
    if isinstance(hostile, dict) and "environment" in hostile and isinstance(hostile["environment"], dict):
        assert view.environment.packages_recorded == "numpy"  # as recorded: reproduce's lock says what is wrong


def test_reading_a_record_costs_no_pydantic():
    code = (
        "import sys; from cotk_repro.records.view import RecordView; RecordView.of({}); "
        "print(any(m == 'pydantic' or m.startswith('pydantic.') for m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout.strip().lower()) is False, proc.stderr
