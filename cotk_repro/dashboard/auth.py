"""Users and bearer tokens. Tokens are shown once and stored as their hex SHA-256."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError

from ..errors import CotkError
from .db import Database
from .models import Token, User

USER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")  # matched in full (``$`` would let "alice\n" in)
TOKEN_PREFIX = "cotk_"


class AuthError(CotkError):
    """A user or token operation failed."""


@dataclass(frozen=True)
class Principal:
    """An authenticated user: database id and name."""

    user_id: int
    name: str


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds and a ``Z`` suffix."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token, as stored in the database."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_user_name(name: str) -> str:
    """``name`` when it is a valid user name; else raises :class:`AuthError`."""
    if not isinstance(name, str) or not USER_RE.fullmatch(name):
        raise AuthError(
            f"{name!r} is not a valid user name (letters, digits, '.', '_', '-'; at most 64; "
            "starting with a letter or digit)"
        )
    return name


def _check_distinct(name: str, existing: list[str]) -> None:
    """Refuse a new user name that differs only by case from an existing one or looks like it (confusables)."""
    from .names import NameError_, check_against, keys

    mine = keys(name)
    for other in existing:
        if keys(other) & mine:
            try:
                check_against(name, "user name", other)
            except NameError_ as exc:
                raise AuthError(exc.message) from None


def add_user(db: Database, name: str) -> tuple[str, bool]:
    """Create ``name`` if needed and issue a new token for it.

    Returns ``(token, created)``; the token is only ever available here.
    """
    check_user_name(name)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)

    def tx(conn):
        row = conn.execute(select(User.id).where(User.name == name)).first()
        created = row is None
        if created:
            _check_distinct(name, conn.execute(select(User.name)).scalars().all())
            user_id = conn.execute(insert(User).values(name=name, created_at=now_iso())).inserted_primary_key[0]
        else:
            user_id = row[0]
        conn.execute(insert(Token).values(user_id=user_id, token_hash=hash_token(token), created_at=now_iso()))
        return created

    try:
        created = db.write(tx)
    except IntegrityError:  # created concurrently by another admin command: add the token to it
        created = db.write(tx)
    return token, created


def revoke_token(db: Database, name: str) -> int:
    """Revoke every active token of ``name``; returns how many were revoked."""
    check_user_name(name)

    def tx(conn):
        user_id = conn.execute(select(User.id).where(User.name == name)).scalar()
        if user_id is None:
            raise AuthError(f"there is no user {name!r} on this dashboard")
        res = conn.execute(
            update(Token).where(Token.user_id == user_id, Token.revoked_at.is_(None)).values(revoked_at=now_iso())
        )
        return res.rowcount

    return db.write(tx)


def list_users(db: Database) -> list[dict]:
    """Every user (by name) with their creation time and number of active tokens."""

    def q(conn):
        users = conn.execute(select(User.id, User.name, User.created_at).order_by(User.name)).all()
        active = {}
        for (uid,) in conn.execute(select(Token.user_id).where(Token.revoked_at.is_(None))).all():
            active[uid] = active.get(uid, 0) + 1
        return [{"name": n, "created_at": c, "active_tokens": active.get(i, 0)} for i, n, c in users]

    return db.read(q)


def authenticate(db: Database, token: str) -> Principal | None:
    """The user holding ``token`` (not revoked), or None."""
    if not token or len(token) > 512:
        return None
    digest = hash_token(token)
    row = db.read(lambda conn: conn.execute(_HOLDER, {"digest": digest}).first())
    return Principal(row[0], row[1]) if row else None


# built once: every API write looks its token up (statement construction costs more than the query)
_HOLDER = (
    select(User.id, User.name)
    .join(Token, Token.user_id == User.id)
    .where(Token.token_hash == bindparam("digest"), Token.revoked_at.is_(None))
)
