"""Generation as a library: one output per input from a registered generator, prompted by a protocol, cached.

:func:`generate_outputs` is what ``cotk-repro generate`` runs. It builds the generator with its settings (and
the protocol's decoding values, :func:`cotk_repro.compare.generate.protocol_settings`), renders each input with
the protocol, and runs the batches through the same resumable cache as ``compare``'s generator systems
(:func:`cotk_repro.compare.generate.run_cached`): every finished batch is appended to a partial file, so a
rerun after Ctrl-C generates only what is missing, and the finished file is renamed into place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compare.generate import GeneratorError, cache_key, hashable_settings, make_generator, run_cached
from ..core.canonical import hash_object
from .prompt import prompt_problem
from .protocol import Protocol


@dataclass
class Generation:
    """What :func:`generate_outputs` made: the outputs, the system that made them, and how many were cached."""

    #: one per input; a newline inside an output is replaced by a space
    outputs: list[str]
    #: the system's identity: generator, version, settings, pinned (:func:`_describe`)
    system: dict[str, Any]
    #: outputs taken from the cache (a finished earlier run, or the part an interrupted run left)
    reused: int
    #: the cache file holding the outputs
    path: Path


def default_cache() -> Path:
    """Where generations are cached unless told otherwise: ``generations/`` in the user's cache folder."""
    from ..core.userconfig import cache_dir

    return cache_dir() / "generations"


def _describe(generator: Any, registered_name: str) -> dict[str, Any]:
    """The system's identity (replaced by ``cotk_repro.llm.system.describe_system`` where that exists)."""
    return {
        "generator": str(getattr(generator, "name", registered_name)),
        "version": str(getattr(generator, "version", "")),
        "settings": hashable_settings(generator, {}),
        "pinned": bool(getattr(generator, "pinned", True)),
    }


def generate_outputs(
    generator: str,
    settings: dict[str, Any],
    inputs: list[str],
    *,
    protocol: Protocol | None = None,
    cache_dir: Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Generation:
    """Outputs of the registered ``generator`` (built with ``settings``) on ``inputs``, one per input.

    With a ``protocol``, each input is rendered into a prompt (text or chat messages) and the protocol's
    ``chat``, ``max_new_tokens`` and ``stop`` become settings (a different value in ``settings`` is an error);
    chat prompts need a generator with ``accepts_prompts``. Outputs are cached under ``cache_dir`` (default
    :func:`default_cache`) by generator, version, settings, inputs and protocol hash; ``on_progress(done,
    total)`` is called after every batch. Raises a ``CotkError`` (one sentence) for every error a user can
    cause.
    """
    gen = make_generator(generator, settings, protocol)
    prompts: list[Any] = list(inputs)
    if protocol is not None:
        prompts = [_render(protocol, text, i) for i, text in enumerate(inputs, 1)]
    if getattr(gen, "accepts_prompts", False):  # else plain text: make_generator refused a chat protocol
        for i, prompt in enumerate(prompts, 1):
            problem = prompt_problem(prompt)
            if problem:
                raise GeneratorError(f"the prompt for input {i} is not a prompt: {problem}")
    key = cache_key(gen, generator, settings, hash_object(list(inputs)), None, protocol)
    total = len(prompts)

    def progress(done: int, _total: int | None) -> None:
        if on_progress is not None:
            on_progress(done, total)

    got = run_cached(
        gen, generator, key, iter(prompts), cache_dir or default_cache(), total=total, on_progress=progress
    )
    outputs = got.path.read_text(encoding="utf-8").split("\n")[:-1]
    if len(outputs) != total:
        raise GeneratorError(f"the cached outputs {got.path} hold {len(outputs)} lines for {total} inputs; delete it")
    return Generation(outputs=outputs, system=_describe(gen, generator), reused=got.reused, path=got.path)


def _render(protocol: Protocol, text: str, line: int) -> Any:
    from .protocol import ProtocolError

    try:
        return protocol.render(text)
    except ProtocolError as exc:
        raise ProtocolError(f"input line {line}: {exc.message}") from None


def read_inputs(path: Path) -> list[str]:
    """The inputs of ``cotk-repro generate``: one per line of a UTF-8 text file (docs/inputs.md's rules)."""
    from ..compare.textfmt import iter_lines

    path = Path(path)
    if not path.exists():
        raise GeneratorError(f"inputs file {path} does not exist")
    if not path.is_file():
        raise GeneratorError(f"inputs file {path} is not a file")
    lines = list(iter_lines(path))
    if not lines:
        raise GeneratorError(f"inputs file {path} is empty")
    return lines


def generate_file(
    generator: str,
    settings: dict[str, Any],
    inputs: Path | None,
    out: Path,
    *,
    protocol: Protocol | None = None,
    protocol_shown: str | None = None,
    cache_dir: Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """``cotk-repro generate``: outputs of ``inputs`` (default: the file the protocol names) written to ``out``,
    one line per input, and ``out.json`` beside it; returns what ``out.json`` holds, plus ``reused``.

    Both files are written whole (a temporary file renamed into place) after every output exists: an error or
    an interruption leaves neither. ``protocol_shown``: the protocol's path as the user gave it.
    """
    from ..compare.textfmt import file_sha256
    from ..core.fileio import atomic_write

    if inputs is None:
        if protocol is None or protocol.inputs is None:
            raise GeneratorError("give the inputs: --inputs FILE (or name them in the protocol's 'inputs')")
        inputs = protocol.inputs
    texts = read_inputs(inputs)
    inputs_sha = file_sha256(inputs)
    if protocol is not None and protocol.inputs_sha256 not in (None, inputs_sha):
        raise GeneratorError(
            f"inputs file {inputs} is not the inputs file {protocol.inputs} that protocol {protocol.path} names "
            "(their contents differ); leave out --inputs or change the protocol's 'inputs'"
        )
    out = Path(out)
    sidecar = out.with_name(out.name + ".json")
    if out.is_dir():
        raise GeneratorError(f"--out {out} is a folder; give the file to write")
    if not out.parent.is_dir():
        raise GeneratorError(f"the folder of --out {out} does not exist")
    if out.resolve() == Path(inputs).resolve():
        raise GeneratorError(f"--out {out} is the inputs file; give another file")
    got = generate_outputs(generator, settings, texts, protocol=protocol, cache_dir=cache_dir, on_progress=on_progress)
    meta = {
        "system": got.system,
        "protocol": None
        if protocol is None
        else {"sha256": protocol.sha256, "path": protocol_shown or str(protocol.path)},
        "inputs_sha256": inputs_sha,
        "lines": len(got.outputs),
    }
    import json

    atomic_write(out, "".join(line + "\n" for line in got.outputs))
    atomic_write(sidecar, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return dict(meta, reused=got.reused)
