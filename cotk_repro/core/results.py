"""The result format, owned here alone: the CoTK-style result dict, the result file, their parsing and writing.

A metric's ``close()`` returns a result dict (:func:`result_entry` builds one entry); :func:`parse_result_dict`
reads one back; :func:`save_result` writes the result file and :func:`read_result_file` /
:func:`normalize_results` read and validate it. Nothing else spells the suffixes below.

Two forms of the result file are accepted (docs/spec.md section 4):

* minimal, what CoTK metrics return, merged::

      {"bleu": 0.0858, "bleu hashvalue": "70e0...", "bleu signature": "bleu|n:4|..."}

* rich, written by :func:`save_result`::

      {"schema": "cotk-repro/result", "schema_version": 1,
       "results": {"bleu": {"value": 0.0858, "hash": "70e0...", "signature": "...",
                            "metric": "bleu", "version": "1"}},
       "data": {"raw": "...", "data": "...", "vocab": "...", "setting": "...", "general": "..."}}

Both normalize to ``{"results": {name: {value, hash, signature, metric, version}}, "data": ...}``.
A metric without a hash is kept, with ``hash: null`` (*unverifiable*).

A result computed on the outputs of an *unpinned* system (a language model served by an endpoint: its model id
pins no weights, :mod:`cotk_repro.llm.system`) says so: ``"KEY pinned": false`` beside the value in a result
dict, ``"pinned": false`` in the result's object once normalized (only ``false`` is kept: absent means
pinned). The rich file may also hold ``"system"`` (the generator's identity: ``generator``, ``version``,
``settings``, ``pinned``) and ``"protocol"`` (``{"sha256": ...}``, the prompt protocol's hash); a system
that is not pinned marks every result of the file unpinned. A marker only ever makes a result rank lower
(tier 1, :func:`cotk_repro.core.ranking.tier`), so a file has nothing to gain by writing one it should not.

A value measured during training at epoch N (a curve point) is stored under ``NAME@epoch-N`` beside the
final ``NAME`` (the Texygen templates write them); :func:`epoch_key` reads such a key back.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import RunError
from . import jsonbudget
from .canonical import is_sha256_hex
from .fileio import atomic_write
from .jsonbudget import shown

RESULT_SCHEMA = "cotk-repro/result"
HASH_SUFFIX = " hashvalue"
SIGNATURE_SUFFIX = " signature"
#: ``"KEY pinned": false``: KEY was computed on the outputs of a system not pinned to its weights
PINNED_SUFFIX = " pinned"
#: ``"KEY ci": {"mean", "half_width", "samples", "seed"}``: KEY's bootstrap interval (``evaluate --ci``;
#: :mod:`cotk_repro.metrics.significance`)
CI_SUFFIX = " ci"
EPOCH_MARK = "@epoch-"
_EPOCH_KEY = re.compile(r"^(?P<base>.+)@epoch-(?P<epoch>[0-9]{1,9})$")


def result_entry(key: str, value: float, hash_: str | None, sig: str | None) -> dict[str, Any]:
    """``{key: value, key+" hashvalue": hash, key+" signature": sig}`` (None parts left out)."""
    out: dict[str, Any] = {key: float(value)}
    if hash_ is not None:
        out[key + HASH_SUFFIX] = hash_
    if sig is not None:
        out[key + SIGNATURE_SUFFIX] = sig
    return out


def is_companion_key(key: str) -> bool:
    """Whether ``key`` is the hash, signature, pinned marker or interval beside a value (``"bleu hashvalue"``), not a
    value."""
    return key.endswith((HASH_SUFFIX, SIGNATURE_SUFFIX, PINNED_SUFFIX, CI_SUFFIX))


def epoch_key(key: str) -> tuple[str, int] | None:
    """``"nll-oracle@epoch-5"`` -> ``("nll-oracle", 5)``; None for a key that is not a curve point."""
    m = _EPOCH_KEY.match(key)
    return (m.group("base"), int(m.group("epoch"))) if m else None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_hash(where: str, name: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and is_sha256_hex(value.lower()):
        return value.lower()
    raise RunError(
        f"{where}: the hash of {shown(name)} is malformed (expected 64 hex digits of SHA-256), got {shown(value)}"
    )


def check_interval(value: Any, where: str, name: str) -> dict[str, Any]:
    """A value's bootstrap interval as a result holds it (``"KEY ci"``, or ``"ci"`` in the rich form): an object with
    finite numbers ``mean`` and ``half_width`` (>= 0), and whole ``samples`` and ``seed`` when given; returned as
    plain numbers."""
    ok = isinstance(value, dict) and _is_number(value.get("mean")) and _is_number(value.get("half_width"))
    ok = ok and value["half_width"] >= 0
    ok = ok and all(
        value.get(k) is None or (isinstance(value[k], int) and not isinstance(value[k], bool) and value[k] >= 0)
        for k in ("samples", "seed")
    )
    if not ok:
        raise RunError(
            f"{where}: the interval of {shown(name)} must be an object with numbers 'mean' and 'half_width' "
            f"(>= 0) and whole 'samples' and 'seed', got {shown(value)}"
        )
    out = {"mean": float(value["mean"]), "half_width": float(value["half_width"])}
    out.update({k: value[k] for k in ("samples", "seed") if value.get(k) is not None})
    return out


def _entry(
    where: str,
    name: str,
    value: Any,
    hash_: Any,
    signature: Any,
    metric: Any,
    version: Any,
    pinned: Any = None,
    ci: Any = None,
) -> dict[str, Any]:
    if not _is_number(value):
        raise RunError(f"{where}: the value of {shown(name)} is not a finite number: {shown(value)}")
    if signature is not None and not isinstance(signature, str):
        raise RunError(f"{where}: the signature of {shown(name)} must be a string")
    if pinned is not None and not isinstance(pinned, bool):
        raise RunError(f"{where}: 'pinned' of {shown(name)} must be true or false, got {shown(pinned)}")
    out = {
        "value": value,
        "hash": _check_hash(where, name, hash_),
        "signature": signature,
        "metric": metric if isinstance(metric, str) else None,
        "version": str(version) if version is not None else None,
    }
    if pinned is False:  # only the worse claim is kept: absent means pinned
        out["pinned"] = False
    if ci is not None:  # only where there is one: results without an interval stay as they were
        out["ci"] = check_interval(ci, where, name)
    return out


def check_system(system: Any, where: str) -> dict[str, Any]:
    """A system's identity (:func:`cotk_repro.llm.system.describe_system`) as a result file holds it, validated:
    ``generator`` (str), ``version`` (str), ``settings`` (object), ``pinned`` (bool). Returned unchanged."""
    if not isinstance(system, dict):
        raise RunError(f"{where}: 'system' must be an object")
    if not isinstance(system.get("generator"), str) or not system["generator"]:
        raise RunError(f"{where}: 'system' must name its generator (a string)")
    if not isinstance(system.get("version", ""), str):
        raise RunError(f"{where}: the system's 'version' must be a string")
    if not isinstance(system.get("settings", {}), dict):
        raise RunError(f"{where}: the system's 'settings' must be an object")
    if not isinstance(system.get("pinned", True), bool):
        raise RunError(f"{where}: the system's 'pinned' must be true or false")
    return system


def check_protocol(protocol: Any, where: str) -> dict[str, Any]:
    """The prompt protocol a result file names: ``{"sha256": HEX}`` (other keys kept), validated."""
    if not isinstance(protocol, dict) or not is_sha256_hex(protocol.get("sha256")):
        raise RunError(f"{where}: 'protocol' must be an object with the protocol's 'sha256' (64 hex digits)")
    return protocol


def _unpin(results: dict[str, dict[str, Any]], system: dict[str, Any] | None) -> None:
    """A system that is not pinned marks every result computed on its outputs unpinned."""
    if system is not None and system.get("pinned") is False:
        for item in results.values():
            item["pinned"] = False


def normalize_results(data: Any, where: str = "result file") -> dict[str, Any]:
    """Validate a parsed result file; return ``{"results": {...}, "data": {...} | None}``, plus ``"system"`` and
    ``"protocol"`` when the rich file holds them."""
    if not isinstance(data, dict):
        raise RunError(f"{where}: must hold a JSON object, got {type(data).__name__}")
    if data.get("schema") == RESULT_SCHEMA:
        raw = data.get("results")
        if not isinstance(raw, dict):
            raise RunError(f"{where}: 'results' must be an object")
        results = {}
        for name, item in raw.items():
            if not isinstance(item, dict):
                raise RunError(f"{where}: result {shown(name)} must be an object with a 'value'")
            results[name] = _entry(
                where,
                name,
                item.get("value"),
                item.get("hash"),
                item.get("signature"),
                item.get("metric"),
                item.get("version"),
                item.get("pinned"),
                item.get("ci"),
            )
        codes = data.get("data")
        if codes is not None and (not isinstance(codes, dict) or not all(isinstance(v, str) for v in codes.values())):
            raise RunError(f"{where}: 'data' must map hash names to hex strings")
        out: dict[str, Any] = {"results": results, "data": codes}
        if data.get("system") is not None:
            out["system"] = check_system(data["system"], where)
            _unpin(results, out["system"])
        if data.get("protocol") is not None:
            out["protocol"] = check_protocol(data["protocol"], where)
        return out
    return {"results": parse_result_dict(data, where), "data": None}


def parse_result_dict(
    data: Mapping[str, Any], where: str = "the result", *, skip_extras: bool = False
) -> dict[str, dict[str, Any]]:
    """A CoTK-style result dict -> ``{key: {value, hash, signature, metric, version}}``, validated.

    ``skip_extras``: leave out values that are not numbers (e.g. per-sentence lists some metrics add)
    instead of refusing them. At least one value is required.
    """
    if not isinstance(data, Mapping):
        raise RunError(f"{where}: must be a result dict, not a {type(data).__name__}")
    results = {}
    for key, value in data.items():
        if is_companion_key(key):
            base = key.rsplit(" ", 1)[0]
            if base not in data:
                raise RunError(f"{where}: {shown(key)} has no metric {shown(base)} beside it")
            continue
        if skip_extras and (isinstance(value, bool) or not isinstance(value, (int, float))):
            continue
        results[key] = _entry(
            where,
            key,
            value,
            data.get(key + HASH_SUFFIX),
            data.get(key + SIGNATURE_SUFFIX),
            key,
            None,
            data.get(key + PINNED_SUFFIX),
            data.get(key + CI_SUFFIX),
        )
    if not results:
        raise RunError(f"{where}: holds no metric values")
    return results


def read_result_file(path: Path, *, not_before: float | None = None) -> dict[str, Any]:
    """Read and validate the result file written by an entry. ``not_before``: run start (epoch s)."""
    path = Path(path)
    if not path.is_file():
        raise RunError(f"the entry did not write its result file {path}")
    if not_before is not None and path.stat().st_mtime < not_before - 1.0:
        raise RunError(f"the result file {path} is stale: it was not written during this run")
    try:
        data = jsonbudget.loads(path.read_bytes(), what=f"the result file {path}")
    except jsonbudget.JSONBudgetError as exc:
        raise RunError(exc.message) from None
    return normalize_results(data, where=str(path))


def save_result(
    results: Mapping[str, Any] | Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str] = "result.json",
    *,
    dataloader: Any = None,
    data: Mapping[str, str] | None = None,
    system: Mapping[str, Any] | None = None,
    protocol: Any = None,
) -> Path:
    """Write a rich result file from metric outputs (``close()`` dicts), merged.

    ``dataloader``: a cotk-repro dataloader whose ``hash_codes`` go into ``data``. ``system``: the identity of
    the system whose outputs were scored (:func:`cotk_repro.llm.system.describe_system`, e.g. a
    ``Generation.system``), written as the file's ``"system"``; when it is not pinned every result is marked
    ``"pinned": false``. ``protocol``: the prompt protocol (an object with ``sha256``, or ``{"sha256": ...}``),
    written as ``"protocol"``. Neither changes a hash or a signature: :func:`cotk_repro.llm.system.stamp_system`
    and ``stamp_protocol`` do that on the result dicts.
    """
    if isinstance(results, Mapping):
        results = [results]
    merged: dict[str, Any] = {}
    for part in results:
        merged.update(part)
    normalized = normalize_results(merged, where="save_result")["results"]
    for item in normalized.values():
        sig = item.get("signature") or ""
        fields = dict(f.split(":", 1) for f in sig.split("|")[1:] if ":" in f)
        if sig:
            item["metric"] = sig.split("|", 1)[0]
        if "v" in fields:
            item["version"] = fields["v"]
    codes = dict(data) if data is not None else None
    if dataloader is not None:
        codes = dict(dataloader.hash_codes)
    doc: dict[str, Any] = {"schema": RESULT_SCHEMA, "schema_version": 1, "results": normalized, "data": codes}
    if system is not None:
        try:
            plain = json.loads(json.dumps(dict(system), allow_nan=False))  # JSON as written, a copy
        except (TypeError, ValueError) as exc:
            raise RunError(f"save_result: the system cannot be written as JSON: {exc}") from None
        doc["system"] = check_system(plain, "save_result")
        _unpin(normalized, doc["system"])
    if protocol is not None:
        sha = protocol.get("sha256") if isinstance(protocol, Mapping) else getattr(protocol, "sha256", None)
        doc["protocol"] = check_protocol({"sha256": sha}, "save_result")
    return atomic_write(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
