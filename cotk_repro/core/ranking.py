"""The one ranking rule of cotk-repro: competition ranking, as SQL's ``rank()`` gives it, by tier then value.

Ties share the rank and the next rank skips ("1224"): a value's rank is one plus the number of entries
strictly better than it. An entry may carry a *tier* (:func:`tier`): every entry of tier 0 (a record signed
and run from a clean tree, by a system pinned to its weights) ranks above every entry of tier 1 (a dirty tree,
no signature, or an *unpinned* system: one served by an endpoint, whose model id pins no weights), whatever
their values, and entries tie only within one tier. ``compare`` ranks each column's comparable group with
:func:`rank` (a cell of an unpinned system is tier 1); the dashboard's leaderboard numbers each page with
:func:`page_ranks`, and its table asks the database for ``rank() OVER (ORDER BY tier, value)``;
tests/test_ranking.py checks all three on the same cells with ties and with dirty, unsigned and unpinned
results.
"""

from __future__ import annotations

from collections.abc import Sequence

#: the tier of a signed record run from a clean tree by a pinned system, and of any other (dirty tree,
#: unsigned, or unpinned)
TRUSTED, UNTRUSTED = 0, 1


def tier(*, signed: bool, dirty: bool, pinned: bool = True) -> int:
    """A result's tier: :data:`TRUSTED` when its record is signed, its tree was clean and the system that made
    the outputs is pinned to its weights (``pinned``: False for an endpoint's model, see
    :func:`cotk_repro.llm.system.describe_system`), else :data:`UNTRUSTED`."""
    return TRUSTED if signed and not dirty and pinned else UNTRUSTED


def rank(values: Sequence[float], *, higher_is_better: bool = True, tiers: Sequence[int] | None = None) -> list[int]:
    """The competition rank of each of ``values``, in their order (1 is the best; equal values of one tier
    share a rank). ``tiers``: each value's tier (default: all :data:`TRUSTED`); a lower tier ranks first."""
    tiers = tiers if tiers is not None else [TRUSTED] * len(values)

    def key(i: int) -> tuple[int, float]:
        return tiers[i], -values[i] if higher_is_better else values[i]

    order = sorted(range(len(values)), key=key)
    ranks = [0] * len(values)
    prev, current = None, 0
    for position, i in enumerate(order, 1):
        if position == 1 or key(i) != prev:
            current, prev = position, key(i)
        ranks[i] = current
    return ranks


def page_ranks(
    page: Sequence[float],
    *,
    offset: int,
    first_rank: int,
    higher_is_better: bool = True,
    tiers: Sequence[int] | None = None,
) -> list[int]:
    """The ranks of one page of a list sorted best first (by tier, then value): :func:`rank` of the whole
    list, read on the page.

    ``offset``: how many entries precede the page; ``first_rank``: the rank of its first entry (one plus the
    number of entries strictly better than it: one COUNT, since the page may start inside a tie). An entry tied
    with the first shares its rank; any other is worse than everything before the page, so its rank is
    ``offset`` plus its rank within the page.
    """
    return [first_rank if r == 1 else offset + r for r in rank(page, higher_is_better=higher_is_better, tiers=tiers)]
