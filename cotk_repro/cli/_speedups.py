"""Start-up speed of the command line.

Recent Typer releases coerce every parameter that is not a boolean flag through
a pydantic ``TypeAdapter``; importing pydantic for that costs ~70 ms, a third
of the `cotk-repro run` overhead budget (0.2 s, ``TARGET_S`` of benchmarks/run_overhead.py). For
parameters typed plain ``str`` or ``list[str]`` the coercion is the identity
(click already hands over strings), and so it is for flags that are already
booleans; those get a pass-through instead.
Anything else (numbers, paths, choices, custom parsers, files) still goes
through Typer's own coercion. When Typer's internals differ from what this
expects, nothing is changed.

`--help` renders through ``typer.rich_utils``, which imports ``rich.markdown``
(markdown-it, pygments) and ``rich.traceback`` (rich.pretty, attrs) at the top
although it uses them only for markup mode "markdown" and for uncaught
exceptions: about a third of `cotk-repro --help`. ``import_rich_help`` imports
it with stand-ins for those two names that load the real class on first use.

Kept because `run` still needs it (benchmarks/cli_startup.py, best of 10, every variant in the same run; two runs
on 2 CPUs under load average ~8-9, so absolute figures are inflated): `cotk-repro run` on an empty entry
0.40-0.43 s as shipped, 0.54-0.66 s without the coercion patch, 0.53-0.66 s without either part (`python main.py`:
0.07-0.08 s). `--version` (0.09 s) never imports Typer, and help rendered once is replayed from the help cache
(0.04-0.12 s) without Typer either: neither depends on this module. Help rendered anew (`COTK_REPRO_HELP_CACHE=0`):
`--help` 0.34 s with it, 0.27-0.50 s without; `evaluate --help` 0.36 s with it, 0.44-0.68 s without. Both parts
touch Typer's private API (0.29, pinned in pyproject.toml); tests/test_cli_startup.py fails when a new Typer no
longer needs the coercion patch.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any, get_args, get_origin


def _kind(annotation: Any) -> str | None:
    if annotation is str:
        return "str"
    if get_origin(annotation) is list and get_args(annotation) == (str,):
        return "list"
    if annotation is bool:
        return "bool"
    return None


def install() -> bool:
    """Patch Typer's parameter coercion for str parameters; returns whether it did."""
    try:
        from typer import core as typer_core
        from typer._coercion import RuntimeParam
    except ImportError:
        return False
    param_cls = getattr(typer_core, "_TyperParameter", None)
    original = getattr(param_cls, "get_runtime_param", None)
    if param_cls is None or original is None or getattr(original, "_cotk_repro", False):
        return False

    @dataclass(frozen=True)
    class _Strings(RuntimeParam):
        kind: str = "str"

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.kind == "bool":
                if isinstance(value, bool):
                    return value
                from typer._coercion import build_runtime_param  # e.g. "yes" from an env var

                return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)
            if self.kind == "list":
                return [v if isinstance(v, str) else str(v) for v in value]
            return value if isinstance(value, str) else str(value)

    def get_runtime_param(self):
        if getattr(self, "_runtime_param", None) is None:
            try:
                desc = self.type_descriptor
                info = desc.parameter_info
                kind = _kind(desc.annotation)
                plain = (
                    desc.file_annotation is None
                    and not desc.is_choice
                    and getattr(info, "parser", None) is None
                    and getattr(info, "click_type", None) is None
                )
            except Exception:
                kind, plain = None, False
            if kind is not None and plain:
                self._runtime_param = _Strings(parameter_info=info, annotation=desc.annotation, kind=kind)
        return original(self)

    get_runtime_param._cotk_repro = True  # type: ignore[attr-defined]
    param_cls.get_runtime_param = get_runtime_param
    _hide_flag_types(typer_core)
    return True


def _hide_flag_types(typer_core: Any) -> None:
    """Typer 0.29's rich help prints ``<bool>`` beside every on/off flag (``--json <bool>``), which reads as if
    the flag took a value; its plain help does not. A flag's type column is left empty, as Click's is."""
    option_cls: Any = getattr(typer_core, "TyperOption", None)  # None: then display_type_rich is None too
    original = getattr(option_cls, "display_type_rich", None)
    if original is None or getattr(original, "_cotk_repro", False):
        return

    def display_type_rich(self, ctx):
        if getattr(self, "is_flag", False) and not getattr(self, "count", False) and self.metavar is None:
            return None
        return original(self, ctx)

    display_type_rich._cotk_repro = True  # type: ignore[attr-defined]
    option_cls.display_type_rich = display_type_rich


class _DeferredMarkdown:
    """Stands for ``rich.markdown.Markdown`` in Typer's help module: imports and builds the real one when called."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.markdown import Markdown

        return Markdown(*args, **kwargs)


class _DeferredTraceback:
    """Stands for ``rich.traceback.Traceback`` in Typer's help module: imports the real one when used."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback(*args, **kwargs)

    @classmethod
    def from_exception(cls, *args: Any, **kwargs: Any) -> Any:
        """The real ``Traceback.from_exception``."""
        from rich.traceback import Traceback

        return Traceback.from_exception(*args, **kwargs)


_DEFERRED = {"rich.markdown": ("Markdown", _DeferredMarkdown), "rich.traceback": ("Traceback", _DeferredTraceback)}


def import_rich_help() -> Any:
    """Import ``typer.rich_utils`` without loading rich.markdown and rich.traceback; returns the module.

    The stand-in modules are in ``sys.modules`` only while Typer's module is executed; a later
    ``import rich.markdown`` anywhere gets the real module.
    """
    if "typer.rich_utils" in sys.modules:
        return sys.modules["typer.rich_utils"]
    placed = []
    for name, (attr, stand_in) in _DEFERRED.items():
        if name not in sys.modules:
            stub = types.ModuleType(name, "cotk-repro's stand-in while typer.rich_utils is imported")
            setattr(stub, attr, stand_in)
            sys.modules[name] = stub
            placed.append(name)
    try:
        import typer.rich_utils
    finally:
        for name in placed:
            if isinstance(sys.modules.get(name), types.ModuleType) and getattr(
                sys.modules[name], "__doc__", ""
            ).startswith("cotk-repro's stand-in"):
                del sys.modules[name]
    return typer.rich_utils
