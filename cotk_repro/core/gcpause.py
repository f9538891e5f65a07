"""Pause the cyclic garbage collector around bulk work that allocates many short-lived objects."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block.

    Loading a corpus or tokenizing a reference set allocates hundreds of thousands of token lists, freed by
    reference counting (they form no cycles), which otherwise trigger a collection every few hundred
    allocations, each traversing every live list: a fifth of the time of a 1M-sentence load, and as much
    of corpus BLEU on 10,000 lines."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def without_gc(func: F) -> F:
    """Decorator: run ``func`` with the cyclic garbage collector paused."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with gc_paused():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
