"""The shape of a ``cotk-repro compare`` config as pydantic models, and its errors as one sentence with a key path.

Only shape is checked here (unknown keys, types); :mod:`.config` resolves names, files and formats. A
violation is reported as ``fail(path, message)`` with the TOML key path (``("dataset", 1, "pth")``) so the
caller can name the file and line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import StrictBool, StrictInt, StrictStr, ValidationError, create_model

from ..core.tomlmodel import TYPE_WORDS, StrictTable, annotation_at, known_keys
from ..text.textfmt import FORMAT_KEYS

_STRICT: dict[type, Any] = {bool: StrictBool, str: StrictStr, list: list[StrictStr]}

#: ``[format]`` / ``[formats.NAME]`` / an inline format: the keys of :data:`cotk_repro.text.textfmt.FORMAT_KEYS`
_FORMAT_FIELDS: dict[str, Any] = {k: (_STRICT[t] | None, None) for k, t in FORMAT_KEYS.items()}
_FormatTable: type[StrictTable] = create_model("FormatTable", __base__=StrictTable, **_FORMAT_FIELDS)
if TYPE_CHECKING:  # a model built at run time is no type to mypy: there it is the StrictTable it derives from
    FormatTable = StrictTable
else:
    FormatTable = _FormatTable

#: a named format (a key of [formats]) or an inline table of format keys
FormatRef = StrictStr | FormatTable
#: a file, or a table of them by dataset
StrOrTable = StrictStr | dict[str, Any]
#: the tags pydantic puts in an error's location for the members of the unions above
_UNION_TAGS = {"str", "FormatTable", "dict[str,any]"}


class ReportTable(StrictTable):
    """``[report]``."""

    out: StrictStr | None = None
    title: StrictStr | None = None
    jobs: StrictInt | None = None
    cache: StrictStr | None = None
    charts: StrictBool | None = None
    html: StrictBool | None = None
    intervals: StrictBool | None = None


class DatasetTable(StrictTable):
    """One ``[[dataset]]``."""

    name: StrictStr | None = None
    path: StrictStr | None = None
    gold: StrictStr | None = None
    samples: StrictStr | None = None
    inputs: StrictStr | None = None
    format: FormatRef | None = None
    gold_format: FormatRef | None = None
    inputs_format: FormatRef | None = None
    baseline: StrictStr | None = None


class SystemTable(StrictTable):
    """One ``[[system]]``."""

    name: StrictStr | None = None
    samples: StrOrTable | None = None
    generator: StrictStr | None = None
    settings: dict[str, Any] | None = None
    protocol: StrictStr | None = None
    format: FormatRef | None = None
    datasets: list[StrictStr] | None = None


class MetricTable(StrictTable):
    """One ``[[metric]]``."""

    name: StrictStr | None = None
    label: StrictStr | None = None
    options: dict[str, Any] | None = None
    keys: list[StrictStr] | None = None
    references: StrictStr | None = None
    higher_is_better: StrictBool | None = None


class CompareFile(StrictTable):
    """The whole file."""

    report: ReportTable | None = None
    format: FormatTable | None = None
    formats: dict[str, FormatTable] | None = None
    dataset: list[DatasetTable] | None = None
    system: list[SystemTable] | None = None
    metric: list[MetricTable] | None = None


def _dotted(path: tuple) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _field_annotation(path: tuple) -> Any:
    """The declared type at ``path`` (``("dataset", 0, "format")`` -> StrOrTable), None when unknown."""
    return annotation_at(CompareFile, path)


def _message(err: Mapping[str, Any], data: Any) -> tuple[tuple, str]:
    loc = tuple(p for p in err["loc"] if p not in _UNION_TAGS)
    kind = err["type"]
    if kind == "extra_forbidden":
        key, parent = loc[-1], loc[:-1]
        if not parent:
            where = ""
        elif isinstance(parent[-1], int):
            where = f" in [[{_dotted(parent[:-1])}]] #{parent[-1] + 1}"
        else:
            where = f" in [{_dotted(parent)}]"
        return loc, f"unknown key '{key}'{where} (known: {', '.join(known_keys(CompareFile, parent))})"
    # a union's member errors carry the member's name after the field's path: cut back to the field
    field = loc
    while field and _field_annotation(field) is None:
        field = field[:-1]
    annotation = _field_annotation(field)
    value = data
    for part in field:
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            value = None
            break
    origin = getattr(annotation, "__origin__", None)
    if annotation in (StrOrTable, FormatRef):
        expected = "a string or table"
    elif origin is list and field and field[-1] in ("dataset", "system", "metric") and len(field) == 1:
        return field, f"'{_dotted(field)}' must be an array of tables ([[{_dotted(field)}]])"
    elif origin is list:
        expected = "a list of strings"
    elif len(field) == 2 and isinstance(field[-1], int) and field[0] in ("dataset", "system", "metric"):
        return field[:1], f"'{field[0]}' must be an array of tables ([[{field[0]}]])"
    else:
        expected = TYPE_WORDS.get(kind, "something else")
    if expected == "a table":
        return field, f"'{_dotted(field)}' must be a table"
    return field, f"'{_dotted(field)}' must be {expected}, got {value!r}"


def validate_shape(data: dict[str, Any], fail: Callable[[tuple, str], Exception]) -> CompareFile:
    """Check unknown keys and types; on the first violation raise ``fail(path, message)``."""
    try:
        return CompareFile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # an unknown key first; else the most specific error (inside an inline table rather than "not a string")
        depth = lambda e: len([p for p in e["loc"] if p not in _UNION_TAGS])  # noqa: E731
        best = min(errors, key=lambda e: (e["type"] != "extra_forbidden", -depth(e)))
        path, message = _message(best, data)
        raise fail(path, message) from None
