"""Create a missing GitHub repository through the REST API (only when ``GITHUB_TOKEN`` is set).

The API base is ``GITHUB_API_URL`` (what GitHub Actions sets), else the project's
``publish.github_api`` key, else ``https://api.github.com``; for GitHub Enterprise
it is ``https://HOST/api/v3`` and remotes on ``HOST`` are recognised. The token is
sent in the ``Authorization`` header of the API calls only; it is never written to
``.git/config`` or anywhere else.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from . import PublishError

DEFAULT_API = "https://api.github.com"
_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")


def api_base(configured: str | None = None) -> str:
    """Return the GitHub API base URL: GITHUB_API_URL, else the configured one, else api.github.com."""
    return (os.environ.get("GITHUB_API_URL") or configured or DEFAULT_API).rstrip("/")


def github_hosts(base: str) -> set[str]:
    """Return the git host names that belong to the GitHub instance at API base `base`."""
    hosts = {"github.com"}
    netloc = urlsplit(base).netloc
    if netloc and netloc != "api.github.com":
        hosts.add(netloc)
        hosts.add(netloc.split(":")[0])
    return hosts


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


def ensure_repo(owner: str, name: str, token: str, base: str, *, private: bool = False,
                timeout: float = 20.0) -> str:
    """``"exists"`` or ``"created"``; raises :class:`PublishError` with GitHub's message otherwise."""
    import requests

    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "cotk-repro"}
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
        made = requests.post(url, headers=headers, timeout=timeout,
                             json={"name": name, "private": private, "auto_init": False,
                                   "description": "published with cotk-repro"})
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
    return ensure_repo(*parsed, token, base, private=private)


def _msg(resp) -> str:
    try:
        return str(resp.json().get("message", ""))[:200]
    except ValueError:
        return resp.text[:200]
