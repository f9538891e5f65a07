"""The results table of one task / dataset: records as rows, metrics as columns (the CoTK paper's Table 7).

Each column is one metric's *ranked* group: the largest group of comparable results (one
comparability hash, as the metric's leaderboard puts first, see ``leaderboard.py``). A cell holds a
record's value with its rank in that column, ranked in the direction the metric declares
(``higher_is_better``). A record whose result has another hash (or none) gets the value marked
``comparable: false`` and no rank: it is shown, never ranked against the column. Ranks follow the one rule
(:mod:`cotk_repro.core.ranking`): verified records first (tier 0: reproduced by the dashboard's pool or by K
reproducers other than the signer), then signed ones run from a clean tree (tier 1), then dirty-tree, unsigned,
disputed ones (tier 2; each row says ``dirty``, ``signed`` and ``standing``), best value first within each; a
result of an unpinned system (its cell says ``"pinned": false``) ranks with the last. Each cell says its ``tier``
and whether it is ``verified``. Rows come in
upload order, or by one column's rank with ``sort=METRIC``; failed records have no row.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.engine import Connection

from ..core.ranking import VERIFIED
from .leaderboard import group_sizes, lower_is_better
from .models import BoardGroup, Record, Result, User


def columns(conn: Connection, task: str, dataset: str) -> list[dict[str, Any]]:
    """Every metric of the task / dataset with its direction, ranked hash and the groups it leaves apart."""
    metrics = (
        conn.execute(
            select(BoardGroup.metric)
            .where(BoardGroup.task == task, BoardGroup.dataset == dataset, BoardGroup.n > 0)
            .group_by(BoardGroup.metric)
            .order_by(BoardGroup.metric)
        )
        .scalars()
        .all()
    )
    out = []
    for metric in metrics:
        sizes = group_sizes(conn, task, dataset, metric)
        ranked = sizes[0] if sizes and sizes[0][0] else (None, 0)
        out.append(
            {
                "metric": metric,
                "higher_is_better": not lower_is_better(metric),
                "hash": ranked[0],
                "ranked": ranked[1],
                "other_groups": len(sizes) - (1 if ranked[0] else 0),
            }
        )
    return out


def _ranks(conn: Connection, task: str, dataset: str, column: dict[str, Any], pks: list[int]) -> dict[int, int]:
    """``{record_pk: rank}`` in the column's ranked group, for the records ``pks`` (ties share a rank)."""
    if column["hash"] is None or not pks:
        return {}
    value = Result.value.desc() if column["higher_is_better"] else Result.value.asc()
    ranked = (
        select(Result.record_pk.label("pk"), func.rank().over(order_by=(Result.tier.asc(), value)).label("rank"))
        .where(
            Result.task == task,
            Result.dataset == dataset,
            Result.metric == column["metric"],
            Result.hash == column["hash"],
        )
        .subquery()
    )
    return dict(conn.execute(select(ranked.c.pk, ranked.c.rank).where(ranked.c.pk.in_(pks))).all())


def build(
    conn: Connection,
    task: str,
    dataset: str,
    *,
    sort: str | None = None,
    limit: int = 100,
    page: int = 1,
    record_url=lambda rid: None,
) -> dict[str, Any]:
    """The table as the API returns it (``record_url`` turns an id into its page URL)."""
    cols = columns(conn, task, dataset)
    where = (Record.task == task, Record.dataset == dataset, Record.status == "ok")
    by = next((c for c in cols if c["metric"] == sort), None)
    query = (
        select(
            Record.id,
            Record.record_id,
            Record.project_name,
            Record.submitted_at,
            User.name,
            Record.key_fingerprint,
            Record.reproduced_by,
            Record.dirty,
            Record.standing,
        )
        .join(User, User.id == Record.user_id)
        .where(*where)
    )
    order: list[ColumnElement[Any]] = [Record.id.asc()]
    if by is not None and by["hash"] is not None:
        cell = (
            select(Result.record_pk, Result.value, Result.tier)
            .where(
                Result.task == task, Result.dataset == dataset, Result.metric == by["metric"], Result.hash == by["hash"]
            )
            .subquery()
        )
        query = query.outerjoin(cell, cell.c.record_pk == Record.id)
        value = cell.c.value.desc() if by["higher_is_better"] else cell.c.value.asc()
        order = [case((cell.c.value.is_(None), 1), else_=0), cell.c.tier.asc(), value, Record.id.asc()]
    total = conn.execute(select(func.count()).select_from(Record).where(*where)).scalar_one()
    rows = conn.execute(query.order_by(*order).limit(limit).offset((page - 1) * limit)).all()
    pks = [r[0] for r in rows]
    values: dict[int, dict[str, tuple[float, str | None, bool, int]]] = {}
    if pks:
        for pk, metric, h, v, pinned, t in conn.execute(
            select(Result.record_pk, Result.metric, Result.hash, Result.value, Result.pinned, Result.tier).where(
                Result.record_pk.in_(pks)
            )
        ):  # the record's own index
            values.setdefault(pk, {})[metric] = (v, h, bool(pinned), t)
    ranks = {c["metric"]: _ranks(conn, task, dataset, c, pks) for c in cols}
    out_rows = []
    for pk, rid, project, submitted, user, key, by_n, dirty, state in rows:
        cells: dict[str, dict[str, Any] | None] = {}
        for c in cols:
            if c["metric"] not in values.get(pk, {}):
                cells[c["metric"]] = None
                continue
            v, h, pinned, t = values[pk][c["metric"]]
            comparable = h is not None and h == c["hash"]
            cells[c["metric"]] = {
                "value": v,
                "comparable": comparable,
                "rank": ranks[c["metric"]].get(pk) if comparable else None,
                "hash": h,
                "pinned": pinned,
                "tier": t,
                "verified": t == VERIFIED,
            }
        out_rows.append(
            {
                "id": rid,
                "url": record_url(rid),
                "project": project,
                "user": user,
                "signer": user if key else None,
                "signed": key is not None,
                "dirty": bool(dirty),
                "standing": state,
                "submitted_at": submitted,
                "reproduced_by": by_n,
                "cells": cells,
            }
        )
    return {
        "task": task,
        "dataset": dataset,
        "sort": by["metric"] if by else None,
        "page": page,
        "per_page": limit,
        "total": total,
        "columns": cols,
        "rows": out_rows,
    }
