"""Dashboard identity = the SSH key: users' registered keys, and who signed an upload.

A user has one or more SSH public keys (``cotk-repro dashboard add-user NAME --ssh-key FILE.pub``, or
``POST /api/v1/keys`` with their token). An upload's signature is checked in-process
(:mod:`cotk_repro.core.sshsig`) against the registered key it names (see :mod:`cotk_repro.core.signing`); the key's owner is the signer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..errors import CotkError
from ..core.signing import PublicKey, SigningError, parse_public_key, parse_signature, verify_bytes
from .auth import AuthError, Principal, check_user_name, now_iso  # noqa: F401 - AuthError re-exported
from .db import Database
from .models import SshKey, User

# checked when a key is added, not when stored keys are listed (a dashboard may hold keys added before):
# what a .pub line never holds and a database text column cannot store, control characters and lone surrogates
_UNSTORABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")


class Forbidden(CotkError):
    """A signature that does not make the upload the uploader's (HTTP 403)."""


class BadSignature(CotkError):
    """A signature that cannot be read or does not match the content (HTTP 422)."""


@dataclass(frozen=True)
class Signer:
    """Who signed an upload: the user owning the key, and the key's fingerprint."""

    user_id: int
    name: str
    fingerprint: str


def add_key(db: Database, name: str, public_key: str) -> dict:
    """Register ``public_key`` (one ``.pub`` line) for user ``name``; returns the key's listing.

    Raises :class:`AuthError` for an unknown user, an unreadable or unknown key type, or a key
    registered already (to this user or another).
    """
    check_user_name(name)
    if isinstance(public_key, str) and _UNSTORABLE.search(public_key.strip()):
        raise AuthError("the SSH public key line holds a control character or a lone surrogate; "
                        "give one line of a .pub file")
    try:
        key = parse_public_key(public_key)
    except SigningError as exc:
        raise AuthError(exc.message) from None

    def tx(conn):
        user_id = conn.execute(select(User.id).where(User.name == name)).scalar()
        if user_id is None:
            raise AuthError(f"there is no user {name!r} on this dashboard")
        owner = conn.execute(select(User.name).join(SshKey, SshKey.user_id == User.id)
                             .where(SshKey.fingerprint == key.fingerprint)).scalar()
        if owner is not None:
            raise AuthError(f"the key {key.fingerprint} is registered already"
                            + (" to this user" if owner == name else " to another user"))
        conn.execute(insert(SshKey).values(user_id=user_id, fingerprint=key.fingerprint, key_type=key.key_type,
                                           public_key=key.line, comment=key.comment[:200], created_at=now_iso()))
        db.bump(conn)
        return _listing(key, now_iso(), None)

    try:
        return db.write(tx)
    except IntegrityError:
        raise AuthError(f"the key {key.fingerprint} is registered already") from None


def _listing(key: PublicKey, created: str, revoked: str | None) -> dict:
    return {"fingerprint": key.fingerprint, "type": key.key_type, "public_key": key.line, "comment": key.comment,
            "created_at": created, "revoked_at": revoked}


def revoke_key(db: Database, name: str, fingerprint: str) -> None:
    """Revoke one of ``name``'s keys: it signs nothing new (what it signed stays, marked so)."""
    check_user_name(name)

    def tx(conn):
        row = conn.execute(select(SshKey.id, SshKey.revoked_at).join(User, User.id == SshKey.user_id)
                           .where(User.name == name, SshKey.fingerprint == fingerprint)).first()
        if row is None:
            raise AuthError(f"user {name!r} has no key {fingerprint}")
        if row[1] is None:
            conn.execute(update(SshKey).where(SshKey.id == row[0]).values(revoked_at=now_iso()))
            db.bump(conn)

    db.write(tx)


def list_keys(db: Database, name: str) -> list[dict]:
    """The keys of ``name`` (revoked ones too, with ``revoked_at``), oldest first."""
    def q(conn):
        rows = conn.execute(select(SshKey.public_key, SshKey.comment, SshKey.created_at, SshKey.revoked_at)
                            .join(User, User.id == SshKey.user_id).where(User.name == name)
                            .order_by(SshKey.id)).all()
        return [_listing(parse_public_key(f"{pk} {c}".strip()), at, rev) for pk, c, at, rev in rows]

    return db.read(q)


def signer_of(db: Database, data: bytes, signature: object, namespace: str) -> Signer:
    """The registered, unrevoked key that made ``signature`` over ``data``, verified in-process
    (outside any write transaction).

    Raises :class:`BadSignature` (malformed, unknown key type, other namespace, other bytes) or
    :class:`Forbidden` (a key nobody registered, or a revoked one).
    """
    try:
        info = parse_signature(signature)
    except SigningError as exc:
        raise BadSignature(exc.message) from None
    fp = info.public.fingerprint
    row = db.read(lambda conn: conn.execute(_KEY_OWNER, {"fp": fp}).first())
    if row is None:
        raise Forbidden(f"the signature is by key {fp}, which is not registered on this dashboard; "
                        "add it with `cotk-repro dashboard add-user NAME --ssh-key FILE.pub` or POST /api/v1/keys")
    if row[3] is not None:
        raise Forbidden(f"the signature is by key {fp} of {row[1]}, which was revoked on {row[3]}")
    try:
        verify_bytes(data, signature, namespace, [(row[1], parse_public_key(row[2]))])
    except SigningError as exc:
        raise BadSignature(exc.message) from None
    return Signer(row[0], row[1], fp)


# built once: every signed upload looks its key up
_KEY_OWNER = (select(User.id, User.name, SshKey.public_key, SshKey.revoked_at)
              .join(User, User.id == SshKey.user_id).where(SshKey.fingerprint == bindparam("fp")))


def check_uploader(signer: Signer, principal: Principal, what: str) -> None:
    """A reproduction must be signed by a key of the user uploading it."""
    if signer.user_id != principal.user_id:
        raise Forbidden(f"the {what} is signed by a key of {signer.name} ({signer.fingerprint}), not by one of "
                        f"yours ({principal.name}): sign it with your own registered key")
