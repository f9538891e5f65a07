"""The one ranking rule of cotk-repro: competition ranking, as SQL's ``rank()`` gives it.

Ties share the rank and the next rank skips ("1224"): a value's rank is one plus the number of values
strictly better than it. ``compare`` ranks each column's comparable group with :func:`rank`; the dashboard's
leaderboard numbers each page with :func:`page_ranks`, and its table asks the database for ``rank()``;
tests/test_ranking.py checks all three on the same cells with ties.
"""

from __future__ import annotations

from typing import Sequence


def rank(values: Sequence[float], *, higher_is_better: bool = True) -> list[int]:
    """The competition rank of each of ``values``, in their order (1 is the best; equal values share a rank)."""
    order = sorted(range(len(values)), key=lambda i: -values[i] if higher_is_better else values[i])
    ranks = [0] * len(values)
    prev, current = None, 0
    for position, i in enumerate(order, 1):
        if position == 1 or values[i] != prev:
            current, prev = position, values[i]
        ranks[i] = current
    return ranks


def page_ranks(page: Sequence[float], *, offset: int, first_rank: int, higher_is_better: bool = True) -> list[int]:
    """The ranks of one page of a list sorted best first: :func:`rank` of the whole list, read on the page.

    ``offset``: how many entries precede the page; ``first_rank``: the rank of its first entry (one plus the
    number of values strictly better than it: one COUNT, since the page may start inside a tie). An entry tied
    with the first shares its rank; any other is worse than everything before the page, so its rank is
    ``offset`` plus its rank within the page.
    """
    return [first_rank if r == 1 else offset + r for r in rank(page, higher_is_better=higher_is_better)]
