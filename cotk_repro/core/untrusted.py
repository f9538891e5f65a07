"""A stranger's Jinja template, rendered safely: in a child process under a memory, CPU-time and wall-clock limit.

A protocol file's template and an LLM judge's rubric come from strangers (a record or a paper's repository
hands them over). Jinja's sandbox keeps a template away from Python's internals, but not from the machine's
memory and time: ``{{ input|center(10**9) }}``, a loop of a thousand ``"x" * 1000000``, ``~`` doubling a string
forty times or ``"%0999999999d" % 1`` each build gigabytes out of operations that are each allowed. Bounding
every string operation's result inside the sandbox would mean intercepting every filter, method, operator and
output buffer Jinja has, and missing one is enough; so the rendering happens in a separate process
(:mod:`cotk_repro.core.template_child`) that cannot take more than :data:`MEMORY_BYTES` of address space
(``RLIMIT_AS``) or more CPU seconds than its deadline (``RLIMIT_CPU``), cannot write a file (``RLIMIT_FSIZE``
0), and is killed by this process when its wall-clock deadline passes. This process only waits on a pipe with
a timeout, so the bounds hold in the main thread and in any other.

:func:`render_untrusted` is the one entry: a template's text, the contexts to render it with, the names it may
use; the renderings, or :class:`UntrustedTemplateError` with one clause saying why not. One child serves the
whole process (started on first use, about a tenth of a second; every later call is a pipe round trip), and
it keeps compiled templates, so rendering a protocol input by input or batch by batch costs little more than
rendering in-process (docs/llm-protocol.md, "Bounds", has the figures). A child that ran out of memory or time
is ended and the next call starts another.

What a template can print is also made to print the same in every process (one template and one context give
one text): ``lipsum`` and the ``random`` filter are refused, an object whose printed form holds a memory
address (a bound method, a cycler) prints without it, and an iterator prints as the list of its items.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import CotkError

#: the child's address space: what all of a rendering's strings and lists together may take
MEMORY_BYTES = 512 * 2**20
#: the default wall-clock bound of one rendering
RENDER_SECONDS = 10.0
#: the longest text one rendering may give, and all the renderings of one call together (characters)
MAX_CHARS = 16 * 2**20
MAX_TOTAL_CHARS = 128 * 2**20
#: how long the child may take to start (a cold, busy machine), and the slack past a request's own deadline
START_SECONDS = 60.0
GRACE_SECONDS = 2.0

_CHILD = Path(__file__).with_name("template_child.py")
_HEADER = struct.Struct(">Q")
# run the child's file as a script, without the current folder on its path (a planted jinja2.py stays unread)
_BOOT = (
    "import sys\n"
    "if sys.path and sys.path[0] == '': del sys.path[0]\n"
    "path = sys.argv[1]\n"
    "exec(compile(open(path, encoding='utf-8').read(), path, 'exec'), {'__name__': '__main__'})\n"
)


class UntrustedTemplateError(CotkError):
    """A stranger's template refused or stopped: ``kind`` (``syntax``, ``unknown-names``, ``refused``, ``undefined``,
    ``security``, ``memory``, ``time``, ``size``, ``error``, ``crashed``), ``reason`` (why, bare: "it needs more
    than 512 MiB of memory"), ``clause`` (what the template did, to follow a subject: "fails to render: ..."),
    ``index`` (the context it failed on, None before any); the message is "the template " and the clause."""

    def __init__(
        self, kind: str, reason: str, clause: str, index: int | None = None, names: Sequence[str] = ()
    ) -> None:
        super().__init__(f"the template {clause}")
        self.kind = kind
        self.reason = reason
        self.clause = clause
        self.index = index
        #: the undefined names, for ``unknown-names``
        self.names = tuple(names)


def render_untrusted(
    source: str,
    contexts: Sequence[Mapping[str, Any]],
    *,
    names: Sequence[str] | None = None,
    seconds_each: float = RENDER_SECONDS,
    seconds_total: float | None = None,
    what: str = "template",
) -> list[str]:
    """``source`` (Jinja, a stranger's) rendered once per context, in the bounded child process.

    ``contexts``: the variables of each rendering (JSON values: strings, numbers, booleans, None, lists and
    tables of them). ``names``: the only variables the template may use, checked on every branch before any
    rendering (None: not checked; an undefined name still fails the rendering that reaches it). Each rendering
    is stopped after ``seconds_each`` seconds and all of them after ``seconds_total`` (default: no bound but
    each one's). Raises :class:`UntrustedTemplateError` (one clause, never a traceback) for a template that is
    refused, fails, needs more than :data:`MEMORY_BYTES` of memory or more time, or gives a text longer than
    :data:`MAX_CHARS` (:data:`MAX_TOTAL_CHARS` all together). ``what``: the template's kind in a refusal's
    words ("a product this large is not allowed in a protocol template").
    """
    contexts = [dict(c) for c in contexts]
    bound = seconds_each * max(1, len(contexts))
    total = bound if seconds_total is None else min(bound, seconds_total)
    request = {
        "source": source,
        "names": None if names is None else sorted(names),
        "what": what,
        "contexts": contexts,
        "each": seconds_each,
        "total": seconds_total,
        "max_chars": MAX_CHARS,
        "max_total_chars": MAX_TOTAL_CHARS,
    }
    try:
        data = json.dumps(request).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise TypeError(f"render_untrusted takes JSON values only: {exc}") from None
    with _LOCK:
        reply = _ask(data, total + GRACE_SECONDS)
    if "ok" in reply:
        texts: list[str] = reply["ok"]
        return texts
    raise _error(reply, seconds_each, seconds_total)


def _error(reply: dict[str, Any], each: float, total: float | None) -> UntrustedTemplateError:
    kind, reason, index = reply.get("error", "error"), str(reply.get("reason") or ""), reply.get("index")
    if kind == "syntax":
        return UntrustedTemplateError(kind, reason, f"is not a valid Jinja template: {reason}", index)
    if kind == "unknown-names":
        names = reply.get("names") or []
        verb = "is" if len(names) == 1 else "are"
        return UntrustedTemplateError(
            kind, f"{reason} {verb} undefined", f"uses {reason}, which {verb} undefined", index, names
        )
    if kind == "refused":
        return UntrustedTemplateError(kind, reason, reason, index)
    if kind == "memory":
        reason = f"it needs more than {MEMORY_BYTES // 2**20} MiB of memory"
    elif kind == "time":
        reason = (
            f"rendering took more than {each:g} s"
            if reason == "each" or total is None
            else f"rendering took more than {total:g} s (all its renderings together)"
        )
    elif kind == "size":
        reason = f"a rendering is {reason}, above the {MAX_CHARS:,} one may give ({MAX_TOTAL_CHARS:,} all together)"
    elif kind == "crashed":
        reason = f"the rendering process ended ({reason}; it may have needed more than {MEMORY_BYTES // 2**20} MiB)"
    return UntrustedTemplateError(kind, reason, f"fails to render: {reason}", index)


# -- the child ---------------------------------------------------------------------------------------------
_LOCK = threading.Lock()
_child: _Child | None = None


class _Child:
    """One running :mod:`~cotk_repro.core.template_child`, spoken to over its stdin and stdout."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.process = subprocess.Popen(  # noqa: S603 - our interpreter, our file
            [sys.executable, "-c", _BOOT, str(_CHILD), str(MEMORY_BYTES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        ready = self.read(time.monotonic() + START_SECONDS)
        if not isinstance(ready, dict) or "ready" not in ready:
            self.end()
            raise CotkError("the process that renders templates did not start; check that Jinja2 is installed")

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(_HEADER.pack(len(data)) + data)
        self.process.stdin.flush()

    def read(self, deadline: float) -> dict[str, Any] | None:
        """The next frame, or None when the child ended or the deadline passed (then it is ended)."""
        header = self._read_exact(_HEADER.size, deadline)
        body = self._read_exact(_HEADER.unpack(header)[0], deadline) if header is not None else None
        if body is None:
            return None
        value = json.loads(body)
        return value if isinstance(value, dict) else None

    def _read_exact(self, n: int, deadline: float) -> bytes | None:
        import select

        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        chunks, left = [], n
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                return None
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def end(self) -> str:
        """Stop the child (if it still runs) and say how it ended."""
        if self.process.poll() is None:
            self.process.kill()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        code = self.process.wait()
        return f"signal {-code}" if code < 0 else f"exit status {code}"


def _ask(data: bytes, seconds: float) -> dict[str, Any]:
    """One request answered by the child (started first when there is none, or it belongs to a parent process)."""
    global _child
    for attempt in (1, 2):
        if _child is None or _child.owner != os.getpid() or _child.process.poll() is not None:
            _child = _Child()
        child = _child
        start = time.monotonic()
        try:
            child.send(data)
            reply = child.read(start + seconds)
        except OSError:  # it had ended between two calls (a broken pipe): once more with a new one
            child.end()
            _child = None
            if attempt == 2:
                raise CotkError("the process that renders templates stopped taking requests") from None
            continue
        except BaseException:  # Ctrl-C mid-request: a half-sent request or a late answer would confuse the next
            child.end()
            _child = None
            raise
        if reply is None or reply.get("error") in ("memory", "time"):
            timed_out = reply is None and time.monotonic() - start >= seconds
            how = child.end()
            _child = None
            if reply is not None:
                return reply
            cpu_limit = how == f"signal {int(getattr(signal, 'SIGXCPU', 24))}"  # past its CPU-time limit
            return {"error": "time"} if timed_out or cpu_limit else {"error": "crashed", "reason": how}
        return reply
    raise AssertionError("unreachable")


def _end_child() -> None:
    global _child
    if _child is not None and _child.owner == os.getpid():
        _child.end()
    _child = None


atexit.register(_end_child)
