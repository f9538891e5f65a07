"""The identity of a system that made outputs, and how a result says which system it scored.

A system is a registered generator with its settings (:func:`describe_system`): ``{"generator", "version",
"settings", "pinned"}``. ``settings`` hold what fixes the outputs (for a local model its weights' and
tokenizer's digests, for an endpoint the server's model id, and the decoding settings). ``pinned`` says
whether those settings pin the outputs down to weights: a model served by an OpenAI-compatible endpoint is
not pinned (the server may swap what stands behind a model id), so its results rank *unpinned*: tier 1,
below every pinned result, the same mechanism as a dirty-tree or unsigned record
(:func:`cotk_repro.core.ranking.tier`).

:func:`stamp_system` puts the system into a metric's result dict: every signature gains
``|system:<generator>@<first 12 hex of the settings' hash>``. The hash is left as it is: two systems are what
a comparison compares, so their results must share a hash. An unpinned system's results also gain the marker
``"KEY pinned": false`` (:mod:`cotk_repro.core.results`), which :func:`cotk_repro.save_result`, ``run``'s
record, the dashboard and ``compare`` keep. The marker can only lower a result's rank: nothing is gained by
writing it falsely, and a record that leaves it out where it belongs cannot be caught by any reader (an
endpoint's outputs look like any other), which is why the id and the signature cover it as they cover the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.canonical import hash_object
from ..core.results import PINNED_SUFFIX, SIGNATURE_SUFFIX, check_system, is_companion_key


def _plain_settings(settings: Any) -> dict[str, Any]:
    """Settings as JSON can hold them (values it cannot: their ``repr``), the way the output cache keys them."""
    if not isinstance(settings, dict):
        return {}
    try:
        hash_object(settings)
        return dict(settings)
    except (TypeError, ValueError):
        return {str(k): repr(v) for k, v in sorted(settings.items(), key=lambda kv: str(kv[0]))}


def describe_system(generator: Any, registered_name: str, *, settings: Mapping[str, Any] | None = None) -> dict:
    """``{"generator": NAME, "version": ..., "settings": {...}, "pinned": bool}`` of a generator object.

    ``NAME`` is the generator's ``name`` (else ``registered_name``); ``settings`` its ``settings`` attribute
    (else the ``settings`` it was made with); ``pinned`` its ``pinned`` attribute, True when it has none (code
    such as ``copy`` or ``ngram`` is pinned by the environment the record captures)."""
    own = getattr(generator, "settings", None)
    return {
        "generator": str(getattr(generator, "name", None) or registered_name),
        "version": str(getattr(generator, "version", "") or ""),
        "settings": _plain_settings(own if isinstance(own, dict) else dict(settings or {})),
        "pinned": bool(getattr(generator, "pinned", True)),
    }


def system_tag(system: Mapping[str, Any]) -> str:
    """The signature field of a system: ``system:<generator>@<first 12 hex of hash_object(settings)>``."""
    return f"system:{system['generator']}@{hash_object(system.get('settings') or {})[:12]}"


def stamp_system(result: Mapping[str, Any], system: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the result dict ``result`` (as metrics return it) saying which system made the scored outputs.

    Every ``KEY signature`` gains ``|system:...`` (:func:`system_tag`; once: a signature that has it already is
    left alone); no hash changes. When ``system["pinned"]`` is false, every value ``KEY`` (a number; extras
    such as per-sentence lists are not values) gains ``"KEY pinned": false``. ``system`` is checked as a result
    file's ``system`` is (:class:`~cotk_repro.errors.RunError` otherwise)."""
    check_system(dict(system), "stamp_system")
    tag = system_tag(system)
    out = dict(result)
    for key, value in result.items():
        if key.endswith(SIGNATURE_SUFFIX) and isinstance(value, str) and tag not in value.split("|"):
            out[key] = value + "|" + tag
    if system.get("pinned") is False:
        for key, value in result.items():
            if not is_companion_key(key) and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key + PINNED_SUFFIX] = False
    return out
