"""Generation as a library: one output per input from a registered generator, prompted by a protocol, cached.

:func:`generate_outputs` is what ``cotk-repro generate`` runs. It builds the generator with its settings (and
the protocol's decoding values, :func:`cotk_repro.generation.protocol_settings`) and runs the inputs through the
same resumable cache as ``compare``'s generator systems (:func:`cotk_repro.generation.run_cached`, in its exact
form: every character of every output kept), each batch rendered into prompts by the protocol just before it is
generated (:func:`prompt_renderer`): every finished batch is appended to a partial file, so a rerun after Ctrl-C
renders and generates only what is missing, and the finished file is renamed into place.

:func:`generate_file` writes ``--out FILE`` (the plain-text form, :func:`cotk_repro.generation.one_line`, or with
``FILE.jsonl`` one JSON string per output) and the sidecar ``FILE.json`` that says what made it; ``evaluate``
reads the sidecar back (:func:`protocol_of_outputs`) to stamp the protocol the outputs were prompted with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.canonical import hash_object
from ..generation import (
    GeneratorError,
    Renderer,
    cache_key,
    json_line,
    make_generator,
    one_line,
    read_outputs,
    run_cached,
)
from .prompt import prompt_problem
from .protocol import Protocol, ProtocolError
from .system import describe_system

#: the largest sidecar (``FILE.json``) read back
MAX_SIDECAR_BYTES = 1 << 20


@dataclass
class Generation:
    """What :func:`generate_outputs` made: the outputs, the system that made them, and how many were cached."""

    #: one per input, in the plain-text form (each line break inside an output a space: :func:`one_line`)
    outputs: list[str]
    #: the system's identity: generator, version, settings, pinned (:func:`cotk_repro.llm.system.describe_system`)
    system: dict[str, Any]
    #: outputs taken from the cache (a finished earlier run, or the part an interrupted run left)
    reused: int
    #: the cache file holding the outputs (JSON lines)
    path: Path
    #: one per input, every character as the generator gave it
    exact: list[str]


def default_cache() -> Path:
    """Where generations are cached unless told otherwise: ``generations/`` in the user's cache folder."""
    from ..core.userconfig import cache_dir

    return cache_dir() / "generations"


def prompt_renderer(protocol: Protocol, generator: Any) -> Renderer:
    """``render(batch, first)``: the batch's inputs rendered into prompts by ``protocol`` (one request to the
    bounded template process), a failure naming its input line (``first`` + its place, 1-based); for a generator
    that takes chat prompts (``accepts_prompts``) each prompt is checked to be one."""
    check = bool(getattr(generator, "accepts_prompts", False))

    def render(batch: list[Any], first: int) -> list[Any]:
        try:
            prompts = protocol.render_many(batch)
        except ProtocolError as exc:
            where = f"input line {first + exc.index + 1}: " if exc.index is not None else ""
            raise ProtocolError(where + exc.message) from None
        if check:
            for i, prompt in enumerate(prompts, first + 1):
                problem = prompt_problem(prompt)
                if problem:
                    raise GeneratorError(f"the prompt for input {i} is not a prompt: {problem}")
        return prompts

    return render


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

    With a ``protocol``, each input is rendered into a prompt (text or chat messages), batch by batch as the
    batches are generated, and the protocol's ``chat``, ``max_new_tokens`` and ``stop`` become settings (a
    different value in ``settings`` is an error); chat prompts need a generator with ``accepts_prompts``.
    Outputs are cached under ``cache_dir`` (default :func:`default_cache`) by generator, version, settings,
    inputs and protocol hash; ``on_progress(done, total)`` is called after every batch. Raises a ``CotkError``
    (one sentence) for every error a user can cause.
    """
    gen = make_generator(generator, settings, protocol)
    key = cache_key(gen, generator, settings, hash_object(list(inputs)), None, protocol)
    total = len(inputs)

    def progress(done: int, _total: int | None) -> None:
        if on_progress is not None:
            on_progress(done, total)

    got = run_cached(
        gen,
        generator,
        key,
        iter(inputs),
        cache_dir or default_cache(),
        render=prompt_renderer(protocol, gen) if protocol is not None else None,
        exact=True,
        total=total,
        on_progress=progress,
    )
    exact = read_outputs(got)
    if len(exact) != total:
        raise GeneratorError(f"the cached outputs {got.path} hold {len(exact)} lines for {total} inputs; delete it")
    return Generation(
        outputs=[one_line(text) for text in exact],
        system=describe_system(gen, generator),
        reused=got.reused,
        path=got.path,
        exact=exact,
    )


def read_inputs(path: Path) -> list[str]:
    """The inputs of ``cotk-repro generate``: one per line of a UTF-8 text file (docs/inputs.md's rules)."""
    from ..text.textfmt import iter_lines

    path = Path(path)
    if not path.exists():
        raise GeneratorError(f"inputs file {path} does not exist")
    if not path.is_file():
        raise GeneratorError(f"inputs file {path} is not a file")
    lines = list(iter_lines(path))
    if not lines:
        raise GeneratorError(f"inputs file {path} is empty")
    return lines


def is_json_lines(path: Path) -> bool:
    """Whether an outputs file is in the exact form: its name ends in ``.jsonl``."""
    return Path(path).suffix.lower() == ".jsonl"


def sidecar_path(out: Path) -> Path:
    """The sidecar of an outputs file: ``FILE.json`` beside ``FILE``."""
    out = Path(out)
    return out.with_name(out.name + ".json")


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
    one line per input (``out`` ending in ``.jsonl``: one JSON string per line, every character kept; else the
    plain-text form), and ``out.json`` beside it; returns what ``out.json`` holds, plus ``reused``.

    Both files are written whole (a temporary file renamed into place) after every output exists: an error or
    an interruption leaves neither. ``protocol_shown``: the protocol's path as the user gave it.
    """
    import json

    from ..core.fileio import atomic_write
    from ..text.textfmt import file_sha256

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
    sidecar = sidecar_path(out)
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
    form = json_line if is_json_lines(out) else one_line
    atomic_write(out, "".join(form(text) + "\n" for text in got.exact))
    atomic_write(sidecar, json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return dict(meta, reused=got.reused)


@dataclass(frozen=True)
class OutputsProtocol:
    """The protocol an outputs file was prompted with, as ``evaluate`` stamps it."""

    #: the protocol's hash
    sha256: str
    #: its path, as ``--protocol`` gave it or as the sidecar recorded it
    path: str
    #: the sidecar that recorded it, or None when only ``--protocol`` named it
    sidecar: Path | None


def protocol_of_outputs(
    outputs: Path, given: Protocol | None = None, given_shown: str | None = None
) -> OutputsProtocol | None:
    """The protocol to stamp into the scores of ``outputs``: the one its sidecar (``outputs.json``, written by
    :func:`generate_file`) records, else ``given`` (``--protocol``), else None.

    A ``given`` protocol whose hash is not the recorded one, or given for outputs the sidecar says were made
    without a protocol, is a :class:`GeneratorError` (one sentence): the scores would claim a prompt the outputs
    never had. A sidecar that is not what ``generate`` writes is one too."""
    outputs = Path(outputs)
    sidecar = sidecar_path(outputs)
    shown = given_shown or (str(given.path) if given is not None else "")
    if not sidecar.exists():
        return None if given is None else OutputsProtocol(given.sha256, shown, None)
    recorded = _recorded_protocol(sidecar)
    if given is None:
        return None if recorded is None else OutputsProtocol(recorded["sha256"], recorded["path"], sidecar)
    if recorded is None:
        raise GeneratorError(
            f"{sidecar} says {outputs} was generated without a protocol, but --protocol names {shown}; leave out "
            "--protocol (or generate the outputs with it)"
        )
    if recorded["sha256"] != given.sha256:
        raise GeneratorError(
            f"--protocol {shown} (hash {given.sha256[:12]}) is not the protocol {recorded['path']} (hash "
            f"{recorded['sha256'][:12]}) that {sidecar} records for {outputs}; leave out --protocol to stamp the "
            "recorded one"
        )
    return OutputsProtocol(given.sha256, shown, sidecar)


def _recorded_protocol(sidecar: Path) -> dict[str, str] | None:
    """The ``protocol`` a sidecar records (``{"sha256", "path"}``, or None: generated without one)."""
    import re

    from ..core import jsonbudget
    from ..core.safe_read import UnsafeFileError, read_regular

    def unusable(why: str) -> GeneratorError:
        return GeneratorError(
            f"{sidecar} is not the sidecar `cotk-repro generate` writes ({why}); move it away to score the outputs "
            "without it"
        )

    try:
        data = jsonbudget.loads(
            read_regular(sidecar, MAX_SIDECAR_BYTES, str(sidecar), follow_links=True), what=str(sidecar)
        )
    except (UnsafeFileError, jsonbudget.JSONBudgetError) as exc:
        raise unusable(exc.message) from None
    except OSError as exc:
        raise unusable(f"unreadable: {exc.strerror or exc}") from None
    if not isinstance(data, dict) or "protocol" not in data:
        raise unusable("no 'protocol' field")
    protocol = data["protocol"]
    if protocol is None:
        return None
    if (
        not isinstance(protocol, dict)
        or not isinstance(protocol.get("sha256"), str)
        or not re.fullmatch(r"[0-9a-f]{64}", protocol["sha256"])
        or not isinstance(protocol.get("path"), str)
    ):
        raise unusable('its \'protocol\' is not {"sha256": 64 hex digits, "path": a string}')
    return {"sha256": protocol["sha256"], "path": protocol["path"]}
