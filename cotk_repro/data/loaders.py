"""Dataloaders: ``language-generation``, ``single-turn-dialog`` and ``multi-turn-dialog``.

All three share one engine (:class:`TextDataLoader`): a split is a sequence of
*samples*, each a list of *utterances* (one sentence; a post and a response; the
turns of a session). Files are read in blocks (:mod:`.reading`); each block is
tokenized in bulk, hashed (one digest per sample) and stored compactly:

* raw utterances as ``"\\n"``-joined block strings (about the size of the file);
* tokens as one flat ``int32`` array of *provisional* ids (4 bytes a token) with
  utterance offsets, plus the provisional token table;

so a corpus needs about its own size plus 4 bytes a token of memory, never a Python
object per token. Once every split is read, counts (``numpy.bincount``) give the
vocabulary and a permutation maps provisional ids to vocabulary ids.

Hash codes (docs/spec.md section 5) are computed from order-independent multisets of the
sample digests (:mod:`.hashing`): shuffling samples never changes any hash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import filterfalse, repeat
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np

from ..core.gcpause import gc_paused
from . import chunks, hashing
from .errors import DataError
from .reading import file_size, iter_jsonl, iter_line_blocks
from .tokenizers import Tokenizer, get_tokenizer
from .vocab import EOS_ID, GO_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID, Vocab

Progress = Callable[[int], None]
DEFAULT_SPLITS = ("train", "dev", "test")


class Block:
    """Samples read from a file: ``utts`` (utterances used), ``sizes`` (utterances per sample,
    ``None``: one each), ``raw_digests`` (32 bytes per sample, over the raw sample; ``None``: one-utterance
    samples, digested when the block is prepared) and ``clean`` (``utts`` are file lines, stripped and
    blank ones dropped when the block is prepared)."""

    __slots__ = ("utts", "sizes", "raw_digests", "clean")

    def __init__(self, utts: list[str], sizes: list[int] | None, raw_digests: bytes | None, clean: bool = False):
        self.utts, self.sizes, self.raw_digests, self.clean = utts, sizes, raw_digests, clean

    def jobs(self, size: int | None = None) -> Iterator[tuple]:
        """The block cut into chunks of at most ``size`` samples (:data:`chunks.CHUNK_SAMPLES`), as
        :func:`chunks.prepare` arguments."""
        size = size or chunks.CHUNK_SAMPLES
        if self.sizes is None:
            for i in range(0, len(self.utts), size):
                raw = None if self.raw_digests is None else self.raw_digests[32 * i : 32 * (i + size)]
                yield self.utts[i : i + size], None, raw, self.clean
            return
        u = 0
        for i in range(0, len(self.sizes), size):
            sizes = self.sizes[i : i + size]
            n = sum(sizes)
            raw = None if self.raw_digests is None else self.raw_digests[32 * i : 32 * (i + size)]
            yield self.utts[u : u + n], sizes, raw, self.clean
            u += n


class RawStore:
    """Utterance strings kept as ``"\\n"``-joined chunks (lists when a string holds a line break).

    :meth:`take` finds an utterance through its chunk's line offsets (8 bytes a line, computed the
    first time the chunk is read from), so a batch costs its own utterances, never a split of every
    chunk it touches (a shuffled batch touches every chunk of a large corpus).
    """

    def __init__(self) -> None:
        self._chunks: list[str | list[str]] = []
        self._ends: list[int] = []
        self._offsets: dict[int, np.ndarray] = {}
        self.n = 0

    def add(self, utts: list[str]) -> None:
        if not utts:
            return
        joined = "\n".join(utts)
        self.add_chunk(joined if joined.count("\n") == len(utts) - 1 else list(utts), len(utts))

    def add_chunk(self, chunk: str | list[str], n: int) -> None:
        """Add ``n`` utterances, ``"\n"``-joined (``chunk`` a str) or as a list."""
        if not n:
            return
        self._chunks.append(chunk)
        self.n += n
        self._ends.append(self.n)

    def all(self) -> list[str]:
        out: list[str] = []
        for c in self._chunks:
            out.extend(c.split("\n") if isinstance(c, str) else c)
        return out

    def _line_offsets(self, c: int) -> np.ndarray:
        """Start of every line of chunk ``c`` and one past its end (+1 for the missing last ``\n``)."""
        found = self._offsets.get(c)
        if found is None:
            chunk = cast(str, self._chunks[c])  # take() asks only for the offsets of a joined (str) chunk
            lens = np.fromiter(map(len, chunk.split("\n")), np.int64)
            found = np.zeros(len(lens) + 1, np.int64)
            np.cumsum(lens + 1, out=found[1:])
            self._offsets[c] = found
        return found

    def take(self, indices: Sequence[int]) -> list[str]:
        if len(indices) > self.n // 4:
            everything = self.all()
            return [everything[i] for i in indices]
        idx = np.asarray(indices, np.int64)
        which = np.searchsorted(np.asarray(self._ends, np.int64), idx, side="right")
        out = []
        for i, c in zip(idx.tolist(), which.tolist()):
            chunk = self._chunks[c]
            i -= self._ends[c - 1] if c else 0
            if isinstance(chunk, str):
                off = self._line_offsets(c)
                out.append(chunk[off[i] : off[i + 1] - 1])
            else:
                out.append(chunk[i])
        return out


class Split:
    """One split, stored compactly (see the module docstring)."""

    def __init__(self, name: str, sources: list[Path]):
        self.name = name
        self.sources = sources
        self.raw = RawStore()
        self._id_parts: list[np.ndarray] = []
        self._len_parts: list[np.ndarray] = []
        self._size_parts: list[np.ndarray] = []
        self._raw_digests: list[bytes] = []
        self._data_digests: list[bytes] = []
        self.n_samples = 0
        self.raw_hash = ""
        self.data_hash = ""
        self.ids = np.zeros(0, np.int32)
        self.offsets = np.zeros(1, np.int64)  # token offsets of utterances
        self.sample_offsets = np.zeros(1, np.int64)  # utterance offsets of samples

    def finish(self) -> None:
        self.ids = np.concatenate(self._id_parts) if self._id_parts else np.zeros(0, np.int32)
        lens = np.concatenate(self._len_parts) if self._len_parts else np.zeros(0, np.int64)
        self.offsets = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=self.offsets[1:])
        sizes = np.concatenate(self._size_parts) if self._size_parts else np.zeros(0, np.int64)
        self.sample_offsets = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=self.sample_offsets[1:])
        self.raw_hash = hashing.multiset_hash("raw", self._raw_digests)
        self.data_hash = hashing.multiset_hash("data", self._data_digests)
        self._id_parts = self._len_parts = self._size_parts = []
        self._raw_digests = self._data_digests = []

    @property
    def n_utterances(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])


class TextDataLoader:
    """The engine shared by the built-in dataloaders. Subclasses define ``name``,
    ``version``, :meth:`find_sources` and :meth:`read_blocks`, and the batch layout."""

    name = "text"
    version = "1"
    #: options a subclass accepts beyond the common ones, with defaults
    extra_options: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        path: str | Path,
        *,
        tokenizer: Any = "nltk",
        min_frequent_vocab_times: int = 10,
        min_rare_vocab_times: int = 0,
        lowercase: bool = False,
        max_sent_length: int | None = None,
        splits: Sequence[str] = DEFAULT_SPLITS,
        progress: Progress | None = None,
        workers: int | None = None,
        **options: Any,
    ):
        unknown = sorted(set(options) - set(self.extra_options))
        if unknown:
            accepted = [
                "tokenizer",
                "min_frequent_vocab_times",
                "min_rare_vocab_times",
                "lowercase",
                "max_sent_length",
                "splits",
                "workers",
                *self.extra_options,
            ]
            raise DataError(f"dataloader {self.name!r} has no option {unknown[0]!r}; options: {', '.join(accepted)}")
        self.options = {**self.extra_options, **options}
        for key in ("min_frequent_vocab_times", "min_rare_vocab_times"):
            value = locals()[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise DataError(f"{key} must be a non-negative integer, got {value!r}")
        if max_sent_length is not None and (
            isinstance(max_sent_length, bool) or not isinstance(max_sent_length, int) or max_sent_length < 1
        ):
            raise DataError(f"max_sent_length must be a positive integer or None, got {max_sent_length!r}")
        splits = list(splits)
        if "train" not in splits or len(set(splits)) != len(splits):
            raise DataError(f"splits must be distinct names including 'train', got {splits!r}")
        self.path = Path(path)
        if not self.path.is_dir():
            raise DataError(
                f"dataset folder {self.path} does not exist"
                if not self.path.exists()
                else f"{self.path} is not a folder; a dataset is a folder of split files"
            )
        self.tokenizer: Tokenizer = get_tokenizer(tokenizer)
        self.min_frequent_vocab_times = min_frequent_vocab_times
        self.min_rare_vocab_times = min_rare_vocab_times
        self.lowercase = bool(lowercase)
        self.max_sent_length = max_sent_length
        self.splits: list[str] = splits
        self._progress = progress
        #: worker processes for tokenizing and hashing (None: automatic, see :mod:`.chunks`); never in a hash
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise DataError(f"workers must be a positive integer or None, got {workers!r}")
        self._workers = workers
        self._reference_hashes: dict[str, dict[str, str]] = {}
        with gc_paused():
            self._load()

    # -- subclass interface -----------------------------------------------------------
    def find_sources(self, split: str) -> list[Path]:  # pragma: no cover - abstract
        raise NotImplementedError

    def read_blocks(self, split: str, sources: list[Path], progress: Progress | None) -> Iterator[Block]:
        raise NotImplementedError  # pragma: no cover

    def response_indices(self, split: str) -> np.ndarray | None:
        """Utterance indices of the references (``None``: every utterance)."""
        return None

    # -- loading ------------------------------------------------------------------------
    @property
    def settings(self) -> dict[str, Any]:
        """Everything that changes the data or vocabulary besides the files: the setting hash's input."""
        return {
            "loader": self.name,
            "loader_version": self.version,
            "tokenizer": dict(self.tokenizer.settings),
            "min_frequent_vocab_times": self.min_frequent_vocab_times,
            "min_rare_vocab_times": self.min_rare_vocab_times,
            "lowercase": self.lowercase,
            "max_sent_length": self.max_sent_length,
            "special_tokens": list(SPECIAL_TOKENS),
            "splits": list(self.splits),
            **{k: self.options[k] for k in sorted(self.extra_options)},
        }

    @property
    def _recipe(self) -> chunks.Recipe:
        return chunks.Recipe(self.tokenizer, self.lowercase, self.max_sent_length)

    def _prepare(self, text_list: list[str]) -> list[list[str]]:
        return chunks.tokenize(self._recipe, text_list)[0]

    def _load(self) -> None:
        sources = {s: self.find_sources(s) for s in self.splits}
        self._splits: dict[str, Split] = {s: Split(s, sources[s]) for s in self.splits}
        fit = getattr(self.tokenizer, "fit", None)
        if fit is not None:  # a tokenizer that learns from the training split (punkt)
            texts: list[str] = []
            for block in self.read_blocks("train", sources["train"], self._progress):
                texts.extend(t.lower() for t in block.utts) if self.lowercase else texts.extend(block.utts)
            fit(texts)
            del texts
        prov: dict[str, int] = {}
        prov_tokens: list[str] = []
        input_bytes = sum(file_size(p) for srcs in sources.values() for p in srcs)
        splits = list(self._splits.values())
        finished_splits = 0

        def finish_before(split: Split | None) -> None:
            # a split is finished as soon as the next one's chunks arrive: its parts are freed (and their memory
            # reused) before the next split's are made (COCO x50: 311 MB peak, against 376 MB finishing at the end)
            nonlocal finished_splits
            end = len(splits) if split is None else splits.index(split)
            while finished_splits < end:
                self._finish(splits[finished_splits])
                finished_splits += 1

        def merge(split: Split, done: chunks.Prepared) -> None:
            finish_before(split)
            self._merge(split, done, prov, prov_tokens)

        preparer = chunks.Preparer(self._recipe, chunks.choose_workers(self._workers, self._recipe, input_bytes))
        try:
            finished = False
            try:
                preparer.run(self._jobs(), merge)
                finished = True
            finally:
                preparer.close(kill=not finished)  # the helpers exit while the rest is computed
            finish_before(None)
            self._count_and_hash(prov_tokens)
        finally:
            preparer.wait()

    @staticmethod
    def _finish(split: Split) -> None:
        split.finish()
        if split.n_samples == 0:
            files = " and ".join(str(p) for p in split.sources)
            raise DataError(f"{files} holds no samples: the {split.name} split is empty")

    def _count_and_hash(self, prov_tokens: list[str]) -> None:
        """Count tokens into the vocabulary and compute the hash codes (every split finished)."""
        self._prov_tokens = prov_tokens
        self._prov_array = np.array(prov_tokens + [""], dtype=object)[:-1] if prov_tokens else np.zeros(0, object)
        n = len(prov_tokens)
        train_counts = np.bincount(self._splits["train"].ids, minlength=n)
        all_counts = train_counts.copy()
        for name, split in self._splits.items():
            if name != "train":
                all_counts += np.bincount(split.ids, minlength=n)
        self.vocab = Vocab.from_counts(
            prov_tokens, train_counts, all_counts, self.min_frequent_vocab_times, self.min_rare_vocab_times
        )
        if not self.vocab.frequent:
            most = int(train_counts.max()) if n else 0
            raise DataError(
                f"min_frequent_vocab_times={self.min_frequent_vocab_times} leaves the frequent vocabulary "
                f"empty: the most frequent training token is seen {most} times"
            )
        lookup = self.vocab._ids
        self._perm = np.fromiter(map(lookup.get, prov_tokens, repeat(UNK_ID, n)), np.int64, count=n)
        self.hash_codes: dict[str, str] = hashing.hash_codes(
            {s: sp.raw_hash for s, sp in self._splits.items()},
            {s: sp.data_hash for s, sp in self._splits.items()},
            self.vocab.frequent,
            self.vocab.rare,
            self.settings,
        )

    def _jobs(self) -> Iterator[tuple[Split, chunks.Job]]:
        """Every split's chunks, split after split in file order, each with its split."""
        for name, split in self._splits.items():
            for block in self.read_blocks(name, split.sources, self._progress):
                for job in block.jobs():
                    yield split, job

    @staticmethod
    def _merge(split: Split, done: chunks.Prepared, prov: dict[str, int], prov_tokens: list[str]) -> None:
        """Append a prepared chunk to ``split``: its tokens get provisional ids (new ones in sorted order)."""
        new = list(filterfalse(prov.__contains__, done.table))
        if new:  # new tokens get the next ids, in the chunk's (sorted) order
            prov.update(zip(new, range(len(prov_tokens), len(prov_tokens) + len(new))))
            prov_tokens.extend(new)
        remap = np.fromiter(map(prov.__getitem__, done.table), np.int32, count=len(done.table))
        split._id_parts.append(remap[done.ids] if len(done.ids) else np.zeros(0, np.int32))
        split._len_parts.append(done.lengths)
        split._size_parts.append(done.sizes)
        split._raw_digests.append(done.raw_digests)
        split._data_digests.append(done.data_digests)
        split.raw.add_chunk(done.raw, done.n_utts)
        split.n_samples += len(done.sizes)

    # -- access -----------------------------------------------------------------------------
    def _split(self, split: str) -> Split:
        if split not in self._splits:
            raise DataError(f"no split {split!r}; splits: {', '.join(self.splits)}")
        return self._splits[split]

    def _utterance_tokens(self, sp: Split, indices: np.ndarray | None) -> list[list[str]]:
        tokens = self._prov_array[sp.ids].tolist()
        offs = sp.offsets.tolist()
        if indices is None:
            return [tokens[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]
        return [tokens[offs[i] : offs[i + 1]] for i in indices.tolist()]

    def sentences(self, split: str) -> list[list[str]]:
        """The references of ``split`` as token lists (after lowercase/truncation, no special tokens).
        Language generation: every sentence; dialog loaders: the responses."""
        sp = self._split(split)
        return self._utterance_tokens(sp, self.response_indices(split))

    def raw_sentences(self, split: str) -> list[str]:
        """The raw reference strings of ``split`` (stripped lines; dialog loaders: the responses)."""
        sp = self._split(split)
        idx = self.response_indices(split)
        return sp.raw.all() if idx is None else sp.raw.take(idx.tolist())

    def sample_count(self, split: str) -> int:
        return self._split(split).n_samples

    def token_count(self, split: str) -> int:
        return self._split(split).n_tokens

    @property
    def sample_counts(self) -> dict[str, int]:
        return {s: sp.n_samples for s, sp in self._splits.items()}

    def reference_hashes(self, split: str = "test") -> dict[str, str]:
        """``{"perplexity": hex, "bleu": hex}`` of the references of ``split``, exactly as the
        perplexity and BLEU metrics compute them (:mod:`cotk_repro.text.reference_hashes`)."""
        if split not in self._reference_hashes:
            from ..text.reference_hashes import bleu_reference_hash, perplexity_reference_hash

            sents = self.sentences(split)
            detok = self.convert_tokens_to_sentence
            self._reference_hashes[split] = {
                "perplexity": perplexity_reference_hash(sents, self.vocab.frequent + self.vocab.rare),
                "bleu": bleu_reference_hash([[detok(s)] for s in sents]),
            }
        return dict(self._reference_hashes[split])

    # -- conversions ----------------------------------------------------------------------------
    def convert_tokens_to_ids(self, tokens: Sequence[str], only_frequent: bool = False) -> list[int]:
        return self.vocab.tokens_to_ids(tokens, only_frequent=only_frequent)

    def convert_ids_to_tokens(self, ids: Sequence[int], trim: bool = True) -> list[str]:
        """Tokens of ``ids``; with ``trim``: drop a leading ``<go>``, stop at the first ``<eos>``,
        drop ``<pad>``."""
        ids = [int(i) for i in ids]
        if trim:
            if ids and ids[0] == GO_ID:
                ids = ids[1:]
            if EOS_ID in ids:
                ids = ids[: ids.index(EOS_ID)]
            ids = [i for i in ids if i != PAD_ID]
        return self.vocab.ids_to_tokens(ids)

    def convert_tokens_to_sentence(self, tokens: Sequence[str]) -> str:
        return self.tokenizer.detokenize(list(tokens))

    def convert_ids_to_sentence(self, ids: Sequence[int], trim: bool = True) -> str:
        return self.convert_tokens_to_sentence(self.convert_ids_to_tokens(ids, trim=trim))

    def tokenize(self, text: str) -> list[str]:
        """Tokenize ``text`` as the loader does (lowercase, truncation)."""
        return self._prepare([text])[0]

    # -- batches ----------------------------------------------------------------------------------
    def _order(self, n: int, shuffle: bool, seed: int) -> np.ndarray:
        if shuffle:
            return np.random.default_rng(seed).permutation(n)
        return np.arange(n)

    def _pad(self, sp: Split, utt_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frequent ids, all-vocab ids, lengths) of utterances, ``<go> ... <eos>`` padded with ``<pad>``."""
        utt_idx = np.asarray(utt_idx, np.int64)
        starts = sp.offsets[utt_idx]
        lens = sp.offsets[utt_idx + 1] - starts
        width = int(lens.max()) + 2 if len(lens) else 2
        allv = np.full((len(utt_idx), width), PAD_ID, np.int64)
        allv[:, 0] = GO_ID
        cols = np.arange(width - 2)
        inside = cols[None, :] < lens[:, None]  # one gather for the whole batch, no loop over rows
        allv[:, 1:-1][inside] = self._perm[sp.ids[(starts[:, None] + cols[None, :])[inside]]]
        allv[np.arange(len(utt_idx)), lens + 1] = EOS_ID
        freq = np.where(allv >= self.vocab.frequent_vocab_size, UNK_ID, allv)
        return freq, allv, lens + 2

    def batches(
        self, split: str, batch_size: int = 64, shuffle: bool = False, seed: int = 0
    ) -> Iterator[dict[str, Any]]:
        """Batches of samples as padded numpy arrays (see each loader for the keys);
        ``shuffle`` with ``seed`` gives the same order on every machine."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise DataError(f"batch_size must be a positive integer, got {batch_size!r}")
        sp = self._split(split)
        order = self._order(sp.n_samples, shuffle, seed)
        for start in range(0, len(order), batch_size):
            yield self._batch(split, sp, order[start : start + batch_size])

    def _batch(self, split: str, sp: Split, samples: np.ndarray) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    # -- summary -------------------------------------------------------------------------------------
    def summary(self, reference_split: str | None = "test") -> dict[str, Any]:
        """Everything ``cotk-repro data hashes`` prints."""
        out: dict[str, Any] = {
            "loader": self.name,
            "path": str(self.path),
            "tokenizer": self.tokenizer.name,
            "hash_codes": dict(self.hash_codes),
            "vocab": {
                "frequent": len(self.vocab.frequent),
                "rare": len(self.vocab.rare),
                "frequent_vocab_size": self.vocab.frequent_vocab_size,
                "all_vocab_size": self.vocab.all_vocab_size,
            },
            "splits": {
                s: {"samples": sp.n_samples, "tokens": sp.n_tokens, "files": [str(p) for p in sp.sources]}
                for s, sp in self._splits.items()
            },
            "settings": self.settings,
        }
        if reference_split is not None:
            out["reference_hashes"] = {"split": reference_split, **self.reference_hashes(reference_split)}
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self.path} {self.sample_counts}>"


# ----------------------------------------------------------------------------------------------------
def _prefixed(path: Path, split: str, suffix: str) -> Path | None:
    """``{split}{suffix}``, else the one ``PREFIX_{split}{suffix}`` (CoTK's ``mscoco_train.txt``, ``coco_test.txt``)."""
    exact = path / f"{split}{suffix}"
    if exact.is_file():
        return exact
    found = sorted(p for p in path.glob(f"*_{split}{suffix}") if p.is_file())
    if len(found) > 1:
        raise DataError(f"{path} has several {split} files, {', '.join(p.name for p in found)}; keep one")
    return found[0] if found else None


def guess_loader(path: Path) -> str | None:
    """The built-in loader whose file layout ``path`` has (``.post``/``.response``, JSONL fields, ``.txt``)."""
    if not path.is_dir():
        return None
    names = [p.name for p in path.iterdir() if p.is_file()]
    if any(n.endswith((".post", ".response")) for n in names):
        return "single-turn-dialog"
    for n in sorted(names):
        if n.endswith(".jsonl"):
            with open(path / n, encoding="utf-8", errors="replace") as fh:
                first = fh.readline()
            if '"session"' in first:
                return "multi-turn-dialog"
            if '"post"' in first and '"response"' in first:
                return "single-turn-dialog"
    if any(n.endswith(".txt") for n in names):
        return "language-generation"
    return None


def _missing(loader: str, path: Path, split: str, looked: list[str]) -> DataError:
    message = f"{path} has no {split} split: looked for {' or '.join(looked)}"
    guess = guess_loader(path)
    if guess and guess != loader:
        return DataError(message, hint=f"the folder looks like {guess} data: add --loader {guess}")
    if split == "train":
        return DataError(message, hint="every dataset needs a training split; rename its file to one of these names")
    return DataError(
        message, hint="load only the splits the folder has: --splits train,test, or splits=['train', 'test'] in Python"
    )


class LanguageGeneration(TextDataLoader):
    """One sentence per line: ``{split}.txt`` (or CoTK's ``mscoco_{split}.txt``). Blank lines are
    skipped; lines are stripped of surrounding whitespace. Batches: ``sent``, ``sent_allvocabs``,
    ``sent_length``, ``sent_str``."""

    name = "language-generation"

    def find_sources(self, split: str) -> list[Path]:
        found = _prefixed(self.path, split, ".txt")
        if found is None:
            raise _missing(self.name, self.path, split, [f"{split}.txt", f"PREFIX_{split}.txt"])
        return [found]

    def read_blocks(self, split: str, sources: list[Path], progress: Progress | None) -> Iterator[Block]:
        for _, lines in iter_line_blocks(sources[0], progress):
            yield Block(lines, None, None, clean=True)  # stripped, blank lines dropped, digested when prepared

    def _batch(self, split: str, sp: Split, samples: np.ndarray) -> dict[str, Any]:
        freq, allv, lens = self._pad(sp, samples)
        return {"sent": freq, "sent_allvocabs": allv, "sent_length": lens, "sent_str": sp.raw.take(samples.tolist())}


class SingleTurnDialog(TextDataLoader):
    """Post/response pairs: ``{split}.post`` + ``{split}.response`` (aligned lines; CoTK's
    ``opensub_pair_{split}.*`` too) or ``{split}.jsonl`` with ``{"post": .., "response": ..}``.
    References (:meth:`sentences`) are the responses. Batches: ``post``, ``post_allvocabs``,
    ``post_length``, ``post_str`` and the same for ``resp``."""

    name = "single-turn-dialog"

    def find_sources(self, split: str) -> list[Path]:
        have = _prefixed(self.path, split, ".post") or _prefixed(self.path, split, ".response")
        if have is not None:
            post, resp = have.with_suffix(".post"), have.with_suffix(".response")
            if not (post.is_file() and resp.is_file()):
                raise DataError(f"{have} has no partner: {resp if have == post else post} is missing")
            return [post, resp]
        jl = _prefixed(self.path, split, ".jsonl")
        if jl is not None:
            return [jl]
        raise _missing(
            self.name,
            self.path,
            split,
            [
                f"{split}.post + {split}.response",
                f"PREFIX_{split}.post + PREFIX_{split}.response",
                f"{split}.jsonl",
                f"PREFIX_{split}.jsonl",
            ],
        )

    def read_blocks(self, split: str, sources: list[Path], progress: Progress | None) -> Iterator[Block]:
        if len(sources) == 1:
            yield from self._read_jsonl(sources[0], progress)
            return
        post_path, resp_path = sources
        posts = iter_line_blocks(post_path, progress)
        resps = iter_line_blocks(resp_path, progress)
        p_buf: list[str] = []
        r_buf: list[str] = []
        p_done = r_done = False
        n_p = n_r = 0
        while True:
            # once one side is exhausted, drain the other so a surplus line is seen (and refused)
            while not p_done and (r_done or len(p_buf) <= len(r_buf)):
                nxt = next(posts, None)
                if nxt is None:
                    p_done = True
                else:
                    p_buf.extend(nxt[1])
                    n_p += len(nxt[1])
            while not r_done and (p_done or len(r_buf) <= len(p_buf)):
                nxt = next(resps, None)
                if nxt is None:
                    r_done = True
                else:
                    r_buf.extend(nxt[1])
                    n_r += len(nxt[1])
            k = min(len(p_buf), len(r_buf))
            if p_done and r_done and len(p_buf) != len(r_buf):
                # trailing blank lines do not count
                while p_buf[k:] and not p_buf[-1].strip():
                    p_buf.pop()
                    n_p -= 1
                while r_buf[k:] and not r_buf[-1].strip():
                    r_buf.pop()
                    n_r -= 1
                if len(p_buf) != len(r_buf):
                    raise DataError(
                        f"{post_path} has {n_p} lines but {resp_path} has {n_r}: posts and responses "
                        f"must pair line by line"
                    )
                k = len(p_buf)
            if k:
                block = self._pairs(p_buf[:k], r_buf[:k])
                del p_buf[:k], r_buf[:k]
                if block is not None:
                    yield block
            if p_done and r_done and not p_buf and not r_buf:
                return

    def _pairs(self, posts: list[str], resps: list[str]) -> Block | None:
        utts: list[str] = []
        for p, r in zip(posts, resps):
            p, r = p.strip(), r.strip()
            if p or r:
                utts.append(p)
                utts.append(r)
        if not utts:
            return None
        n = len(utts) // 2
        raw = b"".join(hashing.raw_digest(utts[2 * i : 2 * i + 2]) for i in range(n))
        return Block(utts, [2] * n, raw)

    def _read_jsonl(self, path: Path, progress: Progress | None) -> Iterator[Block]:
        posts: list[str] = []
        resps: list[str] = []
        for _, (post, resp) in iter_jsonl(path, ("post", "response"), progress):
            posts.append(post)
            resps.append(resp)
            if len(posts) >= 8192:
                block = self._pairs(posts, resps)
                posts, resps = [], []
                if block is not None:
                    yield block
        block = self._pairs(posts, resps)
        if block is not None:
            yield block

    def response_indices(self, split: str) -> np.ndarray:
        sp = self._split(split)
        return np.arange(1, sp.n_utterances, 2, dtype=np.int64)

    def _batch(self, split: str, sp: Split, samples: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, k in (("post", 0), ("resp", 1)):
            idx = samples * 2 + k
            freq, allv, lens = self._pad(sp, idx)
            out.update(
                {key: freq, f"{key}_allvocabs": allv, f"{key}_length": lens, f"{key}_str": sp.raw.take(idx.tolist())}
            )
        return out


class MultiTurnDialog(TextDataLoader):
    """Sessions: ``{split}.jsonl`` with ``{"session": [utterance, ...]}`` per line; utterances are
    stripped of surrounding whitespace. ``max_turns`` keeps the first turns of each session (the
    raw hash still covers the whole session).
    References are every turn after the first. Batches: ``sent`` / ``sent_allvocabs``
    (batch x turns x length), ``sent_length`` (batch x turns), ``turn_length``, ``sent_str``."""

    name = "multi-turn-dialog"
    extra_options: ClassVar[dict[str, Any]] = {"max_turns": None}

    def __init__(self, path: str | Path, **options: Any):
        max_turns = options.get("max_turns")
        if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1):
            raise DataError(f"max_turns must be a positive integer or None, got {max_turns!r}")
        super().__init__(path, **options)

    def find_sources(self, split: str) -> list[Path]:
        jl = _prefixed(self.path, split, ".jsonl")
        if jl is None:
            raise _missing(self.name, self.path, split, [f"{split}.jsonl", f"PREFIX_{split}.jsonl"])
        return [jl]

    def read_blocks(self, split: str, sources: list[Path], progress: Progress | None) -> Iterator[Block]:
        max_turns = self.options.get("max_turns")
        utts: list[str] = []
        sizes: list[int] = []
        raws: list[bytes] = []
        for _, (session,) in iter_jsonl(sources[0], ("session",), progress):
            # like every other loader: surrounding whitespace is not data, so the raw digest is
            # over the stripped utterances (of the whole session, even with max_turns)
            session = [u.strip() for u in session]
            raws.append(hashing.raw_digest(session))
            used = session[:max_turns] if max_turns else session
            utts.extend(used)
            sizes.append(len(used))
            if len(utts) >= 16384:
                yield Block(utts, sizes, b"".join(raws))
                utts, sizes, raws = [], [], []
        if sizes:
            yield Block(utts, sizes, b"".join(raws))

    def response_indices(self, split: str) -> np.ndarray:
        sp = self._split(split)
        mask = np.ones(sp.n_utterances, bool)
        mask[sp.sample_offsets[:-1]] = False
        return np.flatnonzero(mask).astype(np.int64)

    def _batch(self, split: str, sp: Split, samples: np.ndarray) -> dict[str, Any]:
        starts = sp.sample_offsets[samples]
        turns = sp.sample_offsets[samples + 1] - starts
        idx = (
            np.concatenate([np.arange(s, s + t) for s, t in zip(starts, turns)])
            if len(samples)
            else np.zeros(0, np.int64)
        )
        freq, allv, lens = self._pad(sp, idx)
        b, t_max, width = len(samples), int(turns.max()) if len(turns) else 0, freq.shape[1]
        sent = np.full((b, t_max, width), PAD_ID, np.int64)
        sent_all = np.full((b, t_max, width), PAD_ID, np.int64)
        sent_len = np.zeros((b, t_max), np.int64)
        strs = sp.raw.take(idx.tolist())
        out_strs: list[list[str]] = []
        pos = 0
        for r, t in enumerate(turns.tolist()):
            sent[r, :t] = freq[pos : pos + t]
            sent_all[r, :t] = allv[pos : pos + t]
            sent_len[r, :t] = lens[pos : pos + t]
            out_strs.append(strs[pos : pos + t])
            pos += t
        return {
            "sent": sent,
            "sent_allvocabs": sent_all,
            "sent_length": sent_len,
            "turn_length": turns,
            "sent_str": out_strs,
        }


# factories for the plugin hooks --------------------------------------------------------------------
def language_generation(path: str | Path, **options: Any) -> LanguageGeneration:
    """Load a language-generation dataset from `path` with the given options."""
    return LanguageGeneration(path, **options)


def single_turn_dialog(path: str | Path, **options: Any) -> SingleTurnDialog:
    """Load a single-turn dialog dataset from `path` with the given options."""
    return SingleTurnDialog(path, **options)


def multi_turn_dialog(path: str | Path, **options: Any) -> MultiTurnDialog:
    """Load a multi-turn dialog dataset from `path` with the given options."""
    return MultiTurnDialog(path, **options)
