"""The one plugin manager, the built-in plugins, and the registries built from them.

Built-in plugin modules are registered with :meth:`pluggy.PluginManager.register`
exactly like entry-point plugins. Set ``COTK_REPRO_BUILTINS_ONLY=1`` to skip
entry-point plugins (tests, debugging). A plugin that fails to import, or whose
hook raises, is recorded as *broken* and shown by ``cotk-repro plugins``; the
rest keeps working.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from . import hookspecs
from ._version import __version__
from .core import entrypoints
from .errors import PluginError
from .protocols import contract_problem, product_problem

BUILTIN_PLUGINS: tuple[str, ...] = (
    "cotk_repro.builtins.tokenizers",
    "cotk_repro.builtins.dataloaders",
    "cotk_repro.builtins.metrics",
    "cotk_repro.builtins.runtimes",
    "cotk_repro.builtins.publish_targets",
    "cotk_repro.builtins.generators",
    "cotk_repro.builtins.templates",
    "cotk_repro.builtins.commands",
)

#: registry kind -> hook name
KINDS: dict[str, str] = {
    "tokenizer": "register_tokenizers",
    "dataloader": "register_dataloaders",
    "metric": "register_metrics",
    "runtime": "register_runtimes",
    "publish_target": "register_publish_targets",
    "generator": "register_generators",
    "template": "register_templates",
}

ENTRY_POINT_GROUP = "cotk_repro"


@dataclass
class PluginInfo:
    """One loaded plugin: name, version, module, whether built in, what it registers, and any load error."""

    name: str
    version: str
    builtin: bool
    module: str
    error: str | None = None
    registers: dict[str, list[str]] = field(default_factory=dict)
    #: one sentence per component refused at registration (it does not honour its kind's contract)
    refused: list[str] = field(default_factory=list)
    #: one sentence per name this plugin and another both register (neither is used under it)
    conflicts: list[str] = field(default_factory=list)

    @property
    def broken(self) -> bool:
        return self.error is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "builtin": self.builtin,
            "module": self.module,
            "status": "broken" if self.broken else "ok",
            "error": self.error,
            "registers": self.registers,
            "refused": self.refused,
            "conflicts": self.conflicts,
        }


@dataclass
class Component:
    """One registered component (metric, tokenizer, ...) and the plugin that provides it."""

    kind: str
    name: str
    obj: Any
    plugin: str
    plugin_version: str


def builtins_only() -> bool:
    """Return whether COTK_REPRO_BUILTINS_ONLY asks to skip third-party plugins."""
    return os.environ.get("COTK_REPRO_BUILTINS_ONLY", "").lower() in ("1", "true", "yes")


class Plugins:
    """The plugin manager with cotk-repro's bookkeeping: versions, broken plugins, registries."""

    def __init__(self, load_entry_points: bool | None = None):
        self.pm = pluggy.PluginManager("cotk_repro")
        self.pm.add_hookspecs(hookspecs)
        self.infos: dict[str, PluginInfo] = {}
        self._registries: dict[str, dict[str, Component]] = {}
        self._conflicts: dict[str, list[str]] = {}
        self._refused: dict[str, dict[str, str]] = {}
        for module_name in BUILTIN_PLUGINS:
            module = importlib.import_module(module_name)
            self._add(module, module_name, __version__, builtin=True, module_name=module_name)
        if load_entry_points is None:
            load_entry_points = not builtins_only()
        if load_entry_points:
            self._load_entry_points()

    # -- loading -----------------------------------------------------------------
    def _add(self, plugin: Any, name: str, version: str, *, builtin: bool, module_name: str) -> None:
        info = PluginInfo(name=name, version=version, builtin=builtin, module=module_name)
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:  # invalid hookimpl, duplicate registration, ...
            info.error = f"{type(exc).__name__}: {exc}"
        self.infos[name] = info

    def _load_entry_points(self) -> None:
        found = entrypoints.scan(ENTRY_POINT_GROUP)
        if found is None:  # a zip archive on the path: only importlib.metadata reads those
            import importlib.metadata as md

            found = [
                entrypoints.EntryPoint(
                    ep.dist.metadata["Name"] if ep.dist is not None else ep.name,
                    ep.dist.version if ep.dist is not None else "unknown",
                    ep.name,
                    ep.value,
                )
                for ep in md.entry_points(group=ENTRY_POINT_GROUP)
            ]
        seen: set[str] = set()
        for ep in found:
            key = f"{ep.dist}:{ep.name}" if ep.dist in seen else ep.dist
            seen.add(ep.dist)
            try:
                plugin = ep.load()
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                self.infos[key] = PluginInfo(
                    name=key,
                    version=ep.version,
                    builtin=False,
                    module=ep.value,
                    error=f"failed to import {ep.value}: {type(exc).__name__}: {exc}",
                )
                continue
            self._add(plugin, key, ep.version, builtin=False, module_name=ep.value)

    # -- registries --------------------------------------------------------------
    def _call_each(self, hook_name: str, **kwargs_for: Callable[[str], Any]) -> None:
        """Call one hook implementation at a time so each call is attributed to its plugin."""
        caller = getattr(self.pm.hook, hook_name)
        for impl in caller.get_hookimpls():  # registration order: built-ins first
            info = self.infos.get(impl.plugin_name)
            if info is None or info.broken:
                continue
            kwargs = {arg: make(impl.plugin_name) for arg, make in kwargs_for.items() if arg in impl.argnames}
            try:
                impl.function(**kwargs)
            except Exception as exc:
                if info.builtin:  # a built-in that fails is a broken install: say so, never hide it
                    raise
                info.error = f"{hook_name} raised {type(exc).__name__}: {exc}"

    def _build(self, kind: str) -> None:
        registry: dict[str, Component] = {}
        conflicts: list[str] = []
        refused: dict[str, str] = {}
        refused_by: dict[str, str] = {}

        def make_register(plugin_name: str) -> Callable[[str, Any], None]:
            info = self.infos[plugin_name]

            def register(name: str, component: Any) -> None:
                if not isinstance(name, str) or not name:
                    raise PluginError(f"plugin {plugin_name!r} registered a {kind} without a name")
                if name in registry or name in refused_by:  # a clash whether or not the first honours the contract
                    other = registry[name].plugin if name in registry else refused_by[name]
                    message = f"{kind} {name!r} is registered by two plugins: {other!r} and {plugin_name!r}"
                    conflicts.append(message)
                    for who in {other, plugin_name}:
                        if who in self.infos:
                            self.infos[who].conflicts.append(message)
                    return
                problem = contract_problem(kind, name, component)
                if problem is not None:  # never listed, never used: one sentence naming the plugin instead
                    said = kind.replace("_", " ")
                    refused[name] = (
                        f"{self.describe(plugin_name)} registers the {said} {name!r}, which does not "
                        f"honour the {said} contract: {problem}"
                    )
                    refused_by[name] = plugin_name
                    info.refused.append(refused[name])
                    return
                registry[name] = Component(kind, name, component, plugin_name, info.version)
                info.registers.setdefault(kind, []).append(name)

            return register

        self._call_each(KINDS[kind], register=make_register)
        self._registries[kind] = registry
        self._conflicts[kind] = conflicts
        self._refused[kind] = refused

    def describe(self, plugin_name: str) -> str:
        """``plugin 'NAME'``, with its module when that is not its name (``plugin 'dist' (dist_module)``)."""
        info = self.infos.get(plugin_name)
        module = info.module if info is not None else plugin_name
        return f"plugin {plugin_name!r}" + (f" ({module})" if module != plugin_name else "")

    def build(self, kind: str, name: str, *args: Any, **options: Any) -> Any:
        """The ``kind`` ``name`` built with ``args`` and ``options``: refused with one sentence naming its plugin
        (:class:`PluginError`) when what it builds does not honour its protocol (:mod:`cotk_repro.protocols`)."""
        component = self.get(kind, name)
        product = component.obj(*args, **options)
        problem = product_problem(kind, product)
        if problem is not None:
            said = kind.replace("_", " ")
            raise PluginError(
                f"{self.describe(component.plugin)} registers the {said} {name!r}, which does not "
                f"honour the {said} contract: {problem}"
            )
        return product

    def refusal(self, kind: str, name: str) -> str | None:
        """The sentence that refused ``kind`` ``name`` at registration, or None."""
        self.registry(kind, strict=False)
        return self._refused[kind].get(name)

    def registry(self, kind: str, *, strict: bool = True) -> dict[str, Component]:
        """All components of ``kind`` by name. Raises on name clashes when ``strict``."""
        if kind not in KINDS:
            raise KeyError(kind)
        if kind not in self._registries:
            self._build(kind)
        if strict and self._conflicts[kind]:
            raise PluginError(self._conflicts[kind][0])
        return self._registries[kind]

    def get(self, kind: str, name: str) -> Component:
        found = self.registry(kind, strict=False).get(name)
        if found is not None and self.infos[found.plugin].builtin:  # a built-in name: no plugin can take it
            return found
        registry = self.registry(kind)
        if name not in registry:
            refused = self.refusal(kind, name)
            if refused is not None:
                raise PluginError(refused)
            known = ", ".join(sorted(registry)) or "none"
            from .first_party import missing_sentence

            missing = missing_sentence(kind, name)  # a first-party plugin's name: say which one to install
            if missing is not None:
                raise PluginError(f"{missing}; registered: {known}")
            raise PluginError(f"unknown {kind.replace('_', ' ')} {name!r}; registered: {known}")
        return registry[name]

    def conflicts(self) -> list[str]:
        for kind in KINDS:
            self.registry(kind, strict=False)
        return [c for kind in KINDS for c in self._conflicts[kind]]

    def add_commands(self, cli: Any) -> None:
        self._call_each("register_commands", cli=lambda _name: cli)

    def loaded(self) -> list[dict[str, str]]:
        """(name, version) of every plugin that loaded, for records."""
        return [
            {"name": i.name, "version": i.version}
            for i in sorted(self.infos.values(), key=lambda i: i.name)
            if not i.broken
        ]


_PLUGINS: Plugins | None = None


def get_plugins() -> Plugins:
    """Return the process-wide Plugins registry, loading it on first use."""
    global _PLUGINS
    if _PLUGINS is None:
        _PLUGINS = Plugins()
    return _PLUGINS


def reset_plugins() -> None:
    """Forget the loaded plugins (tests that install or remove plugins)."""
    global _PLUGINS
    _PLUGINS = None


_BUILTIN_TABLES: dict[str, dict[str, Any]] = {}


def builtin_component(kind: str, name: str) -> Any | None:
    """The built-in component ``kind`` ``name``, found by calling the built-in modules' own hook functions: no entry
    points read, no plugin imported, no plugin manager (~15 ms of a 0.1 s data load). ``None`` if no built-in has
    that name. The answer is the full registry's: built-ins register first, and a plugin that registers a built-in's
    name is a clash (``cotk-repro plugins`` and ``run`` refuse it) that never replaces the built-in."""
    table = _BUILTIN_TABLES.get(kind)
    if table is None:
        table = {}
        hook = KINDS[kind]
        for module_name in BUILTIN_PLUGINS:
            register_all = getattr(importlib.import_module(module_name), hook, None)
            if register_all is not None:
                register_all(register=table.setdefault)
        _BUILTIN_TABLES[kind] = table
    return table.get(name)


def get_component(kind: str, name: str) -> Any:
    """Return the object registered as `kind` `name`; raise PluginError listing the known names if none. A built-in
    name is answered without loading the plugins while they are not loaded yet."""
    if _PLUGINS is None:
        found = builtin_component(kind, name)
        if found is not None:
            return found
    return get_plugins().get(kind, name).obj


def registry(kind: str) -> dict[str, Component]:
    """Return every registered component of `kind`, by name."""
    return get_plugins().registry(kind)


def refusal(kind: str, name: str) -> str | None:
    """The one sentence that refused ``kind`` ``name`` at registration (its plugin breaks its contract), or None."""
    return get_plugins().refusal(kind, name)
