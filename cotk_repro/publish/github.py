"""Create a missing GitHub repository through the REST API (only when ``GITHUB_TOKEN`` is set).

The API base is ``GITHUB_API_URL`` (what GitHub Actions sets), else ``github_api`` in
the *user* config, else ``https://api.github.com``; a project's committed
``publish.github_api`` is shown in a warning, never used (a pull request that edits it
must not collect the token). For GitHub Enterprise it is ``https://HOST/api/v3`` and
remotes on ``HOST`` (only) are recognised. The token goes only over https (plain http
only to the loopback address), in the ``Authorization`` header of the API calls only;
it is never written to ``.git/config`` or anywhere else.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from . import PublishError

DEFAULT_API = "https://api.github.com"
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def api_base(configured: str | None = None) -> str:
    """Return the GitHub API base URL the token may go to: ``GITHUB_API_URL`` (the environment: yours, or what
    GitHub Actions sets), else ``github_api`` in your user config, else api.github.com.

    ``configured`` (a project's committed ``publish.github_api``) is *not* used: a project's files never choose
    where your token goes (see :func:`ignored_project_api`)."""
    from ..core import userconfig

    user = userconfig.load().get("github_api")
    return (
        os.environ.get("GITHUB_API_URL") or (user if isinstance(user, str) and user else None) or DEFAULT_API
    ).rstrip("/")


def ignored_project_api(configured: str | None, base: str) -> str | None:
    """A warning when the project's committed config names another GitHub API than the one the token goes to."""
    if configured and configured.rstrip("/") != base:
        return (
            f"the project's publish.github_api {configured!r} is not used: GITHUB_TOKEN goes only to an API "
            f"you chose (GITHUB_API_URL or github_api in your user config), here {base}"
        )
    return None


def check_api_base(base: str) -> None:
    """The token travels only over https (plain http only to this machine's loopback, for tests)."""
    parts = urlsplit(base)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname in _LOOPBACK:
        return
    raise PublishError(f"the GitHub API {base!r} is not an https:// URL, so GITHUB_TOKEN is not sent to it")


def github_hosts(base: str) -> set[str]:
    """Return the git host names that belong to the GitHub instance at API base `base` (github.com only for
    api.github.com: a token for another instance never goes there because of a github.com remote, nor back)."""
    netloc = urlsplit(base).netloc
    if not netloc or netloc == "api.github.com":
        return {"github.com"}
    return {netloc, netloc.split(":")[0]}


def parse_remote(url: str, hosts: set[str]) -> tuple[str, str] | None:
    """``(owner, repo)`` when ``url`` is a repository on one of ``hosts``, else None."""
    if "://" in url:
        parts = urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1]
        if host not in hosts and (parts.hostname or "") not in hosts:
            return None
        path = parts.path
    else:
        m = _SCP.match(url)
        if not m or m.group("host") not in hosts:
            return None
        path = m.group("path")
    bits = [b for b in path.strip("/").split("/") if b]
    if len(bits) < 2:
        return None
    owner, name = bits[-2], bits[-1]
    if name.endswith(".git"):
        name = name[:-4]
    return owner, name


def ensure_repo(owner: str, name: str, token: str, base: str, *, private: bool = False, timeout: float = 20.0) -> str:
    """``"exists"`` or ``"created"``; raises :class:`PublishError` with GitHub's message otherwise."""
    import requests

    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
        "User-Agent": "cotk-repro",
    }
    try:
        resp = requests.get(f"{base}/repos/{owner}/{name}", headers=headers, timeout=timeout)
        if resp.status_code == 200:
            return "exists"
        if resp.status_code != 404:
            raise PublishError(f"GitHub answered {resp.status_code} when asked about {owner}/{name}: {_msg(resp)}")
        me = requests.get(f"{base}/user", headers=headers, timeout=timeout)
        if me.status_code != 200:
            raise PublishError(f"GITHUB_TOKEN was refused by {base} ({me.status_code}): {_msg(me)}")
        login = me.json().get("login")
        url = f"{base}/user/repos" if login == owner else f"{base}/orgs/{owner}/repos"
        made = requests.post(
            url,
            headers=headers,
            timeout=timeout,
            json={"name": name, "private": private, "auto_init": False, "description": "published with cotk-repro"},
        )
    except requests.RequestException as exc:
        raise PublishError(f"cannot reach the GitHub API at {base}: {type(exc).__name__}") from None
    if made.status_code == 201:
        return "created"
    if made.status_code == 422 and "already exists" in made.text:
        return "exists"
    raise PublishError(f"GitHub refused to create {owner}/{name} ({made.status_code}): {_msg(made)}")


def maybe_create(remote_url: str, *, configured_api: str | None = None, private: bool = False) -> str | None:
    """Create the remote's GitHub repository when it is missing and ``GITHUB_TOKEN`` is set.

    Returns ``"created"``, ``"exists"`` or None (no token, or not a GitHub remote).
    """
    token = os.environ.get("GITHUB_TOKEN")
    if not token:
        return None
    base = api_base(configured_api)
    parsed = parse_remote(remote_url, github_hosts(base))
    if parsed is None:
        return None
    check_api_base(base)
    return ensure_repo(*parsed, token, base, private=private)


def _msg(resp) -> str:
    try:
        return str(resp.json().get("message", ""))[:200]
    except ValueError:
        return resp.text[:200]
