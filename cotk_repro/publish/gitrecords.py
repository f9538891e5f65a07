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

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..core.git import GitError, git, has_identity, out, rev_parse
from ..records import ID_PREFIX

DEFAULT_REF = "refs/heads/cotk-repro-records"
RECORDS_DIR = "records"
#: files of a local record folder that travel with it (the ones that exist)
LOG_FILES = ("stdout.log", "stderr.log")
RECORD_FILES = ("record.json", "record.sig", "requirements.lock", "Dockerfile", "stdout.log", "stderr.log", "result.json")
#: a file of a local record folder larger than this is not published
MAX_FILE_BYTES = 256 * 1024 * 1024
#: a name and address for commits on the records ref when the user has none configured
FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "cotk-repro", "GIT_AUTHOR_EMAIL": "cotk-repro@localhost",
                     "GIT_COMMITTER_NAME": "cotk-repro", "GIT_COMMITTER_EMAIL": "cotk-repro@localhost"}


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


def add_to_ref(repo: Path, ref: str, files: dict[str, bytes], *, message: str,
               merge_with: Iterable[str] = ()) -> RefUpdate:
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
    env = None if has_identity(repo) else FALLBACK_IDENTITY
    args = ["commit-tree", tree]
    for p in parents:
        args += ["-p", p]
    args += ["-m", message]
    commit = out(repo, *args, env=env)
    old = rev_parse(repo, ref) or "0" * 40
    git(repo, "update-ref", "-m", "cotk-repro publish", ref, commit, old)
    return RefUpdate(ref, commit, True)


def list_records(repo: Path, rev: str) -> list[dict[str, Any]]:
    """Every record on ``rev`` (parsed record.json), newest first."""
    entries = tree_entries(repo, rev)
    wanted = sorted((p, sha) for p, (_m, sha) in entries.items()
                    if p.startswith(RECORDS_DIR + "/") and p.endswith("/record.json") and p.count("/") == 2)
    if not wanted:
        return []
    batch = "".join(f"{sha}\n" for _p, sha in wanted).encode()
    raw = git(repo, "cat-file", "--batch", input=batch).stdout
    records: list[dict[str, Any]] = []
    pos = 0
    for path, _sha in wanted:
        header_end = raw.index(b"\n", pos)
        size = int(raw[pos:header_end].split()[2])
        body = raw[header_end + 1: header_end + 1 + size]
        pos = header_end + 1 + size + 1
        try:
            record = json.loads(body.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(record, dict):  # as stored: every key is part of its id and signature
            records.append(record)
    records.sort(key=lambda r: (r.get("command") or {}).get("started_at") or "", reverse=True)
    return records


def read_file(repo: Path, rev: str, path: str) -> bytes | None:
    """Return the bytes of `path` at revision `rev` of the repository, or None if it is not there."""
    proc = git(repo, "cat-file", "blob", f"{rev}:{path}", check=False)
    return proc.stdout if proc.returncode == 0 else None
