"""Proof of possession: a key counts on the dashboard only once its holder signed a challenge with it.

``POST /api/v1/keys/challenge`` issues a fresh, single-use challenge to the authenticated user
(:class:`cotk_repro.core.keyproof.Challenge`: the dashboard's configured origin, never one read from the
request (``--public-url``, else the loopback address it is bound to: a site relaying the request under its
own ``Host`` gets a challenge naming this dashboard, which the holder's client refuses to sign), the user, a random nonce, an
expiry :data:`CHALLENGE_TTL` seconds ahead). ``POST /api/v1/keys`` registers a key only with an SSHSIG
signature by that very key, namespace ``cotk-repro-key-registration``, over the challenge text rebuilt
here from what was stored: a signature by another key, over another nonce, for another user or another
dashboard origin fails; an expired or used challenge is refused; nothing is stored on a refusal.

A key registered to someone else *without* proof (before proofs were asked) moves to the user who
proves holding it: the records and reproductions it signed are re-attributed to them, the counts
recomputed, and a :class:`.models.KeyAudit` row says who lost it, who got it and how much moved.
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import delete, distinct, func, insert, select, update
from sqlalchemy.engine import Connection

from ..core.keyproof import NS_KEY_REGISTRATION, Challenge
from ..core.signing import SigningError, parse_signature, verify_bytes
from ..errors import CotkError
from .auth import AuthError, Principal, now_iso
from .db import Database
from .identity import PROOF_POSSESSION, _listing, read_key
from .models import KeyAudit, KeyChallenge, Mirror, Record, Reproduction, SshKey, User

#: seconds a challenge stays valid
CHALLENGE_TTL = 300
#: challenges a user may hold unused at once (older ones are dropped when a new one is issued)
MAX_OPEN_CHALLENGES = 20


class ProofRefused(CotkError):
    """A proof of possession that does not prove the uploader holds the key (HTTP 403)."""


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def issue_challenge(db: Database, principal: Principal, origin: str) -> dict[str, Any]:
    """A new challenge for ``principal`` on the dashboard at ``origin``: ``{"challenge", "nonce",
    "namespace", "expires_at", "user", "dashboard"}``."""
    origin = origin.rstrip("/")
    nonce = secrets.token_urlsafe(32)
    expires = int(time.time()) + CHALLENGE_TTL
    challenge = Challenge(origin, principal.name, nonce, _iso(expires))

    def tx(conn: Connection) -> None:
        now = int(time.time())
        conn.execute(delete(KeyChallenge).where(KeyChallenge.expires_epoch < now - CHALLENGE_TTL))
        open_ids = (
            conn.execute(
                select(KeyChallenge.id)
                .where(KeyChallenge.user_id == principal.user_id, KeyChallenge.used_at.is_(None))
                .order_by(KeyChallenge.id.desc())
            )
            .scalars()
            .all()
        )
        stale = open_ids[MAX_OPEN_CHALLENGES - 1 :]
        if stale:
            conn.execute(delete(KeyChallenge).where(KeyChallenge.id.in_(stale)))
        conn.execute(
            insert(KeyChallenge).values(
                user_id=principal.user_id,
                nonce=nonce,
                origin=origin,
                created_at=now_iso(),
                expires_at=challenge.expires,
                expires_epoch=expires,
            )
        )

    db.write(tx)
    return {
        "challenge": challenge.text(),
        "nonce": nonce,
        "namespace": NS_KEY_REGISTRATION,
        "expires_at": challenge.expires,
        "user": principal.name,
        "dashboard": origin,
    }


def register_with_proof(
    db: Database, principal: Principal, public_key: Any, nonce: Any, signature: Any, origin: str
) -> dict[str, Any]:
    """Register ``public_key`` to ``principal`` given ``signature`` by it over the challenge ``nonce``.

    Returns the key's listing, with ``moved_from`` (the user an unproven registration was taken from, or
    None). Raises :class:`AuthError` (422: no proof, unreadable key, unknown, expired or used challenge,
    a key held by someone who proved it) or :class:`ProofRefused` (403: the proof is not by this key, not
    over this challenge, or the challenge is another user's or another dashboard's).
    """
    key = read_key(public_key)
    if nonce is None or signature is None:
        raise AuthError(
            "a key is registered only with proof that you hold it: sign a challenge from "
            "POST /api/v1/keys/challenge with the key (`cotk-repro keys add` does both)"
        )
    if not isinstance(nonce, str) or not isinstance(signature, str):
        raise AuthError("the challenge must be the nonce text and the signature the armored SSH signature")
    try:
        info = parse_signature(signature)
    except SigningError as exc:
        raise AuthError(exc.message) from None
    if info.public.blob != key.blob:
        raise ProofRefused(
            f"the proof is signed by the key {info.public.fingerprint}, not by the key "
            f"{key.fingerprint} being registered: only its holder can register it"
        )
    row = db.read(
        lambda c: c.execute(
            select(
                KeyChallenge.id,
                KeyChallenge.user_id,
                KeyChallenge.origin,
                KeyChallenge.expires_at,
                KeyChallenge.expires_epoch,
                KeyChallenge.used_at,
            ).where(KeyChallenge.nonce == nonce)
        ).first()
    )
    if row is None:
        raise AuthError("there is no such key registration challenge on this dashboard (ask for a new one)")
    cid, uid, issued_origin, expires_at, expires_epoch, used_at = row
    if uid != principal.user_id:
        raise ProofRefused("that key registration challenge was issued to another user")
    if used_at is not None:
        raise AuthError("that key registration challenge was used already: ask for a new one")
    if expires_epoch < time.time():
        raise AuthError(f"that key registration challenge expired at {expires_at}: ask for a new one")
    if issued_origin.rstrip("/") != origin.rstrip("/"):
        raise ProofRefused(f"that key registration challenge was issued for {issued_origin}, not {origin}")
    text = Challenge(issued_origin, principal.name, nonce, expires_at).text()
    try:
        verify_bytes(text.encode("utf-8"), signature, NS_KEY_REGISTRATION, [(principal.name, key)])
    except SigningError as exc:
        raise ProofRefused(f"the proof does not hold: {exc.message}") from None

    def tx(conn: Connection) -> dict[str, Any]:
        taken = conn.execute(
            update(KeyChallenge).where(KeyChallenge.id == cid, KeyChallenge.used_at.is_(None)).values(used_at=now_iso())
        )
        if taken.rowcount != 1:
            raise AuthError("that key registration challenge was used already: ask for a new one")
        at = now_iso()
        found = conn.execute(
            select(SshKey.id, SshKey.user_id, SshKey.proof, SshKey.revoked_at, SshKey.created_at).where(
                SshKey.fingerprint == key.fingerprint
            )
        ).first()
        moved_from = None
        if found is None:
            conn.execute(
                insert(SshKey).values(
                    user_id=principal.user_id,
                    fingerprint=key.fingerprint,
                    key_type=key.key_type,
                    public_key=key.line,
                    comment=key.comment[:200],
                    created_at=at,
                    proof=PROOF_POSSESSION,
                    proven_at=at,
                    proof_origin=issued_origin,
                )
            )
            created = at
        else:
            kid, holder, proof, revoked, created = found
            if proof is not None:  # proven or vouched for: a shared or stolen key is not taken over here
                if holder == principal.user_id:
                    raise AuthError(
                        f"the key {key.fingerprint} is registered already to you"
                        + (f" and was revoked on {revoked}" if revoked else "")
                    )
                raise AuthError(
                    f"the key {key.fingerprint} is registered already to another user, who proved "
                    "holding it or was vouched for by the administrator: ask the administrator"
                )
            if holder != principal.user_id:
                moved_from = conn.execute(select(User.name).where(User.id == holder)).scalar()
                moved = reattribute(conn, key.fingerprint, holder, principal.user_id)
                conn.execute(
                    insert(KeyAudit).values(
                        at=at,
                        fingerprint=key.fingerprint,
                        action="moved",
                        from_user_id=holder,
                        to_user_id=principal.user_id,
                        records=moved[0],
                        reproductions=moved[1],
                        detail=f"registered to {moved_from} without proof; {principal.name} proved holding it",
                    )
                )
                created = at
            conn.execute(
                update(SshKey)
                .where(SshKey.id == kid)
                .values(
                    user_id=principal.user_id,
                    proof=PROOF_POSSESSION,
                    proven_at=at,
                    proof_origin=issued_origin,
                    revoked_at=None,
                    created_at=created,
                    comment=key.comment[:200] if moved_from else SshKey.comment,
                )
            )
        db.bump(conn)
        return {**_listing(key, created, None, PROOF_POSSESSION), "moved_from": moved_from}

    return db.write(tx)


def reattribute(conn: Connection, fingerprint: str, from_user: int, to_user: int) -> tuple[int, int]:
    """Make what ``fingerprint`` signed as ``from_user`` be ``to_user``'s: records, their mirrors,
    reproductions; recompute the author flags, superseded flags and counts of every record touched.
    Returns ``(records moved, reproductions moved)``."""
    rec_pks = set(
        conn.execute(
            select(Record.id).where(Record.key_fingerprint == fingerprint, Record.user_id == from_user)
        ).scalars()
    )
    rep_rows = conn.execute(
        select(Reproduction.id, Reproduction.record_pk).where(
            Reproduction.key_fingerprint == fingerprint, Reproduction.user_id == from_user
        )
    ).all()
    if rec_pks:
        conn.execute(update(Record).where(Record.id.in_(rec_pks)).values(user_id=to_user))
        conn.execute(delete(Mirror).where(Mirror.record_pk.in_(rec_pks), Mirror.user_id == to_user))
    if rep_rows:
        conn.execute(update(Reproduction).where(Reproduction.id.in_([r[0] for r in rep_rows])).values(user_id=to_user))
    recount(conn, rec_pks | {r[1] for r in rep_rows})
    return len(rec_pks), len(rep_rows)


def recount(conn: Connection, record_pks: set[int]) -> None:
    """Recompute, for the records ``record_pks``, which reproductions are the author's, which are
    superseded by the same user's newer one, and ``reproduced_by`` (the rules of :mod:`.store`)."""
    for pk in sorted(record_pks):
        owner = conn.execute(select(Record.user_id).where(Record.id == pk)).scalar()
        rows = conn.execute(
            select(Reproduction.id, Reproduction.user_id).where(Reproduction.record_pk == pk).order_by(Reproduction.id)
        ).all()
        latest = {uid: rid for rid, uid in rows}
        for rid, uid in rows:
            conn.execute(
                update(Reproduction)
                .where(Reproduction.id == rid)
                .values(by_author=uid == owner, superseded=latest[uid] != rid)
            )
        n = (
            conn.execute(
                select(func.count(distinct(Reproduction.user_id))).where(
                    Reproduction.record_pk == pk,
                    Reproduction.verdict == "reproduced",
                    Reproduction.by_author.is_(False),
                    Reproduction.superseded.is_(False),
                )
            ).scalar()
            or 0
        )
        conn.execute(update(Record).where(Record.id == pk).values(reproduced_by=n))
