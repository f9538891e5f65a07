"""The shape of a record and of a reproduction verdict: the pydantic models every reader validates through.

These models are the one description of both documents (docs/spec.md section 4): :func:`check_record`
(behind :func:`cotk_repro.records.validate_record`) and the dashboard's upload checks validate through
them, and the dashboard's OpenAPI request bodies are generated from them (:func:`upload_schemas`).

They *check*; they never *produce*. A document is validated as it is and then used as the dict it came
as: nothing is dumped from a model, so no default, alias or coercion ever reaches the bytes a record's id
and signatures are computed over (:mod:`cotk_repro.core.canonical`). Validation is strict (no ``"1"`` for
``1``, no ``true`` for a number) and every object admits keys the model does not name (newer writers may
add some; they are hashed and signed like the rest, :func:`cotk_repro.core.canonical.record_content`). The
dashboard stores and ranks only what the models define, so it refuses such keys (:func:`undefined_key`).

Importing this module imports pydantic (~0.15 s), so it is imported lazily, only where a document comes
from outside (``diff``, ``publish``, ``reproduce``, ``verify``, the dashboard); ``run`` writes its own
records without it.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from ..core.canonical import canonical_json
from ..errors import RecordError
from .identity import ID_PREFIX, RECORD_SCHEMA, REPRODUCTION_SCHEMA, VERDICTS, compute_id

HASH_PATTERN, COMMIT_PATTERN, ID_PATTERN = r"^[0-9a-fA-F]{64}$", r"^[0-9a-f]{7,64}$", r"^sha256:[0-9a-f]{64}$"
Hash = Annotated[str, Field(pattern=HASH_PATTERN, description="hex SHA-256 (a comparability hash)")]
Number = Annotated[float, Field(allow_inf_nan=False)]
Text = StrictStr | None


class _Object(BaseModel):
    """A JSON object of a record: the keys below are checked, other keys are allowed and kept."""

    model_config = ConfigDict(extra="allow", strict=True)


class Code(_Object):
    """``code``: the git state the run was made from."""

    commit: StrictStr = Field(description="the commit sha (hex)", pattern=COMMIT_PATTERN)
    branch: Text = None
    detached: StrictBool | None = None
    remote: Text = None
    remote_url: Text = Field(None, description="the remote's URL, credentials stripped (local remotes: `local:NAME`)")
    dirty: StrictBool | None = Field(None, description="uncommitted changes (only with `run --allow-dirty`)")


class Python(_Object):
    """``environment.python``."""

    version: Text = None
    implementation: Text = None
    major_minor: Text = None


class Package(_Object):
    """One installed distribution (``environment.packages``)."""

    name: StrictStr
    version: StrictStr
    install: Text = Field(None, description="editable, local, vcs or url; absent for an index install")


class Plugin(_Object):
    """One loaded plugin (``environment.plugins``)."""

    name: StrictStr
    version: Text = None


class Environment(_Object):
    """``environment``: what the run ran on. Never environment variables, tokens or home paths."""

    python: Python | None = None
    platform: dict[str, Any] | None = None
    packages: list[Package] | None = None
    cotk_repro_version: Text = None
    plugins: list[Plugin] | None = None
    accelerators: list[dict[str, Any]] | None = None
    dockerfile: Text = None
    dockerfile_sha256: Hash | None = None


class Project(_Object):
    """``project``: how the dashboard files the record (task, dataset)."""

    name: Text = None
    task: Text = None
    dataset: Text = None


class Command(_Object):
    """``command``: what ran, where and how it ended."""

    entry: Text = None
    args: list[StrictStr] | None = None
    cwd: Text = Field(None, description="relative to the repository root")
    result_file: Text = None
    started_at: Text = None
    duration_s: Number | None = None
    exit_status: StrictInt | None = None


class Interval(_Object):
    """A value's bootstrap interval (``evaluate --ci``; docs/metrics.md, "Significance and intervals")."""

    mean: Number
    half_width: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    samples: StrictInt | None = Field(None, ge=1, description="bootstrap resamples")
    seed: StrictInt | None = Field(None, ge=0, description="the seed of numpy's default_rng")


class Result(_Object):
    """One metric's result: the normalized form of :mod:`cotk_repro.core.results`."""

    value: Number
    hash: Hash | None = Field(None, description="the comparability hash; null: unverifiable")
    signature: Text = None
    metric: Text = None
    version: Text = None
    pinned: StrictBool | None = Field(
        None,
        description="false: computed on the outputs of a system not pinned to its weights (an endpoint's model); "
        "ranked below every pinned result (tier 1). Absent or true: pinned",
    )
    ci: Interval | None = Field(
        None, description="the value's bootstrap 95% interval: {mean, half_width, samples, seed}; shown, never ranked"
    )


class System(_Object):
    """``system``: the identity of the system whose outputs were scored (``cotk_repro.llm.system``)."""

    generator: StrictStr
    version: Text = None
    settings: dict[str, Any] | None = Field(None, description="weights and tokenizer digests, decoding settings")
    pinned: StrictBool | None = Field(None, description="false: an endpoint's model; every result is then unpinned")


class ProtocolRef(_Object):
    """``protocol``: the prompt protocol the outputs were made under."""

    sha256: Hash


class Record(_Object):
    """A cotk-repro record (schema ``cotk-repro/record``).

    Its ``id`` is ``sha256:`` + the hex SHA-256 of the canonical JSON of everything else (UTF-8, keys
    sorted, no insignificant whitespace, floats in shortest round-trip form)."""

    schema_name: Literal[RECORD_SCHEMA] = Field(alias="schema")  # type: ignore[valid-type]
    schema_version: StrictInt = Field(ge=1)
    id: StrictStr = Field(pattern=ID_PATTERN)
    status: StrictStr = Field(max_length=32, description="ok, failed or interrupted")
    code: Code
    environment: Environment
    project: Project
    command: Command
    results: dict[str, Result]
    data: dict[str, StrictStr] | None = Field(None, description="the dataloader hash codes, when known")
    error: Text = None
    cotk_repro_version: Text = None
    system: System | None = None
    protocol: ProtocolRef | None = None


class MetricRow(_Object):
    """One metric's verdict in a reproduction (``cotk-repro diff`` rows; also ``a_value``, ``b_value``, ``a_hash``,
    ``b_hash``, ``abs_diff`` and the ``rtol``/``atol`` it was judged with, which the dashboard checks itself)."""

    metric: StrictStr
    verdict: Text = None
    identical: StrictBool | None = Field(None, description="the same value to the last bit on both sides")
    widened: StrictBool | None = Field(None, description="judged with more than the metric declares")


class Rerun(_Object):
    """``rerun``: the reproduction's own results, from which the dashboard recomputes the verdict."""

    results: dict[str, Result]
    python: Text = None
    started_at: Text = None
    duration_s: Number | None = None


class Reproduction(_Object):
    """A reproduction verdict (schema ``cotk-repro/reproduction``): the output of ``reproduce --json``."""

    schema_name: Literal[REPRODUCTION_SCHEMA] = Field(alias="schema")  # type: ignore[valid-type]
    schema_version: StrictInt | None = None
    record_id: StrictStr = Field(max_length=80, description="the record it reproduces (required; signed with the rest)")
    verdict: Literal[VERDICTS]  # type: ignore[valid-type]
    runtime: Text = None
    metrics: list[MetricRow] | None = None
    environment_differences: list[dict[str, Any]] | None = None
    rerun: Rerun | None = None
    tolerances: dict[str, dict[str, Any]] | None = Field(None, description="{metric: {rtol, atol}} it used")
    tolerance_widened: StrictBool | None = Field(None, description="a metric was judged with more than it declares")
    error: Text = None
    limits: dict[str, dict[str, Any]] | None = Field(
        None, description="{timeout|memory|cpus|disk: {value, from, project_asked?}}: the limits it ran under"
    )


class SignedRecord(BaseModel):
    """A signed record upload: the record and its SSHSIG (namespace ``cotk-repro-record``) over its
    canonical JSON without ``id``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    record: Record
    signature: StrictStr = Field(max_length=16384, description="armored `ssh-keygen -Y sign` output")


class SignedReproduction(BaseModel):
    """A signed reproduction upload: the verdict and its SSHSIG (namespace ``cotk-repro-reproduction``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    reproduction: Reproduction
    signature: StrictStr = Field(max_length=16384, description="armored `ssh-keygen -Y sign` output")


_WORDS = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "list_type": "must be a list",
    "finite_number": "must be a finite number",
    "string_pattern_mismatch": "is malformed",
    "missing": "is missing",
}


_EXPECTED = {
    HASH_PATTERN: "64 hex digits of SHA-256",
    COMMIT_PATTERN: "a hex commit sha",
    ID_PATTERN: "'sha256:' and 64 hex digits",
}


def _sentence(exc: ValidationError, where: str) -> str:
    """The first error of ``exc`` as one sentence naming its key path."""
    err = exc.errors(include_url=False)[0]
    path = ".".join(str(p) for p in err["loc"])
    words = _WORDS.get(err["type"]) or err["msg"][:1].lower() + err["msg"][1:]
    expected = _EXPECTED.get(str((err.get("ctx") or {}).get("pattern")))
    if expected:
        words += f" (expected {expected})"
    shown = "" if err["type"] == "missing" else f", got {str(err.get('input'))[:60]!r}"
    return f"{where}: {path!r} {words}{shown}"


def _missing(model: type[BaseModel], data: dict[str, Any]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items() if f.is_required() and (f.alias or n) not in data]


def check_record(record: Any, where: str = "record") -> dict[str, Any]:
    """Validate a record against :class:`Record` and check that its id matches its content; returns it unchanged."""
    if not isinstance(record, dict):
        raise RecordError(f"{where} is not a JSON object")
    if record.get("schema") != RECORD_SCHEMA:
        raise RecordError(f"{where} is not a cotk-repro record (schema {record.get('schema')!r})")
    missing = _missing(Record, record)
    if missing:
        raise RecordError(f"{where} lacks {', '.join(missing)}")
    try:
        expected = compute_id(record)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"{where} cannot be hashed: {exc}") from None
    if record.get("id") != expected:
        raise RecordError(f"{where}: its id {record.get('id')!r} does not match its content ({expected})")
    try:
        Record.model_validate(record)
    except ValidationError as exc:
        raise RecordError(_sentence(exc, where)) from None
    return record


def undefined_key(document: Any, model: type[BaseModel] | None = None) -> str | None:
    """The dotted path of the first key of ``document`` that ``model`` (default :class:`Record`) does not
    define, or None. Free-form maps (``environment.platform``, ``results``' metric names) define every key.

    Readers admit such keys (a newer writer's, hashed and signed like the rest); the dashboard stores and
    ranks only what its schema defines, so it refuses them (422)."""
    hit = _undefined(model or Record, document, ())
    return None if hit is None else ".".join(str(p) for p in hit)


def _undefined(model: type[BaseModel], data: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    if not isinstance(data, dict):
        return None
    names = {f.alias or n: f for n, f in model.model_fields.items()}
    for key in data:
        if key not in names:
            return (*path, key)
    for key, f in names.items():
        if key in data:
            hit = _walk(f.annotation, data[key], (*path, key))
            if hit is not None:
                return hit
    return None


def _walk(tp: Any, value: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _undefined(tp, value, path)
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return _walk(args[0], value, path)
    if origin in (Union, types.UnionType):  # Optional[X] and X | None alike
        for arg in args:
            if (
                isinstance(arg, type)
                and issubclass(arg, BaseModel)
                and isinstance(value, dict)
                or get_origin(arg) in (list, dict)
                and isinstance(value, get_origin(arg))
            ):
                return _walk(arg, value, path)
        return None
    if origin is list and isinstance(value, list) and args:
        for i, item in enumerate(value):
            hit = _walk(args[0], item, (*path, i))
            if hit is not None:
                return hit
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        for key, item in value.items():
            hit = _walk(args[1], item, (*path, key))
            if hit is not None:
                return hit
    return None


def check_reproduction(verdict: Any, record_id: str | None = None, where: str = "the reproduction") -> dict[str, Any]:
    """Validate a reproduction verdict against :class:`Reproduction` (and, given ``record_id``, that it names
    that record); returns it unchanged. Raises :class:`RecordError`."""
    if not isinstance(verdict, dict):
        raise RecordError(f"{where} must be a JSON object (the `cotk-repro reproduce --json` output)")
    if verdict.get("schema") != REPRODUCTION_SCHEMA:
        raise RecordError(f"{where}'s schema must be {REPRODUCTION_SCHEMA!r}")
    if verdict.get("verdict") not in VERDICTS:
        raise RecordError(f"{where}'s verdict must be one of {', '.join(VERDICTS)}")
    if not isinstance(verdict.get("record_id"), str) or not verdict["record_id"].strip():
        raise RecordError(f"{where} must name the record it reproduces in its record_id (signed with the rest)")
    try:
        Reproduction.model_validate(verdict)
    except ValidationError as exc:
        raise RecordError(_sentence(exc, where)) from None
    rid = verdict["record_id"]
    if record_id is not None and _normal_id(rid) != record_id:
        raise RecordError(f"{where}'s record_id is not the record it is attached to")
    try:
        canonical_json(verdict)  # finite numbers, string keys, encodable text
    except (TypeError, ValueError, RecursionError) as exc:
        raise RecordError(f"{where} cannot be stored: {exc}") from None
    return verdict


def _normal_id(ref: str) -> str:
    ref = ref.strip().lower()
    return ref if ref.startswith(ID_PREFIX) else ID_PREFIX + ref


def upload_schemas(ref_template: str = "#/components/schemas/{model}") -> tuple[dict[str, Any], dict[str, Any]]:
    """``(bodies, definitions)``: the JSON schemas of the record and reproduction uploads (signed or bare),
    generated from the models, with the definitions they refer to (OpenAPI components)."""
    from pydantic.json_schema import models_json_schema

    keyed, defs = models_json_schema(
        [(m, "validation") for m in (Record, SignedRecord, Reproduction, SignedReproduction)], ref_template=ref_template
    )
    ref = {m.__name__: keyed[(m, "validation")] for m in (Record, SignedRecord, Reproduction, SignedReproduction)}
    bodies = {
        "record": {"oneOf": [ref["SignedRecord"], ref["Record"]]},
        "reproduction": {"oneOf": [ref["SignedReproduction"], ref["Reproduction"]]},
    }
    return bodies, defs.get("$defs", {})
