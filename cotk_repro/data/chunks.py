"""The per-chunk work of loading, in this process or in a pool of worker processes.

A *chunk* is a few thousand samples read from a split file. Everything done to a chunk
depends on the chunk alone (strip and drop blank lines, raw digests, tokenize, data
digests, the chunk's own token table and ids), so chunks can be prepared in parallel;
the loader then merges them **in file order** into the split (provisional ids, counts,
raw strings). The serial path calls the same :func:`prepare` on the same chunks, so the
two paths give the same arrays, hashes and vocabulary, bit for bit (tested).

The pool is used only where it pays: a built-in tokenizer (``nltk``, ``space``: picklable,
stateless), at least :data:`PARALLEL_MIN_BYTES` of input, and a usable CPU left idle (the
usable CPUs less the load average at least 1).
``COTK_REPRO_DATA_WORKERS`` (or the loaders' ``workers`` argument) overrides the choice:
``1`` never starts a pool, ``N`` starts N workers whatever the size.
"""

from __future__ import annotations

import os
from collections import deque
from itertools import chain, count
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from . import hashing

#: samples per chunk (also on the serial path, so both paths cut the same chunks). A chunk's token lists are the
#: load's transient memory: 4,096 instead of 16,384 lowered the peak of COCO x1 from 52.7 to 46.3 MB and of x10
#: from ~104 to ~94 MB, at the same speed (benchmarks/data_load.py, alternating runs)
CHUNK_SAMPLES = 4096
#: input size from which a pool is started automatically (the pool costs tens of milliseconds)
PARALLEL_MIN_BYTES = 4 << 20


class Prepared(NamedTuple):
    """A prepared chunk: raw strings (``"\\n"``-joined, or a list when one holds a line break),
    number of utterances, utterances per sample (``None``: one each), raw and data digests,
    the chunk's sorted token table, the tokens as int32 indices into it, tokens per utterance."""

    raw: str | list[str]
    n_utts: int
    sizes: np.ndarray
    raw_digests: bytes
    data_digests: bytes
    table: list[str]
    ids: np.ndarray
    lengths: np.ndarray


class Recipe(NamedTuple):
    """How to turn utterances into tokens: the loader's tokenizer, lowercasing and truncation."""

    tokenizer: Any
    lowercase: bool
    max_len: int | None


def tokenize(recipe: Recipe, utts: list[str]) -> list[list[str]]:
    """Tokenize `utts` with the recipe's tokenizer, lowercasing and truncating to `max_len` as it says."""
    texts = [t.lower() for t in utts] if recipe.lowercase else utts
    tok = recipe.tokenizer
    many = getattr(tok, "tokenize_many", None)
    toks = many(texts) if many is not None else [tok.tokenize(t) for t in texts]
    m = recipe.max_len
    if m is not None and toks and max(map(len, toks)) > m:
        toks = [t if len(t) <= m else t[:m] for t in toks]
    return toks


def prepare(recipe: Recipe, utts: list[str], sizes: list[int] | None, raw_digests: bytes | None,
            clean: bool) -> Prepared | None:
    """Prepare one chunk. ``clean``: ``utts`` are file lines, stripped and blank ones dropped here
    (one sample each); ``raw_digests`` ``None``: one-utterance samples, digested here."""
    if clean:
        utts = [s for s in map(str.strip, utts) if s]
        if not utts:
            return None
    if raw_digests is None:
        raw_digests = hashing.raw_digests_one(utts)
    toks = tokenize(recipe, utts)
    if sizes is None:
        data_digests = hashing.data_digests_one(toks)
        size_arr = np.ones(len(utts), np.int64)
    else:
        parts = []
        i = 0
        for k in sizes:
            parts.append(hashing.data_digest(toks[i:i + k]))
            i += k
        data_digests = b"".join(parts)
        size_arr = np.asarray(sizes, np.int64)
    lengths = np.fromiter(map(len, toks), np.int64, count=len(toks))
    table, ids = token_table(toks, int(lengths.sum()), recipe)
    joined = "\n".join(utts)
    raw: str | list[str] = joined if joined.count("\n") == len(utts) - 1 else list(utts)
    return Prepared(raw, len(utts), size_arr, raw_digests, data_digests, table, ids, lengths)


def token_table(toks: list[list[str]], n_tokens: int, recipe: Recipe) -> tuple[list[str], np.ndarray]:
    """The sorted distinct tokens and every token as an int32 index into them, with one dict operation a
    token: each token first gets the position of its first occurrence, then a lookup table maps those to
    ranks in the sorted table."""
    first: dict[str, int] = {}
    first_pos = np.fromiter(map(first.setdefault, chain.from_iterable(toks), count()), np.int64, count=n_tokens)
    bad = next((t for t in set(map(type, first)) if not issubclass(t, str)), None)
    if bad is not None:
        from .errors import DataError

        raise DataError(f"tokenizer {getattr(recipe.tokenizer, 'name', '?')!r} returned a {bad.__name__} "
                        f"token; tokens must be strings")
    table = sorted(first)
    rank = np.zeros(n_tokens, np.int32)
    rank[np.fromiter(map(first.__getitem__, table), np.int64, count=len(table))] = np.arange(len(table),
                                                                                          dtype=np.int32)
    return table, rank[first_pos]


# -- the pool ------------------------------------------------------------------------------------------
_RECIPE: Recipe | None = None


def _init_worker(recipe: Recipe) -> None:
    global _RECIPE
    _RECIPE = recipe


def _prepare_in_worker(utts: list[str], sizes: list[int] | None, raw_digests: bytes | None,
                       clean: bool) -> Prepared | None:
    assert _RECIPE is not None
    return prepare(_RECIPE, utts, sizes, raw_digests, clean)


def usable_cpus() -> int:
    """Return how many CPUs this process may run on (affinity mask, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def choose_workers(workers: int | None, recipe: Recipe, input_bytes: int) -> int:
    """How many worker processes to use (1: none, prepare in this process)."""
    if workers is None:
        env = os.environ.get("COTK_REPRO_DATA_WORKERS", "").strip()
        workers = int(env) if env.isdigit() else None
    if workers is not None:
        return max(1, workers)
    from .tokenizers import SpaceTokenizer, WordPunctTokenizer

    if type(recipe.tokenizer) not in (SpaceTokenizer, WordPunctTokenizer) or input_bytes < PARALLEL_MIN_BYTES:
        return 1
    cpus = usable_cpus()
    # a worker pays only on a CPU nobody else uses: on a busy machine it competes with this process
    # (measured on a 2-core machine at load 4: the pool took longer than one process)
    if cpus < 2 or cpus - busy_cpus() < 1:
        return 1
    return 2


def busy_cpus(loadavg: str | None = None) -> float:
    """CPUs that other work keeps busy: the one-minute load average, or the tasks runnable right now other than
    this one where that is fewer (``/proc/loadavg``'s fourth field). The average lags by a minute: a job that
    has just ended still counts as running, and withheld the pool from a load that began after it (measured:
    COCO x50 took 6.2 s in one process right after CoTK's 55 s run, 4.3 s with the pool). ``loadavg``: that
    file's text (for tests); 0 where the system tells neither."""
    if loadavg is None:
        try:
            with open("/proc/loadavg", encoding="ascii") as fh:
                loadavg = fh.read()
        except OSError:
            loadavg = ""
    fields = loadavg.split()
    try:
        average = float(fields[0])
        running = int(fields[3].split("/")[0])
    except (IndexError, ValueError):
        try:
            return os.getloadavg()[0]
        except (AttributeError, OSError):  # pragma: no cover - not Unix
            return 0.0
    return min(average, max(running - 1, 0))


Job = tuple  # (utts, sizes, raw_digests, clean)


class Preparer:
    """Prepares chunks in order, in this process (``workers`` 1) or in a pool; ``close()`` ends the pool."""

    def __init__(self, recipe: Recipe, workers: int):
        self.recipe = recipe
        self.workers = workers
        self._pool: Any = None
        if workers > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                                             initargs=(recipe,))

    def run(self, jobs: Iterable[Job], merge: Callable[[Prepared], None]) -> None:
        """Prepare every job and ``merge`` the results in the jobs' order."""
        if self._pool is None:
            for job in jobs:
                done = prepare(self.recipe, *job)
                if done is not None:
                    merge(done)
            return
        pending: deque = deque()
        limit = 2 * self.workers + 1  # chunks in flight: bounds memory, keeps every worker busy
        for job in jobs:
            pending.append(self._pool.submit(_prepare_in_worker, *job))
            while len(pending) >= limit:
                self._merge_next(pending, merge)
        while pending:
            self._merge_next(pending, merge)

    @staticmethod
    def _merge_next(pending: deque, merge: Callable[[Prepared], None]) -> None:
        done = pending.popleft().result()
        if done is not None:
            merge(done)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def chunked(utts: Sequence[str], size: int = CHUNK_SAMPLES) -> Iterator[list[str]]:
    """``utts`` cut into lists of at most ``size``."""
    for i in range(0, len(utts), size):
        yield list(utts[i:i + size])
