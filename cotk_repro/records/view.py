"""The typed read view of a record: what readers ask of a record, without indexing its raw JSON.

``RecordView.of(record)`` reads the record's canonical JSON dict into frozen dataclasses. The dict stays the
record: its id and signatures are computed over it (:mod:`cotk_repro.core.canonical`), never over anything
rebuilt from a view, and a view is never written back. Every field is typed and tolerant: a key that is missing,
or whose value is not of the documented type (a stranger's malformed record), reads as ``None`` (a list: empty,
keeping only its objects), so reading never raises; what a malformed record is told stays the business of
validation (:func:`cotk_repro.records.validate_record`, :mod:`cotk_repro.records.model`) and of the validators
that take a section *as recorded* (``command.recorded``, ``environment.recorded``, ``environment.packages_recorded``:
``reproduce`` judges those itself, with its own sentences).

The shape read is :class:`cotk_repro.records.model.Record` (docs/spec.md section 4); this module imports no
pydantic, so ``run`` and the command line read their own records through it at no cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.ranking import system_pinned


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _objects(value: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(v for v in value if isinstance(v, dict)) if isinstance(value, list) else ()


def _number(value: Any) -> float | None:
    """A JSON number as recorded (an int stays an int: exports show it as written), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


@dataclass(frozen=True)
class Code:
    """``code``: the git state the run was made from."""

    commit: str | None = None
    branch: str | None = None
    remote: str | None = None
    #: credentials stripped (a local remote: ``local:NAME``)
    remote_url: str | None = None
    #: True only for a run made with ``run --allow-dirty`` (absent, as most records have it: None)
    dirty: bool | None = None

    @classmethod
    def of(cls, value: Any) -> Code:
        """Read ``code`` as recorded."""
        d = _obj(value)
        return cls(
            _str(d.get("commit")),
            _str(d.get("branch")),
            _str(d.get("remote")),
            _str(d.get("remote_url")),
            _bool(d.get("dirty")),
        )


@dataclass(frozen=True)
class Project:
    """``project``: how the dashboard files the record."""

    name: str | None = None
    task: str | None = None
    dataset: str | None = None

    @classmethod
    def of(cls, value: Any) -> Project:
        """Read ``project`` as recorded."""
        d = _obj(value)
        return cls(_str(d.get("name")), _str(d.get("task")), _str(d.get("dataset")))


@dataclass(frozen=True)
class Command:
    """``command``: what ran, where and how it ended; ``recorded`` is the section as recorded (any JSON)."""

    recorded: Any = None
    entry: str | None = None
    cwd: str | None = None
    result_file: str | None = None
    args: tuple[str, ...] = ()
    started_at: str | None = None
    duration_s: float | None = None
    exit_status: int | None = None

    @classmethod
    def of(cls, value: Any) -> Command:
        """Read ``command`` as recorded."""
        d = _obj(value)
        args = d.get("args")
        status = d.get("exit_status")
        return cls(
            value,
            _str(d.get("entry")),
            _str(d.get("cwd")),
            _str(d.get("result_file")),
            tuple(a for a in args if isinstance(a, str)) if isinstance(args, list) else (),
            _str(d.get("started_at")),
            _number(d.get("duration_s")),
            status if isinstance(status, int) and not isinstance(status, bool) else None,
        )


@dataclass(frozen=True)
class Environment:
    """``environment``: what the run ran on; ``recorded`` and ``packages_recorded`` as recorded (any JSON)."""

    recorded: Any = None
    python_version: str | None = None
    python_implementation: str | None = None
    python_major_minor: str | None = None
    platform: Mapping[str, Any] = field(default_factory=dict)
    #: ``packages`` as recorded (absent: an empty list; ``reproduce``'s lock judges the rest)
    packages_recorded: Any = None
    #: the package entries that are objects
    packages: tuple[Mapping[str, Any], ...] = ()
    plugins: tuple[Mapping[str, Any], ...] = ()
    accelerators: tuple[Mapping[str, Any], ...] = ()
    cotk_repro_version: str | None = None
    dockerfile: str | None = None
    dockerfile_sha256: str | None = None

    @classmethod
    def of(cls, value: Any) -> Environment:
        """Read ``environment`` as recorded."""
        d = _obj(value)
        py = _obj(d.get("python"))
        return cls(
            value,
            _str(py.get("version")),
            _str(py.get("implementation")),
            _str(py.get("major_minor")),
            _obj(d.get("platform")),
            d.get("packages", []),
            _objects(d.get("packages")),
            _objects(d.get("plugins")),
            _objects(d.get("accelerators")),
            _str(d.get("cotk_repro_version")),
            _str(d.get("dockerfile")),
            _str(d.get("dockerfile_sha256")),
        )


def interval_of(result: Any) -> dict[str, float] | None:
    """``{"mean", "half_width"}`` of a recorded result's ``ci``; None when it has none or one of another shape."""
    ci = result.get("ci") if isinstance(result, Mapping) else None
    if not isinstance(ci, Mapping):
        return None
    mean, half = _number(ci.get("mean")), _number(ci.get("half_width"))
    if mean is None or half is None or not half >= 0:
        return None
    return {"mean": float(mean), "half_width": float(half)}


@dataclass(frozen=True)
class Result:
    """One metric's result: value, comparability hash (None: unverifiable), readable signature."""

    value: float | None = None
    hash: str | None = None
    signature: str | None = None
    metric: str | None = None
    version: str | None = None
    #: the result object as recorded (what ``diff`` and the verdicts compare)
    recorded: Mapping[str, Any] = field(default_factory=dict)
    #: False only when the result says ``"pinned": false`` (an unpinned system's outputs; anything else: pinned)
    pinned: bool = True

    @property
    def ci(self) -> dict[str, float] | None:
        """The value's bootstrap interval, ``{"mean", "half_width"}``, when the result has a well-formed one
        (``evaluate --ci``; docs/metrics.md, "Significance and intervals")."""
        return interval_of(self.recorded)

    @classmethod
    def of(cls, value: Any) -> Result:
        """Read one result as recorded."""
        d = _obj(value)
        return cls(
            _number(d.get("value")),
            _str(d.get("hash")),
            _str(d.get("signature")),
            _str(d.get("metric")),
            _str(d.get("version")),
            d,
            d.get("pinned") is not False,
        )


@dataclass(frozen=True)
class RecordView:
    """A record read through its documented fields (docs/spec.md section 4); ``raw`` is the record itself."""

    raw: Mapping[str, Any]
    id: str | None
    status: str | None
    error: str | None
    code: Code
    project: Project
    command: Command
    environment: Environment
    #: metric name -> result, the entries that are objects, in the record's order
    results: Mapping[str, Result]
    #: the dataloader hash codes, when known
    data: Mapping[str, Any] | None
    cotk_repro_version: str | None
    #: the identity of the system whose outputs were scored (an LLM evaluation's), as recorded; None: not recorded
    system: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, record: Any) -> RecordView:
        """The view of ``record`` (a record's JSON dict; anything else reads as an empty record)."""
        d = _obj(record)
        results = d.get("results")
        return cls(
            d,
            _str(d.get("id")),
            _str(d.get("status")),
            _str(d.get("error")),
            Code.of(d.get("code")),
            Project.of(d.get("project")),
            Command.of(d.get("command")),
            Environment.of(d.get("environment")),
            {k: Result.of(v) for k, v in results.items() if isinstance(v, dict)} if isinstance(results, dict) else {},
            d.get("data") if isinstance(d.get("data"), dict) else None,
            _str(d.get("cotk_repro_version")),
            _obj(d.get("system")) or None,
        )

    @property
    def ok(self) -> bool:
        """Whether the run succeeded (status ``ok``): only such a record has results to reproduce."""
        return self.status == "ok"

    def pinned(self, metric: str) -> bool:
        """Whether ``metric``'s result was computed on the outputs of a pinned system, derived from the system the
        record describes (:func:`cotk_repro.core.ranking.system_pinned`): False when the result says
        ``"pinned": false``, when the record's ``system`` does or names an endpoint's generator, or when any of
        its results' signatures names one (``|system:openai@...``); the worse claim wins, none can raise a tier."""
        result = self.results.get(metric)
        return system_pinned(
            self.system,
            (r.signature for r in self.results.values()),
            [] if result is None else [result.pinned],
        )

    def recorded_results(self) -> dict[str, Mapping[str, Any]]:
        """``{metric: result object}`` as recorded, for :func:`cotk_repro.records.diffing.compare_results`."""
        return {name: r.recorded for name, r in self.results.items()}
