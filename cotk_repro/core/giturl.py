"""Git URLs that somebody else wrote: which are safe to hand to git, and the transports git may use for them.

A record (on a dashboard, on a records ref) names its code's remote in ``code.remote_url``; a stranger
writes that text. :func:`check_stranger_url` accepts only a plain ``https://``, ``ssh://``, ``git://`` or
scp-like ``[user@]host:path`` URL: no leading ``-`` anywhere git or ssh could read it as an option, no
control, format or white-space characters, no ``ext::``/``fd::`` transports, no ``file://`` or local path.
Everything else is refused with one sentence (:class:`UnsafeUrlError`).

:func:`transport_args` and :func:`transport_env` are what every git command that talks to a remote runs
with: ``protocol.allow=never`` with only ``https``, ``ssh`` and ``git`` allowed (``http`` and ``file`` only
for a location the user typed), no terminal prompt. Callers put the URL after ``--`` as well.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

from ..errors import CotkError

#: transports a stranger's URL may use
STRANGER_SCHEMES = ("https", "ssh", "git")
#: a host name, an IPv4 address or a bracketed IPv6 address; never starting with ``-``
_HOST = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])$")
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}$")
#: scp-like ``[user@]host:path`` (git's own rule: a ``:`` before any ``/``)
_SCP = re.compile(r"^(?:(?P<user>[^@/:]+)@)?(?P<host>[^@/:]+|\[[^\]/]+\]):(?P<path>.+)$")
MAX_URL = 2048


class UnsafeUrlError(CotkError):
    """A URL from somebody else that git must not be given."""


def _odd_char(text: str) -> str | None:
    for ch in text:
        if ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            return ch
    return None


def shown(url: str, limit: int = 80) -> str:
    """``url`` quoted for a message: control characters escaped, cut to ``limit`` characters."""
    text = url if len(url) <= limit else url[:limit] + "…"
    return ascii(text) if _odd_char(text) else repr(text)


def check_stranger_url(url: object, what: str = "the record's git URL") -> str:
    """``url`` unchanged when it is a plain https/ssh/git or scp-like git URL; else :class:`UnsafeUrlError`."""
    if not isinstance(url, str) or not url:
        raise UnsafeUrlError(f"{what} is not a git URL")
    refuse = f"{what} {shown(url)} is not a plain https://, ssh://, git:// or scp-like git URL, so it is not fetched"
    # ``local:NAME`` is how a record names a remote on its author's machine (capture/git.py), never a host
    if len(url) > MAX_URL or url.startswith(("-", "local:")) or _odd_char(url) or "\\" in url:
        raise UnsafeUrlError(refuse)
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme.lower() not in STRANGER_SCHEMES or url.split("://", 1)[0] != parts.scheme:
            raise UnsafeUrlError(refuse)
        netloc = parts.netloc
        user, _, hostport = netloc.rpartition("@")
        try:
            host, port = parts.hostname, parts.port
        except ValueError:
            raise UnsafeUrlError(refuse) from None
        host_text = hostport.rsplit(":", 1)[0] if port is not None else hostport
        if not host or not _HOST.match(host_text) or (user and not _valid_user(user)):
            raise UnsafeUrlError(refuse)
        path = parts.path
        if "%" in url or not path or path == "/" or path.lstrip("/").startswith("-"):
            raise UnsafeUrlError(refuse)
        return url
    if "::" in url:  # git's <transport>::<address> form (ext::, fd::, any remote helper)
        raise UnsafeUrlError(refuse)
    m = _SCP.match(url)
    if not m or not _HOST.match(m.group("host")) or (m.group("user") is not None and not _valid_user(m.group("user"))):
        raise UnsafeUrlError(refuse)
    path = m.group("path")
    if path.startswith("-") or path.startswith("//"):
        raise UnsafeUrlError(refuse)
    return url


def _valid_user(user: str) -> bool:
    return bool(_USER.match(user))


def transport_args(*, allow_file: bool = False, allow_http: bool = False) -> list[str]:
    """``-c`` options for a git command that talks to a remote: only the allowed transports, no prompts.

    ``allow_file``/``allow_http``: the location is one the user typed (or configured), never a stranger's."""
    allowed = [*STRANGER_SCHEMES, *(["http"] if allow_http else []), *(["file"] if allow_file else [])]
    args = ["-c", "protocol.allow=never"]
    for name in allowed:
        args += ["-c", f"protocol.{name}.allow=always"]
    return args


def transport_env(*, allow_file: bool = False, allow_http: bool = False) -> dict[str, str]:
    """Environment for the same commands: ``GIT_ALLOW_PROTOCOL`` (which beats any config), no terminal prompt."""
    allowed = [*STRANGER_SCHEMES, *(["http"] if allow_http else []), *(["file"] if allow_file else [])]
    return {"GIT_ALLOW_PROTOCOL": ":".join(allowed), "GIT_TERMINAL_PROMPT": "0"}
