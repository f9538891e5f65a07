"""records/model.py: one model of the record checks every reader, never changes a record's bytes, and is
what the dashboard's OpenAPI upload schema is generated from; `run` writes records without importing it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from dashboard_support import make_record, make_verdict

from cotk_repro.core.canonical import canonical_json
from cotk_repro.errors import RecordError
from cotk_repro.records import compute_id, finalize, validate_record
from cotk_repro.records.model import Record, Reproduction, check_reproduction

ENTRY = 'import json\njson.dump({"bleu": 0.25, "bleu hashvalue": "ab" * 32}, open("result.json", "w"))\n'


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A record as `cotk-repro run` writes it, and the modules that run imported."""
    import os

    from conftest import git, write_files

    root = tmp_path_factory.mktemp("model") / "proj"
    root.mkdir()
    write_files(
        root,
        {
            "main.py": ENTRY,
            ".gitignore": ".cotk-repro/\nresult.json\n",
            "cotk-repro.toml": '[project]\nname = "m"\ntask = "lm"\ndataset = "coco"\n',
        },
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "x")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "XDG_CACHE_HOME": str(root.parent / "cache")}
    env.pop("COTK_REPRO_CACHE", None)
    # the first run validates the new cotk-repro.toml (pydantic, once per file content); the second is measured
    first = subprocess.run(
        [sys.executable, "-m", "cotk_repro", "run", "--json"], cwd=root, capture_output=True, text=True, env=env
    )
    assert first.returncode == 0, first.stderr[-2000:]
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cotk_repro", "run", "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rid = json.loads(proc.stdout)["id"]
    record = json.loads((root / ".cotk-repro" / "runs" / rid.removeprefix("sha256:") / "record.json").read_text())
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return record, imported


def test_run_writes_its_record_without_pydantic(written):
    _, imported = written
    assert "cotk_repro.records.runner" in imported  # the import log is the run's
    assert not {m for m in imported if m == "pydantic" or m.startswith("pydantic.")}
    assert "cotk_repro.records.model" not in imported


def test_a_run_record_validates_and_keeps_its_bytes(written):
    record, _ = written
    before = canonical_json(record)
    snapshot = copy.deepcopy(record)
    assert validate_record(record) is record  # the dict itself, not a model dump
    assert record == snapshot and canonical_json(record) == before and compute_id(record) == record["id"]


def test_the_model_names_every_field_run_writes(written):
    """The model (and so the API schema) describes the record as `run` writes it, nested objects included."""
    record, _ = written
    schema = Record.model_json_schema()
    defs = schema["$defs"]
    assert set(record) <= set(schema["properties"])
    for key in ("code", "environment", "project", "command"):
        name = schema["properties"][key]["$ref"].rsplit("/", 1)[1]
        assert set(record[key]) <= set(defs[name]["properties"]), key
    assert set(record["results"]["bleu"]) <= set(defs["Result"]["properties"])
    assert set(schema["required"]) == {
        "schema",
        "schema_version",
        "id",
        "status",
        "code",
        "environment",
        "project",
        "command",
        "results",
    }


def test_validation_never_adds_defaults_nor_coerces():
    """Keys the model does not name, ints for floats, absent optional keys: all kept exactly as sent."""
    rec = make_record({"bleu": (1, None)}, name="bytes")
    rec["results"]["bleu"]["value"] = 1  # an int where the model says number
    del rec["command"]["args"], rec["data"]  # optional keys absent (the model has defaults for them)
    rec["environment"]["future_field"] = {"nested": [1, 2.5, None]}
    rec["zz_newer_writer"] = True
    finalize(rec)
    sent = json.dumps(rec, sort_keys=False)
    before = canonical_json(rec)
    validate_record(rec)
    assert json.dumps(rec, sort_keys=False) == sent and canonical_json(rec) == before
    assert "data" not in rec and "args" not in rec["command"]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r["results"]["bleu"].update(value=True), "'results.bleu.value' must be a number, got 'True'"),
        (lambda r: r["results"]["bleu"].update(value="0.25"), "'results.bleu.value' must be a number"),
        (
            lambda r: r["results"]["bleu"].update(hash="xyz"),
            "'results.bleu.hash' is malformed (expected 64 hex digits of SHA-256), got 'xyz'",
        ),
        (lambda r: r["results"].update(rouge=0.5), "'results.rouge' must be an object"),
        (lambda r: r["code"].pop("commit"), "'code.commit' is missing"),
        (lambda r: r.update(code=["abc"]), "'code' must be an object"),
        (lambda r: r["command"].update(args="--fast"), "'command.args' must be a list"),
        (lambda r: r["command"].update(args=[1]), "'command.args.0' must be a string"),
        (lambda r: r["environment"].update(packages=[{"name": "x"}]), "'environment.packages.0.version' is missing"),
        (lambda r: r.update(schema_version="1"), "'schema_version' must be an integer"),
        (lambda r: r.update(status="x" * 33), "'status' string should have at most 32 characters"),
        (lambda r: r.update(data={"raw": 1}), "'data.raw' must be a string"),
    ],
)
def test_refusals_name_the_key(change, message):
    rec = make_record({"bleu": (0.25, "ab" * 32)}, name="bad")
    change(rec)
    finalize(rec)  # a correct id: only the shape is wrong
    with pytest.raises(RecordError) as info:
        validate_record(rec, "the record")
    assert str(info.value.message).startswith("the record: ") and message in info.value.message, info.value.message


def test_refusals_before_the_shape():
    rec = make_record({"bleu": (0.25, None)})
    with pytest.raises(RecordError, match="lacks code, results"):
        validate_record({k: v for k, v in rec.items() if k not in ("code", "results")})
    with pytest.raises(RecordError, match="not a cotk-repro record"):
        validate_record({**rec, "schema": "cotk-repro/result"})
    with pytest.raises(RecordError, match="does not match its content"):
        validate_record({**rec, "status": "failed"})


def test_reproduction_model():
    verdict = make_verdict("sha256:" + "a" * 64)
    snapshot = copy.deepcopy(verdict)
    assert check_reproduction(verdict, "sha256:" + "a" * 64) is verdict and verdict == snapshot
    with pytest.raises(RecordError, match="record_id is not the record"):
        check_reproduction(verdict, "sha256:" + "b" * 64)
    with pytest.raises(RecordError, match="verdict must be one of"):
        check_reproduction({**verdict, "verdict": "great"})
    with pytest.raises(RecordError, match=r"'rerun.results.bleu.value' must be a number"):
        check_reproduction({**verdict, "rerun": {"results": {"bleu": {"value": "high"}}}})
    with pytest.raises(RecordError, match="'metrics' must be a list"):
        check_reproduction({**verdict, "metrics": {"bleu": 1}})
    assert set(verdict) <= set(Reproduction.model_json_schema(by_alias=True)["properties"]) | {"cotk_repro_version"}


def test_the_api_upload_schema_is_the_model(tmp_path):
    from cotk_repro.dashboard.app import create_app

    doc = create_app(f"sqlite:///{tmp_path / 'd.sqlite3'}").openapi()
    schemas = doc["components"]["schemas"]
    body = doc["paths"]["/api/v1/records"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"oneOf": [{"$ref": "#/components/schemas/SignedRecord"}, {"$ref": "#/components/schemas/Record"}]}
    model = Record.model_json_schema(ref_template="#/components/schemas/{model}")
    assert schemas["Record"] == {k: v for k, v in model.items() if k != "$defs"}
    assert schemas["SignedRecord"]["properties"]["record"] == {"$ref": "#/components/schemas/Record"}
    assert schemas["Result"]["properties"]["hash"]["anyOf"][0]["pattern"] == "^[0-9a-fA-F]{64}$"
    repro = doc["paths"]["/api/v1/records/{record_id}/reproductions"]["post"]["requestBody"]
    assert repro["content"]["application/json"]["schema"]["oneOf"][1] == {"$ref": "#/components/schemas/Reproduction"}
    assert schemas["Reproduction"]["properties"]["verdict"]["enum"] == ["reproduced", "not reproduced", "could not run"]


def test_verify_refuses_a_forged_id_under_a_valid_signature(tmp_path):
    """The signature covers the record without its id: verify checks the id (and shape) through the model too."""
    from signing_support import make_key

    from cotk_repro.core.signing import key_from_path, sign_record
    from cotk_repro.remote.signatures import INVALID, VALID, check_signature

    key = key_from_path(make_key(tmp_path / "k"), "test")
    rec = make_record({"bleu": (0.25, "ab" * 32)}, name="signed")
    signature = sign_record(rec, key)
    assert check_signature(rec, signature, None)["status"] == VALID
    forged = {**rec, "id": "sha256:" + "0" * 64}
    row = check_signature(forged, signature, None)
    assert row["status"] == INVALID and "does not match its content" in row["detail"]
    bad_shape = finalize({**copy.deepcopy(rec), "command": {"args": "--x"}})
    row = check_signature(bad_shape, sign_record(bad_shape, key), None)
    assert row["status"] == INVALID and "'command.args' must be a list" in row["detail"]
