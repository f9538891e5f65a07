"""Generation: a registered generator's outputs on a stream of inputs, through a resumable cache on disk.

The one home of what ``compare``'s generator systems and ``cotk-repro generate`` (:mod:`cotk_repro.llm.generate`)
share, below both (docs/architecture.md): the generator registry's factory call (:func:`make_generator`, with a
prompt protocol's decoding settings, :func:`protocol_settings`), the cache key (:func:`cache_key`) and the
cache itself (:func:`run_cached`). Nothing here imports ``compare`` or ``llm``: a protocol is anything with the
few members :class:`PromptProtocol` names.

The cache key is the SHA-256 of the canonical JSON of the generator's name, version and settings, the SHA-256 of
the inputs, the text format applied to them and, when a prompt protocol renders the inputs, the protocol's
hash, so outputs are reused exactly when none of these changed. Inputs are streamed in batches (the generator's
``batch_size`` attribute, default 256; ``None`` = all inputs in one call, for generators that need the whole
input, such as the n-gram sampler), each batch rendered into prompts just before it is generated (never every
prompt up front). Every finished batch is appended to a partial file, so a run interrupted (Ctrl-C) resumes
where it stopped without rendering again what is done; the finished output is renamed into place and its
metadata written last, so an interrupted run never leaves a half cache entry. The metadata (``<digest>.json``)
says whether the generator is ``pinned`` to its weights (its ``pinned`` attribute, default true; a server's
model id pins nothing).

Two forms of stored outputs: the plain-text form (``<digest>.txt``, one output per line, every line break
inside an output replaced: :func:`one_line`; what ``compare`` reads) and the exact form (``exact=True``:
``<digest>.jsonl``, one JSON string per line, every character kept: :func:`json_line`).

A generator that trains a model may also report the training run's own result: a ``result()`` method, called
after ``generate``, returning a result dict (docs/spec.md section 4). Its numbers are cached beside the outputs
(``<digest>.result.json``) and compare draws its per-epoch values (``NAME@epoch-N``) as curves; for such a
generator a cache entry without that file is not reused.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .core.canonical import hash_object
from .core.fileio import atomic_write
from .core.results import is_companion_key, parse_result_dict
from .errors import CotkError
from .text.textfmt import TextFormat, batched


class PromptProtocol(Protocol):
    """What generation needs of a prompt protocol (:class:`cotk_repro.llm.protocol.Protocol` is one)."""

    @property
    def path(self) -> Path: ...

    @property
    def chat(self) -> bool: ...

    @property
    def sha256(self) -> str: ...

    def decoding(self) -> dict[str, Any]: ...


#: what turns a batch of inputs into prompts: ``render(batch, first)``, ``first`` the batch's 0-based position
Renderer = Callable[[list[Any], int], list[Any]]

#: the characters the plain-text form replaces by a space, each (docs/llm.md, "Outputs kept exactly"): every line
#: boundary of ``str.splitlines``; a CR LF pair is one boundary, one space; a boundary at the very end is dropped
LINE_BREAKS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def one_line(text: str) -> str:
    """The plain-text form of one output: each line boundary (:data:`LINE_BREAKS`, CR LF as one) a space, a
    boundary at the end dropped; nothing else changes."""
    return " ".join(text.splitlines())


def json_line(text: str) -> str:
    """The exact form of one output: a JSON string on one line (U+0085, U+2028 and U+2029 escaped too, so that no
    reader splitting on Unicode line boundaries breaks it); ``json.loads`` gives the text back."""
    line = json.dumps(text, ensure_ascii=False)
    return line.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


DEFAULT_BATCH_SIZE = 256


class GeneratorError(CotkError):
    """A generator failed or returned something other than one output per input."""


def make_generator(name: str, settings: dict[str, Any], protocol: PromptProtocol | None = None) -> Any:
    """The registered factory called with the settings: an object with ``generate(list) -> list``, or a
    plain callable ``text -> text`` (its name, version and settings then come from the registration).

    With a ``protocol``, its ``decoding()`` values join the settings (those
    the factory takes; a different value given for one is an error), and a chat protocol needs a generator
    with ``accepts_prompts``."""
    from .plugins import get_component

    factory = get_component("generator", name)
    if protocol is not None:
        settings = protocol_settings(name, factory, settings, protocol)
    try:
        generator = factory(**settings)
    except CotkError:
        raise
    except TypeError as exc:
        raise GeneratorError(f"generator {name!r} rejected its settings: {exc}") from None
    except Exception as exc:
        raise GeneratorError(f"generator {name!r} could not be created: {type(exc).__name__}: {exc}") from None
    if not callable(getattr(generator, "generate", None)) and not callable(generator):
        raise GeneratorError(
            f"generator {name!r} gave a {type(generator).__name__}, which has no generate() and is not callable"
        )
    if protocol is not None:
        check_prompts_accepted(name, generator, protocol)
    return generator


def check_prompts_accepted(name: str, generator: Any, protocol: PromptProtocol) -> None:
    """Refuse a chat protocol for a generator that takes plain-text prompts only (no ``accepts_prompts``)."""
    if protocol.chat and not getattr(generator, "accepts_prompts", False):
        raise GeneratorError(
            f"generator {name!r} takes plain-text prompts only, but protocol {protocol.path} asks for chat "
            "messages (chat = true)"
        )


def protocol_settings(name: str, factory: Any, settings: dict[str, Any], protocol: PromptProtocol) -> dict[str, Any]:
    """``settings`` with the protocol's decoding values (chat, max_new_tokens, stop) that ``factory`` takes."""
    import inspect

    try:
        params = inspect.signature(factory).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    except (TypeError, ValueError):  # no signature to read (a builtin): give it everything
        params, takes_any = {}, True  # type: ignore[assignment]
    merged = dict(settings)
    for key, value in protocol.decoding().items():
        if key in settings and settings[key] != value:
            raise GeneratorError(
                f"generator setting {name}.{key} = {settings[key]!r} conflicts with {key} = {value!r} in protocol "
                f"{protocol.path}; drop the setting or change the protocol"
            )
        if takes_any or key in params:
            merged[key] = value
    return merged


def cache_key(
    generator: Any,
    registered_name: str,
    settings: dict[str, Any],
    input_sha256: str,
    input_format: TextFormat | None = None,
    protocol: PromptProtocol | None = None,
) -> dict[str, Any]:
    """What identifies an output: generator name, version, settings, input hash and input format, and the
    protocol's hash when prompts are rendered by one."""
    key = {
        "generator": str(getattr(generator, "name", registered_name)),
        "version": str(getattr(generator, "version", "")),
        "settings": hashable_settings(generator, settings),
        "input_sha256": input_sha256,
        "input_format": (input_format or TextFormat()).as_dict(),
    }
    if protocol is not None:
        key["protocol_sha256"] = protocol.sha256
    return key


def hashable_settings(generator: Any, settings: dict[str, Any]) -> dict[str, Any]:
    """The generator's own ``settings`` (else the ones it was given), each value ``repr``-ed when the whole
    is not canonical JSON."""
    gen_settings = getattr(generator, "settings", None)
    if not isinstance(gen_settings, dict):
        gen_settings = settings
    try:
        hash_object(gen_settings)
    except (TypeError, ValueError):
        gen_settings = {k: repr(v) for k, v in sorted(gen_settings.items())}
    return dict(gen_settings)


@dataclass
class CachedOutputs:
    """Where a generation's outputs are, how many came from the cache, and its metadata (``<digest>.json``)."""

    path: Path
    reused: int
    lines: int
    meta: dict[str, Any]


def run_cached(
    generator: Any,
    name: str,
    key: dict[str, Any],
    inputs: Iterable[Any],
    cache_dir: Path,
    *,
    render: Renderer | None = None,
    exact: bool = False,
    total: int | None = None,
    on_progress: Callable[[int, int | None], None] | None = None,
) -> CachedOutputs:
    """Outputs of ``generator`` on ``inputs`` (each batch turned into prompts by ``render`` first, when given)
    under cache ``key``, resumable.

    A complete entry (``<digest>.txt``, or ``.jsonl`` when ``exact``, and ``<digest>.json``) is reused whole.
    Otherwise every finished batch is appended to ``<digest>.partial`` and flushed; a rerun after an
    interruption (Ctrl-C, a crash) keeps its complete lines and renders and generates only the rest. The
    finished file is renamed into place, then the metadata written: nothing half-written ever counts as output.
    ``exact``: outputs stored as :func:`json_line` (else :func:`one_line`). ``on_progress(done, total)`` after
    every batch.
    """
    if exact:
        key = dict(key, stored="json-lines")  # another entry than the plain-text one of the same key
    digest = hash_object(key)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", key["generator"]) or "generator"
    folder = Path(cache_dir) / safe
    out = folder / f"{digest}.{'jsonl' if exact else 'txt'}"
    meta_path = folder / f"{digest}.json"
    reports = callable(getattr(generator, "result", None))
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / f".{digest}.lock"):  # one process at a time writes an entry; the next reuses it
        if out.is_file() and meta_path.is_file() and (not reports or _result_path(out).is_file()):
            meta = _read_meta(meta_path)
            if meta is not None:
                n = int(meta.get("lines", 0))
                if on_progress is not None:
                    on_progress(n, total)
                return CachedOutputs(out, n, n, meta)
        partial = folder / f"{digest}.partial"
        done = _complete_lines(partial, total) if not reports else 0  # a trained model is not resumed
        reused = done
        batch_size = getattr(generator, "batch_size", DEFAULT_BATCH_SIZE)
        if on_progress is not None:
            on_progress(done, total)
        form = json_line if exact else one_line
        with open(partial, "a" if done else "w", encoding="utf-8", newline="\n") as fh:
            first = done
            for batch in batched(itertools.islice(inputs, done, None), batch_size):
                prompts = render(batch, first) if render is not None else batch
                first += len(batch)
                outputs = _generate_batch(generator, name, prompts)
                fh.write("".join(form(text) + "\n" for text in outputs))
                fh.flush()
                done += len(batch)
                if on_progress is not None:
                    on_progress(done, total)
        if reports:
            _write_result(generator, name, _result_path(out))
        os.replace(partial, out)
        meta = dict(key, lines=done, pinned=bool(getattr(generator, "pinned", True)))
        # the metadata last: the cache counts an output only when both files are there
        atomic_write(meta_path, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return CachedOutputs(out, reused, done, meta)


def _generate_batch(generator: Any, name: str, batch: list[Any]) -> list[str]:
    try:
        if callable(getattr(generator, "generate", None)):
            outputs = generator.generate(batch)
        else:  # a plain callable: one input text -> one output text
            outputs = [generator(text) for text in batch]
    except CotkError:
        raise
    except Exception as exc:
        raise GeneratorError(f"generator {name!r} failed: {type(exc).__name__}: {exc}") from None
    outputs = list(outputs)
    if len(outputs) != len(batch):
        raise GeneratorError(f"generator {name!r} returned {len(outputs)} outputs for {len(batch)} inputs")
    for text in outputs:
        if not isinstance(text, str):
            raise GeneratorError(f"generator {name!r} returned a {type(text).__name__}, not a string")
    return outputs


def _complete_lines(partial: Path, total: int | None) -> int:
    """How many whole lines an interrupted run left in ``partial``; a cut-off last line is dropped from it."""
    try:
        data = partial.read_bytes()
    except OSError:
        return 0
    end = data.rfind(b"\n") + 1
    n = data.count(b"\n", 0, end)
    if total is not None and n > total:  # not this run's: start over
        return 0
    if end != len(data):
        with open(partial, "r+b") as fh:
            fh.truncate(end)
    return n


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` while the block runs (POSIX ``flock``; elsewhere none)."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock (compare's workers then may generate one entry twice)
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_outputs(cached: CachedOutputs) -> list[str]:
    """The outputs of a cache entry, one per input: the exact ones of a ``.jsonl`` entry, else the text lines."""
    text = cached.path.read_text(encoding="utf-8")
    lines = text.split("\n")[:-1]
    if cached.path.suffix != ".jsonl":
        return lines
    try:
        outputs = [json.loads(line) for line in lines]
    except ValueError:
        outputs = []
    if not all(isinstance(o, str) for o in outputs) or len(outputs) != len(lines):
        raise GeneratorError(f"the cached outputs {cached.path} are damaged; delete the file to generate again")
    return outputs


def _result_path(output: Path) -> Path:
    return output.with_name(output.stem + ".result.json")


def _write_result(generator: Any, name: str, path: Path) -> None:
    """Cache the numbers of the generator's own result (a result dict), validated; extras left out."""
    try:
        raw = generator.result()
    except CotkError:
        raise
    except Exception as exc:
        raise GeneratorError(f"generator {name!r} failed to report its result: {type(exc).__name__}: {exc}") from None
    values = parse_result_dict(raw, f"generator {name!r}'s result", skip_extras=True)
    kept = {k: v for k, v in raw.items() if k in values or (is_companion_key(k) and k.rsplit(" ", 1)[0] in values)}
    atomic_write(path, json.dumps(kept, indent=1, sort_keys=True) + "\n")


def read_generator_result(output: Path) -> dict[str, Any] | None:
    """The cached result dict of the generator that wrote ``output``; None when it reports none."""
    path = _result_path(Path(output))
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise GeneratorError(f"the cached generator result {path} is unreadable; delete it to regenerate") from None
