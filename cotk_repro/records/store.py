"""Records: the immutable, content-addressed account of one run (docs/spec.md section 4).

A record's ``id`` is ``sha256:`` + the hex SHA-256 of the canonical JSON of the
record without its ``id`` (see :mod:`cotk_repro.core.canonical`). Local records live
in ``.cotk-repro/runs/<hex>/`` with the entry's logs, the lock file and the
Dockerfile; they are written to a temporary folder and renamed into place.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.fileio import atomic_write
from ..errors import RecordError

# re-exported (`X as X`): the store's public names, compute_id among them (docs/spec.md)
from .identity import ID_PREFIX as ID_PREFIX
from .identity import RECORD_SCHEMA as RECORD_SCHEMA
from .identity import RECORD_SCHEMA_VERSION as RECORD_SCHEMA_VERSION
from .identity import REPRODUCTION_SCHEMA as REPRODUCTION_SCHEMA
from .identity import VERDICTS as VERDICTS
from .identity import compute_id as compute_id
from .provenance import mark, written_here
from .view import RecordView

STATE_DIR = ".cotk-repro"


#: a local record.json larger than this is not read
MAX_RECORD_BYTES = 64 * 1024 * 1024


def _not_ours(folder: Path) -> str:
    return (
        f"record {folder.name[:12]} in {folder.parent} was not written by cotk-repro on this machine (it may have "
        "come with the repository), so it is not shown or published; make your own with `cotk-repro run`"
    )


def finalize(record: dict[str, Any]) -> dict[str, Any]:
    """Set ``record["id"]`` from its content; returns the record."""
    record.pop("id", None)
    record["id"] = compute_id(record)
    return record


def validate_record(record: Any, where: str = "record") -> dict[str, Any]:
    """Check a record's shape (:class:`.model.Record`) and that its id matches its content; returns it unchanged."""
    from .model import check_record  # pydantic: imported only where a record is read, never by `run`

    return check_record(record, where)


def short_id(record_id: str, n: int = 12) -> str:
    """The first ``n`` hex digits of an id, for display."""
    return record_id.removeprefix(ID_PREFIX)[:n]


def write_json_atomic(path: Path, data: Any) -> None:
    """Write a record (or any JSON object) as sorted, indented JSON, atomically."""
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n")


class RunStore:
    """The local records of one project: ``<root>/.cotk-repro/runs/``.

    ``trusted_only`` (the default): only folders this installation wrote are read (:mod:`.provenance`); a
    folder committed to the project or put there by anyone else is skipped (:attr:`ignored`). ``reproduce``
    of a checkout reads the others too, as the stranger's records they are (validated, never signed)."""

    def __init__(self, root: Path, *, trusted_only: bool = True):
        self.root = Path(root)
        self.state = self.root / STATE_DIR
        self.runs = self.state / "runs"
        self.trusted_only = trusted_only
        #: candidate folders the last :meth:`folders` skipped as not written here
        self.ignored: list[Path] = []

    # -- writing ---------------------------------------------------------------
    def check_state(self) -> None:
        """Refuse a ``.cotk-repro`` that is a symbolic link or lies outside the project (a committed link to
        another project's would lend this one that project's records and marks)."""
        if self.state.is_symlink():
            raise RecordError(
                f"{self.state} is a symbolic link, so cotk-repro neither reads nor writes records through it; "
                "remove it (records live in a real .cotk-repro folder of the project)"
            )
        try:
            inside = self.state.resolve().parent == self.root.resolve()
        except (OSError, RuntimeError):
            inside = False
        if self.state.exists() and not inside:
            raise RecordError(f"{self.state} lies outside the project {self.root}, so it is not used for records")

    def new_workdir(self) -> Path:
        """A private folder for a run in progress (logs are written there live)."""
        self.check_state()
        try:
            tmp_root = self.state / "tmp"
            tmp_root.mkdir(parents=True, exist_ok=True)
            self.runs.mkdir(parents=True, exist_ok=True)
            return Path(tempfile.mkdtemp(prefix="run-", dir=tmp_root))
        except OSError as exc:
            raise RecordError(f"cannot write to {self.state}: {exc.strerror}") from None

    def commit(self, workdir: Path, record: dict[str, Any]) -> Path:
        """Write the record into ``workdir`` (marked as written here) and move the folder into place atomically."""
        finalize(record)
        write_json_atomic(workdir / "record.json", record)
        mark(workdir, (workdir / "record.json").read_bytes(), self.root)
        final = self.runs / str(record["id"]).removeprefix(ID_PREFIX)
        if final.exists():  # identical content already stored: immutable, keep the first
            shutil.rmtree(workdir, ignore_errors=True)
            return final
        os.replace(workdir, final)
        return final

    def import_record(self, record: dict[str, Any], files: dict[str, bytes] | None = None) -> Path:
        """Store a record from elsewhere (e.g. fetched from a remote), validated."""
        validate_record(record)
        work = self.new_workdir()
        for name, data in (files or {}).items():
            (work / name).write_bytes(data)
        write_json_atomic(work / "record.json", record)
        mark(work, (work / "record.json").read_bytes(), self.root)
        final = self.runs / str(record["id"]).removeprefix(ID_PREFIX)
        if final.exists():
            shutil.rmtree(work, ignore_errors=True)
        else:
            os.replace(work, final)
        return final

    # -- reading ---------------------------------------------------------------
    def _candidates(self) -> Iterator[Path]:
        """Record folders: real folders (not symbolic links) holding a ``record.json``."""
        self.check_state()
        if self.runs.is_dir() and not self.runs.is_symlink():
            for d in self.runs.iterdir():
                if not d.is_symlink() and d.is_dir() and (d / "record.json").exists():
                    yield d

    def folders(self) -> Iterator[Path]:
        """The record folders this store trusts: with ``trusted_only``, only those this installation wrote
        (:mod:`.provenance`); the others are listed in :attr:`ignored`."""
        self.ignored = []
        for d in self._candidates():
            if not self.trusted_only:
                yield d
                continue
            try:
                raw = self._read_json_bytes(d)
            except RecordError:
                self.ignored.append(d)
                continue
            if written_here(d, raw, self.root):
                yield d
            else:
                self.ignored.append(d)

    def _read_json_bytes(self, folder: Path) -> bytes:
        from ..core.safe_read import UnsafeFileError, read_regular

        try:
            return read_regular(folder / "record.json", MAX_RECORD_BYTES, f"record {folder.name[:12]}'s record.json")
        except UnsafeFileError as exc:
            raise RecordError(exc.message) from None
        except OSError as exc:
            raise RecordError(f"cannot read record {folder.name[:12]}: {exc.strerror}") from None

    def load_folder(self, folder: Path) -> dict[str, Any]:
        """The record of ``folder``: its ``record.json`` read as a regular file (never through a symbolic link),
        and, with ``trusted_only``, only when this installation wrote it."""
        self.check_state()
        if folder.is_symlink():
            raise RecordError(f"record folder {folder.name[:12]} is a symbolic link, so it is not read")
        raw = self._read_json_bytes(folder)
        if self.trusted_only and not written_here(folder, raw, self.root):
            raise RecordError(_not_ours(folder))
        try:
            record: dict[str, Any] = json.loads(raw.decode("utf-8"))
            return record
        except (UnicodeDecodeError, ValueError) as exc:
            raise RecordError(f"cannot read record {folder.name[:12]}: {exc}") from None

    def all(self) -> list[dict[str, Any]]:
        """All local records (that this store trusts), newest first."""
        records = []
        self.ignored = []
        for folder in self._candidates():
            raw = self._read_json_bytes(folder)
            if self.trusted_only and not written_here(folder, raw, self.root):
                self.ignored.append(folder)
                continue
            try:
                records.append(json.loads(raw.decode("utf-8")))
            except (UnicodeDecodeError, ValueError) as exc:
                raise RecordError(f"cannot read record {folder.name[:12]}: {exc}") from None
        # a stranger's folder (trusted_only=False) may hold anything: the view reads odd shapes as None
        records.sort(key=lambda r: RecordView.of(r).command.started_at or "", reverse=True)
        return records

    def resolve(self, ref: str) -> Path:
        """Folder of the record named by ``latest``, a full id (with or without ``sha256:``) or a unique prefix."""
        ref = ref.strip()
        if ref == "latest":
            ok = [v for v in map(RecordView.of, self.all()) if v.ok]
            if not ok:
                raise RecordError(f"there are no successful records in {self.runs} yet; run `cotk-repro run` first")
            return self.runs / (ok[0].id or "").removeprefix(ID_PREFIX)
        hexpart = ref.removeprefix(ID_PREFIX).lower()
        if not hexpart or any(c not in "0123456789abcdef" for c in hexpart):
            raise RecordError(f"{ref!r} is not a record id, an id prefix or 'latest'")
        matches = [f for f in self.folders() if f.name.startswith(hexpart)]
        if not matches:
            planted = [f for f in self.ignored if f.name.startswith(hexpart)]
            if planted:
                raise RecordError(_not_ours(planted[0]))
            raise RecordError(f"no local record matches {ref!r}")
        if len(matches) > 1:
            names = ", ".join(sorted(m.name[:12] for m in matches)[:5])
            raise RecordError(f"{ref!r} is ambiguous: it matches {len(matches)} records ({names})")
        return matches[0]

    def get(self, ref: str) -> dict[str, Any]:
        return self.load_folder(self.resolve(ref))
