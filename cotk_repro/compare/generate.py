"""Compare's generator systems: a registered generator's samples on a dataset's inputs (a file, one document per
line, or a folder, one document per ``*.txt`` file, normalized by the dataset's text format), through the
generation cache of :mod:`cotk_repro.generation` (its plain-text form, which compare reads as samples).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..generation import CachedOutputs, cache_key, make_generator, run_cached
from ..llm.generate import prompt_renderer
from ..text.textfmt import TextFormat, inputs_sha256, iter_documents

if TYPE_CHECKING:
    from ..llm.protocol import Protocol


def generate_cached(
    generator_name: str,
    settings: dict[str, Any],
    inputs: Path,
    cache_dir: Path,
    input_format: TextFormat | None = None,
    protocol: Protocol | None = None,
) -> tuple[Path, bool]:
    """Outputs of ``generator_name`` on ``inputs`` (normalized by ``input_format``, rendered by ``protocol``);
    returns (output file, reused from cache)."""
    got = generate_inputs_file(generator_name, settings, inputs, cache_dir, input_format, protocol)
    return got.path, got.reused == got.lines


def generate_inputs_file(
    generator_name: str,
    settings: dict[str, Any],
    inputs: Path,
    cache_dir: Path,
    input_format: TextFormat | None = None,
    protocol: Protocol | None = None,
) -> CachedOutputs:
    """:func:`generate_cached` with everything it knows (compare's worker task reads ``meta["pinned"]``)."""
    generator = make_generator(generator_name, settings, protocol)
    input_format = input_format or TextFormat()
    key = cache_key(generator, generator_name, settings, inputs_sha256(inputs), input_format, protocol)
    render = prompt_renderer(protocol, generator) if protocol is not None else None
    return run_cached(generator, generator_name, key, iter_documents(inputs, input_format), cache_dir, render=render)
