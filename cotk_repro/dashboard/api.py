"""The JSON API under ``/api/v1`` (docs/spec.md section 7), described at ``/openapi.json``.

The upload bodies are read raw (the signature covers the document as sent) and validated by the store;
their OpenAPI schemas are generated from the models of :mod:`cotk_repro.records.model`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, cast
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

from ..core import jsonbudget
from . import leaderboard as lb
from . import store
from . import table as tb
from .auth import Principal, authenticate
from .queue import annotate_board, annotate_entries
from .refusals import refusals

router = APIRouter(prefix="/api/v1", tags=["api"])
bearer = HTTPBearer(auto_error=False, description="A token from `cotk-repro dashboard add-user NAME`.")

MAX_PER_PAGE = 500
MAX_PAGE = 100_000
QSTR = 200  # longest filter value


class Created(BaseModel):
    """The answer to a record upload: its id, URL, owner, whether it is signed or a mirror, and the signing key."""

    id: str
    url: str
    owner: str
    signed: bool
    mirror: bool
    key: str | None
    #: result keys no metric loaded on the dashboard reports: kept in the record, not ranked
    unranked: list[str] = []


class ReproductionCreated(BaseModel):
    """The answer to a reproduction upload: its id, the server's verdict, the claimed one, by the author or not."""

    id: int
    url: str
    verdict: str
    claimed: str
    by_author: bool
    #: the record's standing after it: unverified, verified, disputed or refuted (docs/dashboard.md "Tiers")
    standing: str


class Health(BaseModel):
    """The answer of ``/health``: ``{"status": "ok"}`` once the database answers."""

    status: str


class Me(BaseModel):
    """The answer of ``/me``: the name of the user a token belongs to."""

    user: str


class Problem(BaseModel):
    """An error answer: one sentence in ``detail``."""

    detail: str


class LeaderboardEntry(BaseModel):
    """One ranked result of a leaderboard group, with its owner, signer and reproduction counts."""

    rank: int
    id: str
    url: str | None
    value: float
    user: str
    signer: str | None
    signed: bool
    key: str | None
    project: str
    submitted_at: str
    reproductions: int
    reproduced_by: int
    unverifiable: bool
    dirty: bool
    #: derived from the system the record describes (an endpoint's generator is unpinned whatever it claims)
    pinned: bool
    #: 0 verified by reproduction, 1 signed, clean and pinned, 2 the rest (docs/dashboard.md "Tiers")
    tier: int
    #: reproduced by the dashboard's pool or by K reproducers other than its signer (tier 0)
    verified: bool
    #: what the reproductions say: unverified, verified, disputed or refuted
    standing: str
    verified_by: str | None = None


class LeaderboardGroup(BaseModel):
    """The results sharing one comparability hash (None: unverifiable), ranked."""

    hash: str | None
    comparable: bool
    total: int
    entries: list[LeaderboardEntry]


class Leaderboard(BaseModel):
    """A page of the leaderboard of one task / dataset / metric, one group per comparability hash."""

    task: str
    dataset: str
    metric: str
    higher_is_better: bool
    reproduced_only: bool
    #: "tier" (verified first, the ranking) or "value" (best value first, tiers ignored)
    order: str
    page: int
    per_page: int
    total_groups: int
    groups: list[LeaderboardGroup]


class TableColumn(BaseModel):
    """One metric column of the side-by-side table: its direction, ranked hash and how many results it leaves out."""

    metric: str
    higher_is_better: bool
    hash: str | None
    ranked: int
    other_groups: int


class TableCell(BaseModel):
    """One record's value of one metric in the table; ranked only when comparable with its column."""

    value: float
    comparable: bool
    rank: int | None
    hash: str | None
    pinned: bool
    tier: int
    verified: bool


class TableRow(BaseModel):
    """One record in the side-by-side table, with a cell per metric (None where it has no value)."""

    id: str
    url: str | None
    project: str
    user: str
    signer: str | None
    signed: bool
    dirty: bool
    standing: str
    submitted_at: str
    reproduced_by: int
    cells: dict[str, TableCell | None]
    verified_by: str | None = None


class Table(BaseModel):
    """A page of every metric of one task / dataset side by side: columns per metric, rows per record."""

    task: str
    dataset: str
    sort: str | None
    page: int
    per_page: int
    total: int
    columns: list[TableColumn]
    rows: list[TableRow]


class RecordSummary(BaseModel):
    """One record in the list of records: its id, URL, project, task, dataset, status, owner and results."""

    id: str
    url: str
    project: str
    task: str
    dataset: str
    status: str
    submitted_at: str
    user: str
    results: dict[str, Any]


class RecordPage(BaseModel):
    """A page of record summaries with its page number, size and the totals."""

    records: list[RecordSummary]
    page: int
    per_page: int
    total: int
    pages: int


class QueueCounts(BaseModel):
    """The reproduction queue: jobs per state and the age of the oldest waiting one (``enabled`` false: no queue)."""

    enabled: bool
    pending: int
    running: int
    done: int
    failed: int
    oldest_pending_age_s: float | None


class ReproductionOut(BaseModel):
    """A stored reproduction of a record: who sent it, its verdict, and if it is the author's, superseded, signed."""

    id: int
    user: str
    submitted_at: str
    verdict: dict[str, Any]
    by_author: bool
    superseded: bool
    signed: bool
    key: str | None


class RecordOut(BaseModel):
    """A record exactly as uploaded, with its owner, signature, mirrors and reproductions."""

    record: dict[str, Any]
    user: str
    submitted_at: str
    signed: bool
    signature: str | None
    key: str | None
    #: the git remote taken when the record was published (``{"publication", "signature"}``), for a record made
    #: before its project had one; null when the record names its own
    publication: dict[str, Any] | None = None
    mirrored_by: list[str]
    reproductions: list[ReproductionOut]
    reproduced_by: int
    url: str
    queue: dict[str, Any] | None = None
    verified_by: str | None = None
    #: what the reproductions say: unverified, verified, disputed or refuted (docs/dashboard.md "Tiers")
    standing: str = "unverified"
    #: tier 0: reproduced by the dashboard's pool or by K reproducers other than its signer
    verified: bool = False


@lru_cache(maxsize=1)
def _uploads() -> tuple[dict[str, Any], dict[str, Any]]:
    """The upload bodies' JSON schemas and their definitions, generated from :mod:`cotk_repro.records.model`."""
    from ..records.model import upload_schemas

    return upload_schemas()


def upload_body(kind: str) -> dict[str, Any]:
    """The OpenAPI request body of an upload: the signed ``{kind, signature}`` form or the bare document."""
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": _uploads()[0][kind]}}}}


def add_upload_schemas(app) -> None:
    """Put the models the upload bodies refer to into the app's OpenAPI components."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = generate()
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            clash = sorted(set(schemas) & set(_uploads()[1]))
            if clash:  # two models of one name would silently replace each other
                raise RuntimeError(f"OpenAPI component names used twice: {', '.join(clash)}")
            schemas.update(_uploads()[1])
        return app.openapi_schema

    app.openapi = openapi


ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "missing or invalid token"},
    403: {
        "model": Problem,
        "description": "unsigned where signatures are required, or signed by a key that "
        "is not registered, revoked or another user's",
    },
    413: {"model": Problem, "description": "body too large"},
    415: {"model": Problem, "description": "body is not JSON"},
    422: {"description": "invalid body"},
    429: {"model": Problem, "description": "rate limited"},
}


def _dash(request: Request):
    return request.app.state.dashboard


def record_url(base: str, record_id: str) -> str:
    """The public URL of a record's page under ``base``."""
    return f"{base}/records/{quote(record_id, safe=':')}"


def principal_of(db, credentials: HTTPAuthorizationCredentials | None) -> Principal:
    """The user holding the bearer token; HTTP 401 without a valid one (blocking: a database read)."""
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(
            401, "a bearer token is required (Authorization: Bearer TOKEN)", headers={"WWW-Authenticate": "Bearer"}
        )
    principal = authenticate(db, credentials.credentials)
    if principal is None:
        raise HTTPException(401, "the token is invalid or revoked", headers={"WWW-Authenticate": "Bearer"})
    return principal


def require_user(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Principal:
    """FastAPI dependency: the user holding the request's bearer token; HTTP 401 without a valid one."""
    return principal_of(_dash(request).db, credentials)


def _json_body(raw: bytes) -> Any:
    try:
        return jsonbudget.loads(raw, what="the body")
    except jsonbudget.JSONBudgetError as exc:
        raise HTTPException(422, exc.message) from None


def _qs(value: str | None, what: str) -> str | None:
    if value is not None and ("\x00" in value or len(value) > QSTR):
        raise HTTPException(422, f"the {what} filter is not a valid name")
    return value


@router.get("/health", response_model=Health)
def health(request: Request) -> dict[str, str]:
    """Liveness check: ``{"status": "ok"}`` once the database answers."""
    _dash(request).db.generation()  # the database answers
    return {"status": "ok"}


@router.get("/me", response_model=Me, responses={401: ERRORS[401]})
def me(user: Principal = Depends(require_user)) -> dict[str, str]:
    """The user a token belongs to: what `cotk-repro login` checks before saving it."""
    return {"user": user.name}


@router.post(
    "/records",
    status_code=201,
    response_model=Created,
    responses={200: {"model": Created, "description": "the record was already stored (no-op)"}, **ERRORS},
    openapi_extra=upload_body("record"),
)
async def upload_record(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)):
    """Upload a record. 201 when stored, 200 when the same record is already there."""
    raw = await request.body()
    dash = _dash(request)

    def work():  # the token check, parsing and storing in one trip to the thread pool (the hot path)
        user = principal_of(dash.db, credentials)
        with refusals():
            return store.store_record(dash.db, _json_body(raw), user, allow_unsigned=dash.allow_unsigned)

    created, info = await run_in_threadpool(work)
    dash.wrote()
    rid = info["id"]
    return JSONResponse({**info, "url": record_url(dash.base_url(request), rid)}, status_code=201 if created else 200)


@router.get("/records", response_model=RecordPage)
def list_records(
    request: Request,
    task: str | None = Query(None, max_length=QSTR),
    dataset: str | None = Query(None, max_length=QSTR),
    user: str | None = Query(None, max_length=QSTR),
    page: int = Query(1, ge=1, le=MAX_PAGE),
    per_page: int = Query(50, ge=1, le=MAX_PER_PAGE),
):
    """A page of record summaries, newest first."""
    dash = _dash(request)
    args = (_qs(task, "task"), _qs(dataset, "dataset"), _qs(user, "user"), page, per_page)
    data = dash.cached(
        ("records",) + args,
        lambda: store.list_records(dash.db, task=args[0], dataset=args[1], user=args[2], page=page, per_page=per_page),
    )
    base = dash.base_url(request)
    return {**data, "records": [{**r, "url": record_url(base, r["id"])} for r in data["records"]]}


@router.get("/records/{record_id}", response_model=RecordOut, responses={404: {"model": Problem}})
async def get_record(request: Request, record_id: str):
    """The record exactly as uploaded, with its reproductions. ``sha256:<hex>`` or the bare hex."""
    dash = _dash(request)
    rid = store.normalize_id(record_id)
    if rid is None:  # nothing cached for what is not an id
        return JSONResponse({"detail": f"{record_id[:100]!r} is not a record id"}, status_code=404)

    def compute() -> tuple[int, bytes]:
        try:
            data = store.get_record(dash.db, rid)
        except store.NotFound as exc:
            return 404, json.dumps({"detail": exc.message}).encode()
        out = {**data, "reproduced_by": store.reproduced_by(data["reproductions"])}
        if data.get("queue") is not None:
            out["verified_by"] = data["queue"]["verified_by"]
        return 200, json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode()

    # keyed on the normalised id alone (any spelling of one id, any Host header: one entry); the URL is added
    status, body = await dash.cached_async(("record-api", rid), compute)
    if status == 200:  # body is a JSON object: its closing brace makes room for the url
        body = b"".join((body[:-1], b',"url":', json.dumps(record_url(dash.base_url(request), rid)).encode(), b"}"))
    return Response(body, status_code=status, media_type="application/json")


@router.post(
    "/records/{record_id}/reproductions",
    status_code=201,
    response_model=ReproductionCreated,
    responses={404: {"model": Problem}, **ERRORS},
    openapi_extra=upload_body("reproduction"),
)
async def add_reproduction(request: Request, record_id: str, user: Principal = Depends(require_user)):
    """Attach a reproduction verdict (``cotk-repro reproduce --json``) to a record, attributed to you."""
    body = _json_body(await request.body())
    dash = _dash(request)
    with refusals():
        added = await run_in_threadpool(
            store.add_reproduction, dash.db, record_id, user, body, allow_unsigned=dash.allow_unsigned
        )
    dash.wrote()
    rid = cast(str, store.normalize_id(record_id))  # a str: add_reproduction found the record by this id
    return JSONResponse(
        {**added, "url": f"{record_url(dash.base_url(request), rid)}#reproduction-{added['id']}"}, status_code=201
    )


@router.post("/records/{record_id}/publication", status_code=201, responses={404: {"model": Problem}, **ERRORS})
async def add_publication(request: Request, record_id: str, user: Principal = Depends(require_user)):
    """Attach the git remote of a record made before its project had one: ``{"publication": {"kind",
    "record_id", "commit", "remote_url"}, "signature"}``, signed (namespace ``cotk-repro-publication``) by the
    key that signed the record. 201 when stored, 200 when the same one is already there."""
    body = _json_body(await request.body())
    dash = _dash(request)
    with refusals():
        added = await run_in_threadpool(
            store.add_publication, dash.db, record_id, user, body, allow_unsigned=dash.allow_unsigned
        )
    dash.wrote()
    return JSONResponse(added, status_code=201 if added["created"] else 200)


@router.get("/queue", response_model=QueueCounts)
async def queue(request: Request):
    """The reproduction queue (``serve --reproduce-queue``): jobs pending, running, done and failed, and how long
    the oldest pending one has waited. Without a queue: ``enabled: false`` and zeros."""
    dash = _dash(request)
    if not dash.db.reproduce_queue:
        return {"enabled": False, "pending": 0, "running": 0, "done": 0, "failed": 0, "oldest_pending_age_s": None}
    import time

    from .queue import counts

    cached = getattr(dash, "queue_counts", None)  # one count per second at most, however many readers
    if cached is None or time.monotonic() - cached[0] > 1.0:
        cached = dash.queue_counts = (time.monotonic(), await run_in_threadpool(counts, dash.db))
    return {"enabled": True, **cached[1]}


@router.get("/leaderboard", response_model=Leaderboard)
async def leaderboard(
    request: Request,
    task: str = Query(..., max_length=QSTR),
    dataset: str = Query(..., max_length=QSTR),
    metric: str = Query(..., max_length=QSTR),
    page: int = Query(1, ge=1, le=MAX_PAGE),
    per_page: int = Query(100, ge=1, le=MAX_PER_PAGE),
    reproduced: bool = Query(
        False, description="Only entries reproduced by someone other than their author (reproduced=1)."
    ),
    order: str = Query(
        "tier",
        pattern="^(tier|value)$",
        description="tier: verified first, then signed, then the rest (the ranking); value: best value first, "
        "tiers ignored.",
    ),
):
    """Results of one task / dataset / metric, one group per comparability hash (largest first),
    ranked within a group by tier (verified, signed, the rest) then value; unverifiable results (no hash) in
    their own group, ``hash: null``. Each entry names its signer, its ``tier``, whether it is ``verified`` and
    counts its independent reproductions (``reproduced_by``)."""
    dash = _dash(request)
    _qs(task, "task"), _qs(dataset, "dataset"), _qs(metric, "metric")
    base = dash.base_url(request)

    def compute() -> bytes:
        data = dash.db.read(
            lambda conn: lb.build(
                conn,
                task,
                dataset,
                metric,
                limit=per_page,
                page=page,
                record_url=lambda rid: record_url(base, rid),
                reproduced_only=reproduced,
                by_value=order == "value",
            )
        )
        annotate_board(dash.db, data)  # "verified by <pool>" where the reproduction queue runs
        return json.dumps(data, separators=(",", ":")).encode()

    body = await dash.cached_async(
        ("leaderboard-api", base, task, dataset, metric, page, per_page, reproduced, order), compute, stale_ok=True
    )
    return Response(body, media_type="application/json")


@router.get("/table", response_model=Table)
async def table(
    request: Request,
    task: str = Query(..., max_length=QSTR),
    dataset: str = Query(..., max_length=QSTR),
    sort: str | None = Query(None, max_length=QSTR, description="Order rows by this metric's rank."),
    page: int = Query(1, ge=1, le=MAX_PAGE),
    per_page: int = Query(100, ge=1, le=MAX_PER_PAGE),
):
    """Every metric of one task / dataset side by side: records as rows, one column per metric (its ranked
    hash group), each cell a value with its rank in the metric's direction; a result with another hash is
    shown with ``comparable: false`` and no rank."""
    dash = _dash(request)
    _qs(task, "task"), _qs(dataset, "dataset"), _qs(sort, "sort")
    base = dash.base_url(request)

    def compute() -> bytes:
        data = dash.db.read(
            lambda conn: tb.build(
                conn, task, dataset, sort=sort, limit=per_page, page=page, record_url=lambda rid: record_url(base, rid)
            )
        )
        annotate_entries(dash.db, data["rows"])  # "verified by <pool>" where the reproduction queue runs
        return json.dumps(data, separators=(",", ":")).encode()

    body = await dash.cached_async(("table-api", base, task, dataset, sort, page, per_page), compute, stale_ok=True)
    return Response(body, media_type="application/json")


@router.get("/tasks")
def tasks(request: Request) -> list[dict[str, Any]]:
    """Every task and dataset with its metrics and record counts."""
    dash = _dash(request)
    return dash.cached(("tasks",), lambda: dash.db.read(lb.catalogue))
