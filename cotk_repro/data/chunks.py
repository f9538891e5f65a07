"""The per-chunk work of loading, in this process or shared with forked helper processes.

A *chunk* is a few thousand samples read from a split file. Everything done to a chunk
depends on the chunk alone (strip and drop blank lines, raw digests, tokenize, data
digests, the chunk's own token table and ids), so chunks can be prepared in parallel;
the loader then merges them **in file order** into the split (provisional ids, counts,
raw strings). The serial path calls the same :func:`prepare` on the same chunks, so the
two paths give the same arrays, hashes and vocabulary, bit for bit (tested).

Helpers are forked only where they pay: a built-in tokenizer (``nltk``, ``space``: stateless),
at least :data:`PARALLEL_MIN_BYTES` of input, a usable CPU left idle (the usable CPUs less the
busy ones at least 1), and no other thread running in this process (see :func:`can_fork`).
``COTK_REPRO_DATA_WORKERS`` (or the loaders' ``workers`` argument) overrides the size and load
rules: ``1`` never forks, ``N`` prepares chunks in N processes, this one included.

A helper is a plain ``os.fork`` with two pipes, not a ``multiprocessing`` pool: nothing to
import, no threads, no pickled input it already has the code for, and this process prepares
chunks too instead of waiting (measured on COCO x1, 1.1 MB: 110 ms with one helper against 136 ms
alone; a ``ProcessPoolExecutor`` of two took 215 ms against 155 ms).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, count
from typing import Any, NamedTuple

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

import numpy as np

from ..core.wordpunct import split_spaced
from . import hashing
from .tokenizers import SpaceTokenizer, WordPunctTokenizer

#: samples per chunk (also on the serial path, so both paths cut the same chunks). A chunk's token lists are the
#: load's transient memory: 4,096 instead of 16,384 lowered the peak of COCO x1 from 52.7 to 46.3 MB and of x10
#: from ~104 to ~94 MB, at the same speed; 2,048 keeps a helper's turns even (x1 with a helper: 110 ms against
#: 122 ms at 4,096; alone the same) (benchmarks/data_load.py, alternating runs)
CHUNK_SAMPLES = 2048
#: input size from which helper processes are forked automatically (measured on 2 CPUs, best of 4: COCO at a
#: quarter of x1, 289 KB, took 64 ms with a helper and 53 ms alone; at half, 576 KB, 74 ms against 86 ms)
PARALLEL_MIN_BYTES = 512 << 10
#: a pipe to a helper holds a prepared chunk (~0.4 MB for 2,048 COCO sentences) where the system allows
PIPE_BYTES = 1 << 20
#: the built-in tokenizers: stateless (helpers are forked for them automatically), with a spaced form (trusted)
_SPACED_TOKENIZERS = (SpaceTokenizer, WordPunctTokenizer)


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


def tokenize(recipe: Recipe, utts: list[str]) -> tuple[list[list[str]], bytes | None]:
    """Tokenize `utts` with the recipe's tokenizer, lowercasing and truncating to `max_len` as it says; with the
    tokens in spaced form where the tokenizer gives it (``tokenize_spaced``) and nothing was truncated."""
    texts = [t.lower() for t in utts] if recipe.lowercase else utts
    tok = recipe.tokenizer
    # only the built-in classes: the digests trust the spaced form without checking it
    spaced = tok.tokenize_spaced(texts) if type(tok) in _SPACED_TOKENIZERS else None
    if spaced is not None:
        toks = split_spaced(spaced)
    else:
        many = getattr(tok, "tokenize_many", None)
        toks = many(texts) if many is not None else [tok.tokenize(t) for t in texts]
    m = recipe.max_len
    if m is not None and toks and max(map(len, toks)) > m:
        toks = [t if len(t) <= m else t[:m] for t in toks]
        spaced = None
    return toks, spaced


def prepare(
    recipe: Recipe, utts: list[str], sizes: list[int] | None, raw_digests: bytes | None, clean: bool
) -> Prepared | None:
    """Prepare one chunk. ``clean``: ``utts`` are file lines, stripped and blank ones dropped here
    (one sample each); ``raw_digests`` ``None``: one-utterance samples, digested here."""
    if clean:
        utts = [s for s in map(str.strip, utts) if s]
        if not utts:
            return None
    if raw_digests is None:
        raw_digests = hashing.raw_digests_one(utts)
    toks, spaced = tokenize(recipe, utts)
    if sizes is None:
        data_digests = hashing.data_digests_one(toks, spaced)
        size_arr = np.ones(len(utts), np.int64)
    else:
        parts = []
        i = 0
        for k in sizes:
            parts.append(hashing.data_digest(toks[i : i + k]))
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

        raise DataError(
            f"tokenizer {getattr(recipe.tokenizer, 'name', '?')!r} returned a {bad.__name__} "
            f"token; tokens must be strings"
        )
    table = sorted(first)
    rank = np.zeros(n_tokens, np.int32)
    rank[np.fromiter(map(first.__getitem__, table), np.int64, count=len(table))] = np.arange(len(table), dtype=np.int32)
    return table, rank[first_pos]


# -- the helpers -------------------------------------------------------------------------------------
def can_fork() -> bool:
    """Whether helper processes may be forked here: POSIX, and no other Python thread running (a fork copies
    only the calling thread, so a lock another thread holds would stay locked in the copy)."""
    if not hasattr(os, "fork"):  # pragma: no cover - not POSIX
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() <= 1


def _grow(fd: int) -> None:
    """Let a pipe hold a whole prepared chunk, so a helper goes on with its next chunk before this process
    reads the last one (Linux; elsewhere, or beyond the system's limit, the pipe keeps its size)."""
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is not None:
        try:
            fcntl.fcntl(fd, setpipe, PIPE_BYTES)
        except OSError:
            pass


class Helper:
    """A forked process that prepares the chunks it is sent: a pickled job in, a pickled :class:`Prepared` out.
    It ends at the end of its input (its pipe closed), never returns into the caller's code, ignores Ctrl-C (this
    process ends it) and dies with this process (a closed pipe)."""

    def __init__(self, recipe: Recipe, inherited: Sequence[int] = ()):
        job_r, job_w = os.pipe()
        out_r, out_w = os.pipe()
        _grow(job_w)
        _grow(out_w)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the forked copy (measured by the equality tests)
            code = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                for fd in (job_w, out_r, *inherited):  # the other ends, and earlier helpers' pipes
                    os.close(fd)
                _serve(recipe, job_r, out_w)
                code = 0
            finally:
                os._exit(code)
        os.close(job_r)
        os.close(out_w)
        self.pid = pid
        self.jobs = os.fdopen(job_w, "wb")
        self.results = os.fdopen(out_r, "rb")

    @property
    def fds(self) -> tuple[int, int]:
        return self.jobs.fileno(), self.results.fileno()

    def send(self, job: tuple) -> bool:
        try:
            pickle.dump(job, self.jobs, protocol=pickle.HIGHEST_PROTOCOL)
            self.jobs.flush()
            return True
        except OSError:  # the helper is gone
            return False

    def receive(self) -> tuple[bool, Prepared | None]:
        """``(True, result)``, or ``(False, None)`` when the helper died before answering."""
        try:
            return True, pickle.load(self.results)
        except Exception:
            return False, None

    def end(self, kill: bool = False) -> None:
        """Close the pipes (the helper exits at its input's end) and, with ``kill``, kill it at once."""
        for f in (self.jobs, self.results):
            try:
                f.close()
            except OSError:
                pass
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def wait(self) -> None:
        """Reap the ended helper."""
        if self.pid:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:  # pragma: no cover - already reaped
                pass
            self.pid = 0


def _serve(recipe: Recipe, job_fd: int, out_fd: int) -> None:  # pragma: no cover - runs in a helper
    with os.fdopen(job_fd, "rb") as jobs, os.fdopen(out_fd, "wb") as out:
        while True:
            try:
                job = pickle.load(jobs)
            except EOFError:
                return
            pickle.dump(prepare(recipe, *job), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()


def usable_cpus() -> int:
    """Return how many CPUs this process may run on (affinity mask, else the CPU count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def choose_workers(workers: int | None, recipe: Recipe, input_bytes: int) -> int:
    """How many processes prepare chunks, this one included (1: this one alone)."""
    if workers is None:
        env = os.environ.get("COTK_REPRO_DATA_WORKERS", "").strip()
        workers = int(env) if env.isdigit() else None
    if workers is not None:
        return max(1, workers)
    if type(recipe.tokenizer) not in _SPACED_TOKENIZERS or input_bytes < PARALLEL_MIN_BYTES:
        return 1
    cpus = usable_cpus()
    # a helper pays only on a CPU nobody else uses: on a busy machine it competes with this process
    # (measured on a 2-core machine at load 4: a pool took longer than one process)
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
    """Prepares chunks and hands them to ``merge`` in order: in this process alone (``workers`` 1), or with
    ``workers - 1`` forked helpers taking turns with it. In each round every helper is sent the next chunk, this
    process prepares one itself, then the helpers' results are read in order; so a helper waits only for its
    next chunk and a result never waits for one sent later (no deadlock, at most one chunk a helper in flight).
    A helper that dies is replaced by this process for the rest: the chunks and their results stay the same.
    ``close()`` ends the helpers, ``wait()`` reaps them."""

    def __init__(self, recipe: Recipe, workers: int):
        self.recipe = recipe
        self.workers = workers
        self._helpers: list[Helper] = []
        if workers > 1 and can_fork():
            inherited: list[int] = []
            for _ in range(workers - 1):
                try:
                    helper = Helper(recipe, inherited)
                except OSError:  # no more processes or pipes to be had: go on with the helpers there are
                    break
                inherited.extend(helper.fds)
                self._helpers.append(helper)

    def run(self, jobs: Iterable[tuple[Any, Job]], merge: Callable[[Any, Prepared], None]) -> None:
        """Prepare every job (``(key, job)`` pairs) and call ``merge(key, prepared)`` in the jobs' order (empty
        chunks skipped)."""
        recipe = self.recipe
        if not self._helpers:
            for key, job in jobs:
                done = prepare(recipe, *job)
                if done is not None:
                    merge(key, done)
            return
        it = iter(jobs)
        while True:
            own = next(it, None)
            if own is None:
                return
            sent = []
            for helper in self._helpers:
                item = next(it, None)
                if item is None:
                    break
                sent.append((helper, item, helper.send(item[1])))
            done = prepare(recipe, *own[1])
            if done is not None:
                merge(own[0], done)
            for helper, (key, job), ok in sent:
                if ok:
                    ok, done = helper.receive()
                if not ok:  # the helper is gone: this process does its share from now on
                    self._drop(helper)
                    done = prepare(recipe, *job)
                if done is not None:
                    merge(key, done)

    def _drop(self, helper: Helper) -> None:
        if helper in self._helpers:
            self._helpers.remove(helper)
            helper.end(kill=True)
            helper.wait()

    def close(self, kill: bool = False) -> None:
        """End the helpers: close their input (they exit when they have read its end) or, with ``kill`` (after an
        error), kill them. :meth:`wait` reaps them, so that they can exit while this process goes on."""
        for helper in self._helpers:
            helper.end(kill=kill)

    def wait(self) -> None:
        """Reap the helpers (after :meth:`close`)."""
        helpers, self._helpers = self._helpers, []
        for helper in helpers:
            helper.wait()


def chunked(utts: Sequence[str], size: int = CHUNK_SAMPLES) -> Iterator[list[str]]:
    """``utts`` cut into lists of at most ``size``."""
    for i in range(0, len(utts), size):
        yield list(utts[i : i + size])
