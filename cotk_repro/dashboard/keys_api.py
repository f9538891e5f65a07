"""``/api/v1/keys`` and ``/api/v1/users/{name}/keys``: a user's SSH keys, added (with proof of possession,
:mod:`.key_proofs`) and revoked with their token."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel

from . import identity, key_proofs
from .api import ERRORS, Problem, _dash, require_user
from .auth import Principal
from .refusals import refusals

router = APIRouter(prefix="/api/v1", tags=["keys"])


class KeyIn(BaseModel):
    """The body of ``POST /keys``: one line of an SSH ``.pub`` file, the nonce of a challenge from
    ``POST /keys/challenge`` and the key's SSHSIG signature (namespace ``cotk-repro-key-registration``) over
    that challenge's text."""

    public_key: str
    challenge: str | None = None
    signature: str | None = None


class ChallengeOut(BaseModel):
    """A key registration challenge: the exact text to sign, its nonce, namespace, expiry, user and dashboard."""

    challenge: str
    nonce: str
    namespace: str
    expires_at: str
    user: str
    dashboard: str


class KeyOut(BaseModel):
    """A registered SSH key: fingerprint, type, public key, comment and when it was added or revoked."""

    fingerprint: str
    type: str
    public_key: str
    comment: str
    created_at: str
    revoked_at: str | None
    proof: str | None = None
    moved_to: str | None = None


class KeyAdded(KeyOut):
    """A key just registered by proof of possession; ``moved_from``: the user an unproven registration of it
    was taken from (their records and reproductions it signed are yours now)."""

    moved_from: str | None = None


def _key_origin(request: Request) -> str:
    """The origin this dashboard's key challenges name: configured, never taken from the request's headers
    (a relaying site would otherwise get a challenge naming itself, which the victim's client signs)."""
    origin = _dash(request).key_origin
    if origin is None:
        raise HTTPException(
            503,
            "this dashboard does not know its own public URL, so it cannot take key proofs: "
            "its operator starts it with `cotk-repro dashboard serve --public-url URL`",
        )
    return origin


@router.post("/keys/challenge", status_code=201, response_model=ChallengeOut, responses=ERRORS)
async def key_challenge(request: Request, user: Principal = Depends(require_user)):
    """A fresh, single-use challenge naming you and this dashboard, valid for minutes: sign its text with the
    key you register (``ssh-keygen -Y sign -n cotk-repro-key-registration``) and send it to ``POST /keys``."""
    out = await run_in_threadpool(key_proofs.issue_challenge, _dash(request).db, user, _key_origin(request))
    return out


@router.post("/keys", status_code=201, response_model=KeyAdded, responses=ERRORS)
async def add_key(request: Request, body: KeyIn, user: Principal = Depends(require_user)):
    """Register an SSH public key for yourself, with proof that you hold it (a signature by it over a challenge
    from ``POST /keys/challenge``); uploads it signs are yours. A key someone else registered without proof
    moves to you, with what it signed."""
    dash = _dash(request)
    with refusals():
        out = await run_in_threadpool(
            key_proofs.register_with_proof,
            dash.db,
            user,
            body.public_key,
            body.challenge,
            body.signature,
            _key_origin(request),
        )
    dash.wrote()
    return out


@router.delete("/keys/{fingerprint:path}", status_code=204, responses={404: {"model": Problem}, **ERRORS})
async def revoke_key(request: Request, fingerprint: str, user: Principal = Depends(require_user)):
    """Revoke one of your keys: nothing it signs is accepted from now on."""
    dash = _dash(request)
    try:
        await run_in_threadpool(identity.revoke_key, dash.db, user.name, fingerprint)
    except identity.AuthError as exc:
        raise HTTPException(404, exc.message) from None
    dash.wrote()
    return Response(status_code=204)


@router.get("/users/{name}/keys", response_model=list[KeyOut])
def user_keys(request: Request, name: str):
    """The SSH keys of a user, with their fingerprints (revoked ones too)."""
    return identity.list_keys(_dash(request).db, name)
