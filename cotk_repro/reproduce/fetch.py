"""Read the records ref of a git location and export a recorded commit.

Only what is needed is fetched: ``git ls-remote`` (does the repository exist, has it
records?), a shallow fetch of the records ref, and a shallow fetch of the recorded
commit (falling back to the branches when the server refuses a fetch by id).
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path, PurePosixPath
from typing import Any

from ..core.git import RECORDS_REF_SUFFIX, GitError, git, ls_remote, tail
from ..core.giturl import transport_args, transport_env
from ..records import ID_PREFIX, short_id, validate_record
from ..remote.gitrecords import DEFAULT_REF, list_records
from . import ReproduceError

LOCAL_RECORDS = "refs/cotk-repro/records"
#: a checkout (the commit's files as a tar stream) larger than this is not run (a reproduction passes its disk limit)
MAX_CHECKOUT_BYTES = 4 * 1024 * 1024 * 1024
#: a commit with more files (tree entries) than this is not checked out: each costs a write, a tar header and
#: a copy into the image, and 300,000 empty files made a 14-minute build
MAX_CHECKOUT_FILES = 50_000
#: a ref name a remote advertises that is fetched by name: plain characters only
_PLAIN_REF = re.compile(r"^refs/[A-Za-z0-9_][A-Za-z0-9_./-]*$")


class RemoteRepo:
    """A bare local git repository fed from a remote URL: lists its refs, fetches records and commits, exports trees.

    Every command that talks to the remote runs with only the transports :func:`transport_args` allows
    (``file`` and ``http`` only when ``user_typed``: the user named the location, not a record) and puts the
    URL and refs after ``--``; object names are checked hex before they reach git."""

    def __init__(self, url: str, display: str, workdir: Path, *, user_typed: bool = False):
        self.url, self.display = url, display
        self.git_dir = workdir / "repo.git"
        self.refs: dict[str, str] | None = None
        #: ``(path, sentence)`` of each records-ref entry the last :meth:`fetch_records` could not read
        self.skipped: list[tuple[str, str]] = []
        self._transport = transport_args(allow_file=user_typed, allow_http=user_typed)
        self._transport_env = transport_env(allow_file=user_typed, allow_http=user_typed)

    def _git(self, *args: str, **kw: Any):
        return git(self.git_dir, *args, **kw)

    def _remote(self, *args: str, **kw: Any):
        """A git command that talks to the remote: allowed transports only, never a prompt."""
        return git(self.git_dir, *self._transport, *args, env=self._transport_env, **kw)

    def init(self) -> None:
        self.git_dir.mkdir(parents=True, exist_ok=True)
        git(self.git_dir, "init", "-q", "--bare")

    def ls_remote(self) -> dict[str, str]:
        """The remote's records refs (the only ones asked for: git drops the others as it reads them), at most
        :data:`.git.MAX_REFS`; a ReproduceError when the remote cannot be read or advertises more."""
        try:
            refs = ls_remote(
                self.git_dir,
                self.url,
                f"*{RECORDS_REF_SUFFIX}",
                options=tuple(self._transport),
                env=self._transport_env,
            )
        except GitError as exc:
            raise ReproduceError(exc.message, step="source") from None
        if refs is None:
            # git's own words ("fatal: unable to access ...") add nothing to the sentence, and a stranger's server
            # chooses them: not shown
            raise ReproduceError(
                f"the git repository {self.display} was not found or is not accessible ({self.url})",
                step="source",
                hint="check the name; for a self-hosted forge or a folder of bare repositories set COTK_REPRO_GIT_BASE",
            )
        self.refs = refs
        return refs

    def find_records_ref(self) -> str | None:
        """The ref the records are published on (the default one, else another ``*cotk-repro-records``), or None."""
        refs = self.refs if self.refs is not None else self.ls_remote()
        if DEFAULT_REF in refs:
            return DEFAULT_REF
        others = sorted(r for r in refs if r.endswith(RECORDS_REF_SUFFIX) and _PLAIN_REF.match(r))
        return others[0] if others else None

    def records_ref(self) -> str:
        """:meth:`find_records_ref`; raises :class:`ReproduceError` when there is none."""
        ref = self.find_records_ref()
        if ref is not None:
            return ref
        raise ReproduceError(
            f"{self.display} has no cotk-repro records (no {DEFAULT_REF} ref)",
            step="clone",
            hint="its author publishes records with `cotk-repro publish`",
        )

    def fetch_records(self) -> list[dict[str, Any]]:
        ref = self.records_ref()
        try:
            self._remote(
                "fetch",
                "-q",
                "--depth=1",
                "--no-tags",
                "--",
                self.url,
                f"+{ref}:{LOCAL_RECORDS}",
                what=f"fetching {ref}",
                timeout=600,
            )
        except GitError as exc:
            raise ReproduceError(f"fetching the records of {self.display} failed", log=exc.log, step="clone") from None
        self.skipped = []
        records = list_records(self.git_dir, LOCAL_RECORDS, self.skipped)
        if not records:
            why = f" ({self.skipped[0][1]})" if self.skipped else ""
            raise ReproduceError(
                f"{self.display} has no readable cotk-repro records on {ref}{why}",
                step="clone",
                hint="its author publishes records with `cotk-repro publish`",
            )
        return records

    def fetch_commit(self, commit: str, record_id: str) -> None:
        _check_object_name(commit)
        if self._has(commit):
            return
        proc = self._remote("fetch", "-q", "--depth=1", "--no-tags", "--", self.url, commit, check=False, timeout=600)
        if proc.returncode != 0 or not self._has(commit):
            # servers that refuse a fetch by id: fetch the branches and look for it
            self._remote(
                "fetch",
                "-q",
                "--no-tags",
                "--",
                self.url,
                "+refs/heads/*:refs/remotes/source/*",
                check=False,
                timeout=1200,
            )
        if not self._has(commit):
            raise ReproduceError(
                f"commit {commit[:12]} of record {short_id(record_id)} is not on {self.display}",
                step="clone",
                hint="its author has to push it, e.g. with `cotk-repro publish --push`",
            )

    def _has(self, commit: str) -> bool:
        _check_object_name(commit)
        return self._git("cat-file", "-e", "--", f"{commit}^{{commit}}", check=False).returncode == 0

    def tree_of(self, commit: str) -> str:
        _check_object_name(commit)
        return self._git("rev-parse", "--verify", "--end-of-options", f"{commit}^{{tree}}").stdout.decode().strip()

    def export(self, commit: str, dest: Path, *, limit: int | None = None) -> None:
        """The commit's files (no .git) into ``dest``; a symbolic link out of the checkout is refused.

        ``git archive`` streams into a file beside ``dest``, stopped past ``limit`` bytes (default
        :data:`MAX_CHECKOUT_BYTES`); ``export-subst`` is switched off (``info/attributes``), so a tree's
        ``.gitattributes`` cannot make the checkout bigger than the commit."""
        _check_object_name(commit)
        limit = MAX_CHECKOUT_BYTES if limit is None else limit
        _check_tree_budget(self.git_dir, commit, limit, MAX_CHECKOUT_FILES)
        info = self.git_dir / "info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "attributes").write_text("* -export-subst\n", encoding="utf-8")
        archive = dest.parent / f".{dest.name}.tar"
        dest.mkdir(parents=True, exist_ok=True)
        try:
            _archive_to(self.git_dir, commit, archive, limit)
            with tarfile.open(archive) as tar:
                members = tar.getmembers()
                for m in members:
                    _check_member(m, commit)
                try:
                    tar.extractall(dest, members=members, filter="data")
                except TypeError:  # Python < 3.11.4; every member was checked above
                    tar.extractall(dest, members=members)
        except tarfile.TarError as exc:
            raise ReproduceError(
                f"the files of commit {commit[:12]} cannot be checked out safely ({exc})", step="checkout"
            ) from None
        finally:
            archive.unlink(missing_ok=True)


def _check_tree_budget(git_dir: Path, commit: str, limit: int, max_files: int) -> None:
    """Refuse, before anything is written, a commit with more than ``max_files`` files or whose files add up to
    more than ``limit`` bytes, each path counted (ten paths naming one blob are written ten times).

    ``git ls-tree -r`` is read as a stream and stopped past ``max_files``; the size of each distinct blob is then
    asked once of ``git cat-file --batch-check`` (``ls-tree -l`` would look a blob up once per path)."""
    import os
    import subprocess
    import tempfile

    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    # fixed commands, the commit checked hex and after --end-of-options, object names from git itself
    proc = subprocess.Popen(  # noqa: S603
        ["git", "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit],  # noqa: S607
        cwd=git_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    files, paths_of = 0, dict[bytes, int]()  # blob sha -> how many paths name it
    try:
        rest = b""
        while files <= max_files and (chunk := proc.stdout.read(1 << 16)):  # type: ignore[union-attr]
            *items, rest = (rest + chunk).split(b"\0")
            for item in items:
                meta = item.split(b"\t", 1)[0].split()
                files += 1
                if len(meta) == 3 and meta[1] == b"blob":
                    paths_of[meta[2]] = paths_of.get(meta[2], 0) + 1
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.wait()
    if files > max_files:
        raise ReproduceError(
            f"commit {commit[:12]} holds more than {max_files:,} files, so it is not checked out", step="checkout"
        )
    if proc.returncode != 0:
        raise ReproduceError(f"the files of commit {commit[:12]} cannot be listed", step="checkout")
    with tempfile.TemporaryFile() as shas:
        shas.write(b"".join(sha + b"\n" for sha in paths_of))
        shas.seek(0)
        sizes = subprocess.run(
            ["git", "cat-file", "--batch-check=%(objectname) %(objectsize)"],  # noqa: S607
            cwd=git_dir,
            stdin=shas,
            capture_output=True,
            env=env,
            check=False,
        ).stdout.split(b"\n")
    total = 0
    for line in sizes:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            total += paths_of.get(parts[0], 0) * int(parts[1])
    if total > limit:
        raise ReproduceError(
            f"commit {commit[:12]} holds {total:,} bytes of files (each path counted), over the {limit:,}-byte "
            "limit for a checkout, so it is not checked out",
            step="checkout",
            hint="a larger --disk allows more",
        )


def _archive_to(git_dir: Path, commit: str, path: Path, limit: int) -> None:
    """``git archive --format=tar COMMIT`` streamed into ``path``; stopped (and refused) past ``limit`` bytes."""
    import os
    import subprocess
    import tempfile

    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    with open(path, "wb") as out, tempfile.TemporaryFile() as err:
        # a fixed command, the commit checked hex and after --: no shell, nothing of a record read as an option
        proc = subprocess.Popen(  # noqa: S603
            ["git", "archive", "--format=tar", "--", commit],  # noqa: S607
            cwd=git_dir,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
        )
        written = 0
        try:
            while chunk := proc.stdout.read(1 << 20):  # type: ignore[union-attr]
                written += len(chunk)
                if written > limit:
                    raise ReproduceError(
                        f"the files of commit {commit[:12]} are over the {limit:,}-byte limit for "
                        "a checkout, so the record is not run",
                        step="checkout",
                    )
                out.write(chunk)
        finally:
            if proc.poll() is None and written > limit:
                proc.kill()
            proc.stdout.close()  # type: ignore[union-attr]
            proc.wait()
        if proc.returncode != 0:
            err.seek(0)
            raise ReproduceError(
                f"git archive of commit {commit[:12]} failed",
                step="checkout",
                log=tail(err.read(64 * 1024).decode("utf-8", "replace")),
            )


def _check_object_name(name: str) -> None:
    """A commit named by a record: hex digits only, so git can never read it as an option or a revision expression."""
    if not (isinstance(name, str) and 4 <= len(name) <= 64 and all(c in "0123456789abcdef" for c in name)):
        raise ReproduceError(f"the record's commit {name!r:.80} is not a hex commit id", step="clone")


def _check_member(member: tarfile.TarInfo, commit: str) -> None:
    """A file of the commit: a plain path inside the checkout; a link only to somewhere inside it."""
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        raise ReproduceError(
            f"commit {commit[:12]} holds a file named {member.name!r} outside the checkout, so it is not checked out",
            step="checkout",
        )
    if member.issym() or member.islnk():
        target = PurePosixPath(member.linkname)
        where = target if member.islnk() else name.parent / target
        depth = 0
        for part in where.parts:
            depth += -1 if part == ".." else (0 if part == "." else 1)
            if depth < 0:
                break
        if target.is_absolute() or depth < 0:
            raise ReproduceError(
                f"commit {commit[:12]} holds a symbolic link {member.name} -> {member.linkname} "
                "that points outside the checkout, so the record is not run",
                step="checkout",
            )
    elif not (member.isfile() or member.isdir()):
        raise ReproduceError(f"commit {commit[:12]} holds {member.name!r}, which is not a file", step="checkout")


def select_record(records: list[dict[str, Any]], wanted: str | None, display: str) -> dict[str, Any]:
    """The record named by ``wanted`` (id, ``sha256:`` id, unique prefix) or the newest successful one."""
    if not wanted or wanted == "latest":
        ok = [r for r in records if r.get("status") == "ok"]
        if not ok:
            raise ReproduceError(f"{display} has records but none of them succeeded", step="select record")
        chosen = ok[0]
    else:
        hexpart = wanted.strip().removeprefix(ID_PREFIX).lower()
        matches = (
            [r for r in records if str(r.get("id", "")).removeprefix(ID_PREFIX).startswith(hexpart)] if hexpart else []
        )
        if not matches:
            have = ", ".join(short_id(str(r.get("id"))) for r in records[:5])
            raise ReproduceError(
                f"no record matches {wanted!r} in {display} (it has {len(records)}: {have}"
                f"{', ...' if len(records) > 5 else ''})",
                step="select record",
                hint="list them with `cotk-repro reproduce SOURCE --list`",
            )
        if len(matches) > 1:
            raise ReproduceError(
                f"{wanted!r} is ambiguous in {display}: it matches {len(matches)} records", step="select record"
            )
        chosen = matches[0]
    try:
        return validate_record(chosen, f"record {short_id(str(chosen.get('id')))} of {display}")
    except Exception as exc:  # RecordError: a tampered record
        raise ReproduceError(str(exc), step="select record") from None


def summaries(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one short summary (id, status, start, commit, entry, result values) per record."""
    out = []
    for r in records:
        cmd = r.get("command") or {}
        out.append(
            {
                "id": r.get("id"),
                "status": r.get("status"),
                "started_at": cmd.get("started_at"),
                "commit": (r.get("code") or {}).get("commit"),
                "entry": cmd.get("entry"),
                "project": r.get("project"),
                "results": {k: (v or {}).get("value") for k, v in (r.get("results") or {}).items()},
            }
        )
    return out
