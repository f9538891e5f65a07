"""Git state of a project: commit, branch, remote URL (credentials stripped), dirty state."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..core.git import GitError
from ..core.git import git as run_git
from ..errors import CaptureError


@dataclass
class GitState:
    """The commit, branch, remote and dirty files of the repository a run came from."""

    root: Path
    commit: str
    branch: str | None
    remote: str | None
    remote_url: str | None
    dirty: bool
    dirty_files: list[str]

    def as_record(self) -> dict:
        return {
            "commit": self.commit,
            "branch": self.branch,
            "detached": self.branch is None,
            "remote": self.remote,
            "remote_url": self.remote_url,
            "dirty": self.dirty,
        }


_SCP_LIKE = re.compile(r"^(?P<user>[^@/]+@)?(?P<host>[^:/]+):(?P<path>.*)$")
#: how a remote on this machine (a path or file:// URL) is recorded: its last path component, marked local
LOCAL_PREFIX = "local:"


def strip_credentials(url: str | None, remote: str | None = None) -> str | None:
    """The remote URL as it may be published: no user:password or token, no local path.

    ``https://user:tok@[::1]:8443/x.git`` -> ``https://[::1]:8443/x.git`` (an ssh user name like
    ``git@`` is kept); a path or ``file://`` remote -> ``local:<last path component>``; a malformed
    URL is a CaptureError naming ``remote``.
    """
    if not url:
        return url
    if "://" in url:
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
            port = parts.port
        except ValueError as exc:
            raise CaptureError(
                f"the git remote {remote or 'URL'!r} has a malformed URL ({exc})",
                hint="fix it with `git remote set-url NAME URL`",
            ) from None
        if parts.scheme == "file" or not host:
            return _local(parts.path)
        if ":" in host:  # IPv6 literal: keep its brackets
            host = f"[{host}]"
        if port:
            host = f"{host}:{port}"
        # keep an ssh user name like git@, drop anything with a secret
        if parts.scheme in ("ssh", "git+ssh") and parts.username and parts.password is None:
            host = f"{parts.username}@{host}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    m = _SCP_LIKE.match(url)
    if m and "/" not in url.split(":", 1)[0] and not os.path.isabs(url):
        return url  # user@host:path (scp syntax has no room for a password)
    return _local(url)


def _local(path: str) -> str:
    name = [p for p in re.split(r"[/\\]+", path) if p and p != "."]
    return LOCAL_PREFIX + (name[-1] if name else "")


def open_repo(path: Path):
    """Open the git repository containing `path`; raise CaptureError if there is none."""
    import git  # GitPython; imported lazily (start-up time)

    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise CaptureError(
            f"{path} is not inside a git repository",
            hint="run `git init` and commit your code, or `cotk-repro init` to scaffold a project",
        ) from None


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """git through :func:`cotk_repro.core.git.git`, its output as text; failures are :class:`CaptureError`."""
    try:
        raw = run_git(cwd, *args, env={"LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}, check=False, timeout=None)
    except GitError as exc:
        raise CaptureError(exc.message) from None
    proc = subprocess.CompletedProcess(
        raw.args, raw.returncode, raw.stdout.decode("utf-8", "replace"), raw.stderr.decode("utf-8", "replace")
    )
    if check and proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise CaptureError(f"git {args[0]} failed in {cwd}: {first.removeprefix('fatal: ')}")
    return proc


def repo_root(path: Path) -> Path:
    """The top folder of the git work tree holding ``path``; a clear error when there is none."""
    path = Path(path)
    proc = _git(path, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        if "not a git repository" in proc.stderr or not proc.stderr.strip():
            raise CaptureError(
                f"{path.resolve()} is not inside a git repository",
                hint="run `git init` and commit your code, or `cotk-repro init` to scaffold a project",
            )
        first = proc.stderr.strip().splitlines()[-1].removeprefix("fatal: ")
        raise CaptureError(f"cannot read the git repository at {path.resolve()}: {first}")
    return Path(proc.stdout.strip())


def _remote_config(root: Path) -> dict[str, str]:
    proc = _git(root, "config", "-z", "--get-regexp", r"^(remote\..*\.url|branch\..*\.remote)$", check=False)
    out: dict[str, str] = {}
    for item in proc.stdout.split("\0"):
        key, _, value = item.partition("\n")
        if key:
            out.setdefault(key, value)
    return out


def capture_git(path: Path) -> GitState:
    """Commit, branch, remote URL (credentials stripped) and dirty files of the repository at ``path``.

    Uses the git command line (one ``git status --porcelain=v2 --branch`` call for
    the commit, branch and dirty state): importing GitPython alone costs more than
    the whole capture, and ``cotk-repro run`` has a start-up budget.
    """
    root = repo_root(path)
    status = _git(root, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal").stdout
    commit = branch = None
    dirty_files: list[str] = []
    entries = status.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if not entry:
            continue
        if entry.startswith("# branch.oid "):
            oid = entry[len("# branch.oid ") :]
            commit = None if oid == "(initial)" else oid
        elif entry.startswith("# branch.head "):
            head = entry[len("# branch.head ") :]
            branch = None if head == "(detached)" else head
        elif entry.startswith("#"):
            continue
        else:
            kind = entry[0]
            fields = {"1": 8, "2": 9, "u": 10}.get(kind)
            name = entry.split(" ", fields)[-1] if fields else entry[2:]
            if kind == "2":
                i += 1  # a rename is followed by its original path
            if ".cotk-repro" not in Path(name).parts:
                dirty_files.append(name)
    if commit is None:
        raise CaptureError(
            f"the git repository at {root} has no commits yet",
            hint="commit your code first: git add -A && git commit -m 'start'",
        )
    config = _remote_config(root)
    remote_name = config.get(f"branch.{branch}.remote") if branch else None
    if remote_name == ".":  # tracking a local branch
        remote_name = None
    if remote_name is None:
        names = [k[len("remote.") : -len(".url")] for k in config if k.startswith("remote.") and k.endswith(".url")]
        if names:
            remote_name = "origin" if "origin" in names else names[0]
    remote_url = strip_credentials(config.get(f"remote.{remote_name}.url"), remote_name) if remote_name else None
    return GitState(
        root=root,
        commit=commit,
        branch=branch,
        remote=remote_name,
        remote_url=remote_url,
        dirty=bool(dirty_files),
        dirty_files=dirty_files,
    )
