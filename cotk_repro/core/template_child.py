"""The child process that renders a stranger's Jinja templates for :mod:`cotk_repro.core.untrusted`.

It runs as its own Python process (``python -c`` executing this file; only the standard library and Jinja, never
``cotk_repro``), under an address-space, data, CPU-time and file-size limit set by itself before it reads the first
request, so nothing a template does can take more than that memory or write a byte. It reads requests from
stdin and writes one answer each to stdout, every message a frame: 8 bytes of big-endian length, then UTF-8
JSON.

A request: ``{"source", "names", "what", "contexts", "each", "total", "max_chars", "max_total_chars"}``. The template is
checked (compiled in the sandbox of :func:`environment`; with ``names``, every name it uses on any branch must
be one of them; no ``lipsum``, no ``random`` filter: one template and one context must render one text; no
number literal above :data:`MAX_SIZE`), then rendered once per context, each rendering stopped after ``each``
seconds and all of them after ``total`` seconds (SIGALRM in this process's only thread; the CPU-time limit
and the parent's deadline stop what no signal reaches). The answer: ``{"ok": [text, ...]}`` or ``{"error":
KIND, "reason": CLAUSE, "index": i}`` (KIND one of ``syntax``, ``undefined``, ``refused``, ``security``,
``memory``, ``time``, ``size``, ``error``). After a ``memory`` or ``time`` answer the parent ends the process.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import types
from collections.abc import Iterator
from typing import Any

#: the most a template may build or spend: products (``input * N``), number literals
MAX_SIZE = 1_000_000
#: what one protocol hash could not pin down: rendered differently every time
NONDETERMINISTIC_NAMES = {"lipsum": "lipsum() draws random words"}
NONDETERMINISTIC_FILTERS = {"random": "the random filter draws a random item"}
_HEADER = struct.Struct(">Q")
_OBJECT_REPR: Any = object.__repr__


class _Held:
    """An object whose printed form would hold a memory address (a bound method, a cycler), printed without it.

    Attribute access and calls go through the sandbox, which unwraps it first; so the template can still use
    ``input.upper()`` or ``cycler("a", "b").next()``, but ``{{ input.upper }}`` prints ``<method upper>``,
    the same in every process."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        name = getattr(self.value, "__name__", None)
        kind = "method" if callable(self.value) and name else type(self.value).__name__
        return f"<{kind} {name}>" if name else f"<{kind}>"

    __str__ = __repr__


def _plain(value: Any) -> Any:
    """``value`` as a template may hold it: an iterator as a list, an address-printing object held."""
    if isinstance(value, (str, int, float, bool, type(None), list, tuple, dict, _Held)):
        return value
    if isinstance(value, Iterator):  # a generator (map, select, unique, batch), a reversed list
        return [_plain(v) for v in value]
    if isinstance(
        value,
        (
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodType,
            types.BuiltinMethodType,
            types.MethodWrapperType,
            types.WrapperDescriptorType,
            types.MethodDescriptorType,
        ),
    ):
        return _Held(value)
    if type(value).__repr__ is _OBJECT_REPR:  # "<jinja2.utils.Cycler object at 0x7f...>"
        return _Held(value)
    return value


def _unheld(value: Any) -> Any:
    return value.value if isinstance(value, _Held) else value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def environment() -> Any:
    """Jinja's immutable sandbox with undefined names as errors, no HTML escaping, a final newline kept; no
    ``lipsum`` or ``random``; no product or power that could fill the memory at once; every value a template
    can print printed the same in every process."""
    import functools

    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

    class Sandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})
        #: what the template is, in a refusal ("protocol template"): set per request
        what = "template"

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            left, right = _unheld(left), _unheld(right)
            if operator == "**":
                if not (_is_number(left) and _is_number(right) and abs(left) <= MAX_SIZE and abs(right) <= 64):
                    raise SecurityError(f"'**' with such operands is not allowed in a {self.what}")
            elif _is_number(left) and _is_number(right):
                if abs(left) > MAX_SIZE or abs(right) > MAX_SIZE:
                    raise SecurityError(f"a product this large is not allowed in a {self.what}")
            else:
                count = right if isinstance(right, int) else left
                other = left if count is right else right
                if not isinstance(count, int) or count * len(other) > MAX_SIZE:
                    raise SecurityError(f"a repetition this large is not allowed in a {self.what}")
            return super().call_binop(context, operator, left, right)

        def getattr(self, obj: Any, attribute: str) -> Any:
            return _plain(super().getattr(_unheld(obj), attribute))

        def getitem(self, obj: Any, argument: Any) -> Any:
            return _plain(super().getitem(_unheld(obj), _unheld(argument)))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            return _plain(super().call(__context, _unheld(__obj), *args, **kwargs))

    env = Sandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    for name in NONDETERMINISTIC_NAMES:
        env.globals.pop(name, None)
    for name in NONDETERMINISTIC_FILTERS:
        env.filters.pop(name, None)

    def plain_results(function: Any) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return _plain(function(*args, **kwargs))

        return wrapper  # functools.wraps keeps jinja_pass_arg (what the filter is passed first)

    env.filters = {name: plain_results(f) for name, f in env.filters.items()}
    return env


def check(env: Any, source: str, names: list[str] | None) -> dict[str, Any] | None:
    """Why ``source`` is refused before any rendering (an error answer), or None."""
    from jinja2 import TemplateSyntaxError, meta, nodes

    try:
        tree = env.parse(source)
    except TemplateSyntaxError as exc:
        return {"error": "syntax", "reason": f"{str(exc.message).rstrip('.')} (template line {exc.lineno})"}
    except RecursionError:
        return {"error": "syntax", "reason": "it nests too deeply to be parsed"}
    for node in tree.find_all((nodes.Name, nodes.Filter)):
        refused = (NONDETERMINISTIC_NAMES if isinstance(node, nodes.Name) else NONDETERMINISTIC_FILTERS).get(node.name)
        if refused:
            return {
                "error": "refused",
                "reason": f"uses {node.name!r} (template line {node.lineno}), which is refused: {refused}, and one "
                "template must give one text",
            }
    for const in tree.find_all(nodes.Const):
        if _is_number(const.value) and abs(const.value) > MAX_SIZE:
            return {
                "error": "refused",
                "reason": f"holds the number {const.value}, above the {MAX_SIZE} a {env.what} may use",
            }
    if names is not None:
        # names used on any path, not only the one a probe takes (``{% if input == "x" %}{{ secret }}{% endif %}``)
        unknown = sorted(meta.find_undeclared_variables(tree) - set(names) - set(env.globals))
        if unknown:
            return {"error": "unknown-names", "reason": ", ".join(map(repr, unknown)), "names": unknown}
    return None


class _Expired(BaseException):  # not an Exception: no ``except Exception`` in a filter swallows it
    pass


def _limit_self(memory: int) -> None:
    try:
        import resource
    except ImportError:  # no POSIX resource limits here: the parent's deadline alone
        return
    for name, value in (("RLIMIT_AS", memory), ("RLIMIT_DATA", memory), ("RLIMIT_FSIZE", 0), ("RLIMIT_CORE", 0)):
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        try:
            _soft, hard = resource.getrlimit(limit)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(limit, (value, hard))
        except (ValueError, OSError):  # macOS refuses RLIMIT_AS: the data limit and the deadline remain
            pass


def _limit_cpu(seconds: float) -> None:
    try:
        import resource
    except ImportError:
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime + seconds) + 2
    _unused, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


def _reason(exc: BaseException) -> dict[str, Any]:
    from jinja2 import TemplateSyntaxError, UndefinedError
    from jinja2.sandbox import SecurityError

    if isinstance(exc, UndefinedError):
        return {"error": "undefined", "reason": str(exc.message).rstrip(".")}
    if isinstance(exc, SecurityError):
        return {"error": "security", "reason": _first_line(exc)}
    if isinstance(exc, TemplateSyntaxError):
        return {"error": "syntax", "reason": f"{str(exc.message).rstrip('.')} (template line {exc.lineno})"}
    if isinstance(exc, RecursionError):
        return {"error": "error", "reason": "it recurses too deeply"}
    text = _first_line(exc)
    return {"error": "error", "reason": f"{type(exc).__name__}: {text}".rstrip(": .")}


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else "").rstrip(".")[:300]


def answer(env: Any, compiled: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request (see the module docstring)."""
    import signal
    import time

    each = float(request["each"])
    total = float("inf") if request.get("total") is None else float(request["total"])
    _limit_cpu(min(total, each * max(1, len(request["contexts"]))))
    source, names = request["source"], request.get("names")
    env.what = str(request.get("what") or "template")
    key = json.dumps([source, names, env.what])
    template = compiled.get(key)
    if template is None:
        try:
            refusal = check(env, source, names)
            if refusal is not None:
                return refusal
            template = env.from_string(source)
        except MemoryError:
            return {"error": "memory", "reason": "", "index": None}
        except Exception as exc:  # a compile-time refusal (an unknown filter)
            return _reason(exc)
        if len(compiled) >= 32:
            compiled.pop(next(iter(compiled)))
        compiled[key] = template
    max_chars, max_total = int(request["max_chars"]), int(request["max_total_chars"])

    def expired(signum: int, frame: Any) -> None:
        raise _Expired

    signal.signal(signal.SIGALRM, expired)
    end = time.monotonic() + total
    texts: list[str] = []
    size = 0
    for i, context in enumerate(request["contexts"]):
        left = end - time.monotonic()
        try:
            if left <= 0:
                raise _Expired
            signal.setitimer(signal.ITIMER_REAL, min(each, left))
            try:
                text = template.render(context)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Expired:
            return {"error": "time", "reason": "each" if each <= left else "total", "index": i}
        except MemoryError:
            return {"error": "memory", "reason": "", "index": i}
        except Exception as exc:
            return dict(_reason(exc), index=i)
        size += len(text)
        if len(text) > max_chars:
            return {"error": "size", "reason": f"{len(text):,} characters", "index": i}
        if size > max_total:
            return {"error": "size", "reason": f"{size:,} characters together", "index": i}
        texts.append(text)
    return {"ok": texts}


def _read_exact(stream: Any, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _write(stream: Any, message: dict[str, Any]) -> None:
    data = json.dumps(message).encode("utf-8")
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def serve(memory: int) -> None:
    """Answer requests on stdin until it closes."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends this process
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames on the parent's pipe
    env = environment()
    env.from_string("{{ x|center(3) }}").render(x="")  # load what a rendering loads, under no limit
    _limit_self(memory)
    _write(stdout, {"ready": os.getpid()})
    compiled: dict[str, Any] = {}
    while True:
        header = _read_exact(stdin, _HEADER.size)
        if header is None:
            return
        body = _read_exact(stdin, _HEADER.unpack(header)[0])
        if body is None:
            return
        try:
            reply = answer(env, compiled, json.loads(body))
            data = json.dumps(reply).encode("utf-8")
        except MemoryError:
            data = json.dumps({"error": "memory", "reason": "", "index": None}).encode()
        stdout.write(_HEADER.pack(len(data)) + data)
        stdout.flush()


if __name__ == "__main__":
    serve(int(sys.argv[-1]))
