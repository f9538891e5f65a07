"""``/api/v1/keys`` and ``/api/v1/users/{name}/keys``: a user's SSH keys, added and revoked with their token."""

from __future__ import annotations

from typing import Optional

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel

from . import identity
from .api import ERRORS, Problem, _dash, require_user
from .auth import Principal
from .refusals import refusals

router = APIRouter(prefix="/api/v1", tags=["keys"])


class KeyIn(BaseModel):
    """The body of ``POST /keys``: one line of an SSH ``.pub`` file."""

    public_key: str


class KeyOut(BaseModel):
    """A registered SSH key: fingerprint, type, public key, comment and when it was added or revoked."""

    fingerprint: str
    type: str
    public_key: str
    comment: str
    created_at: str
    revoked_at: Optional[str]


@router.post("/keys", status_code=201, response_model=KeyOut, responses=ERRORS)
async def add_key(request: Request, body: KeyIn, user: Principal = Depends(require_user)):
    """Register an SSH public key (one line of a ``.pub`` file) for yourself; uploads it signs are yours."""
    dash = _dash(request)
    with refusals():
        out = await run_in_threadpool(identity.add_key, dash.db, user.name, body.public_key)
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
