"""Running git: the one low-level helper that capture, publish and reproduce (and the demo) all use."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from ..errors import CotkError

#: what a records ref's name ends in: how `reproduce` finds a custom one on somebody's remote
RECORDS_REF_SUFFIX = "cotk-repro-records"


class GitError(CotkError):
    """A git command failed."""


def tail(text: str, lines: int = 20) -> str:
    """The last ``lines`` lines of ``text`` (for error logs)."""
    return "\n".join(text.strip().splitlines()[-lines:])


def git(
    cwd: Path | str,
    *args: str,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
    check: bool = True,
    what: str | None = None,
    timeout: float | None = 600,
) -> subprocess.CompletedProcess[bytes]:
    """Run git; on failure raise :class:`GitError` with git's own message as the log."""
    full_env = dict(os.environ)
    full_env.setdefault("GIT_TERMINAL_PROMPT", "0")  # never hang on a password prompt
    if env:
        full_env.update(env)
    try:
        proc = subprocess.run(  # noqa: S603 - git from PATH like the user's own shell; arguments are a list (no shell), URLs and refs after -- (see callers)
            ["git", *args],  # noqa: S607
            cwd=cwd,
            env=full_env,
            input=input,
            capture_output=True,
            timeout=timeout,
            check=False,
        )  # the callers read the status
    except FileNotFoundError:
        raise GitError("git is not installed; cotk-repro needs git to record, publish and reproduce code") from None
    except NotADirectoryError:
        raise GitError(f"{cwd} is not a folder") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"{what or 'git ' + args[0]} took longer than {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace")
        raise GitError(f"{what or 'git ' + args[0]} failed", log=tail(err))
    return proc


def out(cwd: Path | str, *args: str, **kw: Any) -> str:
    """git's stdout as stripped text (see :func:`git`)."""
    stdout: bytes = git(cwd, *args, **kw).stdout
    return stdout.decode("utf-8", "replace").strip()


def rev_parse(cwd: Path | str, rev: str) -> str | None:
    """The commit ``rev`` names, or None when there is none."""
    proc = git(cwd, "rev-parse", "-q", "--verify", "--end-of-options", rev + "^{commit}", check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def config_value(cwd: Path | str | None, key: str) -> str | None:
    """git's setting ``key`` as seen from ``cwd`` (None: this process's folder); None when unset, empty, or git
    cannot say (not installed, not a folder, too slow)."""
    try:
        proc = git(cwd or ".", "config", "--get", key, check=False, timeout=30)
    except GitError:
        return None
    return proc.stdout.decode("utf-8", "replace").strip() or None


def has_identity(cwd: Path | str) -> bool:
    """Whether git can make a commit in ``cwd`` without being told who makes it."""
    if os.environ.get("GIT_COMMITTER_NAME") and os.environ.get("GIT_COMMITTER_EMAIL"):
        return True
    name = git(cwd, "config", "user.name", check=False).stdout.strip()
    email = git(cwd, "config", "user.email", check=False).stdout.strip()
    return bool(name and email)


#: the most refs one ``ls-remote`` reads: a stranger's server may advertise millions, and past this the listing
#: is stopped and refused (docs/reproduce.md, "Budgets")
MAX_REFS = 10_000


class TooManyRefs(GitError):
    """A remote advertised more than :data:`MAX_REFS` refs matching what was asked."""


def ls_remote(
    cwd: Path | str,
    url: str,
    *patterns: str,
    options: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    max_refs: int = MAX_REFS,
    timeout: float = 120,
) -> dict[str, str] | None:
    """ref -> object id of ``git [OPTIONS] ls-remote -- URL PATTERN...`` (git keeps only the refs whose name ends
    in a pattern), read line by line as git prints them; None when git fails (no such repository, no access).

    Never more than ``max_refs`` refs are read: past that git is stopped and :class:`TooManyRefs` raised."""
    import threading

    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    try:
        # git from PATH; arguments are a list (no shell), the URL and patterns after --
        proc = subprocess.Popen(  # noqa: S603
            ["git", *options, "ls-remote", "--", url, *patterns],  # noqa: S607
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitError("git is not installed; cotk-repro needs git to record, publish and reproduce code") from None
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        proc.kill()

    late = threading.Timer(timeout, stop)
    late.start()
    refs: dict[str, str] = {}
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            sha, tab, ref = line.rstrip(b"\n").decode("utf-8", "replace").partition("\t")
            if not tab:
                continue
            if len(refs) >= max_refs:
                raise TooManyRefs(f"{url[:200]} advertises more than {max_refs:,} refs, so it is not read")
            refs[ref] = sha
    finally:
        late.cancel()
        if proc.poll() is None:
            proc.kill()
        if proc.stdout is not None:
            proc.stdout.close()
        proc.wait()
    if proc.returncode != 0:
        if fired.is_set():
            raise GitError(f"git ls-remote {url[:200]} took longer than {timeout:.0f} s")
        return None
    return refs
