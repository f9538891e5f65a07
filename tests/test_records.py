"""Local records: `runs`, `show` (latest, prefixes, ambiguity), --json, atomic storage."""

from __future__ import annotations

import json

import pytest

from cotk_repro.errors import RecordError
from cotk_repro.records import RunStore, finalize, validate_record

ENTRY = 'import json, sys\njson.dump({"bleu": float(sys.argv[1])}, open("result.json", "w"))\n'


def fake_record(i: int, status: str = "ok", started: str | None = None) -> dict:
    return finalize(
        {
            "schema": "cotk-repro/record",
            "schema_version": 1,
            "status": status,
            "code": {"commit": "0" * 40, "branch": "main", "dirty": False},
            "environment": {
                "python": {"version": "3.11.0", "implementation": "CPython"},
                "platform": {"system": "Linux", "machine": "x86_64"},
                "packages": [],
                "plugins": [],
            },
            "project": {"name": "p", "task": "", "dataset": ""},
            "command": {
                "entry": "main.py",
                "args": [],
                "cwd": ".",
                "started_at": started or f"2026-01-01T00:00:{i:02d}.000Z",
                "duration_s": 0.1,
                "exit_status": 0,
            },
            "results": {"bleu": {"value": i / 100, "hash": None, "signature": None, "metric": "bleu", "version": None}},
            "data": None,
        }
    )


def test_runs_and_show_through_the_cli(make_project, cli):
    root = make_project({"main.py": ENTRY})
    ids = []
    for value in ("0.1", "0.2"):
        res = cli("run", "--json", "--", value, cwd=root)
        assert res.returncode == 0, res
        ids.append(json.loads(res.stdout)["id"])
    res = cli("run", "--", "oops", cwd=root)  # ValueError in the entry: a failed record
    assert res.returncode == 2

    listed = json.loads(cli("runs", "--json", cwd=root).stdout)
    assert [r["status"] for r in listed] == ["failed", "ok", "ok"]  # newest first
    assert [r["id"] for r in listed[1:]] == ids[::-1]
    assert listed[1]["results"] == {"bleu": 0.2}
    table = cli("runs", cwd=root)
    assert table.returncode == 0 and ids[0].removeprefix("sha256:")[:12] in table.stdout and "failed" in table.stdout

    latest = json.loads(cli("show", "latest", "--json", cwd=root).stdout)
    assert latest["id"] == ids[1]  # the newest successful run, not the failed one
    # --json prints the exact stored record
    folder = root / ".cotk-repro" / "runs" / ids[1].removeprefix("sha256:")
    assert latest == json.loads((folder / "record.json").read_text())
    validate_record(latest)
    for ref in (ids[0], ids[0].removeprefix("sha256:"), ids[0][7:17], ids[0][7:17].upper()):
        shown = cli("show", ref, "--json", cwd=root)
        assert shown.returncode == 0, shown
        assert json.loads(shown.stdout)["id"] == ids[0]
    human = cli("show", ids[0][7:15], cwd=root)
    assert human.returncode == 0 and ids[0] in human.stdout and "bleu" in human.stdout and "0.1" in human.stdout
    # from a subfolder of the project too
    (root / "sub").mkdir()
    assert json.loads(cli("show", "latest", "--json", cwd=root / "sub").stdout)["id"] == ids[1]


def test_show_errors(make_project, cli):
    root = make_project({"main.py": ENTRY})
    res = cli("show", "latest", cwd=root)
    assert res.returncode == 2 and "no successful records" in res.stderr
    res = cli("runs", cwd=root)
    assert res.returncode == 0 and "no records yet" in res.stderr
    assert json.loads(cli("runs", "--json", cwd=root).stdout) == []
    res = cli("show", "zzz", cwd=root)
    assert res.returncode == 2 and "is not a record id" in res.stderr
    res = cli("show", "abcdef", cwd=root)
    assert res.returncode == 2 and "no local record matches 'abcdef'" in res.stderr


def test_ambiguous_prefix(make_project, cli):
    root = make_project({"main.py": ENTRY})
    store = RunStore(root)
    by_first: dict[str, list[str]] = {}
    i = 0
    while not any(len(v) > 1 for v in by_first.values()):  # at most 17 records (pigeonhole)
        rec = fake_record(i)
        store.import_record(rec)
        by_first.setdefault(rec["id"][7], []).append(rec["id"])
        i += 1
    first, clash = next((k, v) for k, v in by_first.items() if len(v) > 1)
    res = cli("show", first, cwd=root)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"'{first}' is ambiguous" in res.stderr and clash[0][7:19] in res.stderr and clash[1][7:19] in res.stderr
    # a longer prefix resolves it
    res = cli("show", clash[0][7:20], "--json", cwd=root)
    assert res.returncode == 0 and json.loads(res.stdout)["id"] == clash[0]


def test_store_is_immutable_and_atomic(tmp_path):
    store = RunStore(tmp_path)
    rec = fake_record(1)
    folder = store.import_record(rec, files={"stdout.log": b"hello\n"})
    assert folder.name == rec["id"][7:] and (folder / "stdout.log").read_bytes() == b"hello\n"
    # importing the same record again keeps the first copy
    store.import_record(json.loads(json.dumps(rec)), files={"stdout.log": b"other\n"})
    assert (folder / "stdout.log").read_bytes() == b"hello\n"
    assert not any((tmp_path / ".cotk-repro" / "tmp").iterdir())
    # a tampered record is refused and nothing is left behind
    bad = json.loads(json.dumps(rec))
    bad["results"]["bleu"]["value"] = 0.99
    with pytest.raises(RecordError, match="does not match"):
        store.import_record(bad)
    assert [p.name for p in store.folders()] == [folder.name]
    assert not any((tmp_path / ".cotk-repro" / "tmp").iterdir())


def test_store_ignores_incomplete_folders(tmp_path):
    store = RunStore(tmp_path)
    store.import_record(fake_record(1))
    (store.runs / ("ab" * 32)).mkdir()  # a folder without record.json is not a record
    assert len(store.all()) == 1
    assert store.get("latest")["id"] == fake_record(1)["id"]


def test_record_json_is_written_atomically(tmp_path, monkeypatch):
    """A crash while writing record.json leaves no record folder and no temporary file."""
    import cotk_repro.core.fileio as fileio

    store = RunStore(tmp_path)
    work = store.new_workdir()
    (work / "stdout.log").write_text("x")
    real_open = fileio.os.fdopen

    def boom(fd, *a, **k):  # the disk fills up half-way through record.json
        fh = real_open(fd, *a, **k)
        fh.write = lambda data: (_ for _ in ()).throw(OSError(28, "No space left on device"))
        return fh

    monkeypatch.setattr(fileio.os, "fdopen", boom)
    with pytest.raises(OSError):
        store.commit(work, fake_record(2))
    assert list(store.folders()) == []
    assert [p.name for p in work.iterdir()] == ["stdout.log"]  # no half-written record.json
