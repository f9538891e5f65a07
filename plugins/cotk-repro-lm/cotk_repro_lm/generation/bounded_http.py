"""The HTTP client of the ``openai`` generator: every answer a server gives is bounded in size and in time.

A server is a stranger (a record or a paper's repository names it), so nothing it sends is taken whole:

- **Size.** A successful answer may hold at most :func:`answer_limit` bytes: ``ENVELOPE_BYTES`` for the JSON
  around the text plus ``BYTES_PER_TOKEN`` per requested new token (the longest tokens of common vocabularies are a
  few dozen characters; a non-ASCII character escaped in JSON is up to 12 bytes). The body is read as a stream and
  abandoned as soon as it passes the bound (a ``Content-Length`` above it is refused before reading), so a 200 MB
  answer costs at most the bound in memory. An error answer (status 400 and above) is read to ``ERROR_BODY_BYTES``
  and cut there: its message still reaches the user. A compressed answer is refused (the client asks for
  ``identity``): its decoded size is not bounded by what arrives.
- **Time.** ``timeout`` bounds each request attempt as a whole (connecting, sending, the headers and the body), not
  each read: a server dripping a byte a second is cut off when the attempt's time is up. The deadline is applied to
  every socket operation (each one waits at most for the time left) and checked between the body's chunks.

The ``openai`` client keeps its own retries and backoff: a timed-out attempt is retried like any timeout; an
oversized answer is not (:class:`AnswerTooLarge` is an ``OpenAIError``, which the client raises without retrying).
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import openai

#: bytes a successful answer may hold beyond its tokens: the JSON envelope (ids, model, usage, finish reason)
ENVELOPE_BYTES = 64 * 1024
#: the most bytes one generated token may take in an answer (documented in docs/llm.md)
BYTES_PER_TOKEN = 1024
#: how much of an error answer's body is read (its message is shown cut to 200 characters anyway)
ERROR_BODY_BYTES = 64 * 1024

_local = threading.local()  # the deadline of the request attempt this thread is sending (monotonic seconds)


def answer_limit(max_new_tokens: int) -> int:
    """The most bytes a successful answer to a request for ``max_new_tokens`` tokens may hold."""
    return ENVELOPE_BYTES + BYTES_PER_TOKEN * max_new_tokens


class AnswerTooLarge(openai.OpenAIError):
    """A server's answer passed its bound (:func:`answer_limit`), or came compressed."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """The time this thread's request attempt has left, at most ``timeout``; ``error`` when none is left."""
    deadline = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream:
    """A network stream (httpcore's interface) whose every read and write waits at most for the time left."""

    def __init__(self, inner: Any, core: Any):
        self._inner, self._core = inner, core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, self._core.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        inner = self._inner.start_tls(ssl_context, server_hostname, _left(timeout, self._core.ConnectTimeout))
        return _DeadlineStream(inner, self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend:
    """A network backend (httpcore's interface) whose connections are :class:`_DeadlineStream`s."""

    def __init__(self, inner: Any, core: Any):
        self._inner, self._core = inner, core

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **options: Any) -> Any:
        left = _left(timeout, self._core.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, left, **options), self._core)

    def connect_unix_socket(self, path: str, timeout: float | None = None, **options: Any) -> Any:
        left = _left(timeout, self._core.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, left, **options), self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _with_deadlines(transport: Any) -> None:
    """Put :class:`_DeadlineBackend` under ``transport``'s connection pool (before its first connection).

    The pool and its backend are the HTTP library's private attributes; where they are missing (another version),
    the deadline still holds between the body's chunks (:func:`bounded_client`), each read then waiting at most
    ``timeout`` more."""
    pool: Any = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if pool is None or backend is None or isinstance(backend, _DeadlineBackend):
        return
    core = importlib.import_module(type(backend).__module__.split(".")[0])
    if all(hasattr(core, n) for n in ("ReadTimeout", "WriteTimeout", "ConnectTimeout")):
        pool._network_backend = _DeadlineBackend(backend, core)


def _http_module(client_class: type) -> Any:
    """The HTTP library (``httpx`` or ``httpx2``) the installed ``openai`` client is built on."""
    for cls in client_class.__mro__:
        if cls.__name__ == "Client":
            return importlib.import_module(cls.__module__.split(".")[0])
    raise RuntimeError(f"{client_class!r} is no httpx client")  # pragma: no cover - an openai without httpx


def bounded_client(timeout: float, max_new_tokens: int) -> Any:
    """An HTTP client for ``openai.OpenAI(http_client=...)``: the client's own defaults (connection limits,
    redirects, proxies from the environment), with every answer bounded (the module's docstring)."""
    base: Any = openai.DefaultHttpxClient
    http = _http_module(base)
    limit = answer_limit(max_new_tokens)

    class BoundedBody(http.SyncByteStream):  # type: ignore[name-defined]
        def __init__(self, inner: Any, cap: int, cut: bool, deadline: float | None):
            self.inner, self.cap, self.cut, self.deadline = inner, cap, cut, deadline

        def __iter__(self) -> Iterator[bytes]:
            seen = 0
            for chunk in self.inner:
                seen += len(chunk)
                if seen > self.cap:
                    if not self.cut:
                        raise AnswerTooLarge(f"answered with more than {self.cap} bytes")
                    yield chunk[: len(chunk) - (seen - self.cap)]
                    return  # the rest is never read: closing drops the connection
                if self.deadline is not None and time.monotonic() > self.deadline:
                    raise http.ReadTimeout("the request's deadline passed")
                yield chunk

        def close(self) -> None:
            self.inner.close()

    def bound(response: Any) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            response.close()
            raise AnswerTooLarge(f"answered compressed ({encoding}) although asked for an uncompressed answer")
        ok = response.status_code < 400
        declared = response.headers.get("content-length", "")
        if ok and declared.isdigit() and int(declared) > limit:
            response.close()
            raise AnswerTooLarge(f"answered with {int(declared)} bytes, more than {limit}")
        cap = limit if ok else ERROR_BODY_BYTES
        response.stream = BoundedBody(response.stream, cap, not ok, getattr(_local, "deadline", None))

    class BoundedClient(base):
        def send(self, request: Any, **options: Any) -> Any:
            _local.deadline = time.monotonic() + timeout
            try:
                return super().send(request, **options)
            finally:
                _local.deadline = None

    client = BoundedClient(timeout=timeout, headers={"Accept-Encoding": "identity"}, event_hooks={"response": [bound]})
    for transport in [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]:
        if transport is not None:
            _with_deadlines(transport)
    return client
