"""The shape of ``cotk-repro.toml`` as pydantic models; a violation is one sentence naming the key, file and line.

Imported only when a config file's bytes have not been validated before (:func:`.config.load_config` remembers
files that passed), so that ``cotk-repro run`` does not pay for pydantic on every start.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictStr, ValidationError, field_validator

from ..errors import ConfigError
from .config import RECORDS_REF_SUFFIX
from .tomlpos import key_lines, line_of


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # strict: a number never stands for a string or a flag


class ProjectTable(_Table):
    """``[project]``: what the runs of this project are (names shown on the dashboard)."""

    name: Optional[StrictStr] = None
    task: Optional[StrictStr] = None
    dataset: Optional[StrictStr] = None


class RunTable(_Table):
    """``[run]``: the entry script, its arguments and its result file."""

    entry: Optional[StrictStr] = None
    args: Optional[List[StrictStr]] = None
    result: Optional[StrictStr] = None
    python: Optional[StrictStr] = None


class Tolerance(_Table):
    """``[reproduce.tolerances.METRIC]``: one metric's tolerances."""

    rtol: Optional[StrictFloat] = None
    atol: Optional[StrictFloat] = None


class ReproduceTable(_Table):
    """``[reproduce]``: the runtime, its limits and the tolerances a reproduction is judged by."""

    runtime: Optional[StrictStr] = None
    base_image: Optional[StrictStr] = None
    rtol: Optional[StrictFloat] = None
    atol: Optional[StrictFloat] = None
    timeout: Optional[StrictFloat] = None
    memory: Optional[StrictStr] = None
    cpus: Optional[StrictFloat] = None
    network: Optional[StrictBool] = None
    tolerances: Optional[Dict[str, Tolerance]] = None


class PublishTable(_Table):
    """``[publish]``: the git remote, the records ref, the targets."""

    remote: Optional[StrictStr] = None
    records_ref: Optional[StrictStr] = None
    push: Optional[StrictBool] = None
    github_api: Optional[StrictStr] = None
    github_private: Optional[StrictBool] = None
    targets: Optional[List[StrictStr]] = None
    logs: Optional[StrictBool] = None

    @field_validator("records_ref")
    @classmethod
    def _findable(cls, ref: Optional[str]) -> Optional[str]:
        if ref is not None and not (ref.startswith("refs/") and ref.endswith(RECORDS_REF_SUFFIX)):
            raise ValueError(f"must be a full ref ending in {RECORDS_REF_SUFFIX!r} (e.g. refs/heads/team-"
                             f"{RECORDS_REF_SUFFIX}), so that `cotk-repro reproduce` finds it; got {ref!r}")
        return ref


class DashboardTable(_Table):
    """``[dashboard]``: where records are uploaded."""

    url: Optional[StrictStr] = None


class ConfigFile(_Table):
    """The whole of ``cotk-repro.toml`` (or ``[tool.cotk-repro]`` in ``pyproject.toml``)."""

    project: Optional[ProjectTable] = None
    run: Optional[RunTable] = None
    reproduce: Optional[ReproduceTable] = None
    publish: Optional[PublishTable] = None
    dashboard: Optional[DashboardTable] = None


_WORDS = {"string_type": "a string", "float_type": "a number", "bool_type": "true or false", "list_type": "a list",
          "dict_type": "a table", "model_type": "a table", "model_attributes_type": "a table"}


def _table_at(path: tuple) -> Any:
    """The model of the table at ``path`` (``("reproduce", "tolerances", "bleu")`` -> Tolerance), else None."""
    node: Any = ConfigFile
    for part in path:
        if isinstance(node, type) and issubclass(node, BaseModel) and part in node.model_fields:
            node = node.model_fields[part].annotation
        elif getattr(node, "__origin__", None) is dict:
            node = node.__args__[1]
        else:
            return None
        while getattr(node, "__origin__", None) is Union:  # Optional[X] -> X
            node = next(a for a in node.__args__ if a is not type(None))
    return node if isinstance(node, type) and issubclass(node, BaseModel) else None


def _sentence(err: dict[str, Any], data: dict[str, Any]) -> tuple[tuple, str]:
    loc = tuple(err["loc"])
    dotted = ".".join(str(p) for p in loc)
    if err["type"] == "extra_forbidden":
        known = ", ".join(sorted(getattr(_table_at(loc[:-1]), "model_fields", {})))
        return loc, f"unknown key '{dotted}' (known here: {known})"
    if err["type"] == "value_error":
        return loc, f"'{dotted}' {err['ctx']['error']}"
    if loc and isinstance(loc[-1], int):  # an item of a list of strings
        return loc[:-1], f"'{'.'.join(str(p) for p in loc[:-1])}' must be a list of strings"
    words = _WORDS.get(err["type"], "something else")
    if words == "a table":
        return loc, f"'{dotted}' must be a table"
    value: Any = data
    for part in loc:
        value = value.get(part) if isinstance(value, dict) else None
    return loc, f"'{dotted}' must be {words}, got {value!r}"


def check(data: dict[str, Any], where: str, text: str, prefix: tuple = ()) -> None:
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
