"""Correlation of a metric with human ratings: Pearson and Spearman with p-values, and the inter-rater
reliability by leave-one-rater-out (each rater against the mean of the others, averaged over raters).

Inputs:

* scores: JSONL, one object per item (``{"id": ..., "coherence": 0.7}``; ``key`` picks the field, default
  the only numeric one), or the JSON output of ``cotk-repro evaluate --per-sentence --json`` (``key`` names
  the metric: its ``"<key> per-sentence"`` list is used; a ``null`` in it is an item the metric could not score,
  an LLM judge's unparsable answer, and that item is left out on both sides), or a text file with one number per
  line.
* ratings: CSV with a header; one row per item (in the scores' order, or matched by an ``id`` column when
  both sides have ids), one numeric column per rater. The human score of an item is the raters' mean.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cotk_repro.errors import CotkError


class CorrelateError(CotkError):
    """Bad input to ``correlate`` (one sentence)."""


def _number(v: Any, where: str) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise CorrelateError(f"{where} is not a number: {v!r}") from None
    if math.isnan(x) or math.isinf(x):
        raise CorrelateError(f"{where} is {x}, not a finite number")
    return x


def read_scores(path: Path, key: str | None = None) -> tuple[list[float | None], list[str] | None, str]:
    """(scores, ids or None, the key used); a score is None only where a per-sentence list holds null (an item
    the metric could not score: :func:`drop_unscored` leaves it out)."""
    path = Path(path)
    if not path.is_file():
        raise CorrelateError(f"scores file {path} does not exist")
    text = path.read_text(encoding="utf-8")
    stripped = text.strip()
    if not stripped:
        raise CorrelateError(f"scores file {path} is empty")
    if stripped.startswith("{") and "\n{" not in stripped:
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            lists = {k[: -len(" per-sentence")]: v for k, v in obj.items() if k.endswith(" per-sentence")}
            if not lists:
                raise CorrelateError(
                    f"{path} is one JSON object without per-sentence scores; run evaluate with --per-sentence --json"
                )
            if key is None:
                if len(lists) > 1:
                    raise CorrelateError(
                        f"{path} has per-sentence scores of {', '.join(sorted(lists))}: pick one with --key"
                    )
                key = next(iter(lists))
            if key not in lists:
                raise CorrelateError(f"{path} has no per-sentence scores of {key!r} ({', '.join(sorted(lists))})")
            items = lists[key]
            if not isinstance(items, list):
                raise CorrelateError(f"{path}: {key!r} per-sentence is not a list")
            return [None if v is None else _number(v, f"{key} item {i + 1}") for i, v in enumerate(items)], None, key
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines[0].lstrip().startswith("{"):
        return [_number(v, f"{path} line {i + 1}") for i, v in enumerate(lines)], None, key or "score"
    scores, ids = [], []
    for no, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorrelateError(f"{path} line {no} is not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise CorrelateError(f"{path} line {no} is not a JSON object")
        if key is None:
            numeric = [
                k for k, v in obj.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "id"
            ]
            if len(numeric) != 1:
                raise CorrelateError(f"{path} line {no} has {len(numeric)} numeric fields; pick one with --key")
            key = numeric[0]
        if key not in obj:
            raise CorrelateError(f"{path} line {no} has no {key!r}")
        scores.append(_number(obj[key], f"{path} line {no} {key!r}"))
        ids.append(str(obj["id"]) if "id" in obj else None)
    known = [i for i in ids if i is not None]
    assert key is not None  # the first line set it at the latest (lines is not empty)
    return list(scores), (known if len(known) == len(ids) else None), key


def drop_unscored(
    scores: Sequence[float | None], ratings: Sequence[Sequence[float]]
) -> tuple[list[float], list[list[float]], int]:
    """(scores, ratings, how many items were dropped): the items without a score left out on both sides."""
    if len(scores) != len(ratings):
        raise CorrelateError(f"{len(scores)} scores but {len(ratings)} rated items: give one rating row per score")
    kept = [(s, list(r)) for s, r in zip(scores, ratings) if s is not None]
    return [s for s, _ in kept], [r for _, r in kept], len(scores) - len(kept)


def read_ratings(path: Path) -> tuple[list[list[float]], list[str], list[str] | None]:
    """(ratings[item][rater], rater names, ids or None)."""
    path = Path(path)
    if not path.is_file():
        raise CorrelateError(f"ratings file {path} does not exist")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise CorrelateError(f"ratings file {path} needs a header row and at least one row of ratings")
    header = [h.strip() for h in rows[0]]
    id_col = header.index("id") if "id" in header else None
    raters = [h for i, h in enumerate(header) if i != id_col]
    if not raters:
        raise CorrelateError(f"ratings file {path} has no rater column")
    out: list[list[float]] = []
    ids: list[str] = []
    for no, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            raise CorrelateError(f"{path} line {no} has {len(row)} columns, the header {len(header)}")
        out.append([_number(c, f"{path} line {no} column {header[i]!r}") for i, c in enumerate(row) if i != id_col])
        if id_col is not None:  # else no ids are returned
            ids.append(row[id_col].strip())
    return out, raters, (ids if id_col is not None else None)


def _pair(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    from scipy import stats

    if len(x) < 3:
        raise CorrelateError(f"correlation needs at least 3 items, got {len(x)}")
    if len(set(x)) < 2 or len(set(y)) < 2:
        raise CorrelateError("a side is constant: its correlation is undefined")
    p = stats.pearsonr(x, y)
    s = stats.spearmanr(x, y)
    return {"pearson": float(p[0]), "pearson_p": float(p[1]), "spearman": float(s[0]), "spearman_p": float(s[1])}


def correlate(scores: Sequence[float], ratings: Sequence[Sequence[float]], raters: Sequence[str]) -> dict[str, Any]:
    """Pearson/Spearman of the scores with the mean rating, and the leave-one-rater-out reliability."""
    if len(scores) != len(ratings):
        raise CorrelateError(f"{len(scores)} scores but {len(ratings)} rated items: give one rating row per score")
    human = [sum(r) / len(r) for r in ratings]
    result: dict[str, Any] = {"items": len(scores), "raters": len(raters), **_pair(scores, human)}
    if len(raters) >= 2:
        per_rater = {}
        for j, name in enumerate(raters):
            mine = [r[j] for r in ratings]
            others = [(sum(r) - r[j]) / (len(r) - 1) for r in ratings]
            per_rater[name] = _pair(mine, others)
        result["inter_rater"] = {
            "method": "leave-one-rater-out",
            "pearson": sum(v["pearson"] for v in per_rater.values()) / len(per_rater),
            "spearman": sum(v["spearman"] for v in per_rater.values()) / len(per_rater),
            "per_rater": per_rater,
        }
    return result


def align(
    scores: list[float | None], score_ids: list[str] | None, ratings: list[list[float]], rating_ids: list[str] | None
) -> tuple[list[float | None], list[list[float]]]:
    """Match items by id when both sides have ids, else by position."""
    if score_ids is None or rating_ids is None:
        return scores, ratings
    by_id = dict(zip(rating_ids, ratings))
    missing = [i for i in score_ids if i not in by_id]
    if missing:
        raise CorrelateError(f"item {missing[0]!r} has a score but no rating")
    return scores, [by_id[i] for i in score_ids]


def scatter_plot(scores: Sequence[float], human: Sequence[float], path: Path, *, xlabel: str, title: str) -> None:
    """A scatter plot of metric vs mean human rating with the least-squares line, as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(5, 4), dpi=100)
    ax.scatter(scores, human, s=12, alpha=0.7)
    slope, intercept = np.polyfit(np.asarray(scores, float), np.asarray(human, float), 1)
    xs = np.linspace(min(scores), max(scores), 2)
    ax.plot(xs, slope * xs + intercept, color="C3", label=f"y = {slope:.3g}x + {intercept:.3g}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean human rating")
    ax.set_title(title)
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
