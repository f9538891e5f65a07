"""The one ranking rule of cotk-repro: competition ranking, as SQL's ``rank()`` gives it, by tier then value.

Ties share the rank and the next rank skips ("1224"): a value's rank is one plus the number of entries
strictly better than it. An entry carries a *tier* (:func:`tier`), and every entry of a lower tier ranks above
every entry of a higher one, whatever their values; entries tie only within one tier:

* **0, verified**: reproduced (identical, or within its declared tolerance) by the dashboard's own pool or by
  at least K reproducers other than its signer and its mirrors, each signing with a key its holder proved
  (:func:`standing`); the one tier an uploader cannot claim;
* **1, signed**: a signed record run from a clean tree by a pinned system, not verified (yet): the uploader's
  word;
* **2, the rest**: a dirty tree, no signature, an *unpinned* system (one served by an endpoint, whose model id
  pins no weights: :func:`system_pinned`), or evidence against it (disputed, or refuted by a majority).

Pinned is derived from the system a record describes, never taken from its claim (:func:`system_pinned`: the
worse of the claim and the description wins). A record that describes no ``system`` is one whose outputs its
own code made, pinned by the commit and environment the record captures (as ``copy`` or ``ngram`` are): that
is the uploader's word, worth tier 1 at most; only a reproduction earns tier 0, and reproductions run without
network, so an endpoint's outputs passed off as a local system's never reproduce.

``compare`` ranks each column's comparable group with :func:`rank` (a cell of an unpinned system is tier 2);
the dashboard's leaderboard numbers each page with :func:`page_ranks`, and its table asks the database for
``rank() OVER (ORDER BY tier, value)``; tests/test_ranking.py checks all three on the same cells with ties and
with verified, dirty, unsigned and unpinned results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: the tiers, best first: verified by reproduction; signed, clean and pinned; everything else
VERIFIED, SIGNED, UNTRUSTED = 0, 1, 2
TIERS = (VERIFIED, SIGNED, UNTRUSTED)
#: the best tier an uploader's own word reaches (the name older callers use)
TRUSTED = SIGNED

#: generators whose outputs come from an endpoint (a model id pins no weights): unpinned whatever a record says
UNPINNED_GENERATORS = frozenset({"openai"})

#: a record's standing, from the reproductions of it (:func:`standing`)
UNVERIFIED, VERIFIED_STANDING, DISPUTED, REFUTED = "unverified", "verified", "disputed", "refuted"
STANDINGS = (UNVERIFIED, VERIFIED_STANDING, DISPUTED, REFUTED)
#: the verified-by count a dashboard uses unless told otherwise (``dashboard serve --verified-by K``)
DEFAULT_VERIFIED_BY = 1


def tier(*, signed: bool, dirty: bool, pinned: bool = True, standing: str = UNVERIFIED) -> int:
    """A result's tier: :data:`VERIFIED` when its record's ``standing`` is verified and its system pinned (an
    endpoint's answer reproduced today says nothing of tomorrow's); :data:`UNTRUSTED` when the system is not
    pinned or the evidence is against the record (disputed, refuted); else :data:`SIGNED` for a signed record
    run from a clean tree, :data:`UNTRUSTED` for any other."""
    if not pinned or standing in (DISPUTED, REFUTED):
        return UNTRUSTED
    if standing == VERIFIED_STANDING:
        return VERIFIED
    return SIGNED if signed and not dirty else UNTRUSTED


def standing(pool: bool | None, agree: int, differ: int, verified_by: int) -> str:
    """A record's standing from its independent verdicts: ``pool`` the dashboard pool's (True reproduced,
    False not, None none), ``agree`` / ``differ`` how many other reproducers (each a distinct user other than
    the signer and its mirrors, signing with a proven key) reproduced it or not; ``verified_by`` is K.

    * no verdict against it: **verified** when the pool reproduced it or at least K reproducers did;
    * verdicts on both sides: **verified** when at least K+1 verdicts (the pool's counts one) agree it
      reproduces and outnumber the others, or when the pool reproduced it and one reproducer alone says it
      differs (one stranger never removes the pool's mark); **refuted** when at least K+1 agree it does not
      and outnumber the others; else **disputed** (more reproductions are asked for);
    * only verdicts against it: **refuted** once at least K+1 agree, else unverified (one stranger alone
      neither raises nor lowers a record).
    """
    yes = agree + (pool is True)
    no = differ + (pool is False)
    if no == 0:
        return VERIFIED_STANDING if pool is True or agree >= verified_by else UNVERIFIED
    if yes == 0:
        return REFUTED if no >= verified_by + 1 else UNVERIFIED
    if pool is True and no == 1:
        return VERIFIED_STANDING
    if yes >= verified_by + 1 and yes > no:
        return VERIFIED_STANDING
    if no >= verified_by + 1 and no > yes:
        return REFUTED
    return DISPUTED


def decided(state: str) -> bool:
    """Whether a record's standing is settled (no more reproductions are asked for)."""
    return state in (VERIFIED_STANDING, REFUTED)


def _unpinned_tag(part: str) -> bool:
    if not part.startswith("system:"):
        return False
    generator = part[len("system:") :].split("@", 1)[0]
    return generator in UNPINNED_GENERATORS


def system_pinned(system: Mapping[str, Any] | None, signatures: Iterable[Any] = (), claims: Iterable[Any] = ()) -> bool:
    """Whether the outputs a record scored came from a pinned system, derived from what the record describes:
    False when its ``system`` names an endpoint's generator (:data:`UNPINNED_GENERATORS`) or says
    ``"pinned": false``, when any of its result ``signatures`` carries ``|system:<such a generator>@...``, or
    when any of its ``claims`` (the results' ``pinned``) is false. The worse of the claim and the description
    wins: a claim to be pinned raises nothing. A record without ``system`` is read as its own code's outputs
    (see the module's docstring)."""
    if isinstance(system, Mapping):
        if system.get("pinned") is False or system.get("generator") in UNPINNED_GENERATORS:
            return False
    for sig in signatures:
        if isinstance(sig, str) and any(_unpinned_tag(part) for part in sig.split("|")):
            return False
    return all(claim is not False for claim in claims)


def rank(values: Sequence[float], *, higher_is_better: bool = True, tiers: Sequence[int] | None = None) -> list[int]:
    """The competition rank of each of ``values``, in their order (1 is the best; equal values of one tier
    share a rank). ``tiers``: each value's tier (default: all the same); a lower tier ranks first."""
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
