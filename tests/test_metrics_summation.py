"""Exact metrics sum floats left to right on every Python (cotk_repro.metrics.summation).

Python 3.12's built-in ``sum()`` compensates float sums; 3.11's adds left to right. A metric declared exact must
give the same bits under both, so it sums with ``ordered_sum``. The references here are
``functools.reduce(operator.add, ...)`` (left to right on every Python) and, on 3.12 and later, the built-in
``sum()`` that would have moved the value. tests/test_cross_machine.py runs the metrics themselves under 3.10-3.13
and asserts that no exact metric's value moves.
"""

from __future__ import annotations

import functools
import math
import operator
import random
import sys
from collections import Counter

from cotk_repro.metrics import diversity, get_metric
from cotk_repro.metrics.summation import ordered_sum

#: 1e16 + 1 rounds back to 1e16 when added in order; a compensated sum keeps the 1
CANCELLING = [1e16, 1.0, -1e16]


def left_to_right(values, start=0.0):
    return functools.reduce(operator.add, values, start)


def test_ordered_sum_adds_in_order_with_one_rounding_each():
    assert ordered_sum(CANCELLING) == 0.0 == left_to_right(CANCELLING)
    assert math.fsum(CANCELLING) == 1.0  # what an exact sum gives: ordered_sum is not that either
    assert ordered_sum([]) == 0.0 and ordered_sum([], 0) == 0 and isinstance(ordered_sum([1, 2], 0), int)
    rng = random.Random(7)
    values = [rng.uniform(-1, 1) * 10 ** rng.randint(-8, 8) for _ in range(2000)]
    assert ordered_sum(values) == left_to_right(values)
    assert ordered_sum(iter(values), 5.0) == left_to_right(values, 5.0)  # any iterable, once


def test_the_builtin_sum_is_ordered_up_to_python_311_and_compensated_from_312():
    """What ordered_sum guards against, on this Python: 3.11 adds in order (the pins' bits), 3.12 does not."""
    if sys.version_info >= (3, 12):
        assert sum(CANCELLING) == 1.0 != ordered_sum(CANCELLING)
    else:
        assert sum(CANCELLING) == 0.0 == ordered_sum(CANCELLING)


def test_ngram_entropy_sums_its_terms_in_order():
    """An entropy whose terms, summed in order, differ from their compensated sum: the value is the ordered one
    (the same on every Python), checked against the formula summed with reduce. Under Python 3.12 and 3.13 the
    built-in sum() of these terms differs in the last bit."""
    rng = random.Random(3)
    words = [f"w{i}" for i in range(400)]
    texts = [" ".join(rng.choices(words, weights=[1 / (i + 1) for i in range(400)], k=30)) for _ in range(300)]
    tokens = [t.split() for t in texts]
    counts = Counter(w for toks in tokens for w in toks)
    z = sum(counts.values())
    terms = [c / z * math.log(c / z) for c in counts.values()]
    expected = -left_to_right(terms)
    assert diversity.ngram_entropy(tokens, 1) == expected
    assert get_metric("ngram-entropy", ngram=1, tokenizer="space").compute(texts)["ngram-entropy-1"] == expected
    assert abs(math.fsum(terms) + expected) < 1e-12  # the same number up to rounding
    if sys.version_info >= (3, 12):  # the case is one where this Python's sum() would have given other bits
        assert -sum(terms) != expected
