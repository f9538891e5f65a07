"""The prompt protocol: how a language model is asked (template, system prompt, few-shot examples, chat or not,
output length, stop strings), read from a TOML file, rendered into prompts and hashed.

A protocol file (docs/llm-protocol.md, "Protocol file")::

    template = "Summarize: {{ input }}\\nSummary:"   # Jinja; the input line is {{ input }} (required)
    system = "You are terse."                       # default: none
    chat = false                                    # apply the model's chat template (default false)
    max_new_tokens = 32                             # required, >= 1
    stop = ["\\n"]                                   # default []
    few_shot_order = "as-written"                   # or "shuffled" (random.Random(few_shot_seed).shuffle)
    few_shot_seed = 0
    inputs = "inputs.txt"                           # optional, relative to this file; its sha256 is hashed

    [[few_shot]]
    input = "..."
    output = "..."

The file is a stranger's: the template is compiled in Jinja's sandbox with undefined names as errors, and
rendered once at load on a probe input and on every few-shot input, so a template naming any field but
``input`` (or failing to render) is refused before any model runs. :attr:`Protocol.sha256` is the hash of the
protocol's content (docs/llm-protocol.md, "What is hashed"), never of its path, comments or layout.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

from ..core.canonical import hash_object, sha256_hex
from ..core.tomlpos import key_lines, line_of
from ..errors import CotkError
from .prompt import Prompt

if TYPE_CHECKING:
    import jinja2

#: what :attr:`Protocol.sha256` is computed over besides the fields; bump when its meaning changes
FORMAT = "cotk-repro/protocol"
FORMAT_VERSION = 1
ORDERS = ("as-written", "shuffled")
#: the one variable a template may use
VARIABLE = "input"
PROBE = "probe input"

_FIELDS: dict[str, str] = {
    "template": "a string",
    "system": "a string",
    "chat": "true or false",
    "max_new_tokens": "an integer",
    "stop": "a list of strings",
    "few_shot": "a list of {input, output} tables",
    "few_shot_order": "a string",
    "few_shot_seed": "an integer",
    "inputs": "a string",
}


class ProtocolError(CotkError):
    """A protocol file that cannot be used: unreadable, not TOML, a wrong field or a template that fails."""


@dataclass(frozen=True)
class FewShot:
    """One few-shot example: an input and the output the model is shown for it."""

    input: str
    output: str


@dataclass(frozen=True, eq=False)
class Protocol:
    """A loaded, checked protocol (see the module docstring); build it with :func:`load_protocol`."""

    path: Path
    template: str
    max_new_tokens: int
    system: str | None = None
    chat: bool = False
    stop: tuple[str, ...] = ()
    #: the examples in their final order (shuffled already when ``few_shot_order`` is "shuffled")
    few_shot: tuple[FewShot, ...] = ()
    few_shot_order: str = "as-written"
    few_shot_seed: int = 0
    #: the inputs file the protocol names (resolved), and its SHA-256
    inputs: Path | None = None
    inputs_sha256: str | None = None
    _compiled: Any = field(default=None, repr=False, compare=False)

    def content(self) -> dict[str, Any]:
        """Everything the hash covers: the fields' values (the few-shot examples in their final order, the
        inputs by their SHA-256, not their path) and the format version."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "template": self.template,
            "system": self.system,
            "chat": self.chat,
            "max_new_tokens": self.max_new_tokens,
            "stop": list(self.stop),
            "few_shot": [{"input": ex.input, "output": ex.output} for ex in self.few_shot],
            "few_shot_order": self.few_shot_order,
            "few_shot_seed": self.few_shot_seed,
            "inputs_sha256": self.inputs_sha256,
        }

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the canonical JSON of :meth:`content`."""
        return hash_object(self.content())

    def decoding(self) -> dict[str, Any]:
        """The generator settings the protocol fixes: ``chat``, ``max_new_tokens``, ``stop``."""
        return {"chat": self.chat, "max_new_tokens": self.max_new_tokens, "stop": list(self.stop)}

    def fill(self, text: str) -> str:
        """The template rendered with ``input`` = ``text``."""
        try:
            with _time_limit(RENDER_SECONDS):
                return str(self._compiled.render({VARIABLE: text}))
        except Exception as exc:
            raise ProtocolError(f"the template of protocol {self.path} fails to render: {_jinja_reason(exc)}") from None

    def render(self, text: str) -> Prompt:
        """The prompt for one input: a string (``chat = false``) or chat messages (``chat = true``)."""
        if self.chat:
            messages: list[dict[str, str]] = []
            if self.system is not None:
                messages.append({"role": "system", "content": self.system})
            for ex in self.few_shot:
                messages.append({"role": "user", "content": self.fill(ex.input)})
                messages.append({"role": "assistant", "content": ex.output})
            messages.append({"role": "user", "content": self.fill(text)})
            return messages
        parts = [self.system + "\n\n"] if self.system is not None else []
        parts += [self.fill(ex.input) + ex.output + "\n\n" for ex in self.few_shot]
        parts.append(self.fill(text))
        return "".join(parts)


def _jinja_reason(exc: BaseException) -> str:
    import jinja2

    if isinstance(exc, TimeoutError):
        return str(exc)
    if isinstance(exc, jinja2.UndefinedError):
        return f"{str(exc.message).rstrip('.')} (a protocol template may use only {{{{ {VARIABLE} }}}})"
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return f"{str(exc.message).rstrip('.')} (template line {exc.lineno})"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": .")


#: the most a template may build or spend: products (``input * N``), number literals, seconds per rendering
MAX_SIZE = 1_000_000
RENDER_SECONDS = 10.0


def _environment() -> jinja2.Environment:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

    class Sandbox(ImmutableSandboxedEnvironment):
        """Jinja's sandbox, and no product or power that could fill the memory (``{{ input * 10**9 }}``)."""

        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**":
                if not (_is_number(left) and _is_number(right) and abs(left) <= MAX_SIZE and abs(right) <= 64):
                    raise SecurityError("'**' with such operands is not allowed in a protocol template")
            elif _is_number(left) and _is_number(right):
                if abs(left) > MAX_SIZE or abs(right) > MAX_SIZE:
                    raise SecurityError("a product this large is not allowed in a protocol template")
            else:
                count = right if isinstance(right, int) else left
                other = left if count is right else right
                if not isinstance(count, int) or count * len(other) > MAX_SIZE:
                    raise SecurityError("a repetition this large is not allowed in a protocol template")
            return super().call_binop(context, operator, left, right)

    # undefined names as errors, the text exactly as written (no HTML escaping, a final newline kept)
    return Sandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeoutError when the block runs longer than ``seconds`` (POSIX main thread; elsewhere no limit)."""
    import signal
    import threading

    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"rendering took more than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _big_literal(env: jinja2.Environment, source: str) -> int | None:
    """A number literal above :data:`MAX_SIZE` in the template (``center(1000000000)``), else None."""
    from jinja2 import nodes

    for const in env.parse(source).find_all(nodes.Const):
        if _is_number(const.value) and abs(const.value) > MAX_SIZE:
            return const.value
    return None


def load_protocol(path: str | Path) -> Protocol:
    """Read and check a protocol file; a bad one raises :class:`ProtocolError` (one sentence naming the file)."""
    path = Path(path)
    display = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ProtocolError(f"protocol file {display} does not exist") from None
    except IsADirectoryError:
        raise ProtocolError(f"protocol file {display} is a folder, not a TOML file") from None
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"protocol file {display} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ProtocolError(f"cannot read protocol file {display}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProtocolError(f"protocol file {display} is not valid TOML: {exc}") from None
    lines = key_lines(text)

    def fail(key: tuple, message: str) -> ProtocolError:
        line = line_of(lines, key) if key else None
        return ProtocolError(f"{display}{f':{line}' if line else ''}: {message}")

    for key in data:
        if key not in _FIELDS:
            raise fail((key,), f"unknown field {key!r} (known: {', '.join(_FIELDS)})")
    for key, value in data.items():
        if not _has_type(key, value):
            raise fail((key,), f"{key!r} must be {_FIELDS[key]}, got {_shown(value)}")
    for key in ("template", "max_new_tokens"):
        if key not in data:
            raise fail((), f"the protocol has no {key!r} (required)")
    if data["max_new_tokens"] < 1:
        raise fail(("max_new_tokens",), f"'max_new_tokens' must be at least 1, got {data['max_new_tokens']}")
    examples = []
    for i, ex in enumerate(data.get("few_shot", [])):
        if set(ex) != {"input", "output"} or not all(isinstance(v, str) for v in ex.values()):
            raise fail(("few_shot", i), f"few-shot example {i + 1} must have exactly a string 'input' and 'output'")
        examples.append(FewShot(ex["input"], ex["output"]))
    order = data.get("few_shot_order", "as-written")
    if order not in ORDERS:
        raise fail(("few_shot_order",), f"'few_shot_order' must be {' or '.join(map(repr, ORDERS))}, got {order!r}")
    seed = data.get("few_shot_seed", 0)
    if order == "shuffled":
        random.Random(seed).shuffle(examples)
    inputs = inputs_sha = None
    if "inputs" in data:
        inputs = (path.parent / data["inputs"]).resolve()
        try:
            inputs_sha = sha256_hex(inputs.read_bytes())
        except OSError:
            raise fail(
                ("inputs",), f"the inputs file {data['inputs']} it names does not exist or is unreadable"
            ) from None
    env = _environment()
    try:
        compiled = env.from_string(data["template"])
        from jinja2 import meta

        # names used on any path, not only the probe's (``{% if input == "x" %}{{ secret }}{% endif %}``)
        unknown = sorted(meta.find_undeclared_variables(env.parse(data["template"])) - {VARIABLE} - set(env.globals))
    except Exception as exc:  # TemplateSyntaxError, or a sandbox refusal at compile time
        raise fail(("template",), f"'template' is not a valid Jinja template: {_jinja_reason(exc)}") from None
    big = _big_literal(env, data["template"])
    if big is not None:
        raise fail(
            ("template",), f"'template' holds the number {big}, above the {MAX_SIZE} a protocol template may use"
        )
    if unknown:
        raise fail(
            ("template",),
            f"'template' uses {', '.join(map(repr, unknown))}, which is undefined (a protocol template may use "
            f"only {{{{ {VARIABLE} }}}})",
        )
    protocol = Protocol(
        path=path,
        template=data["template"],
        max_new_tokens=data["max_new_tokens"],
        system=data.get("system"),
        chat=data.get("chat", False),
        stop=tuple(data.get("stop", [])),
        few_shot=tuple(examples),
        few_shot_order=order,
        few_shot_seed=seed,
        inputs=inputs,
        inputs_sha256=inputs_sha,
        _compiled=compiled,
    )
    for probe in [PROBE, *(ex.input for ex in examples)]:  # every name it uses is known, and it renders
        try:
            with _time_limit(RENDER_SECONDS):
                compiled.render({VARIABLE: probe})
        except Exception as exc:
            raise fail(("template",), f"'template' fails to render: {_jinja_reason(exc)}") from None
    return protocol


def _has_type(key: str, value: Any) -> bool:
    if key in ("template", "system", "few_shot_order", "inputs"):
        return isinstance(value, str)
    if key == "chat":
        return isinstance(value, bool)
    if key in ("max_new_tokens", "few_shot_seed"):
        return isinstance(value, int) and not isinstance(value, bool)
    if key == "stop":
        return isinstance(value, list) and all(isinstance(s, str) for s in value)
    if key == "few_shot":
        return isinstance(value, list) and all(isinstance(ex, dict) for ex in value)
    return False


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
