"""The shape of ``cotk-repro.toml`` as pydantic models; a violation is one sentence naming the key, file and line.

Imported only when a config file's bytes have not been validated before (:func:`.config.load_config` remembers
files that passed), so that ``cotk-repro run`` does not pay for pydantic on every start.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import StrictBool, StrictFloat, StrictStr, ValidationError, field_validator

from ..errors import ConfigError
from .git import RECORDS_REF_SUFFIX
from .tomlmodel import TYPE_WORDS, StrictTable, known_keys
from .tomlpos import key_lines, line_of


class ProjectTable(StrictTable):
    """``[project]``: what the runs of this project are (names shown on the dashboard)."""

    name: StrictStr | None = None
    task: StrictStr | None = None
    dataset: StrictStr | None = None


class RunTable(StrictTable):
    """``[run]``: the entry script, its arguments, its result file, and the modules it needs installed."""

    entry: StrictStr | None = None
    args: list[StrictStr] | None = None
    result: StrictStr | None = None
    python: StrictStr | None = None
    requires: list[StrictStr] | None = None
    imports: list[StrictStr] | None = None

    @field_validator("imports")
    @classmethod
    def _top_level(cls, names: list[str] | None) -> list[str] | None:
        bad = [n for n in names or [] if not n.isidentifier()]
        if bad:
            raise ValueError(f'must name top-level modules (e.g. "torch"), got {bad[0]!r}')
        return names


class Tolerance(StrictTable):
    """``[reproduce.tolerances.KEY]``: one result's tolerances; they may only tighten what its metric declares."""

    rtol: StrictFloat | None = None
    atol: StrictFloat | None = None


class ReproduceTable(StrictTable):
    """``[reproduce]``: the runtime, its limits and the tolerances a reproduction is judged by."""

    runtime: StrictStr | None = None
    base_image: StrictStr | None = None
    rtol: StrictFloat | None = None
    atol: StrictFloat | None = None
    timeout: StrictFloat | None = None
    memory: StrictStr | None = None
    cpus: StrictFloat | None = None
    disk: StrictStr | None = None
    network: StrictBool | None = None
    tolerances: dict[str, Tolerance] | None = None


class PublishTable(StrictTable):
    """``[publish]``: the git remote, the records ref, the targets."""

    remote: StrictStr | None = None
    records_ref: StrictStr | None = None
    push: StrictBool | None = None
    github_api: StrictStr | None = None
    github_private: StrictBool | None = None
    targets: list[StrictStr] | None = None
    logs: StrictBool | None = None

    @field_validator("records_ref")
    @classmethod
    def _findable(cls, ref: str | None) -> str | None:
        if ref is not None and not (ref.startswith("refs/") and ref.endswith(RECORDS_REF_SUFFIX)):
            raise ValueError(
                f"must be a full ref ending in {RECORDS_REF_SUFFIX!r} (e.g. refs/heads/team-"
                f"{RECORDS_REF_SUFFIX}), so that `cotk-repro reproduce` finds it; got {ref!r}"
            )
        return ref


class DashboardTable(StrictTable):
    """``[dashboard]``: where records are uploaded."""

    url: StrictStr | None = None


class ConfigFile(StrictTable):
    """The whole of ``cotk-repro.toml`` (or ``[tool.cotk-repro]`` in ``pyproject.toml``)."""

    project: ProjectTable | None = None
    run: RunTable | None = None
    reproduce: ReproduceTable | None = None
    publish: PublishTable | None = None
    dashboard: DashboardTable | None = None


def _sentence(err: Mapping[str, Any], data: dict[str, Any]) -> tuple[tuple[str | int, ...], str]:
    loc = tuple(err["loc"])
    dotted = ".".join(str(p) for p in loc)
    if err["type"] == "extra_forbidden":
        known = ", ".join(known_keys(ConfigFile, loc[:-1]))
        return loc, f"unknown key '{dotted}' (known here: {known})"
    if err["type"] == "value_error":
        return loc, f"'{dotted}' {err['ctx']['error']}"
    if loc and isinstance(loc[-1], int):  # an item of a list of strings
        return loc[:-1], f"'{'.'.join(str(p) for p in loc[:-1])}' must be a list of strings"
    words = TYPE_WORDS.get(err["type"], "something else")
    if words == "a table":
        return loc, f"'{dotted}' must be a table"
    value: Any = data
    for part in loc:
        value = value.get(part) if isinstance(value, dict) else None
    return loc, f"'{dotted}' must be {words}, got {value!r}"


def check(data: dict[str, Any], where: str, text: str, prefix: tuple[str | int, ...] = ()) -> None:
    """Validate ``data`` (parsed from ``text``, found at key path ``prefix`` there); raise a ConfigError naming
    ``where``, the line and the key of the first violation (an unknown key before a wrong type)."""
    try:
        ConfigFile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = min(errors, key=lambda e: e["type"] != "extra_forbidden")
        path, sentence = _sentence(first, data)
        line = line_of(key_lines(text), prefix + path)
        raise ConfigError(f"{where}:{line}: {sentence}" if line else f"{where}: {sentence}") from None
