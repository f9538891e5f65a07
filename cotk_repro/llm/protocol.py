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
    inputs = "inputs.txt"                           # optional, a file in this file's folder; its sha256 is hashed

    [[few_shot]]
    input = "..."
    output = "..."

The file is a stranger's: the template is compiled and rendered by :func:`cotk_repro.core.untrusted.render_untrusted`
(Jinja's sandbox in a child process under a memory and time limit; undefined names are errors; nothing that
renders differently each time), once at load on a probe input and on every few-shot input (all within
:data:`RENDER_SECONDS`), so a template naming any field but ``input``, failing to render or running away is
refused before any model runs; ``inputs`` must name a regular file inside the protocol's folder. :attr:`Protocol.sha256` is the hash of the
protocol's content (docs/llm-protocol.md, "What is hashed"), never of its path, comments or layout.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

from ..core.canonical import hash_object
from ..core.safe_read import UnsafeFileError, read_regular
from ..core.tomlpos import key_lines, line_of
from ..core.untrusted import UntrustedTemplateError, render_untrusted
from ..errors import CotkError
from .prompt import Prompt

#: what :attr:`Protocol.sha256` is computed over besides the fields; bump when its meaning changes
FORMAT = "cotk-repro/protocol"
FORMAT_VERSION = 1
ORDERS = ("as-written", "shuffled")
#: the one variable a template may use
VARIABLE = "input"
WHAT = "protocol template"
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

    #: the input (0-based, in the batch rendered) whose rendering failed; None when not one input's fault
    index: int | None = None


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
    #: the template rendered on each few-shot input (at load, in the bounded child), in the examples' order
    _shots: tuple[str, ...] = field(default=(), repr=False, compare=False)

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
        """The template rendered with ``input`` = ``text`` (in the bounded child process: :func:`render_untrusted`)."""
        return self.fill_many([text])[0]

    def fill_many(self, texts: Sequence[str]) -> list[str]:
        """:meth:`fill` of each text, in one request to the child process (each rendering bounded by
        :data:`RENDER_SECONDS`); a failure's :class:`ProtocolError` has the failing text's ``index`` (0-based)."""
        try:
            return render_untrusted(
                self.template, [{VARIABLE: t} for t in texts], names=[VARIABLE], seconds_each=RENDER_SECONDS, what=WHAT
            )
        except UntrustedTemplateError as exc:
            error = ProtocolError(f"the template of protocol {self.path} {_clause(exc)}")
            error.index = exc.index
            raise error from None

    def render(self, text: str) -> Prompt:
        """The prompt for one input: a string (``chat = false``) or chat messages (``chat = true``)."""
        return self.render_many([text])[0]

    def render_many(self, texts: Sequence[str]) -> list[Prompt]:
        """The prompts for a batch of inputs (:meth:`render` of each, the template rendered in one request)."""
        return [self._prompt(filled) for filled in self.fill_many(texts)]

    def _prompt(self, filled: str) -> Prompt:
        if self.chat:
            messages: list[dict[str, str]] = []
            if self.system is not None:
                messages.append({"role": "system", "content": self.system})
            for ex, shot in zip(self.few_shot, self._shots):
                messages.append({"role": "user", "content": shot})
                messages.append({"role": "assistant", "content": ex.output})
            messages.append({"role": "user", "content": filled})
            return messages
        parts = [self.system + "\n\n"] if self.system is not None else []
        parts += [shot + ex.output + "\n\n" for ex, shot in zip(self.few_shot, self._shots)]
        parts.append(filled)
        return "".join(parts)


def _clause(exc: UntrustedTemplateError) -> str:
    """The sandbox's clause, with the one name a protocol template may use when it used another."""
    if exc.kind in ("unknown-names", "undefined"):
        return f"{exc.clause} (a protocol template may use only {{{{ {VARIABLE} }}}})"
    return exc.clause


#: the wall-clock bound of one rendering, and of all the renderings of a load together (the probe and every
#: few-shot input); memory: :data:`cotk_repro.core.untrusted.MEMORY_BYTES`
RENDER_SECONDS = 10.0
#: the largest protocol file, and the largest inputs file it may name (bytes)
MAX_PROTOCOL_BYTES = 16 * 2**20
MAX_INPUTS_BYTES = 256 * 2**20


def load_protocol(path: str | Path) -> Protocol:
    """Read and check a protocol file; a bad one raises :class:`ProtocolError` (one sentence naming the file)."""
    path = Path(path)
    display = str(path)
    try:  # the user's own path may be a link; a FIFO or a device there is refused, never read
        raw = read_regular(path, MAX_PROTOCOL_BYTES, f"protocol file {display}", follow_links=True)
        text = raw.decode("utf-8-sig")
    except FileNotFoundError:
        raise ProtocolError(f"protocol file {display} does not exist") from None
    except IsADirectoryError:
        raise ProtocolError(f"protocol file {display} is a folder, not a TOML file") from None
    except UnsafeFileError as exc:
        if path.is_dir():
            raise ProtocolError(f"protocol file {display} is a folder, not a TOML file") from None
        raise ProtocolError(exc.message) from None
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
        try:
            inputs, inputs_sha = _inputs_file(path, data["inputs"])
        except ProtocolError as exc:
            raise fail(("inputs",), exc.message) from None
    examples_in = [ex.input for ex in examples]
    try:  # compiled, checked and rendered once in the bounded child, all together within RENDER_SECONDS
        rendered = render_untrusted(
            data["template"],
            [{VARIABLE: text} for text in [PROBE, *examples_in]],
            names=[VARIABLE],
            seconds_each=RENDER_SECONDS,
            seconds_total=RENDER_SECONDS,
            what=WHAT,
        )
    except UntrustedTemplateError as exc:
        clause = _clause(exc)
        if exc.kind == "time" and len(examples_in) > 0:
            clause += " (the probe input and every few-shot input together)"
        raise fail(("template",), f"'template' {clause}") from None
    return Protocol(
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
        _shots=tuple(rendered[1:]),
    )


def _inputs_file(protocol_path: Path, name: str) -> tuple[Path, str]:
    """The inputs file a protocol names, and its SHA-256: a relative path that resolves (symbolic links
    included) inside the protocol file's folder, to a regular file of at most :data:`MAX_INPUTS_BYTES`. Checked
    before anything is opened, so a FIFO or a device is refused, never read; the open itself cannot block
    (``O_NONBLOCK``) nor follow a link swapped in since (``O_NOFOLLOW``)."""
    import hashlib
    import os
    import stat

    shown = repr(name)
    if Path(name).is_absolute() or Path(name).anchor:
        raise ProtocolError(
            f"'inputs' is the absolute path {shown}; name a file relative to the protocol's folder, inside it"
        )
    folder = protocol_path.parent.resolve()
    target = (folder / name).resolve()
    if target != folder and folder not in target.parents:
        raise ProtocolError(
            f"'inputs' {shown} resolves to {target}, outside the protocol's folder {folder}; a protocol may name "
            "only a file inside its own folder"
        )
    try:
        info = os.stat(target)
    except OSError:
        raise ProtocolError(f"the inputs file {name} it names does not exist or is unreadable") from None
    if not stat.S_ISREG(info.st_mode):
        raise ProtocolError(f"the inputs file {name} it names is not a regular file, so it is not read")
    if info.st_size > MAX_INPUTS_BYTES:
        raise ProtocolError(
            f"the inputs file {name} it names is {info.st_size:,} bytes, over the {MAX_INPUTS_BYTES:,}-byte limit"
        )
    digest, left = hashlib.sha256(), MAX_INPUTS_BYTES + 1
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        raise ProtocolError(f"the inputs file {name} it names does not exist or is unreadable") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for something else since the check
            raise ProtocolError(f"the inputs file {name} it names is not a regular file, so it is not read")
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:
        raise ProtocolError(f"the inputs file {name} it names is over the {MAX_INPUTS_BYTES:,}-byte limit")
    return target, digest.hexdigest()


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
