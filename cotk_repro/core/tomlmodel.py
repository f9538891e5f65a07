"""What both TOML configs (``cotk-repro.toml``, the ``compare`` config) share as pydantic models: the strict
table, the words for a wrong type, and the declared type and known keys at a key path."""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict


class StrictTable(BaseModel):
    """A TOML table: unknown keys refused, no coercion (a number never stands for a string or a flag)."""

    model_config = ConfigDict(extra="forbid", strict=True)


#: pydantic's error type -> what the value should have been, in a config error's words
TYPE_WORDS = {
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}


def is_union(annotation: Any) -> bool:
    """Whether ``annotation`` is a union, written ``Union[X, Y]``/``Optional[X]`` or ``X | Y``/``X | None``."""
    return get_origin(annotation) in (Union, types.UnionType)


def unwrap(annotation: Any) -> Any:
    """``Optional[X]`` -> ``X`` (a union keeps its other members)."""
    if not is_union(annotation):
        return annotation
    args = tuple(a for a in get_args(annotation) if a is not type(None))
    return args[0] if len(args) == 1 else Union[args]  # noqa: UP007 - a Union of a tuple built at run time


def model_member(node: Any) -> Any:
    """The model of a union of a model and other types (walked into for nested keys); else ``node``."""
    if is_union(node):
        for member in get_args(node):
            if isinstance(member, type) and issubclass(member, BaseModel):
                return member
    return node


def annotation_at(root: type[BaseModel], path: tuple[str | int, ...]) -> Any:
    """The declared type at key ``path`` below the model ``root`` (through tables, lists and dicts of them);
    None when ``path`` names no declared key."""
    node: Any = root
    for part in path:
        node = model_member(unwrap(node))
        origin = getattr(node, "__origin__", None)
        if isinstance(node, type) and issubclass(node, BaseModel):
            if part not in node.model_fields:
                return None
            node = node.model_fields[part].annotation
        elif origin in (list, dict):
            node = node.__args__[-1]
        else:
            return None
    return unwrap(node)


def known_keys(root: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """The keys the table at ``path`` below ``root`` declares, sorted; none when ``path`` is not a table."""
    node = model_member(annotation_at(root, path))
    return sorted(node.model_fields) if isinstance(node, type) and issubclass(node, BaseModel) else []
