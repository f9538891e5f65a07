"""``/api/v1/leases``: volunteers lease reproduction jobs over HTTP, heartbeat them and send signed verdicts
(:mod:`.leases`; ``cotk-repro dashboard worker --url``). Only on a dashboard served with ``--reproduce-queue``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from .api import ERRORS, Problem, _dash, _json_body, record_url, require_user
from .auth import Principal
from .leases import LeaseError
from .refusals import refusals

router = APIRouter(prefix="/api/v1", tags=["leases"])


class LeaseOut(BaseModel):
    """A lease: the job the server chose for you, the record to reproduce, and how long it lives without a
    heartbeat (``expires_in`` seconds; heartbeat every ``heartbeat_every``)."""

    lease: int
    record_id: str
    record: dict[str, Any]
    status: str
    publication: dict[str, Any] | None
    record_signature: str | None
    expires_in: float
    heartbeat_every: float


class HeartbeatOut(BaseModel):
    """A lease kept alive for ``expires_in`` more seconds."""

    lease: int
    expires_in: float


class LeaseVerdictOut(BaseModel):
    """A lease's verdict stored: the reproduction's id, the server's verdict and the record's standing after it."""

    id: int
    lease: int
    url: str
    verdict: str
    claimed: str
    by_author: bool
    standing: str


def _leases(request: Request):
    leases = getattr(_dash(request), "leases", None)
    if leases is None:
        raise HTTPException(404, "this dashboard runs no reproduction queue, so it has no leases to give")
    return leases


def _refused(exc: LeaseError) -> HTTPException:
    return HTTPException(exc.status, exc.message)


@router.post(
    "/leases",
    status_code=201,
    response_model=LeaseOut,
    responses={204: {"description": "no job may go to you now"}, 404: {"model": Problem}, **ERRORS},
)
async def take_lease(request: Request, user: Principal = Depends(require_user)):
    """Lease a reproduction job: the server chooses the record (never yours, one you mirrored, or one you had
    before). 204 when none may go to you now; 429 when you hold as many leases as a volunteer may."""
    leases = _leases(request)
    try:
        lease = await run_in_threadpool(leases.take, user)
    except LeaseError as exc:
        raise _refused(exc) from None
    if lease is None:
        return Response(status_code=204)
    _dash(request).wrote()
    return JSONResponse(lease.to_json(), status_code=201)


@router.post("/leases/{lease_id}/heartbeat", response_model=HeartbeatOut, responses={404: {"model": Problem}, **ERRORS})
async def heartbeat(request: Request, lease_id: int, user: Principal = Depends(require_user)):
    """Keep your lease alive (409 once it has expired or ended)."""
    leases = _leases(request)
    try:
        return await run_in_threadpool(leases.heartbeat, lease_id, user)
    except LeaseError as exc:
        raise _refused(exc) from None


@router.post(
    "/leases/{lease_id}/verdict",
    status_code=201,
    response_model=LeaseVerdictOut,
    responses={404: {"model": Problem}, 409: {"model": Problem}, **ERRORS},
)
async def lease_verdict(request: Request, lease_id: int, user: Principal = Depends(require_user)):
    """Send the signed verdict of your lease (``{"reproduction": ..., "signature": ...}``, signed with a key you
    proved): taken once, before the lease expires, for the lease's record only."""
    leases = _leases(request)
    body = _json_body(await request.body())
    dash = _dash(request)
    try:
        with refusals():
            added = await run_in_threadpool(leases.verdict, lease_id, user, body)
    except LeaseError as exc:
        raise _refused(exc) from None
    dash.wrote()
    rid = body["reproduction"]["record_id"]
    return JSONResponse(
        {**added, "url": f"{record_url(dash.base_url(request), rid)}#reproduction-{added['id']}"}, status_code=201
    )
