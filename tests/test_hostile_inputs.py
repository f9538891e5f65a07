"""A hostile-input suite (issue 32 item 13): every string field of the record schema × a battery of payloads.

The string fields are generated from the record model (:class:`cotk_repro.records.model.Record` and the models
it nests), so a field added to the schema is attacked automatically. Each payload is put into a record with a
valid id, which is then read by every command that reads records: ``reproduce`` from a dashboard URL (a
static HTTP server posing as one) and from a git repository (``--list``), ``verify``, ``show``, ``runs`` and
``diff``. Asserted each time: the canary file is never created, no command dies with an unexpected error,
and the terminal never receives a control or bidirectional character raw.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path

import pytest
from dashboard_support import make_record
from pydantic import BaseModel
from test_hostile import _bare_with_records, _post, cli, dashboard, serve_record  # noqa: F401 - a fixture

pytestmark = pytest.mark.slow


def _string_fields(model: type[BaseModel], prefix: tuple = ()) -> list[tuple]:
    """Dotted paths (as tuples; ``0`` a list's first item, ``"*"`` a map's values) of every string field."""
    out: list[tuple] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        out += _paths_of(field.annotation, (*prefix, key))
    return out


def _paths_of(tp, path: tuple) -> list[tuple]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is str:
        return [path]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _string_fields(tp, path)
    if origin is typing.Annotated:
        return _paths_of(args[0], path)
    if origin in (typing.Union, types.UnionType):  # Optional[X] and X | None alike
        return [p for a in args if a is not type(None) for p in _paths_of(a, path)]
    if origin is list and args:
        return _paths_of(args[0], (*path, 0))
    if origin is dict and len(args) == 2:
        return [(*path, "*key")] + _paths_of(args[1], (*path, "*"))
    return []


def record_string_fields() -> list[tuple]:
    from cotk_repro.records.model import Record

    skip = {("id",), ("schema",)}  # the id is recomputed; the schema is a constant
    return [p for p in _string_fields(Record) if p not in skip]


def _set(record: dict, path: tuple, value: str) -> None:
    node = record
    for i, key in enumerate(path[:-1]):
        if key == "*":
            key = next(iter(node))
        if isinstance(node, list) and not node:
            node.append({})
        if key == "*key":
            return
        if isinstance(node, dict) and (key not in node or node[key] is None):
            node[key] = [{}] if path[i + 1] == 0 else {}
        node = node[key]
    last = path[-1]
    if isinstance(node, list) and not node:
        node.append({})
        node = node[0] if last != 0 else node
    if last == "*key":  # a map's key: rename its first entry (or add one)
        first = next(iter(node), None)
        node[value] = node.pop(first) if first is not None else "x"
    elif last == "*":
        node[next(iter(node), "k")] = value
    else:
        node[last] = value


def payloads(canary: Path) -> dict[str, str]:
    c = str(canary)
    return {
        "option": f"--upload-pack=touch {c}",
        "short-option": f"-oProxyCommand=touch {c}",
        "subshell": f"$(touch {c})",
        "backticks": f"`touch {c}`",
        "semicolon": f"x; touch {c}; #",
        "newline": f"x\ntouch {c}\n",
        "nul": "x\x00y",
        "dotdot": "../../../../../../../../tmp/cotk-hostile",
        "absolute": c,
        "rtl-zero-width": "bl\u202eeu\u200b\u2066x",
        "escape": "\x1b]0;owned\x07\x1b[2J",
        "markup": "[link=http://evil.invalid]x[/link]",
        "html": "<script>alert(1)</script>\"'><img src=x onerror=alert(1)>",
    }


def hostile_record(path: tuple, value: str, **kw) -> dict:
    from cotk_repro.records import finalize

    record = make_record({"bleu": (0.25, None)}, **kw)
    _set(record, path, value)
    return finalize(record)


def _check(proc, canary: Path, allowed: tuple = (0, 1, 2)) -> None:
    out = proc.stdout + proc.stderr
    assert not canary.exists(), out[-2000:]
    assert proc.returncode in allowed, out[-2000:]
    assert "unexpected" not in out.lower() and "Traceback" not in out, out[-2000:]
    for raw in ("\x1b", "\x07", "\u202e", "\u200b", "\u2066"):
        assert raw not in proc.stderr, ascii(proc.stderr[-800:])
        if not proc.stdout.lstrip().startswith(("{", "[")):  # JSON output carries the data itself, escaped
            assert raw not in proc.stdout, ascii(proc.stdout[-800:])


def test_the_generated_fields_cover_the_schema():
    fields = record_string_fields()
    assert ("code", "remote_url") in fields and ("command", "entry") in fields and ("project", "task") in fields
    assert ("results", "*key") in fields and ("environment", "packages", 0, "name") in fields
    assert len(fields) >= 25, fields


@pytest.fixture(scope="module")
def canary(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("canary") / "CANARY"


@pytest.fixture(scope="module")
def all_records(canary) -> list[dict]:
    """One record per (field, payload), each with a valid id."""
    return [
        hostile_record(path, value, name=f"h{i}")
        for i, path in enumerate(record_string_fields())
        for value in payloads(canary).values()
    ]


def test_list_and_verify_a_repository_of_hostile_records(tmp_path, canary, all_records):
    bare = _bare_with_records(tmp_path, all_records)
    listed = cli("reproduce", str(bare), "--list", env={"COLUMNS": "300"}, timeout=600)
    _check(listed, canary, (0,))
    verified = cli("verify", str(bare), "--allow-unsigned", env={"COLUMNS": "300"}, timeout=600)
    _check(verified, canary, (0, 1))


@pytest.mark.parametrize(
    "kind",
    [
        "option",
        "subshell",
        "semicolon",
        "newline",
        "nul",
        "dotdot",
        "absolute",
        "rtl-zero-width",
        "escape",
        "markup",
        "short-option",
        "backticks",
        "html",
    ],
)
def test_every_command_that_reads_records(tmp_path, canary, kind, make_project):
    from cotk_repro.records import RunStore, finalize

    value = payloads(canary)[kind]
    everywhere = make_record({"bleu": (0.25, None)}, name="all")
    for path in record_string_fields():
        if path[-1] != "*key" and path not in {("code", "commit"), ("status",)}:
            _set(everywhere, path, value)
    everywhere = finalize(everywhere)
    # with a git URL git would accept: the other fields reach the later steps
    fetchable = finalize(
        {**json.loads(json.dumps(everywhere)), "code": {**everywhere["code"], "remote_url": "git://127.0.0.1:9/x.git"}}
    )
    for record in (everywhere, fetchable):
        with serve_record(record) as (base, _calls):
            proc = cli(
                "reproduce",
                f"{base}/records/{record['id']}",
                "--runtime",
                "local",
                "--trust-remote-code",
                "--allow-unsigned",
                cwd=tmp_path,
                env={"COLUMNS": "300"},
            )
        _check(proc, canary, (2,))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(everywhere))
    b.write_text(json.dumps(fetchable))
    _check(cli("diff", str(a), str(b), cwd=tmp_path, env={"COLUMNS": "300"}), canary)
    root = make_project({"main.py": "print(1)\n"})
    store = RunStore(root)
    for record in (everywhere, fetchable):
        try:
            store.import_record(record)
        except Exception:
            continue
        _check(cli("show", record["id"][7:19], cwd=root, env={"COLUMNS": "300"}), canary)
    _check(cli("runs", cwd=root, env={"COLUMNS": "300"}), canary, (0,))


def test_a_ten_megabyte_string_in_every_field_is_refused_or_read_not_a_crash(tmp_path, canary):
    big = "A" * (10 * 1024 * 1024)
    record = make_record({"bleu": (0.25, None)}, name="big")
    _set(record, ("project", "name"), big)
    _set(record, ("code", "remote_url"), "https://example.invalid/" + big)
    from cotk_repro.records import finalize

    record = finalize(record)
    with serve_record(record) as (base, _calls):
        proc = cli("reproduce", f"{base}/records/{record['id']}", cwd=tmp_path, timeout=300)
    _check(proc, canary, (2,))
    assert "is not a plain https://" in proc.stderr
    assert len(proc.stderr) < 20_000


def test_the_dashboard_refuses_or_stores_hostile_records_and_shows_them_escaped(dashboard, canary):
    import requests

    from cotk_repro.core.signing import sign_record

    key = dashboard["users"]["alice"]["key"]
    for kind, value in payloads(canary).items():
        record = make_record({"bleu": (0.25, None)}, name=f"dash-{kind}")
        for path in record_string_fields():
            if path[-1] != "*key" and path not in {("code", "commit"), ("status",)}:
                _set(record, path, value)
        from cotk_repro.records import finalize

        record = finalize(record)
        res = _post(dashboard, "/records", {"record": record, "signature": sign_record(record, key)}, "alice")
        assert res.status_code in (201, 422), (kind, res.status_code, res.text[:300])
        if res.status_code != 201:
            continue
        page = requests.get(dashboard["url"] + f"/records/{record['id']}", timeout=30)
        assert page.status_code == 200
        assert "<script>alert(1)" not in page.text and "<img src=x" not in page.text
        api = requests.get(dashboard["url"] + f"/api/v1/records/{record['id']}", timeout=30)
        assert api.status_code == 200 and api.json()["record"] == record
    assert not canary.exists()
