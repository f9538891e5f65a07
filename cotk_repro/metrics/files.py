"""Evaluating text files: the library behind ``cotk-repro evaluate``.

* Hypotheses: a text file, one sentence per line (UTF-8).
* References: a text file, one reference per line, or JSONL with one object per line,
  ``{"references": ["...", "..."]}`` (TextGen-Benchmark's multi-reference layout).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from . import get_metric
from .base import Metric, MetricError, resolve_tokenizer, score
from .facts import facts_of


def _read_lines(path: Path, what: str) -> list[str]:
    path = Path(path)
    if not path.exists():
        raise MetricError(f"{what} file {path} does not exist")
    if not path.is_file():
        raise MetricError(f"{what} file {path} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise MetricError(f"{what} file {path} is not UTF-8 text (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    if not lines or not any(line.strip() for line in lines):
        raise MetricError(f"{what} file {path} is empty")
    return lines


def read_hypotheses(path: Path) -> list[str]:
    """One hypothesis per line (an empty line is an empty hypothesis)."""
    return _read_lines(path, "hypotheses")


def _is_jsonl(path: Path, lines: list[str]) -> bool:
    if Path(path).suffix.lower() in (".jsonl", ".ndjson"):
        return True
    first = next((line for line in lines if line.strip()), "")
    if not first.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def read_references(path: Path) -> list[list[str]]:
    """For each line, its list of references: one per line in a text file, several per JSONL line."""
    lines = _read_lines(path, "references")
    if not _is_jsonl(path, lines):
        return [[line] for line in lines]
    out: list[list[str]] = []
    for no, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise MetricError(f"{path} line {no} is not valid JSON ({exc.msg})") from None
        refs = obj.get("references") if isinstance(obj, dict) else None
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            raise MetricError(f"{path} line {no} must be an object {{\"references\": [\"...\", ...]}} with at least "
                              f"one reference string")
        out.append(refs)
    return out


def parse_options(items: Sequence[str], metrics: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``["bleu.ngram=2", "self-bleu.sample=1000"]`` -> ``{"bleu": {"ngram": 2}, ...}`` (values parsed as JSON
    when they are valid JSON, else kept as strings)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        left, sep, value = item.partition("=")
        metric, dot, key = left.rpartition(".")
        if not sep or not dot or not metric or not key:
            raise MetricError(f"option {item!r} must look like METRIC.KEY=VALUE, e.g. bleu.ngram=2")
        if metric not in metrics:
            raise MetricError(f"option {item!r} is for metric {metric!r}, which is not among the metrics asked for "
                              f"({', '.join(metrics)})")
        try:
            parsed: Any = json.loads(value)
        except ValueError:
            parsed = value
        out.setdefault(metric, {})[key] = parsed
    return out


def evaluate_files(hyps_path: Path, refs_path: Path | None, metrics: Sequence[str],
                   options: dict[str, dict[str, Any]] | None = None, tokenizer: str | None = None,
                   on_metric: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Score a hypotheses file (against a references file) with several metrics; one merged result dict."""
    from . import accepts_option, metric_names

    options = options or {}
    known = metric_names()
    for name in metrics:
        if name not in known:
            raise MetricError(f"unknown metric {name!r}; registered metrics: {', '.join(known) or 'none'}")
    if tokenizer is not None:
        resolve_tokenizer(tokenizer)  # an unknown name is an error before any work
    built: list[Metric] = []
    for name in metrics:
        opts = dict(options.get(name, {}))
        if tokenizer is not None and "tokenizer" not in opts and accepts_option(name, "tokenizer"):
            opts["tokenizer"] = tokenizer
        built.append(get_metric(name, **opts))
    hyps = read_hypotheses(hyps_path)
    refs = read_references(refs_path) if refs_path is not None else None
    facts = [facts_of(metric, name) for name, metric in zip(metrics, built)]
    for name, f in zip(metrics, facts):
        if refs is None and f.needs_references:
            raise MetricError(f"metric {name!r} needs references: give --refs FILE")
        if refs is not None and f.references == "aligned" and len(refs) != len(hyps):
            raise MetricError(f"{hyps_path} has {len(hyps)} lines but {refs_path} has {len(refs)}: metric {name!r} "
                              f"needs exactly one line of references per hypothesis")
    merged: dict[str, Any] = {}
    for name, metric, f in zip(metrics, built, facts):
        merged.update(score(metric, hyps, refs if f.needs_references else None))
        if on_metric is not None:
            on_metric(name)
    return merged
