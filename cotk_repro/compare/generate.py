"""Generator systems: a registered generator turns a dataset's inputs into samples, cached on disk.

The cache key is the SHA-256 of the canonical JSON of the generator's name,
version and settings, the SHA-256 of the inputs (a file, one document per line,
or a folder, one document per ``*.txt`` file) and the text format applied to
them, so outputs are reused exactly when none of these changed. Inputs are streamed in batches (the
generator's ``batch_size`` attribute, default 256; ``None`` = all inputs in one
call, for generators that need the whole input, such as the n-gram sampler),
and the output is written to a temporary file renamed into place, so an
interrupted run never leaves a half cache entry.

A generator that trains a model may also report the training run's own result: a ``result()`` method,
called after ``generate``, returning a result dict (docs/spec.md section 4). Its numbers are cached beside
the outputs (``<digest>.result.json``) and compare draws its per-epoch values (``NAME@epoch-N``) as curves;
for such a generator a cache entry without that file is not reused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..core.canonical import hash_object
from ..core.fileio import atomic_open, atomic_write
from ..core.results import is_companion_key, parse_result_dict
from ..errors import CotkError
from .textfmt import TextFormat, batched, inputs_sha256, iter_documents

DEFAULT_BATCH_SIZE = 256


class GeneratorError(CotkError):
    """A generator failed or returned something other than one output per input."""


def make_generator(name: str, settings: dict[str, Any]) -> Any:
    """The registered factory called with the settings: an object with ``generate(list) -> list``, or a
    plain callable ``text -> text`` (its name, version and settings then come from the registration)."""
    from ..plugins import get_component

    generator = get_component("generator", name)(**settings)
    if not callable(getattr(generator, "generate", None)) and not callable(generator):
        raise GeneratorError(
            f"generator {name!r} gave a {type(generator).__name__}, which has no generate() and is not callable"
        )
    return generator


def cache_key(
    generator: Any,
    registered_name: str,
    settings: dict[str, Any],
    input_sha256: str,
    input_format: TextFormat | None = None,
) -> dict[str, Any]:
    """What identifies an output: generator name, version, settings, input hash and input format."""
    gen_settings = getattr(generator, "settings", None)
    if not isinstance(gen_settings, dict):
        gen_settings = settings
    try:
        hash_object(gen_settings)
    except (TypeError, ValueError):
        gen_settings = {k: repr(v) for k, v in sorted(gen_settings.items())}
    return {
        "generator": str(getattr(generator, "name", registered_name)),
        "version": str(getattr(generator, "version", "")),
        "settings": gen_settings,
        "input_sha256": input_sha256,
        "input_format": (input_format or TextFormat()).as_dict(),
    }


def generate_cached(
    generator_name: str, settings: dict[str, Any], inputs: Path, cache_dir: Path, input_format: TextFormat | None = None
) -> tuple[Path, bool]:
    """Outputs of ``generator_name`` on ``inputs`` (normalized by ``input_format``); returns (output file,
    reused from cache)."""
    generator = make_generator(generator_name, settings)
    input_format = input_format or TextFormat()
    key = cache_key(generator, generator_name, settings, inputs_sha256(inputs), input_format)
    digest = hash_object(key)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", key["generator"]) or "generator"
    folder = Path(cache_dir) / safe
    out = folder / f"{digest}.txt"
    reports = callable(getattr(generator, "result", None))
    if out.is_file() and (folder / f"{digest}.json").is_file() and (not reports or _result_path(out).is_file()):
        return out, True
    folder.mkdir(parents=True, exist_ok=True)
    batch_size = getattr(generator, "batch_size", DEFAULT_BATCH_SIZE)
    n_out = 0
    with atomic_open(out) as fh:
        for batch in batched(iter_documents(inputs, input_format), batch_size):
            try:
                if callable(getattr(generator, "generate", None)):
                    outputs = generator.generate(batch)
                else:  # a plain callable: one input text -> one output text
                    outputs = [generator(text) for text in batch]
            except CotkError:
                raise
            except Exception as exc:
                raise GeneratorError(f"generator {generator_name!r} failed: {type(exc).__name__}: {exc}") from None
            outputs = list(outputs)
            if len(outputs) != len(batch):
                raise GeneratorError(
                    f"generator {generator_name!r} returned {len(outputs)} outputs for {len(batch)} inputs"
                )
            for text in outputs:
                if not isinstance(text, str):
                    raise GeneratorError(f"generator {generator_name!r} returned a {type(text).__name__}, not a string")
                fh.write(" ".join(text.splitlines()) + "\n")
                n_out += 1
    if reports:
        _write_result(generator, generator_name, _result_path(out))
    # the metadata last: the cache counts an output only when both files are there
    meta = dict(key, lines=n_out, pinned=bool(getattr(generator, "pinned", True)))
    atomic_write(folder / f"{digest}.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return out, False


def read_pinned(output: Path) -> bool:
    """Whether the generator that wrote ``output`` is pinned to its weights (its cache metadata's ``pinned``;
    True when the metadata predates the field or cannot be read: the cache holds no unpinned entry before it)."""
    try:
        meta = json.loads(Path(output).with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    return not (isinstance(meta, dict) and meta.get("pinned") is False)


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
