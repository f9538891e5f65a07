"""Evaluate every (system, dataset, metric) of a compare config, in parallel.

Each metric evaluation is one task run in a worker process (``jobs`` of them;
``jobs=1`` runs in this process). Generator systems first produce (or reuse from
the cache) their outputs, then their metric tasks are queued. A failing
generator, unreadable sample file or raising metric becomes a failure entry in
the result and never stops the other tasks.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.ranking import system_pinned
from ..core.results import epoch_key, parse_result_dict
from ..errors import CotkError
from ..metrics.base import score, score_batches
from ..metrics.resampling import (
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    bootstrap_indices,
    draw_counts,
    resampled_values,
    score_with_items,
)
from ..text.textfmt import TextFormat, batched, iter_gold, iter_texts
from .config import CompareConfig, MetricSpec, SystemSpec


@dataclass
class Cell:
    """One number of the report: a system's value of one metric column on one dataset."""

    system: str
    dataset: str
    column: str
    metric: str  # the [[metric]] label
    key: str | None  # the key in the metric's result dict
    value: float | None = None
    hash: str | None = None
    signature: str | None = None
    error: str | None = None
    #: False: the system that made the outputs is not pinned to its weights (an endpoint's model,
    #: :mod:`cotk_repro.llm.system`): the cell ranks below every pinned cell of its group (tier 1)
    pinned: bool = True
    #: filled by the report: comparability group letter (A = the column's main group), rank, flag
    group: str | None = None
    rank: int | None = None
    flag: str | None = None
    #: the value on each of the bootstrap resamples every system of the dataset shares (``[report] intervals``;
    #: None when off or when the metric has no interval); the report turns them into the fields below
    resampled: Any = None
    #: filled by :func:`cotk_repro.compare.intervals.analyze_intervals`: bootstrap mean and 95% half-width; the
    #: p-value against the dataset's baseline, Holm-Bonferroni adjusted over the column, and whether it is below
    #: 0.05; whether the cell is in the column's best cluster (the best and every system not significantly
    #: different from it)
    mean: float | None = None
    ci: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    significant: bool | None = None
    best: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {
            k: getattr(self, k)
            for k in (
                "system",
                "dataset",
                "metric",
                "column",
                "key",
                "value",
                "hash",
                "signature",
                "group",
                "rank",
                "flag",
                "error",
            )
        }
        if not self.pinned:  # only the exception is written: the reports of pinned systems stay as they were
            out["pinned"] = False
        if self.ci is not None:  # intervals on: the report without them stays as it was
            out["ci"] = {"mean": self.mean, "half_width": self.ci}
            out["best"] = self.best
            if self.p_value is not None:
                out.update({"p_value": self.p_value, "p_holm": self.p_holm, "significant": self.significant})
        return out


@dataclass
class Failure:
    """A system (metric None) or one metric of it that failed on a dataset, with the error message."""

    system: str
    dataset: str
    metric: str | None  # None: the system failed (generation or reading), every metric of it is missing
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"system": self.system, "dataset": self.dataset, "metric": self.metric, "error": self.message}


@dataclass
class CompareResult:
    """Everything a compare run produced: cells, failures, columns, timings and warnings."""

    config: CompareConfig
    cells: list[Cell] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    #: metric label -> its report columns, in order
    columns: dict[str, list[str]] = field(default_factory=dict)
    #: metric label -> seconds spent in its tasks (summed over systems and datasets)
    seconds: dict[str, float] = field(default_factory=dict)
    #: (system, dataset) -> "cache" or "generated" for generator systems
    generated: dict[tuple[str, str], str] = field(default_factory=dict)
    #: (system, dataset) pairs whose outputs came from a generator not pinned to its weights (tier 1 cells)
    unpinned: set[tuple[str, str]] = field(default_factory=set)
    wall_seconds: float = 0.0
    #: things the user should know that are not failures (e.g. charts skipped); the CLI prints them
    warnings: list[str] = field(default_factory=list)
    #: values measured per epoch (result keys ``NAME@epoch-N``, from a metric or a training generator's own
    #: result), never table columns: NAME -> (system, dataset) -> [(epoch, value)] sorted by epoch
    curves: dict[str, dict[tuple[str, str], list[tuple[int, float]]]] = field(default_factory=dict)

    @property
    def systems(self) -> list[str]:
        return [s.name for s in self.config.systems]

    @property
    def datasets(self) -> list[str]:
        return [d.name for d in self.config.datasets]

    def all_columns(self) -> list[str]:
        return [c for m in self.config.metrics for c in self.columns.get(m.label, [])]

    def metric_of_column(self, column: str) -> MetricSpec:
        for m in self.config.metrics:
            if column in self.columns.get(m.label, []):
                return m
        raise KeyError(column)

    def add_curves(self, system: str, dataset: str, points: dict[str, list[tuple[int, float]]]) -> None:
        """Record one (system, dataset)'s per-epoch values (see :func:`split_curves`)."""
        for name, pts in points.items():
            self.curves.setdefault(name, {})[(system, dataset)] = pts
        self.curves = dict(sorted(self.curves.items()))  # the same order whatever finished first

    def cell(self, system: str, dataset: str, column: str) -> Cell | None:
        return self._index().get((system, dataset, column))

    def _index(self) -> dict[tuple[str, str, str], Cell]:
        idx = getattr(self, "_idx", None)
        if idx is None or len(idx) != len(self.cells):
            idx = {(c.system, c.dataset, c.column): c for c in self.cells}
            self._idx = idx
        return idx


# -- the work of one task (runs in a worker process) ------------------------------

#: lines handed to a metric's ``forward`` at a time when it streams (aligned and reference-free metrics)
STREAM_BATCH = 2048


def _make_metric(name: str, options: dict[str, Any]) -> Any:
    from ..plugins import get_component

    return get_component("metric", name)(**options)


_MISSING = object()


def run_metric_task(task: dict[str, Any]) -> dict[str, Any]:
    """Compute one metric for one (system, dataset); returns parsed values and the time taken.

    Samples and gold are read as streams and handed to the metric through the one metric path
    (:func:`cotk_repro.metrics.base.score_batches`) in batches of ``STREAM_BATCH`` lines, so a streaming
    metric never holds the corpus; ``references = "set"`` metrics get the whole gold set in one batch.
    """
    start = time.perf_counter()
    metric = _make_metric(task["metric"], task["options"])
    hyps = iter_texts(Path(task["hyps"]), TextFormat.from_dict(task["hyp_format"]))
    mode = task["references"]
    gold = iter_gold(Path(task["gold"]), TextFormat.from_dict(task["gold_format"])) if mode != "none" else None
    resampled: dict[str, Any] = {}
    if task.get("intervals") and mode == "aligned" and getattr(metric, "resampling", "none") != "none":
        # the value and its items' statistics in one pass (the lists are held: resampling needs every item)
        assert gold is not None  # read above for every mode but "none"
        raw, items = score_with_items(metric, list(hyps), list(gold))
        resampled = _resampled(items, len(items[next(iter(items))]) if items else 0)
    elif mode == "set":  # the whole gold set, every reference of every line, for every sample
        assert gold is not None  # read above for every mode but "none"
        raw = score(metric, list(hyps), [r for refs_of_line in gold for r in refs_of_line])
    else:
        pairs: Iterator[tuple[str, Any]]
        if mode == "aligned":
            assert gold is not None  # read above for every mode but "none"
            pairs = (_aligned(h, g) for h, g in itertools.zip_longest(hyps, gold, fillvalue=_MISSING))
        else:
            pairs = ((h, None) for h in hyps)
        batches = (
            {"hyps": [h for h, _ in batch], **({"refs": [g for _, g in batch]} if mode == "aligned" else {})}
            for batch in batched(pairs, STREAM_BATCH)
        )
        raw = score_batches(metric, batches)
    if task.get("protocol_sha256"):  # the system's outputs answer a prompt protocol: it joins every hash
        from ..llm.stamp import stamp_protocol

        raw = stamp_protocol(raw, task["protocol_sha256"])
    values, curves = split_curves(parse_result(raw))
    if task.get("keys"):
        missing = [k for k in task["keys"] if k not in values]
        if missing:
            raise CotkError(
                f"the metric returned no {', '.join(map(repr, missing))} "
                f"(it returned {', '.join(map(repr, values)) or 'nothing'})"
            )
        values = {k: values[k] for k in task["keys"]}
    resampled = {k: v for k, v in resampled.items() if k in values}
    return {"values": values, "curves": curves, "resampled": resampled, "seconds": time.perf_counter() - start}


def _resampled(items: dict[str, Any], n: int) -> dict[str, Any]:
    """Per result key, the metric's value on each of the bootstrap resamples of the dataset's ``n`` items (the same
    draws for every system of the dataset: sacrebleu's, 1,000 resamples, seed 12345), from the items' statistics
    (:mod:`cotk_repro.metrics.resampling`)."""
    if not items:
        return {}
    counts = draw_counts(bootstrap_indices(n, DEFAULT_SAMPLES["bs"], DEFAULT_SEED), n)
    return {key: resampled_values(counts, stats) for key, stats in items.items()}


def _aligned(hyp: Any, gold: Any) -> tuple[str, list[str]]:
    if hyp is _MISSING or gold is _MISSING:
        raise CotkError("the samples and the gold file have different numbers of lines")
    return hyp, gold


def parse_result(raw: Any) -> dict[str, dict[str, Any]]:
    """A metric's result dict -> ``{key: {"value", "hash", "signature"}}`` (numbers only; see :mod:`results`)."""
    parsed = parse_result_dict(raw, "the metric's result", skip_extras=True)
    return {k: {"value": float(v["value"]), "hash": v["hash"], "signature": v["signature"]} for k, v in parsed.items()}


def split_curves(
    values: dict[str, dict[str, Any]],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[tuple[int, float]]]]:
    """Parsed values -> (final values, per-epoch points): ``NAME@epoch-N`` keys go to the curves only."""
    finals: dict[str, dict[str, Any]] = {}
    curves: dict[str, list[tuple[int, float]]] = {}
    for key, item in values.items():
        point = epoch_key(key)
        if point is None:
            finals[key] = item
        else:
            curves.setdefault(point[0], []).append((point[1], float(item["value"])))
    return finals, {name: sorted(pts) for name, pts in curves.items()}


def run_generate_task(task: dict[str, Any]) -> dict[str, Any]:
    """Worker task: generate (or reuse cached) samples for one generator system and dataset, with the
    per-epoch values of the generator's own result when it trained a model (see :mod:`.generate`)."""
    from ..generation import read_generator_result
    from .generate import generate_inputs_file

    start = time.perf_counter()
    got = generate_inputs_file(
        task["generator"],
        task["settings"],
        Path(task["inputs"]),
        Path(task["cache"]),
        TextFormat.from_dict(task["input_format"]),
        _protocol(task.get("protocol"), task.get("protocol_sha256")),
    )
    own = read_generator_result(got.path)
    curves = split_curves(parse_result(own))[1] if own is not None else {}
    return {
        "path": str(got.path),
        "reused": got.reused == got.lines,
        # derived from the generator, never from the cache's word alone (the worse of the two wins)
        "pinned": system_pinned({"generator": task["generator"], "pinned": got.meta.get("pinned", True) is not False}),
        "curves": curves,
        "seconds": time.perf_counter() - start,
    }


def _protocol(path: str | None, sha256: str | None) -> Any:
    """The system's protocol, as the config read it (a file changed since then is an error, not other prompts)."""
    from ..llm.protocol import load_protocol

    if not path:
        return None
    protocol = load_protocol(path)
    if protocol.sha256 != sha256:
        raise CotkError(f"protocol file {path} changed while compare ran; run it again")
    return protocol


# -- scheduling ----------------------------------------------------------------------


class _Inline:
    """A stand-in executor that runs each task at submit time (jobs=1)."""

    def submit(self, fn, *args):
        fut: Future = Future()
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            fut.set_exception(exc)
        return fut

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        pass


def _mp_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _message(exc: BaseException) -> str:
    if isinstance(exc, CotkError):
        return exc.message
    if isinstance(exc, BrokenProcessPool):
        return "the worker process died (out of memory or killed)"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def _metric_task(cfg: CompareConfig, sysm: SystemSpec, dataset: str, m: MetricSpec, hyps: Path) -> dict[str, Any]:
    ds = next(d for d in cfg.datasets if d.name == dataset)
    return {
        "hyps": str(hyps),
        "hyp_format": sysm.formats[dataset].as_dict(),
        "gold": str(ds.gold),
        "gold_format": ds.gold_format.as_dict(),
        "references": m.references,
        "metric": m.name,
        "options": m.options,
        "keys": list(m.keys) if m.keys else None,
        "protocol_sha256": sysm.protocol_sha256,
        "intervals": cfg.intervals,
    }


def count_tasks(cfg: CompareConfig) -> int:
    """How many progress steps :func:`evaluate_config` reports (metric tasks plus generations)."""
    total = sum(len(s.datasets) for s in cfg.systems) * len(cfg.metrics)
    return total + sum(len(s.datasets) for s in cfg.systems if s.generator)


def evaluate_config(
    cfg: CompareConfig, *, jobs: int | None = None, on_progress: Callable[[int, int], None] | None = None
) -> CompareResult:
    """Run every task of ``cfg``; never raises for a failing system or metric (see ``failures``)."""
    started = time.perf_counter()
    result = CompareResult(config=cfg)
    for m in cfg.metrics:
        result.seconds[m.label] = 0.0
        result.columns[m.label] = []
    total = count_tasks(cfg)
    done = 0
    jobs = jobs or cfg.jobs or min(os.cpu_count() or 1, max(1, total))
    executor: Any = _Inline() if jobs <= 1 else ProcessPoolExecutor(max_workers=jobs, mp_context=_mp_context())
    pending: dict[Future, tuple] = {}
    values: dict[tuple[str, str, str], dict[str, Any]] = {}
    resampled: dict[tuple[str, str, str], dict[str, Any]] = {}
    errors: dict[tuple[str, str, str], str] = {}

    def tick() -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total)

    def queue_metrics(sysm: SystemSpec, dataset: str, hyps: Path) -> None:
        for m in sorted(cfg.metrics, key=lambda m: -m.cost):  # the slowest first: better packing on few cores
            fut = executor.submit(run_metric_task, _metric_task(cfg, sysm, dataset, m, hyps))
            pending[fut] = ("metric", sysm, dataset, m)

    try:
        for sysm in cfg.systems:
            for dataset in sysm.datasets:
                if sysm.generator:
                    ds = next(d for d in cfg.datasets if d.name == dataset)
                    fut = executor.submit(
                        run_generate_task,
                        {
                            "generator": sysm.generator,
                            "settings": sysm.settings,
                            "inputs": str(ds.inputs),
                            "cache": str(cfg.cache),
                            "input_format": (ds.inputs_format or ds.sample_format).as_dict(),
                            "protocol": str(sysm.protocol) if sysm.protocol else None,
                            "protocol_sha256": sysm.protocol_sha256,
                        },
                    )
                    pending[fut] = ("generate", sysm, dataset, None)
        for sysm in sorted(cfg.systems, key=lambda s: s.generator is not None):
            if not sysm.generator:
                for dataset in sysm.datasets:
                    queue_metrics(sysm, dataset, sysm.samples[dataset])
        while pending:
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in finished:
                kind, sysm, dataset, m = pending.pop(fut)
                exc = fut.exception()
                if kind == "generate":
                    if exc is not None:
                        result.failures.append(Failure(sysm.name, dataset, None, _message(exc)))
                        for mm in cfg.metrics:
                            errors[(sysm.name, dataset, mm.label)] = "no samples: the generator failed"
                            tick()
                    else:
                        out = fut.result()
                        result.generated[(sysm.name, dataset)] = "cache" if out["reused"] else "generated"
                        if out.get("pinned", True) is False:
                            result.unpinned.add((sysm.name, dataset))
                        result.add_curves(sysm.name, dataset, out["curves"])
                        queue_metrics(sysm, dataset, Path(out["path"]))
                    tick()
                    continue
                if exc is not None:
                    if os.environ.get("COTK_REPRO_DEBUG") and not isinstance(exc, CotkError):
                        traceback.print_exception(exc)
                    message = _message(exc)
                    result.failures.append(Failure(sysm.name, dataset, m.label, message))
                    errors[(sysm.name, dataset, m.label)] = message
                else:
                    out = fut.result()
                    values[(sysm.name, dataset, m.label)] = out["values"]
                    resampled[(sysm.name, dataset, m.label)] = out.get("resampled") or {}
                    result.add_curves(sysm.name, dataset, out["curves"])
                    result.seconds[m.label] += out["seconds"]
                tick()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)

    # columns: the keys each metric returned (first seen order), else its declared keys, else its label
    for m in cfg.metrics:
        keys: list[str] = list(m.keys) if m.keys else []
        if not keys:
            for s in cfg.systems:
                for d in s.datasets:
                    for found in values.get((s.name, d, m.label), {}):
                        if found not in keys:
                            keys.append(found)
        cols = [m.column(k, len(keys)) for k in keys] if keys else [m.label]
        result.columns[m.label] = cols
        unpinned = result.unpinned
        for s in cfg.systems:
            for d in s.datasets:
                got = values.get((s.name, d, m.label))
                err = errors.get((s.name, d, m.label))
                key_of_col: list[str | None] = [*keys] if keys else [None]  # None: the metric's one value
                for k, col in zip(key_of_col, cols):
                    cell = Cell(
                        system=s.name, dataset=d, column=col, metric=m.label, key=k, pinned=(s.name, d) not in unpinned
                    )
                    if got is not None and k in got:
                        cell.value, cell.hash, cell.signature = got[k]["value"], got[k]["hash"], got[k]["signature"]
                        cell.resampled = resampled.get((s.name, d, m.label), {}).get(k)
                    else:
                        cell.error = err or f"the metric returned no {k!r} for this system"
                    result.cells.append(cell)
    result.wall_seconds = time.perf_counter() - started
    return result
