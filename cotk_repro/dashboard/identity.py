"""Dashboard identity = the SSH key: users' registered keys, and who signed an upload.

A user has one or more SSH public keys: vouched for by the administrator (``cotk-repro dashboard add-user NAME
--ssh-key FILE.pub``, :func:`add_key`) or proven by their holder (``cotk-repro keys add``: a signature over a
challenge, :mod:`.key_proofs`). A key registered before proofs were asked, without either, is *unproven*
and signs nothing. An upload's signature is checked in-process (:mod:`cotk_repro.core.sshsig`) against the
registered key it names (see :mod:`cotk_repro.core.signing`); the key's owner is the signer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..core.signing import PublicKey, SigningError, parse_public_key, parse_signature, verify_bytes
from ..errors import CotkError
from .auth import AuthError, Principal, check_user_name, now_iso
from .db import Database
from .models import KeyAudit, SshKey, User

#: how a key registration was made (``ssh_keys.proof``); None: unproven
PROOF_POSSESSION = "possession"
PROOF_OPERATOR = "operator"

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
    """Register ``public_key`` (one ``.pub`` line) for user ``name`` on the administrator's word (the
    operator's path: ``dashboard add-user --ssh-key``, ``dashboard add-key``); returns the key's listing.

    A key registered to ``name`` unproven (before proofs were asked) becomes vouched for. Raises
    :class:`AuthError` for an unknown user, an unreadable or unknown key type, or a key registered
    already (to this user or another).
    """
    check_user_name(name)
    key = read_key(public_key)

    def tx(conn):
        user_id = conn.execute(select(User.id).where(User.name == name)).scalar()
        if user_id is None:
            raise AuthError(f"there is no user {name!r} on this dashboard")
        row = conn.execute(
            select(SshKey.id, SshKey.user_id, SshKey.proof, SshKey.created_at, SshKey.revoked_at).where(
                SshKey.fingerprint == key.fingerprint
            )
        ).first()
        at = now_iso()
        if row is not None:
            if row[1] == user_id and row[2] is None and row[4] is None:
                conn.execute(update(SshKey).where(SshKey.id == row[0]).values(proof=PROOF_OPERATOR, proven_at=at))
                db.bump(conn)
                return _listing(key, row[3], None, PROOF_OPERATOR)
            raise AuthError(
                f"the key {key.fingerprint} is registered already"
                + (" to this user" if row[1] == user_id else " to another user")
            )
        conn.execute(
            insert(SshKey).values(
                user_id=user_id,
                fingerprint=key.fingerprint,
                key_type=key.key_type,
                public_key=key.line,
                comment=key.comment[:200],
                created_at=at,
                proof=PROOF_OPERATOR,
                proven_at=at,
            )
        )
        db.bump(conn)
        return _listing(key, at, None, PROOF_OPERATOR)

    try:
        return db.write(tx)
    except IntegrityError:
        raise AuthError(f"the key {key.fingerprint} is registered already") from None


def read_key(public_key: object) -> PublicKey:
    """The key in one ``.pub`` line, checked for what a database cannot store; raises :class:`AuthError`."""
    if isinstance(public_key, str) and _UNSTORABLE.search(public_key.strip()):
        raise AuthError(
            "the SSH public key line holds a control character or a lone surrogate; give one line of a .pub file"
        )
    try:
        return parse_public_key(public_key)  # type: ignore[arg-type]
    except (SigningError, AttributeError, TypeError) as exc:
        raise AuthError(
            exc.message if isinstance(exc, SigningError) else "the SSH public key must be one line of a .pub file"
        ) from None


def _listing(key: PublicKey, created: str, revoked: str | None, proof: str | None, moved_to: str | None = None) -> dict:
    return {
        "fingerprint": key.fingerprint,
        "type": key.key_type,
        "public_key": key.line,
        "comment": key.comment,
        "created_at": created,
        "revoked_at": revoked,
        "proof": proof,
        "moved_to": moved_to,
    }


def revoke_key(db: Database, name: str, fingerprint: str) -> None:
    """Revoke one of ``name``'s keys: it signs nothing new (what it signed stays, marked so)."""
    check_user_name(name)

    def tx(conn):
        row = conn.execute(
            select(SshKey.id, SshKey.revoked_at)
            .join(User, User.id == SshKey.user_id)
            .where(User.name == name, SshKey.fingerprint == fingerprint)
        ).first()
        if row is None:
            raise AuthError(f"user {name!r} has no key {fingerprint}")
        if row[1] is None:
            conn.execute(update(SshKey).where(SshKey.id == row[0]).values(revoked_at=now_iso()))
            db.bump(conn)

    db.write(tx)


def list_keys(db: Database, name: str) -> list[dict]:
    """The keys of ``name`` (revoked ones too, with ``revoked_at``), oldest first, each with how it was
    registered (``proof``: possession, operator, or None: unproven); then the keys moved away from
    ``name`` to a user who proved holding them, as revoked, with ``moved_to``."""

    def q(conn):
        rows = conn.execute(
            select(SshKey.public_key, SshKey.comment, SshKey.created_at, SshKey.revoked_at, SshKey.proof)
            .join(User, User.id == SshKey.user_id)
            .where(User.name == name)
            .order_by(SshKey.id)
        ).all()
        out = [_listing(parse_public_key(f"{pk} {c}".strip()), at, rev, proof) for pk, c, at, rev, proof in rows]
        gone = conn.execute(
            select(SshKey.public_key, SshKey.comment, KeyAudit.at, KeyAudit.to_user_id)
            .join(SshKey, SshKey.fingerprint == KeyAudit.fingerprint)
            .join(User, User.id == KeyAudit.from_user_id)
            .where(User.name == name)
            .order_by(KeyAudit.id)
        ).all()
        names = (
            dict(conn.execute(select(User.id, User.name).where(User.id.in_({g[3] for g in gone}))).all())
            if gone
            else {}
        )
        out += [_listing(parse_public_key(f"{pk} {c}".strip()), at, at, None, names.get(to)) for pk, c, at, to in gone]
        return out

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
        raise Forbidden(
            f"the signature is by key {fp}, which is not registered on this dashboard; "
            "register it with `cotk-repro keys add`"
        )
    if row[3] is not None:
        raise Forbidden(f"the signature is by key {fp} of {row[1]}, which was revoked on {row[3]}")
    if row[4] is None:
        raise Forbidden(
            f"the signature is by key {fp}, registered to {row[1]} without proof that they hold it: it "
            "signs nothing until its holder proves possession with `cotk-repro keys add`"
        )
    try:
        # parse_signature above refused anything but a str
        verify_bytes(data, cast(str, signature), namespace, [(row[1], parse_public_key(row[2]))])
    except SigningError as exc:
        raise BadSignature(exc.message) from None
    return Signer(row[0], row[1], fp)


# built once: every signed upload looks its key up
_KEY_OWNER = (
    select(User.id, User.name, SshKey.public_key, SshKey.revoked_at, SshKey.proof)
    .join(User, User.id == SshKey.user_id)
    .where(SshKey.fingerprint == bindparam("fp"))
)


def check_uploader(signer: Signer, principal: Principal, what: str) -> None:
    """A reproduction must be signed by a key of the user uploading it."""
    if signer.user_id != principal.user_id:
        raise Forbidden(
            f"the {what} is signed by a key of {signer.name} ({signer.fingerprint}), not by one of "
            f"yours ({principal.name}): sign it with your own registered key"
        )
