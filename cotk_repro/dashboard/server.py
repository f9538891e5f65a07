"""Running the dashboard with uvicorn: in the foreground (``serve``) or in a thread.

``start_in_thread(db_url, host, port=0) -> (url, stop)`` is what ``cotk-repro demo``
and the tests use: the socket is bound before the thread starts (port 0 picks a
free one), the call returns once the server answers, and ``stop()`` shuts it down.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..core.ranking import DEFAULT_VERIFIED_BY
from ..errors import CotkError
from .app import DEFAULT_MAX_BODY, DEFAULT_RATE_LIMIT

ENV_PREFIX = "COTK_REPRO_DASHBOARD_"


class ServeError(CotkError):
    """The dashboard server could not start."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; raises :class:`ServeError` when the port is taken or unusable."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio then turns Nagle off on accepted connections (as it does for sockets it
    # creates); without it, small responses written in two parts wait ~40 ms for the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno in (98, 48, 10048):
            raise ServeError(f"port {port} on {host} is already in use; pick another with --port") from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_for(host: str, port: int) -> str:
    """The URL a browser on this machine opens to reach a server bound to ``host:port``."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("localhost" if host == "::" else host)
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a ``--host`` value) is reachable from this machine only."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def own_origin(host: str, port: int, public_url: str | None) -> str:
    """The origin key registration challenges name: ``public_url``, else the loopback address bound to.
    Raises :class:`ServeError` for a server reachable beyond loopback without ``--public-url`` (it would
    otherwise have to believe each request's ``Host`` header about which dashboard it is)."""
    if public_url:
        from urllib.parse import urlsplit

        parts = urlsplit(public_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ServeError(f"--public-url {public_url!r} is not an http(s) URL such as https://dash.example")
        return public_url.rstrip("/")
    if not is_loopback(host):
        raise ServeError(
            f"serving on {host}, beyond this machine, needs --public-url (the URL users reach the dashboard at): "
            "key proofs name it, never a request's Host header"
        )
    return url_for(host, port)


def proxy_settings(trusted_proxies: Sequence[str] = ()) -> dict[str, Any]:
    """uvicorn's settings for ``X-Forwarded-For``/``-Proto``: honoured only from ``trusted_proxies`` (addresses
    or networks), by default from nobody (a client on loopback would otherwise pick its rate-limit bucket)."""
    import ipaddress

    for proxy in trusted_proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise ServeError(f"--trusted-proxy {proxy!r} is not an IP address or network") from None
    if not trusted_proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(trusted_proxies)}


def app_from_env():
    """App factory for worker processes (``uvicorn --factory``): settings from the environment."""
    from .app import create_app

    app = create_app(
        os.environ.get(ENV_PREFIX + "DB") or None,
        max_body=int(os.environ.get(ENV_PREFIX + "MAX_BODY", DEFAULT_MAX_BODY)),
        rate_limit=os.environ.get(ENV_PREFIX + "RATE_LIMIT", DEFAULT_RATE_LIMIT),
        read_rate_limit=os.environ.get(ENV_PREFIX + "READ_RATE_LIMIT") or None,
        public_url=os.environ.get(ENV_PREFIX + "PUBLIC_URL") or None,
        origin=os.environ.get(ENV_PREFIX + "ORIGIN") or None,
        allow_unsigned=os.environ.get(ENV_PREFIX + "ALLOW_UNSIGNED") == "1",
        reproduce_queue=os.environ.get(ENV_PREFIX + "REPRODUCE_QUEUE") == "1",
        lease_seconds=float(os.environ.get(ENV_PREFIX + "LEASE_SECONDS") or 0) or None,
        migrate=False,
    )
    _freeze_heap()
    return app


def _freeze_heap() -> None:
    """Move the start-up objects out of the garbage collector's way (shorter GC pauses under load)."""
    import gc

    gc.collect()
    gc.freeze()


def _log_config() -> dict[str, Any]:
    """uvicorn's logging, with the access log on stderr too: stdout carries the URL alone (docs/dashboard.md)."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config


def serve(
    db_url: str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    max_body: int = DEFAULT_MAX_BODY,
    rate_limit: str | None = DEFAULT_RATE_LIMIT,
    read_rate_limit: str | None = None,
    public_url: str | None = None,
    access_log: bool = True,
    log_level: str = "info",
    on_ready: Callable[[str], None] | None = None,
    allow_unsigned: bool = False,
    reproduce_queue: bool = False,
    trusted_proxies: Sequence[str] = (),
    verified_by: int = DEFAULT_VERIFIED_BY,
    lease_seconds: float | None = None,
) -> None:
    """Migrate the database, bind, report the URL through ``on_ready``, and serve until interrupted.

    Beyond loopback ``public_url`` is required (:func:`own_origin`); ``trusted_proxies``: the addresses whose
    ``X-Forwarded-For`` is believed (:func:`proxy_settings`)."""
    import uvicorn

    from .app import create_app, parse_rate
    from .db import default_db_url, open_database

    url_db = db_url or default_db_url()
    try:
        parse_rate(rate_limit), parse_rate(read_rate_limit)
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    own_origin(host, port, public_url)  # refused before anything is written
    proxies = proxy_settings(trusted_proxies)
    db = open_database(url_db, migrate=False)
    if reproduce_queue:  # refused on SQLite before anything is written
        from .queue import require_postgresql

        require_postgresql(db)
    if verified_by < 1:
        raise ServeError(f"--verified-by must be at least 1, not {verified_by}")
    db.upgrade()  # alembic upgrade head, once, before any worker starts
    from .standing import use_verified_by

    use_verified_by(db, verified_by)  # every record's tier for this K (re-derived only when K changed)
    if reproduce_queue:
        from .queue import start

        start(db)  # procrastinate's schema where missing; a job for every record without one
    sock = bind(host, port)
    actual_port = sock.getsockname()[1]
    origin = own_origin(host, actual_port, public_url)
    if on_ready:
        on_ready(url_for(host, actual_port))
    common = dict(
        host=host,
        port=actual_port,
        access_log=access_log,
        log_level=log_level,
        log_config=_log_config(),
        timeout_keep_alive=5,
        **proxies,
    )
    if workers <= 1:
        app = create_app(
            db=db,
            migrate=False,
            max_body=max_body,
            rate_limit=rate_limit,
            read_rate_limit=read_rate_limit,
            public_url=public_url,
            origin=origin,
            allow_unsigned=allow_unsigned,
            reproduce_queue=reproduce_queue,
            lease_seconds=lease_seconds,
        )
        server = uvicorn.Server(uvicorn.Config(app, **common))
        _freeze_heap()
        server.run(sockets=[sock])
        return
    db.dispose()
    from uvicorn.supervisors import Multiprocess

    os.environ[ENV_PREFIX + "DB"] = url_db
    os.environ[ENV_PREFIX + "MAX_BODY"] = str(max_body)
    os.environ[ENV_PREFIX + "RATE_LIMIT"] = rate_limit or "off"
    os.environ[ENV_PREFIX + "READ_RATE_LIMIT"] = read_rate_limit or ""
    os.environ[ENV_PREFIX + "PUBLIC_URL"] = public_url or ""
    os.environ[ENV_PREFIX + "ORIGIN"] = origin
    os.environ[ENV_PREFIX + "ALLOW_UNSIGNED"] = "1" if allow_unsigned else ""
    os.environ[ENV_PREFIX + "REPRODUCE_QUEUE"] = "1" if reproduce_queue else ""
    os.environ[ENV_PREFIX + "LEASE_SECONDS"] = str(lease_seconds) if lease_seconds else ""
    config = uvicorn.Config("cotk_repro.dashboard.server:app_from_env", factory=True, workers=workers, **common)
    import inspect

    if "target" in inspect.signature(Multiprocess.__init__).parameters:  # uvicorn < 0.30
        # the stubs are the installed uvicorn's, which has no target=
        Multiprocess(config, target=uvicorn.Server(config).run, sockets=[sock]).run()  # type: ignore[call-arg]
    else:
        Multiprocess(config, sockets=[sock]).run()


def start_in_thread(
    db_url: str | None = None, host: str = "127.0.0.1", port: int = 0, *, timeout: float = 30.0, **app_kwargs: Any
) -> tuple[str, Callable[[], None]]:
    """Serve the dashboard from a daemon thread; returns ``(url, stop)``. Key proofs name ``public_url`` (in
    ``app_kwargs``), else the URL returned (what this machine reaches it at; never a request's header)."""
    import uvicorn

    from .app import create_app

    sock = bind(host, port)
    url = url_for(host, sock.getsockname()[1])
    try:
        app = create_app(db_url, origin=url, **app_kwargs)
    except BaseException:
        sock.close()
        raise
    server = uvicorn.Server(
        uvicorn.Config(
            app, access_log=False, log_level="warning", timeout_keep_alive=5, lifespan="off", **proxy_settings()
        )
    )
    failure: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # pragma: no cover - reported below
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"cotk-repro-dashboard-{url}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if failure or not thread.is_alive():
            sock.close()
            raise ServeError(f"the dashboard server did not start on {url}")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise ServeError(f"the dashboard server did not start on {url} within {timeout:.0f} s")
        time.sleep(0.02)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)
        try:
            sock.close()
        except OSError:
            pass
        app.state.dashboard.db.dispose()

    return url, stop
