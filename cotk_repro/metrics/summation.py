"""A float sum that is the same on every Python: left to right, one rounding per addition.

Python 3.12's built-in ``sum()`` compensates a sum of floats (Neumaier's algorithm), so the same numbers summed
by the same code give a value that differs in its last digits between Python 3.11 and 3.12 or 3.13. A metric that
declares itself exact (:data:`cotk_repro.metrics.base.EXACT`: the same to the last bit on every machine) sums its
floats here instead: in the order given, as Python up to 3.11 and NLTK under it do, so its pinned values keep
their bits. (``math.fsum`` is exact and also the same everywhere, but it is not the sum that the references this
project is compared with compute.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T", float, int)


def ordered_sum(values: Iterable[T], start: T | float = 0.0) -> T | float:
    """``start + v1 + v2 + ...`` evaluated left to right, whatever the Python (the built-in ``sum`` of 3.11)."""
    total = start
    for value in values:
        total = total + value
    return total
