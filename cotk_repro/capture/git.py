"""Git state of a project with GitPython: commit, branch, remote URL, dirty state."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..errors import CaptureError


@dataclass
class GitState:
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


def strip_credentials(url: str | None) -> str | None:
    """Remove user:password (and tokens) from a remote URL; home paths become ``~``."""
    if not url:
        return url
    if "://" in url:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        # keep an ssh user name like git@, drop anything with a secret
        if parts.scheme in ("ssh", "git+ssh") and parts.username and parts.password is None:
            host = f"{parts.username}@{host}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))
    home = os.path.expanduser("~")
    if home and home != "/" and (url == home or url.startswith(home + os.sep)):
        return "~" + url[len(home):]
    return url


def open_repo(path: Path):
    import git  # GitPython; imported lazily (start-up time)

    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise CaptureError(
            f"{path} is not inside a git repository",
            hint="run `git init` and commit your code, or `cotk-repro init` to scaffold a project",
        ) from None


def capture_git(path: Path) -> GitState:
    repo = open_repo(path)
    root = Path(repo.working_tree_dir)
    try:
        commit = repo.head.commit.hexsha
    except ValueError:
        raise CaptureError(
            f"the git repository at {root} has no commits yet",
            hint="commit your code first: git add -A && git commit -m 'start'",
        ) from None
    branch = None if repo.head.is_detached else repo.active_branch.name
    remote_name = None
    if branch is not None:
        tracking = repo.active_branch.tracking_branch()
        if tracking is not None:
            remote_name = tracking.remote_name
    if remote_name is None and repo.remotes:
        names = [r.name for r in repo.remotes]
        remote_name = "origin" if "origin" in names else names[0]
    remote_url = None
    if remote_name is not None:
        try:
            remote_url = strip_credentials(repo.remote(remote_name).url)
        except ValueError:
            remote_url = None
    # modified, staged or untracked-and-not-ignored files
    status = repo.git.status("--porcelain", "--untracked-files=normal")
    dirty_files = [
        line[3:]
        for line in status.splitlines()
        if line.strip() and ".cotk-repro" not in Path(line[3:].strip('"')).parts
    ]
    return GitState(
        root=root,
        commit=commit,
        branch=branch,
        remote=remote_name,
        remote_url=remote_url,
        dirty=bool(dirty_files),
        dirty_files=dirty_files,
    )
