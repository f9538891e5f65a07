"""Resolve what the user typed as SOURCE into a git location (and maybe a record).

* ``user/repo`` -> ``<git base>/user/repo.git``; the base is ``COTK_REPRO_GIT_BASE``,
  else ``git_base`` in the user config, else ``https://github.com/``. A base without a
  scheme is a folder of bare repositories (``<base>/user/repo.git`` or ``<base>/user/repo``);
* a git URL (``https://``, ``ssh://``, ``git://``, ``file://``, ``git@host:path``);
* a local path (a work tree or a bare repository);
* a dashboard record URL (``https://dash/records/<id>`` or ``.../api/v1/records/<id>``):
  the record comes from the dashboard, the code from the record's git remote.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..core.giturl import shown
from . import ReproduceError

DEFAULT_GIT_BASE = "https://github.com/"
_USER_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
_SCP = re.compile(r"^[^@/\s]+@[^:/\s]+:.+$")
_DASHBOARD = re.compile(
    r"^(?P<base>https?://.+?)/(?:api/v1/)?records/(?P<id>(?:sha256(?::|%3[Aa]))?[0-9a-fA-F]{8,64})/?(?:[?#].*)?$"
)


@dataclass
class Source:
    """Where to reproduce from: its kind, the text given, the git URL and, for dashboards, the record."""

    kind: str  # "user/repo" | "url" | "path" | "dashboard"
    text: str
    git_url: str | None
    record: dict[str, Any] | None = None
    record_id: str | None = None
    dashboard_url: str | None = None
    #: the records are the checkout's own unpublished ones (``.cotk-repro/runs``), not a records ref
    local_records: bool = False
    #: the fingerprint of the key that signed the publication the git URL came from (None: the record's own URL)
    publisher: str | None = None

    @property
    def user_typed(self) -> bool:
        """Whether the user named the git location (then ``file``/``http`` transports are allowed), not a record."""
        return self.kind != "dashboard"

    @property
    def display(self) -> str:
        return self.text if self.kind != "dashboard" else f"{self.text} (code at {self.git_url})"


def git_base() -> str:
    """Return the base that `user/repo` sources resolve against (env, user config, else GitHub)."""
    from ..core import userconfig

    return os.environ.get("COTK_REPRO_GIT_BASE") or userconfig.git_base() or DEFAULT_GIT_BASE


def join_base(base: str, user_repo: str) -> str:
    """Return the git URL or local path of `user/repo` under the git base `base`."""
    name = user_repo if user_repo.endswith(".git") else user_repo + ".git"
    if "://" in base or _SCP.match(base):
        return base.rstrip("/") + "/" + name
    folder = Path(base).expanduser()
    for candidate in (folder / name, folder / user_repo):
        if candidate.exists():
            return str(candidate.resolve())
    return str(folder / name)


def resolve(text: str, *, allow_unsigned: bool = False) -> Source:
    """Turn a SOURCE argument (user/repo, git URL, path, dashboard URL) into a Source."""
    text = text.strip()
    if not text:
        raise ReproduceError("SOURCE is empty; give user/repo, a git URL, a local path or a dashboard record URL")
    m = _DASHBOARD.match(text)
    if m:
        return _from_dashboard(text, m.group("base"), unquote(m.group("id")), allow_unsigned=allow_unsigned)
    if "://" in text or _SCP.match(text):
        return Source("url", text, text)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ReproduceError(f"{text} is a file, not a git repository")
        return Source("path", text, str(path.resolve()))
    if _USER_REPO.match(text):
        return Source("user/repo", text, join_base(git_base(), text))
    if text.startswith(("/", "./", "../", "~")) or "\\" in text:
        raise ReproduceError(
            f"{shown(text)} was not found: there is no such folder (SOURCE is user/repo, a git URL, "
            "an existing folder or a dashboard record URL)"
        )
    raise ReproduceError(f"{shown(text)!r} is not user/repo, a git URL, an existing folder or a dashboard record URL")


def _from_dashboard(text: str, base: str, record_id: str, *, allow_unsigned: bool = False) -> Source:
    from ..records import ID_PREFIX, validate_record
    from ..remote.dashboard import DashboardClient, DashboardError

    if not record_id.startswith(ID_PREFIX):
        record_id = ID_PREFIX + record_id.lower()
    try:
        answer = DashboardClient(base, retries=2).get_record(record_id)
    except DashboardError as exc:
        raise ReproduceError(
            f"cannot get record {record_id[:19]} from the dashboard: {exc.message}", step="fetch record"
        ) from None
    record = answer.get("record") if isinstance(answer, dict) else None
    try:
        record = validate_record(record, f"the dashboard's record {record_id[:19]}")
    except Exception as exc:  # RecordError: tampered or not a record
        raise ReproduceError(str(exc), step="fetch record") from None
    return source_for_record(
        record,
        text,
        base,
        publication=answer.get("publication"),
        record_signature=answer.get("signature") if isinstance(answer.get("signature"), str) else None,
        allow_unsigned=allow_unsigned,
    )


def source_for_record(
    record: dict[str, Any],
    text: str | None = None,
    dashboard_url: str | None = None,
    *,
    publication: Any = None,
    record_signature: str | None = None,
    allow_unsigned: bool = False,
) -> Source:
    """Where to reproduce a record already in hand (from a dashboard, or a dashboard's own worker pool): the
    record itself and the git remote it names, else the one its signed ``publication`` names (taken when it
    was published: :mod:`cotk_repro.remote.publication`, verified here against ``record_signature``); refused
    when neither names one reachable from here."""
    from ..remote.publication import PublicationError, fetchable_remote, takes_publication, verify

    record_id = record["id"]
    text = text or record_id
    url = (record.get("code") or {}).get("remote_url")
    publisher = None
    try:
        if publication is not None and takes_publication(url):
            url, publisher = verify(record, publication, record_signature, allow_unsigned=allow_unsigned)
        elif not url:
            raise ReproduceError(
                f"record {record_id[:19]} names no git remote, so its code cannot be fetched",
                hint="it was made before its project had a git remote: ask its author to publish "
                "it again now that the remote exists (`cotk-repro publish`)",
            )
        else:
            url = fetchable_remote(record_id, url)
    except PublicationError as exc:
        raise ReproduceError(exc.message, hint=exc.hint, step="fetch record") from None
    return Source(
        "dashboard", text, url, record=record, record_id=record["id"], dashboard_url=dashboard_url, publisher=publisher
    )
