"""Records on a dedicated git ref, written with plumbing only.

The records ref (default ``refs/heads/cotk-repro-records``) is its own history,
unrelated to the user's branches: each commit's tree holds
``records/<hex>/{record.json, record.sig, requirements.lock, Dockerfile, result.json}``
(and the run's ``stdout.log``, ``stderr.log`` only with ``publish.logs = true``). Commits are built with a temporary index
(``GIT_INDEX_FILE``), ``git write-tree``, ``git commit-tree`` and
``git update-ref``, so the work tree, the real index and HEAD are never touched.
Records are immutable, so merging two histories of the ref is the union of their
trees.

The same helpers read the ref on the reproduce side (list records, read files).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import jsonbudget
from ..core.git import GitError, git, has_identity, out, rev_parse
from ..records import ID_PREFIX, RecordView

DEFAULT_REF = "refs/heads/cotk-repro-records"
RECORDS_DIR = "records"
#: files of a local record folder that travel with it (the ones that exist)
LOG_FILES = ("stdout.log", "stderr.log")
RECORD_FILES = (
    "record.json",
    "record.sig",
    "publication.json",
    "requirements.lock",
    "Dockerfile",
    "stdout.log",
    "stderr.log",
    "result.json",
)
#: a record.json on a records ref larger than this is not read
MAX_REF_RECORD_BYTES = jsonbudget.RECORD.bytes
#: all the record.json of one records ref together (each path counted) larger than this: the rest is not read
MAX_REF_RECORDS_TOTAL = jsonbudget.REF_TOTAL.bytes
#: a file of a local record folder larger than this is not published
MAX_FILE_BYTES = 256 * 1024 * 1024
#: a name and address for commits on the records ref when the user has none configured
FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "cotk-repro",
    "GIT_AUTHOR_EMAIL": "cotk-repro@localhost",
    "GIT_COMMITTER_NAME": "cotk-repro",
    "GIT_COMMITTER_EMAIL": "cotk-repro@localhost",
}


def tree_entries(cwd: Path | str, rev: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob sha) of every file in ``rev``'s tree."""
    text = git(cwd, "ls-tree", "-r", "-z", "--full-tree", rev).stdout.decode("utf-8", "replace")
    entries: dict[str, tuple[str, str]] = {}
    for item in text.split("\0"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        mode, _type, sha = meta.split()
        entries[path] = (mode, sha)
    return entries


def record_files(folder: Path, *, logs: bool = False) -> dict[str, bytes]:
    """The files of a local record folder that go onto the records ref; the run's stdout/stderr logs only
    with ``logs`` (``publish.logs = true``): an entry may print secrets, and warnings carry home paths."""
    from ..core.safe_read import UnsafeFileError, read_regular

    if folder.is_symlink():
        raise GitError(f"record folder {folder.name[:12]} is a symbolic link, so nothing of it is published")
    files = {}
    for name in RECORD_FILES:
        if name in LOG_FILES and not logs:
            continue
        try:  # each file itself, inside the folder: never through a symbolic link, never a device or a FIFO
            files[name] = read_regular(folder / name, MAX_FILE_BYTES, f"{name} of record {folder.name[:12]}")
        except FileNotFoundError:
            continue
        except UnsafeFileError as exc:
            raise GitError(f"{exc.message}; nothing of record {folder.name[:12]} was published") from None
        except OSError as exc:
            raise GitError(f"cannot read {name} of record {folder.name[:12]}: {exc.strerror}") from None
    if "record.json" not in files:
        raise GitError(f"{folder} holds no record.json")
    return files


def record_path(record_id: str) -> str:
    """Return the folder, inside the records ref's tree, that holds the record `record_id`."""
    return f"{RECORDS_DIR}/{record_id.removeprefix(ID_PREFIX)}"


@dataclass
class RefUpdate:
    """The outcome of adding files to a ref: its commit now, and whether a new commit was made."""

    ref: str
    commit: str
    changed: bool


def add_to_ref(
    repo: Path, ref: str, files: dict[str, bytes], *, message: str, merge_with: Iterable[str] = ()
) -> RefUpdate:
    """Commit ``files`` (path -> bytes) onto ``ref`` on top of its current tree (and of ``merge_with``).

    Uses a temporary index; never touches the work tree, the real index or HEAD.
    Returns the new (or unchanged) tip.
    """
    parents: list[str] = []
    for rev in [ref, *merge_with]:
        sha = rev_parse(repo, rev)
        if sha and sha not in parents:
            parents.append(sha)
    entries: dict[str, tuple[str, str]] = {}
    for parent in parents:
        for path, entry in tree_entries(repo, parent).items():
            entries.setdefault(path, entry)
    for path, data in files.items():
        sha = out(repo, "hash-object", "-w", "--stdin", input=data)
        entries[path] = ("100644", sha)
    fd, index = tempfile.mkstemp(prefix="cotk-repro-index.")
    os.close(fd)
    os.unlink(index)  # git wants to create it itself
    try:
        env = {"GIT_INDEX_FILE": index}
        info = "".join(f"{mode} {sha}\t{path}\n" for path, (mode, sha) in sorted(entries.items()))
        git(repo, "update-index", "--add", "--index-info", env=env, input=info.encode("utf-8"))
        tree = out(repo, "write-tree", env=env)
    finally:
        Path(index).unlink(missing_ok=True)
        Path(index + ".lock").unlink(missing_ok=True)
    if len(parents) == 1 and out(repo, "rev-parse", parents[0] + "^{tree}") == tree:
        return RefUpdate(ref, parents[0], False)  # nothing new: idempotent
    if len(parents) > 1:
        # histories diverged: keep the one whose tree already equals the union, if any
        for p in parents:
            if out(repo, "rev-parse", p + "^{tree}") == tree:
                parents = [p, *[q for q in parents if q != p]]
                break
    commit_env = None if has_identity(repo) else FALLBACK_IDENTITY
    args = ["commit-tree", tree]
    for p in parents:
        args += ["-p", p]
    args += ["-m", message]
    commit = out(repo, *args, env=commit_env)
    old = rev_parse(repo, ref) or "0" * 40
    git(repo, "update-ref", "-m", "cotk-repro publish", ref, commit, old)
    return RefUpdate(ref, commit, True)


def tree_listing(repo: Path | str, rev: str) -> dict[str, tuple[str, str, int | None]]:
    """path -> (object type, sha, size in bytes; None for a gitlink) of every entry of ``rev``'s tree, sizes from
    ``git ls-tree -l``: known before any object is read."""
    text = git(repo, "ls-tree", "-r", "-l", "-z", "--full-tree", "--end-of-options", rev).stdout.decode(
        "utf-8", "replace"
    )
    entries: dict[str, tuple[str, str, int | None]] = {}
    for item in text.split("\0"):
        meta, tab, path = item.partition("\t")
        parts = meta.split()
        if not tab or len(parts) != 4:
            continue
        _mode, kind, sha, size = parts
        entries[path] = (kind, sha, int(size) if size.isdigit() else None)
    return entries


def list_records(repo: Path, rev: str, skipped: list[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """Every record on ``rev`` (parsed record.json), newest first.

    Each ``records/<hex>/record.json`` is read only when it is a blob within :data:`MAX_REF_RECORD_BYTES` and the
    per-record parse budget (:data:`.jsonbudget.RECORD`), and while the ref's total budget
    (:data:`.jsonbudget.REF_TOTAL`: bytes and values, a blob counted once for each path that names it) lasts.
    Any other entry (a gitlink, a huge blob, bytes that are not a JSON object, one past the total) is left out
    with a sentence in ``skipped`` as ``(path, reason)``, and the others stay usable. The blobs are streamed
    from one ``git cat-file --batch``, each read once however many paths name it."""
    skipped = skipped if skipped is not None else []
    entries = tree_listing(repo, rev)
    allowance = jsonbudget.Allowance(jsonbudget.REF_TOTAL)
    wanted = []
    for path, (kind, sha, size) in sorted(entries.items()):
        if not (path.startswith(RECORDS_DIR + "/") and path.endswith("/record.json") and path.count("/") == 2):
            continue
        if kind != "blob":
            skipped.append((path, f"{path} is a {kind}, not a file, so it is not read"))
        elif size is None or size > MAX_REF_RECORD_BYTES:
            skipped.append(
                (
                    path,
                    f"{path} is {size:,} bytes, over the {MAX_REF_RECORD_BYTES:,}-byte limit for a record, so it is not read",
                )
            )
        elif allowance.bytes + size > allowance.total.bytes:
            skipped.append(
                (
                    path,
                    f"{path} is past the {allowance.total.bytes:,}-byte limit for all records of a ref, so it is not read",
                )
            )
        else:
            allowance.bytes += size
            wanted.append((path, sha, size))
    if not wanted:
        return []
    allowance.bytes = 0  # spent again below, with each record's values
    records: list[dict[str, Any]] = []
    for path, size, body in _blobs(repo, wanted):
        if isinstance(body, str):
            skipped.append((path, f"{path} {body}"))
            continue
        shape, value = body
        if not allowance.spend(size, shape):
            skipped.append(
                (
                    path,
                    (
                        f"{path} is past the limit of {allowance.total.elements:,} values for all records of a ref, "
                        "so it is not read"
                    ),
                )
            )
            continue
        if isinstance(value, dict):  # as stored: every key is part of its id and signature
            records.append(value)
        else:
            skipped.append((path, f"{path} is not a JSON object"))
    records.sort(key=lambda r: RecordView.of(r).command.started_at or "", reverse=True)
    return records


def _blobs(repo: Path, wanted: list[tuple[str, str, int]]) -> Iterator[tuple[str, int, tuple[int, Any] | str]]:
    """``(path, size, (values, parsed JSON) or why it is not read)`` for each ``(path, sha, size)``: every blob
    streamed once from ``git cat-file --batch`` (the same sha under many paths is parsed once), each within
    :data:`.jsonbudget.RECORD` before it is parsed."""
    import subprocess

    order = list(dict.fromkeys(sha for _p, sha, _s in wanted))
    done: dict[str, tuple[int, Any] | str] = {}
    with tempfile.TemporaryFile() as shas:
        shas.write("".join(f"{sha}\n" for sha in order).encode())
        shas.seek(0)
        # a fixed git command; object names come from git's own ls-tree
        proc = subprocess.Popen(
            ["git", "cat-file", "--batch"],  # noqa: S607
            cwd=repo,
            stdin=shas,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        try:
            stream = proc.stdout
            assert stream is not None
            in_step = True
            for path, sha, size in wanted:
                if sha not in done:
                    header = stream.readline().split() if in_step else []
                    if len(header) != 3 or header[1] != b"blob" or header[2] != str(size).encode():
                        in_step = False  # the stream is out of step: nothing after it is trusted
                        done[sha] = "cannot be read from the records ref"
                        yield path, size, done[sha]
                        continue
                    body = stream.read(size)
                    stream.read(1)
                    done[sha] = _parsed(body, path)
                    del body
                yield path, size, done[sha]
        finally:
            if proc.poll() is None:
                proc.kill()
            if proc.stdout is not None:
                proc.stdout.close()
            proc.wait()


def _parsed(body: bytes, path: str) -> tuple[int, Any] | str:
    """``(values, parsed JSON)`` of one record blob, or why it is not read (over its budget, not JSON)."""
    try:
        return jsonbudget.measured(body, what=path, budget=jsonbudget.RECORD)
    except jsonbudget.JSONBudgetError as exc:
        return exc.message.removeprefix(path).strip() + ", so it is not read"


def read_file(repo: Path, rev: str, path: str, limit: int = 1024 * 1024) -> bytes | None:
    """Return the bytes of `path` at revision `rev` of the repository, or None if it is not there, is not a file
    or is larger than ``limit`` (its type and size checked with ``git cat-file --batch-check`` first)."""
    check = git(repo, "cat-file", "--batch-check", input=f"{rev}:{path}\n".encode(), check=False)
    parts = check.stdout.decode("utf-8", "replace").split()
    if (
        check.returncode != 0
        or len(parts) != 3
        or parts[1] != "blob"
        or not parts[2].isdigit()
        or int(parts[2]) > limit
    ):
        return None
    proc = git(repo, "cat-file", "blob", parts[0], check=False)
    return proc.stdout if proc.returncode == 0 else None
