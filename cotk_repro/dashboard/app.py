"""The dashboard application: ``create_app(db_url, *, max_body=..., rate_limit=...)``.

Safety, in one pure-ASGI middleware (cheap on every request):

* request bodies are capped (``max_body`` bytes; 413 beyond, whether or not a
  Content-Length was sent);
* ``POST`` to the API must be ``application/json`` (415 otherwise);
* writes are rate limited per authenticated user (a valid bearer token, whatever the
  scheme's case) or per client address otherwise (no token, or one that is not valid:
  junk ``Authorization`` values share the client's anonymous bucket), a token bucket of
  ``rate_limit`` = ``"N/S"`` requests per S seconds (429 + Retry-After); reads too when
  ``read_rate_limit`` is set;
* every response carries a strict Content-Security-Policy (no scripts at all),
  ``X-Content-Type-Options: nosniff`` and ``X-Frame-Options: DENY``.

Unhandled errors answer a generic 500 JSON body; the traceback goes to the server log only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from .db import Database, open_database

log = logging.getLogger("cotk_repro.dashboard")

DEFAULT_MAX_BODY = 5 * 1024 * 1024
DEFAULT_RATE_LIMIT = "3000/60"
#: the most bytes the page and API cache keeps (pages, leaderboards, records as served)
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        (
            b"default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
            b"base-uri 'none'; frame-ancestors 'none'"
        ),
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


def parse_rate(value: str | tuple[float, float] | None) -> tuple[float, float] | None:
    """``"N/S"`` (N requests per S seconds), ``(N, S)``, or None/"off" for no limit."""
    if value is None or value == "off" or value == "":
        return None
    if isinstance(value, tuple):
        n, s = value
    else:
        try:
            n_text, _, s_text = str(value).partition("/")
            n, s = float(n_text), float(s_text or 1)
        except ValueError:
            raise ValueError(
                f"{value!r} is not a rate limit: write N/S, e.g. 600/60 (600 requests per minute)"
            ) from None
    if n <= 0 or s <= 0:
        raise ValueError(f"{value!r} is not a rate limit: both numbers must be positive")
    return float(n), float(s)


class RateLimiter:
    """Token buckets keyed by client; thread-safe; old keys are pruned."""

    def __init__(self, rate: tuple[float, float]):
        self.capacity, period = rate
        self.refill = self.capacity / period
        self.buckets: dict[str, tuple[float, float]] = {}
        self.lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when allowed, else the seconds to wait."""
        now = time.monotonic()
        with self.lock:
            tokens, last = self.buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.refill)
            if tokens >= 1:
                self.buckets[key] = (tokens - 1, now)
                wait = 0.0
            else:
                self.buckets[key] = (tokens, now)
                wait = (1 - tokens) / self.refill
            if len(self.buckets) > 10000:
                full = [k for k, (t, last) in self.buckets.items() if t + (now - last) * self.refill >= self.capacity]
                for k in full:
                    del self.buckets[k]
        return wait


def bearer_token(scope) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header (scheme in any case), else None."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token and len(token) <= 512 else None
    return None


class TokenCache:
    """Which user a bearer token belongs to, remembered ``ttl`` seconds (valid and invalid alike), at most
    ``size`` tokens (by their SHA-256): what keys the rate limits, so one read per token a minute, not per
    request. The route itself still checks the token against the database on every write."""

    def __init__(self, ttl: float = 60.0, size: int = 10000):
        self.ttl = ttl
        self.size = size
        self._known: OrderedDict[str, tuple[int | None, float]] = OrderedDict()
        self._lock = threading.Lock()

    async def user_of(self, token: str, resolve: Callable[[str], int | None]) -> int | None:
        from starlette.concurrency import run_in_threadpool

        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        now = time.monotonic()
        with self._lock:
            hit = self._known.get(digest)
        if hit is not None and hit[1] > now:
            return hit[0]
        user = await run_in_threadpool(resolve, token)
        with self._lock:
            self._known[digest] = (user, now + self.ttl)
            self._known.move_to_end(digest)
            while len(self._known) > self.size:
                self._known.popitem(last=False)
        return user


async def _send_json(send, status: int, detail: str, extra_headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *SECURITY_HEADERS,
                *extra_headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """ASGI middleware: security headers, rate limits, body size and JSON content-type checks before the app."""

    def __init__(
        self,
        app,
        *,
        max_body: int,
        write_limiter: RateLimiter | None,
        read_limiter: RateLimiter | None,
        resolve: Callable[[str], int | None] | None = None,
    ):
        self.app = app
        self.max_body = max_body
        self.write_limiter = write_limiter
        self.read_limiter = read_limiter
        #: token -> user id (None: not a valid token), blocking (a database read); cached in ``tokens``
        self.resolve = resolve
        self.tokens = TokenCache()

    async def _client_key(self, scope) -> str:
        """``user:ID`` for a request bearing a valid token, else ``ip:ADDRESS`` (rate limits key on identity,
        never on the raw header: any junk value, or the same token under ``bearer``/``BEARER``, would
        otherwise each get a bucket of their own)."""
        client = scope.get("client")
        anonymous = "ip:" + (client[0] if client else "?")
        if self.resolve is None:
            return anonymous
        token = bearer_token(scope)
        if token is None:
            return anonymous
        user = await self.tokens.user_of(token, self.resolve)
        return anonymous if user is None else f"user:{user}"

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        docs = scope["path"] in ("/docs", "/docs/oauth2-redirect")

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                have = {k.lower() for k, _ in headers}
                extra = SECURITY_HEADERS[1:] if docs else SECURITY_HEADERS  # Swagger UI needs its scripts
                headers.extend(h for h in extra if h[0] not in have)
                message = {**message, "headers": headers}
            await send(message)

        method = scope["method"]
        limiter = self.write_limiter if method in WRITE_METHODS else self.read_limiter
        if limiter is not None:
            wait = limiter.take(await self._client_key(scope))
            if wait > 0:
                return await _send_json(
                    send,
                    429,
                    "too many requests; slow down",
                    [(b"retry-after", str(max(1, int(wait + 0.999))).encode())],
                )
        if method not in WRITE_METHODS:
            return await self.app(scope, receive, send_with_headers)

        headers = dict(scope.get("headers", ()))
        length = headers.get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                return await _send_json(send, 400, "the Content-Length header is not a number")
            if declared > self.max_body:
                return await _send_json(send, 413, f"the request body is larger than {self.max_body} bytes")
        if scope["path"].startswith("/api/") and method != "DELETE":
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if ctype != b"application/json":
                return await _send_json(send, 415, "the request body must be JSON (Content-Type: application/json)")
        # read the whole body (bounded), then replay it to the app
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return await _send_json(send, 413, f"the request body is larger than {self.max_body} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send_with_headers)


def weight(value: Any) -> int:
    """About how many bytes a cached value holds: its text and bytes, and a word per container slot and
    number (what bounds the cache; the exact interpreter overhead does not matter)."""
    if isinstance(value, (bytes, bytearray, str)):
        return len(value) + 64
    if isinstance(value, dict):
        return 64 + sum(weight(k) + weight(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return 64 + sum(weight(v) for v in value)
    return 32


class Dashboard:
    """What the routes share: the database, settings and the generation-keyed cache.

    Cached pages and leaderboards are keyed by the database *generation* (a counter
    every write bumps). This process re-reads it at most every ``generation_ttl``
    seconds and at once after its own writes, so a write through another worker
    process shows within ``generation_ttl`` (default 0.1 s) and one through this
    process immediately.
    """

    def __init__(
        self,
        db: Database,
        *,
        max_body: int,
        public_url: str | None = None,
        cache_size: int = 512,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        generation_ttl: float = 0.1,
        allow_unsigned: bool = False,
        origin: str | None = None,
    ):
        self.db = db
        #: accept records and reproductions without a signature (shown as unsigned); off by default
        self.allow_unsigned = allow_unsigned
        #: the volunteers' leases (:class:`.leases.Leases`) where the reproduction queue runs, else None
        self.leases: Any = None
        self.max_body = max_body
        self.public_url = public_url.rstrip("/") if public_url else None
        #: the origin key registration challenges name (:mod:`.key_proofs`): the public URL, else the loopback
        #: address the server is bound to; never read from a request (None: this app takes no key proofs)
        self.key_origin = self.public_url or (origin.rstrip("/") if origin else None)
        self.generation_ttl = generation_ttl
        self._cache: OrderedDict[Any, tuple[int, Any, int]] = OrderedDict()  # key -> (generation, value, bytes)
        self._cache_size = cache_size
        #: the most bytes the cached values may weigh together (:func:`weight`); a larger value is not kept
        self.cache_bytes = cache_bytes
        self.cached_bytes = 0
        self._lock = threading.Lock()
        self._gen = -1
        self._gen_at = float("-inf")
        self._wrote_at = float("-inf")
        self._gen_refresh: Any = None  # asyncio.Future of the generation re-read in flight
        self._inflight: dict[Any, Any] = {}  # (key, generation) -> asyncio.Future, one event loop per app

    def base_url(self, request) -> str:
        return self.public_url or str(request.base_url).rstrip("/")

    def _fresh(self) -> bool:
        return time.monotonic() - self._gen_at <= self.generation_ttl

    def refresh_generation(self) -> int:
        at = time.monotonic()
        gen = self.db.generation()
        if at >= self._wrote_at:  # a read that started before a local write must not pass for fresh after it
            self._gen, self._gen_at = gen, at
        return gen

    def wrote(self) -> None:
        """Called after a write committed here: the next read sees it."""
        self._wrote_at = time.monotonic()
        self._gen_at = float("-inf")
        self._gen_refresh = None  # a refresh in flight may predate the write: the next reader starts its own

    async def _generation(self) -> int:
        """The database generation, re-read at most every ``generation_ttl`` s, by one request at a time."""
        import asyncio

        from starlette.concurrency import run_in_threadpool

        if self._fresh():
            return self._gen
        pending = self._gen_refresh
        if pending is not None:
            return await asyncio.shield(pending)
        future = asyncio.get_running_loop().create_future()
        self._gen_refresh = future
        try:
            gen = await run_in_threadpool(self.refresh_generation)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters (if any) get it re-raised
            raise
        finally:
            if self._gen_refresh is future:
                self._gen_refresh = None
        future.set_result(gen)
        return gen

    def _lookup(self, key: Any, gen: int) -> tuple[bool, Any]:
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == gen:
                self._cache.move_to_end(key)
                return True, hit[1]
        return False, None

    def _store(self, key: Any, gen: int, value: Any) -> None:
        size = weight(value) + weight(key)
        with self._lock:
            old = self._cache.pop(key, None)
            if old is not None:
                self.cached_bytes -= old[2]
            if size > self.cache_bytes:
                return
            self._cache[key] = (gen, value, size)
            self.cached_bytes += size
            while len(self._cache) > self._cache_size or self.cached_bytes > self.cache_bytes:
                self.cached_bytes -= self._cache.popitem(last=False)[1][2]

    def cache_entries(self) -> int:
        """How many values the cache holds."""
        return len(self._cache)

    def cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` unless a value computed at the current database generation is cached (blocking)."""
        gen = self._gen if self._fresh() else self.refresh_generation()
        found, value = self._lookup(key, gen)
        if found:
            return value
        value = compute()
        self._store(key, gen, value)
        return value

    def _stale(self, key: Any) -> tuple[bool, Any]:
        with self._lock:
            hit = self._cache.get(key)
        return (True, hit[1]) if hit is not None else (False, None)

    async def cached_async(self, key: Any, compute: Callable[[], Any], *, stale_ok: bool = False) -> Any:
        """Same, for ``async`` routes: a cache hit never leaves the event loop; database work runs in threads,
        and concurrent misses of one key wait for a single computation (no stampede after a write).

        ``stale_ok``: while a newer value of ``key`` is being built, other requests get the previous one at
        once instead of waiting (the reader that started the build waits, so it reads its own writes).
        """
        import asyncio

        from starlette.concurrency import run_in_threadpool

        gen = await self._generation()
        found, value = self._lookup(key, gen)
        if found:
            return value
        if stale_ok and any(k == key for k, _g in self._inflight):
            found, value = self._stale(key)
            if found:
                return value
        flight_key = (key, gen)
        pending = self._inflight.get(flight_key)
        if pending is not None:
            return await asyncio.shield(pending)
        future = asyncio.get_running_loop().create_future()
        self._inflight[flight_key] = future
        try:
            value = await run_in_threadpool(compute)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters (if any) get it re-raised
            raise
        finally:
            self._inflight.pop(flight_key, None)
        future.set_result(value)
        self._store(key, gen, value)
        return value


def create_app(
    db_url: str | None = None,
    *,
    max_body: int = DEFAULT_MAX_BODY,
    rate_limit: str | tuple[float, float] | None = DEFAULT_RATE_LIMIT,
    read_rate_limit: str | tuple[float, float] | None = None,
    public_url: str | None = None,
    migrate: bool = True,
    db: Database | None = None,
    allow_unsigned: bool = False,
    reproduce_queue: bool = False,
    origin: str | None = None,
    verified_by: int | None = None,
    lease_seconds: float | None = None,
):
    """The FastAPI app for the dashboard at ``db_url`` (default: SQLite in the user data dir).

    ``origin``: the URL the server is bound to on loopback, which key registration challenges name when no
    ``public_url`` is set (an app with neither refuses key proofs: it cannot say which dashboard it is).
    ``migrate``: run ``alembic upgrade head`` first (idempotent). ``allow_unsigned``: accept uploads
    without an SSH signature (off by default: every upload must be signed by a registered key).
    ``reproduce_queue``: every record accepted gets a reproduction job (PostgreSQL only, :mod:`.queue`), and
    volunteers lease them over HTTP (:mod:`.leases`; ``lease_seconds``: how long a lease lives without a
    heartbeat). ``verified_by``: K, the reproducers other than the signer that verify a record (None: the
    one the database holds; another re-derives every record's tier once, :mod:`.standing`).
    """
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    from .._version import __version__
    from . import api, keys_api, leases_api, pages
    from .auth import authenticate

    if db is None:
        db = open_database(db_url, migrate=migrate)
    elif migrate:
        db.upgrade()
    if verified_by is not None:
        from .standing import use_verified_by

        use_verified_by(db, verified_by)
    if reproduce_queue:
        from .queue import start

        start(db, backfill=migrate)
    write_rate = parse_rate(rate_limit)
    read_rate = parse_rate(read_rate_limit)

    app = FastAPI(
        title="cotk-repro dashboard",
        version=__version__,
        description="Records of text-generation runs, leaderboards grouped by comparability hash, "
        "and reproductions. Reading is public; writing needs a bearer token "
        "(`cotk-repro dashboard add-user NAME`).",
        docs_url="/docs",
        redoc_url=None,
    )
    app.state.dashboard = Dashboard(
        db, max_body=max_body, public_url=public_url, allow_unsigned=allow_unsigned, origin=origin
    )
    if reproduce_queue:  # volunteers lease its jobs over HTTP
        from . import leases, store
        from .queue import retry_stalled

        app.state.dashboard.leases = leases.Leases(
            db,
            lease_seconds,
            sweep=lambda db, s: retry_stalled(db, s, leases.MAX_ATTEMPTS, queue=leases.QUEUE),
            attach=store.add_reproduction,
        )

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):  # no stack traces to clients
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse({"detail": "internal server error"}, status_code=500)

    app.include_router(api.router)
    api.add_upload_schemas(app)
    app.include_router(keys_api.router)
    app.include_router(leases_api.router)
    app.include_router(pages.router)

    def user_of_token(token: str) -> int | None:
        principal = authenticate(db, token)
        return principal.user_id if principal else None

    app.add_middleware(
        GuardMiddleware,
        max_body=max_body,
        write_limiter=RateLimiter(write_rate) if write_rate else None,
        read_limiter=RateLimiter(read_rate) if read_rate else None,
        resolve=user_of_token,
    )
    return app
