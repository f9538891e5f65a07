"""The publication of a record: the git remote its code is fetched from, taken at publish time, signed.

A record's id is the hash of its content, so the remote added after ``cotk-repro run`` (``git remote add``)
cannot go into it. ``cotk-repro publish`` writes it *beside* the record instead: ``publication.json`` in the
record's folder, on the records ref next to ``record.json``, and on the dashboard
(``POST /api/v1/records/<id>/publication``)::

    {"publication": {"kind": "cotk-repro-publication", "record_id": "sha256:...", "commit": "<hex>",
                     "remote_url": "https://host/owner/project.git"},
     "signature": "-----BEGIN SSH SIGNATURE-----..."}

The signature (SSHSIG, namespace ``cotk-repro-publication``) is over the canonical JSON of ``publication``:
it binds the record id, its commit and the URL. It must be made by the key that signed the record.

A publication from anywhere but the user's own disk is a stranger's: :func:`verify` checks its shape, that it
names this record and its commit, that its signature verifies and is by the record's signer, and that its URL
is one :func:`fetchable_remote` accepts, before the URL reaches git. The same :func:`fetchable_remote`
refuses a path-only remote at publish time with the sentence ``reproduce`` would give later.
"""

from __future__ import annotations

import json
from typing import Any

from ..core import jsonbudget
from ..core.canonical import canonical_json
from ..core.giturl import UnsafeUrlError, check_stranger_url, shown
from ..core.signing import (
    MAX_SIGNATURE,
    SigningError,
    SigningKey,
    sign_bytes,
    verify_bytes,
)
from ..errors import CotkError

NS_PUBLICATION = "cotk-repro-publication"
PUBLICATION_FILE = "publication.json"
KIND = "cotk-repro-publication"
FIELDS = ("kind", "record_id", "commit", "remote_url")
#: a publication.json larger than this is not read
MAX_BYTES = 32 * 1024
#: how a remote on its author's machine is recorded (capture/git.py's ``LOCAL_PREFIX``)
_LOCAL = "local:"


class PublicationError(CotkError):
    """A publication (or a remote) that cannot be used to fetch a record's code; one sentence."""


def takes_publication(url: Any) -> bool:
    """Whether a record whose ``code.remote_url`` is ``url`` takes its remote from a publication: it names none,
    or only one on its author's machine (``local:NAME``); a record naming any other remote is fetched from that
    one (or refused by :func:`fetchable_remote`), never from a publication."""
    return not url or (isinstance(url, str) and url.startswith(_LOCAL))


def fetchable_remote(record_id: str, url: Any) -> str:
    """``url`` when a stranger could fetch the record's code from it; else :class:`PublicationError` with the
    sentence ``reproduce`` gives for it (a remote on the author's machine, or an unsafe URL)."""
    if isinstance(url, str) and url.startswith((_LOCAL, "~", "/")):
        raise PublicationError(
            f"record {record_id[:19]} names only a remote on its author's machine ({shown(url)}), "
            "so its code cannot be fetched from here",
            hint="reproduce from the git repository itself: cotk-repro reproduce GIT_URL",
        )
    try:
        return check_stranger_url(url, f"record {record_id[:19]}'s git URL")
    except UnsafeUrlError as exc:
        raise PublicationError(exc.message) from None


def publication_bytes(publication: dict[str, Any]) -> bytes:
    """The bytes a publication's signature covers: its canonical JSON."""
    return canonical_json(publication)


def make(record: dict[str, Any], remote_url: str, key: SigningKey | None) -> dict[str, Any]:
    """The publication of ``record`` at ``remote_url`` (checked with :func:`fetchable_remote`), signed with
    ``key`` (None: unsigned)."""
    publication = {
        "kind": KIND,
        "record_id": record["id"],
        "commit": record["code"]["commit"],
        "remote_url": fetchable_remote(record["id"], remote_url),
    }
    signature = sign_bytes(publication_bytes(publication), NS_PUBLICATION, key) if key is not None else None
    return {"publication": publication, "signature": signature}


def dumps(attachment: dict[str, Any]) -> str:
    """The text of ``publication.json``."""
    return json.dumps(attachment, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


def loads(data: bytes | str | None) -> Any:
    """A ``publication.json`` read from somewhere (None when absent, too large or not JSON): still a stranger's."""
    if data is None or len(data) > MAX_BYTES:
        return None
    try:
        return jsonbudget.loads(data, what="publication.json", budget=jsonbudget.RECORD)
    except jsonbudget.JSONBudgetError:
        return None


def verify(
    record: dict[str, Any], attachment: Any, record_signature: str | None, *, allow_unsigned: bool = False
) -> tuple[str, str | None]:
    """``(remote_url, signer fingerprint or None)`` of a stranger's publication of ``record`` (already validated
    against its id). Raises :class:`PublicationError` unless it names this record and commit, its signature
    verifies and is by the key that signed the record (``record_signature``, checked here too), and its URL is
    fetchable. Unsigned (record and publication both) only with ``allow_unsigned``."""
    rid = record["id"]
    what = f"the publication of record {rid[:19]}"
    if not isinstance(attachment, dict) or set(attachment) != {"publication", "signature"}:
        raise PublicationError(f'{what} is not a publication ({{"publication", "signature"}})')
    publication, signature = attachment["publication"], attachment["signature"]
    if (
        not isinstance(publication, dict)
        or set(publication) != set(FIELDS)
        or not all(isinstance(publication[k], str) for k in FIELDS)
        or publication["kind"] != KIND
    ):
        raise PublicationError(f"{what} does not hold exactly the fields {', '.join(FIELDS)}")
    if publication["record_id"] != rid:
        raise PublicationError(f"{what} names another record ({shown(publication['record_id'], 30)})")
    if publication["commit"] != record["code"]["commit"]:
        raise PublicationError(f"{what} names another commit ({shown(publication['commit'], 20)}) than the record")
    url = fetchable_remote(rid, publication["remote_url"])
    if signature is None and record_signature is None:
        if not allow_unsigned:
            raise PublicationError(
                f"{what} and the record are unsigned, so nothing proves who published them; "
                "--allow-unsigned reproduces it anyway"
            )
        return url, None
    if not isinstance(signature, str) or len(signature) > MAX_SIGNATURE:
        raise PublicationError(f"{what} is not signed, but the record is: the remote it names is not used")
    try:
        info = verify_bytes(publication_bytes(publication), signature, NS_PUBLICATION)
    except SigningError as exc:
        raise PublicationError(f"{what} has a BAD signature: {exc.message}") from None
    if not isinstance(record_signature, str):
        raise PublicationError(f"{what} is signed, but the record is not: the remote it names is not used")
    try:
        from ..core.signing import NS_RECORD, record_bytes

        record_key = verify_bytes(record_bytes(record), record_signature, NS_RECORD).public
    except SigningError as exc:
        raise PublicationError(f"record {rid[:19]} has a BAD signature: {exc.message}") from None
    if record_key.blob != info.public.blob:
        raise PublicationError(
            f"{what} is signed by key {info.public.fingerprint}, not by the key that signed the "
            f"record ({record_key.fingerprint}): the remote it names is not used"
        )
    return url, info.public.fingerprint
