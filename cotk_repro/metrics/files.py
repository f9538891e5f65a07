"""Evaluating text files: the library behind ``cotk-repro evaluate``.

* Hypotheses: a text file, one sentence per line, read by the one set of rules of
  :mod:`cotk_repro.core.textinput` (docs/inputs.md): UTF-8 (UTF-16 refused by name), a leading BOM dropped, NUL
  refused with its line and column, CR-only line ends refused. Lines end at ``\n`` (or ``\r\n``) only, as
  sacrebleu and NLTK users expect: U+2028, U+0085, form feeds or a lone CR inside a line are content. A single
  final newline ends the last line; any further blank line is content (an empty hypothesis).
* References: a text file, one reference per line, or JSONL with one object per line,
  ``{"references": ["...", "..."]}`` (TextGen-Benchmark's multi-reference layout).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import jsonbudget
from ..core.textinput import BOM, check_text, encoding_problem
from . import get_metric
from .base import Metric, MetricError, declared, resolve_tokenizer, score
from .facts import facts_of

if TYPE_CHECKING:
    from ..llm.protocol import Protocol


def _read_lines(path: Path, what: str) -> list[str]:
    path = Path(path)
    if not path.exists():
        raise MetricError(f"{what} file {path} does not exist")
    if not path.is_file():
        raise MetricError(f"{what} file {path} is not a file")
    raw = path.read_bytes()
    problem = encoding_problem(raw)
    if problem:
        raise MetricError(f"{what} file {path} {problem}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise MetricError(
            f"{what} file {path} is not UTF-8 text: line {line}, column {col}, byte offset "
            f"{exc.start} (0x{raw[exc.start : exc.start + 1].hex()})"
        ) from None
    if text.startswith(BOM):
        text = text[1:]
    refusal = check_text(text, f"{what} file {path}")
    if refusal:
        raise MetricError(refusal)
    lines = split_lines(text)
    if not lines or not any(line.strip() for line in lines):
        raise MetricError(f"{what} file {path} is empty")
    return lines


def split_lines(text: str) -> list[str]:
    """Lines ended by ``\n`` or ``\r\n`` only (never ``str.splitlines``' other breaks); one final newline ignored."""
    if not text:
        return []
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_hypotheses(path: Path) -> list[str]:
    """One hypothesis per line (an empty line is an empty hypothesis); a ``.jsonl`` file: one JSON string per
    line, every character kept (``cotk-repro generate --out FILE.jsonl``)."""
    lines = _read_lines(path, "hypotheses")
    if Path(path).suffix.lower() != ".jsonl":
        return lines
    out = []
    for no, line in enumerate(lines, 1):
        try:
            value = jsonbudget.loads(line, what=f"{path} line {no}")
        except jsonbudget.JSONBudgetError as exc:
            raise MetricError(exc.message) from None
        if not isinstance(value, str):
            raise MetricError(
                f"{path} line {no} is not a JSON string (a .jsonl hypotheses file holds one per line, as "
                "`cotk-repro generate --out FILE.jsonl` writes)"
            )
        out.append(value)
    return out


def _is_jsonl(path: Path, lines: list[str]) -> bool:
    if Path(path).suffix.lower() in (".jsonl", ".ndjson"):
        return True
    first = next((line for line in lines if line.strip()), "")
    if not first.lstrip().startswith("{"):
        return False
    try:
        return isinstance(jsonbudget.loads(first, what=f"{path} line 1"), dict)
    except jsonbudget.JSONBudgetError:
        return False


def read_references(path: Path) -> list[list[str]]:
    """For each line, its list of references: one per line in a text file, several per JSONL line."""
    lines = _read_lines(path, "references")
    if not _is_jsonl(path, lines):
        return [[line] for line in lines]
    return [refs for _, refs in _string_lists(path, lines, "references", "reference")]


def _string_lists(path: Path, lines: list[str], key: str, what: str) -> list[tuple[dict[str, Any], list[str]]]:
    """JSONL lines, each an object whose ``key`` is a non-empty list of strings: ``(object, list)`` per line."""
    out = []
    for no, line in enumerate(lines, 1):
        try:
            obj = jsonbudget.loads(line, what=f"{path} line {no}")
        except jsonbudget.JSONBudgetError as exc:
            raise MetricError(exc.message) from None
        items = obj.get(key) if isinstance(obj, dict) else None
        if not isinstance(items, list) or not items or not all(isinstance(r, str) for r in items):
            raise MetricError(
                f'{path} line {no} must be an object {{"{key}": ["...", ...]}} with at least one {what} string'
            )
        out.append((obj, items))
    return out


def parse_options(
    items: Sequence[str], metrics: Sequence[str], *, what: str = "metric", example: str = "bleu.ngram=2"
) -> dict[str, dict[str, Any]]:
    """``["bleu.ngram=2", "self-bleu.sample=1000"]`` -> ``{"bleu": {"ngram": 2}, ...}`` (values parsed as JSON
    when they are valid JSON, else kept as strings). ``what``/``example``: the words of the errors (``generate``'s
    ``-g NAME.KEY=VALUE`` settings are parsed here too)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        left, sep, value = item.partition("=")
        metric, dot, key = left.rpartition(".")
        if not sep or not dot or not metric or not key:
            raise MetricError(f"option {item!r} must look like {what.upper()}.KEY=VALUE, e.g. {example}")
        if metric not in metrics:
            raise MetricError(
                f"option {item!r} is for {what} {metric!r}, which is not among the {what}s asked for "
                f"({', '.join(metrics)})"
            )
        try:
            parsed: Any = jsonbudget.loads(value, what=f"option {item[:80]!r}")
        except jsonbudget.JSONBudgetError:
            parsed = value
        out.setdefault(metric, {})[key] = parsed
    return out


def read_queries(path: Path) -> list[str]:
    """One query per line (the context each hypothesis answers; metrics such as coherence read it)."""
    return _read_lines(path, "queries")


def read_groups(path: Path) -> tuple[list[list[str]], list[Any]]:
    """Groups of responses: JSONL, one object per line with ``"responses": ["...", ...]`` (other keys kept).
    Returns the response lists and the distinct ``augmentation`` values (how the groups were made)."""
    lines = _read_lines(path, "groups")
    groups: list[list[str]] = []
    augmentations: list[Any] = []
    for obj, responses in _string_lists(path, lines, "responses", "response"):
        groups.append(responses)
        aug = obj.get("augmentation")
        if aug is not None and aug not in augmentations:
            augmentations.append(aug)
    return groups, augmentations


def evaluate_files(
    hyps_path: Path | None,
    refs_path: Path | None,
    metrics: Sequence[str],
    options: dict[str, dict[str, Any]] | None = None,
    tokenizer: str | None = None,
    on_metric: Callable[[str], None] | None = None,
    *,
    queries_path: Path | None = None,
    groups_path: Path | None = None,
    per_sentence: bool = False,
    batch_size: int | None = None,
    progress: bool = False,
    protocol: Protocol | str | None = None,
    ci: tuple[int | None, int | None] | None = None,
) -> dict[str, Any]:
    """Score a hypotheses file (against a references file) with several metrics; one merged result dict.

    ``queries_path``: the query each hypothesis answers, for metrics that declare ``takes_queries``
    (:meth:`Metric.compute_with_queries`). ``groups_path``: groups of responses (:func:`read_groups`) for metrics
    that declare ``takes_groups`` (:meth:`Metric.compute_groups`). Every other metric is run by :func:`score`.
    ``per_sentence``, ``batch_size``, ``progress``: given as options of those names to the metrics that take
    them (model-based metrics: per-sentence lists, batch size, a progress bar on stderr). ``protocol``: the prompt
    protocol the hypotheses answer (:mod:`cotk_repro.llm.protocol`), or its hash; it is stamped into every hash
    and signature. ``ci``: ``(samples, seed)`` (None for sacrebleu's 1000 and 12345): add ``"KEY ci"`` beside each
    value of a metric that resamples (:func:`cotk_repro.metrics.intervals.add_intervals`).
    """
    from . import accepts_option, metric_names, takes_shared_tokenizer

    options = options or {}
    known = metric_names()
    for name in metrics:
        if name not in known:
            from ..plugins import get_plugins

            refused = get_plugins().refusal("metric", name)  # a plugin's, refused at registration: its sentence
            from ..first_party import missing_sentence

            missing = missing_sentence("metric", name)  # a first-party plugin's metric: say which one to install
            raise MetricError(
                refused
                or (f"{missing}; registered: {', '.join(known)}" if missing else None)
                or f"unknown metric {name!r}; registered metrics: {', '.join(known) or 'none'}"
            )
    if hyps_path is None and groups_path is None:
        raise MetricError("give the hypotheses: --hyps FILE (or --groups FILE for metrics that score groups)")
    if tokenizer is not None:
        resolve_tokenizer(tokenizer)  # an unknown name is an error before any work
    if per_sentence and not any(accepts_option(n, "per_sentence") for n in metrics):
        raise MetricError(f"none of the metrics asked for ({', '.join(metrics)}) reports per-sentence scores")
    from .facts import metric_class

    for name in metrics:  # before building any metric: a model-based one loads its model
        cls = metric_class(name)
        if (
            queries_path is None
            and declared(cls, "needs_queries")
            and not (groups_path is not None and declared(cls, "takes_groups"))
        ):
            raise MetricError(f"metric {name!r} needs the queries the hypotheses answer: give --queries FILE")
    if ci is not None:
        from .intervals import check_settings

        check_settings("bs", *ci)  # a bad count or seed is an error before any work
    # the inputs are read (and a refused file reported) before any metric is built: building one may load a
    # model or WordNet for seconds, which a file with CR-only line ends or a NUL would only have delayed
    groups, augmentations = read_groups(groups_path) if groups_path is not None else (None, [])
    hyps = read_hypotheses(hyps_path) if hyps_path is not None else None
    refs = read_references(refs_path) if refs_path is not None else None
    queries = read_queries(queries_path) if queries_path is not None else None
    if queries is not None and hyps is not None and len(queries) != len(hyps):
        raise MetricError(
            f"{queries_path} has {len(queries)} lines but {hyps_path} has {len(hyps)}: give exactly "
            f"one query per hypothesis"
        )
    built: list[Metric] = []
    for name in metrics:
        opts = dict(options.get(name, {}))
        if tokenizer is not None and "tokenizer" not in opts and takes_shared_tokenizer(name):
            opts["tokenizer"] = tokenizer
        for key, value in (
            ("per_sentence", per_sentence or None),
            ("batch_size", batch_size),
            ("progress", progress or None),
        ):
            if value is not None and key not in opts and accepts_option(name, key):
                opts[key] = value
        if augmentations and "augmentation" not in opts and accepts_option(name, "augmentation"):
            if len(augmentations) > 1:
                raise MetricError(
                    f"{groups_path} mixes {len(augmentations)} different augmentations; score groups "
                    f"made one way at a time"
                )
            opts["augmentation"] = augmentations[0]
        built.append(get_metric(name, **opts))
    facts = [facts_of(metric, name) for name, metric in zip(metrics, built)]
    for name, metric, f in zip(metrics, built, facts):
        if groups is not None and declared(metric, "takes_groups"):
            continue
        if hyps is None:
            raise MetricError(f"metric {name!r} scores hypotheses, not groups: give --hyps FILE")
        if declared(metric, "needs_queries") and queries is None:
            raise MetricError(f"metric {name!r} needs the queries the hypotheses answer: give --queries FILE")
        if refs is None and f.needs_references:
            raise MetricError(f"metric {name!r} needs references: give --refs FILE")
        if refs is not None and f.references == "aligned" and len(refs) != len(hyps):
            raise MetricError(
                f"{hyps_path} has {len(hyps)} lines but {refs_path} has {len(refs)}: metric {name!r} "
                f"needs exactly one line of references per hypothesis"
            )
    merged: dict[str, Any] = {}
    for name, metric, f in zip(metrics, built, facts):
        if groups is not None and declared(metric, "takes_groups"):
            merged.update(metric.compute_groups(groups))
        elif queries is not None and hyps is not None and declared(metric, "takes_queries"):
            given = refs if f.needs_references else None
            if ci is None:
                merged.update(metric.compute_with_queries(hyps, given, queries))
            else:
                from .intervals import add_intervals
                from .resampling import score_with_items

                merged.update(add_intervals(*score_with_items(metric, hyps, given, queries), *ci))
        else:
            assert hyps is not None  # the loop above refused a metric that scores hypotheses when none were given
            if ci is None:
                merged.update(score(metric, hyps, refs))  # as the API: references given are references seen
            else:
                from .intervals import add_intervals
                from .resampling import score_with_items

                merged.update(add_intervals(*score_with_items(metric, hyps, refs), *ci))
        if on_metric is not None:
            on_metric(name)
    if protocol is not None:
        from ..llm.stamp import stamp_protocol

        merged = stamp_protocol(merged, protocol)
    return merged
