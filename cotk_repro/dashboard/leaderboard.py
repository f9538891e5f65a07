"""Leaderboards: results of one task / dataset / metric, grouped by comparability hash.

Only results with the same hash are ranked against each other (docs/spec.md section 7):

* one group per hash, the largest group first (ties: the hash, for a stable order);
* within a group, results by tier (:func:`cotk_repro.core.ranking.tier`): 0 *verified* (reproduced by the
  dashboard's pool or by K reproducers other than its signer), 1 signed, from a clean tree, by a pinned system,
  2 the rest (dirty, unsigned, unpinned: a system served by an endpoint, disputed); one of a higher tier never
  ranks above one of a lower tier. Each entry says its ``tier``, ``verified``, ``standing``, ``dirty``,
  ``signed`` and ``pinned``. Within a tier best first, in the direction the metric that reports the key declares
  (``higher_is_better``, see docs/metrics.md "The metric contract"; a key no registered metric
  reports ranks higher-is-better); equal values keep upload order and share their rank (competition
  ranking, :func:`cotk_repro.core.ranking.rank`: the next rank skips, as SQL ``rank()`` and the table);
  ``by_value`` (``order=value``) ranks the whole group by value, tiers ignored;
* results without a hash (*unverifiable*) form their own group, ``"hash": null``, last;
* each entry names its signer (the record's owner) and whether it is signed, and counts its
  independent reproductions (``reproduced_by``: distinct users other than the author whose latest
  verdict, computed by the server, is ``reproduced``); ``reproduced_only`` keeps only those with one.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import and_, bindparam, func, select
from sqlalchemy.engine import Connection

from ..core.ranking import TIERS, VERIFIED, page_ranks
from .models import BoardGroup, Record, Reproduction, Result, User


def lower_is_better(metric: str) -> bool:
    """Whether the metric that reports the result key ``metric`` declares lower values better."""
    from ..metrics.facts import facts_for_result_key

    facts = facts_for_result_key(metric)
    return facts is not None and not facts.higher_is_better


def reproduction_counts(conn: Connection, record_pks: list[int]) -> dict[int, int]:
    """``{record_pk: current reproductions by users other than the author}`` (a user's latest only)."""
    if not record_pks:
        return {}
    return dict(conn.execute(_REPRODUCTIONS, {"pks": record_pks}).all())


def result_intervals(conn: Connection, metric: str, record_pks: list[int]) -> dict[int, dict[str, float]]:
    """``{record_pk: {"mean", "half_width"}}`` of the records whose result ``metric`` was uploaded with a bootstrap
    interval (``evaluate --ci``): one query over the page's records, reading only the bodies that hold one."""
    if not record_pks:
        return {}
    import json

    from ..records.view import interval_of

    out = {}
    for pk, body in conn.execute(_INTERVAL_BODIES, {"pks": record_pks}).all():
        try:
            results = json.loads(body).get("results")
        except (ValueError, AttributeError):
            continue
        ci = interval_of(results.get(metric)) if isinstance(results, dict) else None
        if ci is not None:
            out[pk] = ci
    return out


def _add_interval(entries: list[dict[str, Any]], ci: dict[str, float] | None) -> None:
    """Give the page's last entry its interval, and say whether it overlaps the interval of the entry above (the
    two may not differ: the rank by value stays, the reader is told)."""
    if ci is None:
        return
    entry = entries[-1]
    entry["ci"] = ci
    above = entries[-2].get("ci") if len(entries) > 1 else None
    if above is not None:
        lo, hi = ci["mean"] - ci["half_width"], ci["mean"] + ci["half_width"]
        entry["overlaps_above"] = (
            lo <= above["mean"] + above["half_width"] and above["mean"] - above["half_width"] <= hi
        )


def group_sizes(conn: Connection, task: str, dataset: str, metric: str) -> list[tuple[str | None, int]]:
    """``[(hash, count)]`` of a leaderboard's groups: comparable ones largest first, then unverifiable (None)."""
    rows = conn.execute(_GROUP_SIZES, {"task": task, "dataset": dataset, "metric": metric}).all()
    comparable: list[tuple[str | None, int]] = sorted(((h, n) for h, n in rows if h), key=lambda x: (-x[1], x[0]))
    unverifiable = [(None, n) for h, n in rows if not h]
    return comparable + unverifiable


def reproduced_group_sizes(conn: Connection, task: str, dataset: str, metric: str) -> list[tuple[str | None, int]]:
    """Group sizes counting only independently reproduced results (few: counted on demand)."""
    rows = conn.execute(_REPRODUCED_GROUP_SIZES, {"task": task, "dataset": dataset, "metric": metric}).all()
    comparable = sorted(((h, n) for h, n in rows if h), key=lambda x: (-x[1], x[0]))
    return comparable + [(None, n) for h, n in rows if not h]


# Statements built once (a leaderboard is rebuilt after every write; building SQLAlchemy statements
# cost more than running them)
_REPRODUCTIONS = (
    select(Reproduction.record_pk, func.count())
    .where(
        Reproduction.record_pk.in_(bindparam("pks", expanding=True)),
        Reproduction.superseded.is_(False),
        Reproduction.by_author.is_(False),
    )
    .group_by(Reproduction.record_pk)
)
_INTERVAL_BODIES = select(Record.id, Record.body).where(
    Record.id.in_(bindparam("pks", expanding=True)), Record.body.like('%"ci"%')
)
_BOARD = (
    BoardGroup.task == bindparam("task"),
    BoardGroup.dataset == bindparam("dataset"),
    BoardGroup.metric == bindparam("metric"),
)
_GROUP_SIZES = select(BoardGroup.hash, BoardGroup.n).where(*_BOARD, BoardGroup.n > 0)
_REPRODUCED_GROUP_SIZES = (
    select(Result.hash, func.count())
    .join(Record, Record.id == Result.record_pk)
    .where(
        Result.task == bindparam("task"),
        Result.dataset == bindparam("dataset"),
        Result.metric == bindparam("metric"),
        Record.reproduced_by > 0,
    )
    .group_by(Result.hash)
)


def _group_query(columns, unverifiable: bool, reproduced_only: bool, by_value: bool = False):
    """A query over one group's results of one tier (``tier`` bound; every tier with ``by_value``): each tier
    is a range of the index."""
    cond = [
        Result.task == bindparam("task"),
        Result.dataset == bindparam("dataset"),
        Result.metric == bindparam("metric"),
        Result.hash.is_(None) if unverifiable else Result.hash == bindparam("hash"),
    ]
    if not by_value:
        cond.append(Result.tier == bindparam("tier"))
    q = select(*columns).where(and_(*cond))
    if reproduced_only:
        q = q.join(Record, Record.id == Result.record_pk).where(Record.reproduced_by > 0)
    return q


@cache
def _count_stmt(unverifiable: bool, reproduced_only: bool):
    """How many results one tier of one group holds."""
    return _group_query([func.count()], unverifiable, reproduced_only)


@cache
def _better_stmt(lower: bool, unverifiable: bool, reproduced_only: bool, by_value: bool = False):
    """How many results of one tier of one group (of the whole group, ``by_value``) are strictly better than
    ``value``."""
    q = _group_query([func.count()], unverifiable, reproduced_only, by_value)
    return q.where(Result.value < bindparam("value") if lower else Result.value > bindparam("value"))


@cache
def _page_stmt(lower: bool, unverifiable: bool, reproduced_only: bool, by_value: bool = False):
    """One page of one tier of one group (of the whole group by value, ``by_value``): its (value, record) from
    the index alone, then the records it names."""
    page_q = _group_query(
        [
            Result.value.label("value"),
            Result.record_pk.label("record_pk"),
            Result.pinned.label("pinned"),
            Result.tier.label("tier"),
        ],
        unverifiable,
        reproduced_only,
        by_value,
    )
    page_q = (
        page_q.order_by(Result.value.asc() if lower else Result.value.desc(), Result.record_pk.asc())
        .limit(bindparam("limit"))
        .offset(bindparam("offset"))
        .subquery()
    )
    return (
        select(
            page_q.c.value,
            Record.id,
            Record.record_id,
            Record.project_name,
            Record.submitted_at,
            User.name,
            Record.key_fingerprint,
            Record.reproduced_by,
            Record.dirty,
            page_q.c.pinned,
            Record.standing,
            page_q.c.tier,
        )
        .select_from(page_q)
        .join(Record, Record.id == page_q.c.record_pk)
        .join(User, User.id == Record.user_id)
        .order_by(page_q.c.value.asc() if lower else page_q.c.value.desc(), page_q.c.record_pk.asc())
    )


def _page(
    conn: Connection,
    params: dict[str, Any],
    lower: bool,
    unverifiable: bool,
    reproduced_only: bool,
    offset: int,
    limit: int,
) -> tuple[list[tuple], list[int], int]:
    """One page of one group in ranking order, tier by tier: ``(rows, their tiers, the page's first rank)``.

    Each tier is read as its own range of the index (one ordered scan each, as fast as a group without
    tiers); the sizes of the tiers before the last are asked only for a page past the first, to know where
    the page starts.
    """
    stmt = _page_stmt(lower, unverifiable, reproduced_only)
    sizes: dict[int, int] = {}
    if offset:
        for t in TIERS[:-1]:
            sizes[t] = conn.execute(_count_stmt(unverifiable, reproduced_only), {**params, "tier": t}).scalar_one()
    rows: list[tuple] = []
    tiers: list[int] = []
    before = 0  # results in the tiers read so far (known past the first page only)
    for t in TIERS:
        skip = max(0, offset - before)
        if t in sizes and skip >= sizes[t]:
            before += sizes[t]
            continue
        want = limit - len(rows)
        if want <= 0:
            break
        got = conn.execute(stmt, {**params, "tier": t, "limit": want, "offset": skip}).all()
        rows += got
        tiers += [t] * len(got)
        before += sizes.get(t, 0)
    first = 1  # the page may start inside a tie: its first rank counts the results ranked strictly above
    if rows and offset:
        first += conn.execute(
            _better_stmt(lower, unverifiable, reproduced_only), {**params, "tier": tiers[0], "value": rows[0][0]}
        ).scalar_one()
        first += sum(n for t, n in sizes.items() if t < tiers[0])
    return rows, tiers, first


def _page_by_value(
    conn: Connection,
    params: dict[str, Any],
    lower: bool,
    unverifiable: bool,
    reproduced_only: bool,
    offset: int,
    limit: int,
) -> tuple[list[tuple], int]:
    """One page of one group best value first, tiers ignored: ``(rows, the page's first rank)``."""
    rows: list[tuple] = list(
        conn.execute(
            _page_stmt(lower, unverifiable, reproduced_only, True), {**params, "limit": limit, "offset": offset}
        ).all()
    )
    first = 1
    if rows and offset:
        first += conn.execute(
            _better_stmt(lower, unverifiable, reproduced_only, True), {**params, "value": rows[0][0]}
        ).scalar_one()
    return rows, first


def build(
    conn: Connection,
    task: str,
    dataset: str,
    metric: str,
    *,
    limit: int = 100,
    page: int = 1,
    max_groups: int = 20,
    record_url=lambda rid: None,
    reproduced_only: bool = False,
    by_value: bool = False,
) -> dict[str, Any]:
    """The leaderboard as the API returns it (``record_url`` turns an id into its page URL); ``by_value``: best
    value first whatever the tiers (``order=value``; each entry still says its tier)."""
    lower = lower_is_better(metric)
    sizes = (reproduced_group_sizes if reproduced_only else group_sizes)(conn, task, dataset, metric)
    offset = (page - 1) * limit
    pages = []
    for h, total in sizes[:max_groups]:
        params = {"task": task, "dataset": dataset, "metric": metric, "hash": h}
        if by_value:
            rows, first = _page_by_value(conn, params, lower, h is None, reproduced_only, offset, limit)
            ranks = page_ranks([r[0] for r in rows], offset=offset, first_rank=first, higher_is_better=not lower)
        else:
            rows, tiers, first = _page(conn, params, lower, h is None, reproduced_only, offset, limit)
            ranks = page_ranks(
                [r[0] for r in rows], offset=offset, first_rank=first, higher_is_better=not lower, tiers=tiers
            )
        pages.append((h, total, rows, ranks))
    counts = reproduction_counts(conn, [r[1] for _h, _t, rows, _r in pages for r in rows])  # one query
    intervals = result_intervals(conn, metric, [r[1] for _h, _t, rows, _r in pages for r in rows])
    groups = []
    for h, total, rows, ranks in pages:
        entries = []
        for rank, (value, pk, rid, project, submitted, user, key, by, dirty, pinned, state, t) in zip(ranks, rows):
            entries.append(
                {
                    "rank": rank,
                    "id": rid,
                    "url": record_url(rid),
                    "value": value,
                    "user": user,
                    "signer": user if key else None,
                    "signed": key is not None,
                    "key": key,
                    "dirty": bool(dirty),
                    "pinned": bool(pinned),
                    "tier": t,
                    "verified": t == VERIFIED,
                    "standing": state,
                    "project": project,
                    "submitted_at": submitted,
                    "reproductions": counts.get(pk, 0),
                    "reproduced_by": by,
                    "unverifiable": h is None,
                }
            )
            _add_interval(entries, intervals.get(pk))
        groups.append({"hash": h, "comparable": h is not None, "total": total, "entries": entries})
    return {
        "task": task,
        "dataset": dataset,
        "metric": metric,
        "higher_is_better": not lower,
        "reproduced_only": reproduced_only,
        "order": "value" if by_value else "tier",
        "page": page,
        "per_page": limit,
        "total_groups": len(sizes),
        "groups": groups,
    }


def catalogue(conn: Connection) -> list[dict[str, Any]]:
    """Every task / dataset with its metrics and record counts (the home page)."""
    rows = conn.execute(
        select(BoardGroup.task, BoardGroup.dataset, BoardGroup.metric, func.sum(BoardGroup.n))
        .group_by(BoardGroup.task, BoardGroup.dataset, BoardGroup.metric)
        .order_by(BoardGroup.task, BoardGroup.dataset, BoardGroup.metric)
    ).all()
    records = dict(
        ((t, d), n)
        for t, d, n in conn.execute(
            select(Record.task, Record.dataset, func.count()).group_by(Record.task, Record.dataset)
        ).all()
    )
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for task, dataset, metric, n in rows:
        n = int(n)
        item = out.setdefault(
            (task, dataset),
            {"task": task, "dataset": dataset, "records": records.get((task, dataset), 0), "metrics": []},
        )
        item["metrics"].append({"metric": metric, "results": n})
    for (task, dataset), n in records.items():
        out.setdefault((task, dataset), {"task": task, "dataset": dataset, "records": n, "metrics": []})
    return [out[k] for k in sorted(out)]
