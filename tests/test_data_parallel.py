"""The data path's worker pool: the parallel and the serial path load the same generated data to the
same hashes, vocabulary, token arrays, raw strings and batches; bulk digests equal one encoder call per
string; the pool starts only where it pays."""

from __future__ import annotations

import hashlib
import json
import os
import random
from json.encoder import encode_basestring
from pathlib import Path

import numpy as np
import pytest

from cotk_repro import data
from cotk_repro.data import chunks, hashing
from cotk_repro.data.tokenizers import PunktTokenizer, WordPunctTokenizer

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "red", "bird", "über", "naïve", "x1", "don't"]
PUNCT = [".", ",", "!", "?", ";", "(", ")", "--", '"', "\\", "'s"]


def _sentence(rng: random.Random) -> str:
    parts = [rng.choice(WORDS + PUNCT if rng.random() < 0.3 else WORDS) for _ in range(rng.randint(1, 14))]
    glue = [" " if rng.random() < 0.8 else "" for _ in parts]
    return "".join(g + p for g, p in zip(glue, parts))


def _lines(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        r = rng.random()
        out.append("   " if r < 0.02 else ("\t" + _sentence(rng) + "  ") if r < 0.05 else _sentence(rng))
    return out


@pytest.fixture()
def small_chunks(monkeypatch):
    monkeypatch.setattr(chunks, "CHUNK_SAMPLES", 97)  # many chunks, cut in odd places


def _snapshot(dl, splits) -> dict:
    out = {"codes": dict(dl.hash_codes), "frequent": dl.vocab.frequent, "rare": dl.vocab.rare}
    for s in splits:
        out[s] = (
            dl.sentences(s),
            dl.raw_sentences(s),
            dl.sample_count(s),
            dl.token_count(s),
            [
                {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in b.items()}
                for b in dl.batches(s, batch_size=64, shuffle=True, seed=3)
            ],
        )
    return out


@pytest.fixture()
def forked(monkeypatch) -> list[int]:
    """The pids of the helpers forked during the test."""
    pids: list[int] = []
    real = chunks.Helper.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        pids.append(self.pid)

    monkeypatch.setattr(chunks.Helper, "__init__", spy)
    return pids


@pytest.mark.parametrize("tokenizer", ["nltk", "space"])
def test_language_generation_parallel_equals_serial(tmp_path: Path, small_chunks, tokenizer, in_fresh_process, forked):
    if not in_fresh_process:
        return
    rng = random.Random(7)
    for split, n in (("train", 3000), ("dev", 300), ("test", 800)):
        (tmp_path / f"{split}.txt").write_text("\n".join(_lines(rng, n)) + "\n", encoding="utf-8")
    opts = dict(tokenizer=tokenizer, min_frequent_vocab_times=3, max_sent_length=9, lowercase=True)
    serial = data.load("language-generation", tmp_path, workers=1, **opts)
    assert not forked
    parallel = data.load("language-generation", tmp_path, workers=2, **opts)
    assert len(forked) == 1
    splits = ["train", "dev", "test"]
    assert _snapshot(parallel, splits) == _snapshot(serial, splits)
    # and against an independent computation of one split's data hash (one encoder call per token)
    toks = serial.sentences("test")
    blob = b"".join(
        hashlib.sha256(json.dumps([t], ensure_ascii=False, separators=(",", ":")).encode()).digest() for t in toks
    )
    assert serial._splits["test"].data_hash == hashing.multiset_hash("data", blob)


def test_dialog_loaders_parallel_equals_serial(tmp_path: Path, small_chunks, in_fresh_process, forked):
    if not in_fresh_process:
        return
    rng = random.Random(11)
    single, multi = tmp_path / "single", tmp_path / "multi"
    single.mkdir()
    multi.mkdir()
    for split, n in (("train", 1500), ("dev", 100), ("test", 400)):
        posts, resps = [_sentence(rng) for _ in range(n)], [_sentence(rng) for _ in range(n)]
        (single / f"{split}.post").write_text("\n".join(posts) + "\n", encoding="utf-8")
        (single / f"{split}.response").write_text("\n".join(resps) + "\n", encoding="utf-8")
        sessions = [{"session": [_sentence(rng) for _ in range(rng.randint(2, 6))]} for _ in range(n)]
        (multi / f"{split}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sessions), encoding="utf-8")
    splits = ["train", "dev", "test"]
    for name, folder, extra in (("single-turn-dialog", single, {}), ("multi-turn-dialog", multi, {"max_turns": 4})):
        serial = data.load(name, folder, workers=1, min_frequent_vocab_times=2, **extra)
        parallel = data.load(name, folder, workers=2, min_frequent_vocab_times=2, **extra)
        assert _snapshot(parallel, splits) == _snapshot(serial, splits), name
    assert len(forked) == 2


def test_bulk_digests_equal_one_encoder_call_per_string():
    rng = random.Random(0)
    alphabet = ["a", "b", " ", '"', "\\", "\x01", "\n", "é", "\t", ",", "]", "[", "\x7f", "\u2028"]

    def text(k: int) -> str:
        return "".join(rng.choice(alphabet[: rng.randint(2, len(alphabet))]) for _ in range(rng.randint(0, k)))

    for _ in range(3000):
        texts = [text(6) for _ in range(rng.randint(0, 4))]
        lists = [[text(3) for _ in range(rng.randint(0, 3))] for _ in range(rng.randint(0, 4))]
        assert hashing.raw_digests_one(texts) == b"".join(
            hashlib.sha256(("[" + encode_basestring(t) + "]").encode()).digest() for t in texts
        )
        assert hashing.data_digests_one(lists) == b"".join(
            hashlib.sha256(("[[" + ",".join(map(encode_basestring, t)) + "]]").encode()).digest() for t in lists
        )


def test_pool_only_where_it_pays(monkeypatch):
    monkeypatch.delenv("COTK_REPRO_DATA_WORKERS", raising=False)
    monkeypatch.setattr(chunks, "usable_cpus", lambda: 2)
    monkeypatch.setattr(chunks, "busy_cpus", lambda: 0.5)
    nltk = chunks.Recipe(WordPunctTokenizer(), False, None)
    assert chunks.choose_workers(None, nltk, chunks.PARALLEL_MIN_BYTES - 1) == 1
    assert chunks.choose_workers(None, nltk, chunks.PARALLEL_MIN_BYTES) == 2
    assert chunks.choose_workers(None, chunks.Recipe(PunktTokenizer(), False, None), 1 << 30) == 1
    assert chunks.choose_workers(3, nltk, 0) == 3
    monkeypatch.setattr(chunks, "busy_cpus", lambda: 1.5)  # no CPU left idle: one process
    assert chunks.choose_workers(None, nltk, 1 << 30) == 1
    monkeypatch.setattr(chunks, "busy_cpus", lambda: 0.0)
    monkeypatch.setattr(chunks, "usable_cpus", lambda: 1)
    assert chunks.choose_workers(None, nltk, 1 << 30) == 1
    monkeypatch.setenv("COTK_REPRO_DATA_WORKERS", "1")
    monkeypatch.setattr(chunks, "usable_cpus", lambda: 2)
    assert chunks.choose_workers(None, nltk, 1 << 30) == 1


def test_busy_cpus_reads_the_load_now_where_the_average_lags():
    """A job that just ended keeps the one-minute average up; the runnable count (this process included) shows the
    machine idle now. Busy now counts however low the average."""
    assert chunks.busy_cpus("1.90 1.20 0.80 1/300 4242") == 0  # only this process runs now
    assert chunks.busy_cpus("0.30 0.20 0.10 4/300 4242") == 0.3  # a burst now, an idle minute
    assert chunks.busy_cpus("2.50 2.00 1.50 3/300 4242") == 2  # two others run now, and have been
    assert chunks.busy_cpus("3.75 3.00 2.00 9/300 4242") == 3.75
    real = chunks.busy_cpus()  # this machine's own file, or getloadavg
    assert isinstance(real, float | int) and real >= 0


def test_workers_must_be_positive(tmp_path: Path):
    (tmp_path / "train.txt").write_text("a b\n")
    with pytest.raises(data.DataError, match="workers must be a positive integer"):
        data.load("language-generation", tmp_path, splits=["train"], workers=0)


def test_sorted_digests_bytewise_like_python():
    """sorted_digests (numpy's fixed-width byte strings) orders 32-byte digests exactly as Python sorts bytes:
    high bytes unsigned, digests that differ only in trailing zero bytes, duplicates and random ones."""
    rng = random.Random(3)
    special = [
        bytes(32),
        bytes(31) + b"\x01",
        b"\x01" + bytes(31),
        b"\xff" * 32,
        b"\x80" + bytes(31),
        b"\x7f" + b"\xff" * 31,
        b"ab" + bytes(30),
        b"ab\x00\x01" + bytes(28),
    ]
    for _ in range(50):
        items = special + [
            bytes(rng.choice([0, 1, 127, 128, 255, rng.randrange(256)]) for _ in range(32))
            for _ in range(rng.randint(0, 300))
        ]
        items += rng.sample(items, min(5, len(items)))  # duplicates
        rng.shuffle(items)
        assert hashing.sorted_digests(b"".join(items)) == b"".join(sorted(items))


def _lg_folder(tmp_path: Path, seed: int = 5, sizes=(("train", 3000), ("dev", 300), ("test", 800))) -> Path:
    rng = random.Random(seed)
    for split, n in sizes:
        (tmp_path / f"{split}.txt").write_text("\n".join(_lines(rng, n)) + "\n", encoding="utf-8")
    return tmp_path


def _children() -> set[int]:
    """This process's live (not yet reaped) child processes, from /proc."""
    me = str(os.getpid())
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                out.add(int(entry.name))
    return out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="helpers are forked")
def test_three_processes_equal_one_and_leave_no_child(tmp_path: Path, small_chunks, in_fresh_process, forked):
    """Two helpers (each must close the other's pipe ends, or the first would never see its input end)."""
    if not in_fresh_process:
        return
    folder = _lg_folder(tmp_path)
    before = _children()
    three = data.load("language-generation", folder, workers=3, min_frequent_vocab_times=3)
    one = data.load("language-generation", folder, workers=1, min_frequent_vocab_times=3)
    assert len(forked) == 2
    assert _snapshot(three, ["train", "dev", "test"]) == _snapshot(one, ["train", "dev", "test"])
    assert _children() == before  # every helper ended and was reaped


@pytest.mark.skipif(not hasattr(os, "fork"), reason="helpers are forked")
def test_a_helper_that_dies_is_replaced_by_the_loading_process(
    tmp_path: Path, small_chunks, monkeypatch, in_fresh_process
):
    """The helper exits in the middle of its second chunk (as if killed): the load still gives the serial result."""
    if not in_fresh_process:
        return
    folder = _lg_folder(tmp_path, seed=9)
    parent = os.getpid()
    seen = []
    real = chunks.prepare

    def dying(recipe, *job):
        if os.getpid() != parent:
            seen.append(1)
            if len(seen) == 2:
                os._exit(9)
        return real(recipe, *job)

    dropped = []
    real_drop = chunks.Preparer._drop
    monkeypatch.setattr(
        chunks.Preparer, "_drop", lambda self, helper: (dropped.append(helper.pid), real_drop(self, helper))
    )
    monkeypatch.setattr(chunks, "prepare", dying)
    before = _children()
    broken = data.load("language-generation", folder, workers=2, min_frequent_vocab_times=3)
    monkeypatch.setattr(chunks, "prepare", real)
    assert len(dropped) == 1  # the helper did die, and was noticed
    one = data.load("language-generation", folder, workers=1, min_frequent_vocab_times=3)
    assert _snapshot(broken, ["train", "dev", "test"]) == _snapshot(one, ["train", "dev", "test"])
    assert _children() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="helpers are forked")
def test_no_fork_while_another_thread_runs(tmp_path: Path, small_chunks, monkeypatch, in_fresh_process):
    """A fork copies only the calling thread: with another thread alive the load stays in one process."""
    if not in_fresh_process:
        return
    import threading

    folder = _lg_folder(tmp_path, seed=4)
    monkeypatch.setattr(chunks.Helper, "__init__", lambda *a, **k: pytest.fail("forked beside a thread"))
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not chunks.can_fork()
        dl = data.load("language-generation", folder, workers=2, min_frequent_vocab_times=3)
    finally:
        stop.set()
        other.join()
    assert chunks.can_fork()
    monkeypatch.undo()
    one = data.load("language-generation", folder, workers=1, min_frequent_vocab_times=3)
    assert dl.hash_codes == one.hash_codes


@pytest.mark.skipif(not hasattr(os, "fork"), reason="helpers are forked")
def test_an_error_while_reading_ends_the_helpers(tmp_path: Path, small_chunks, in_fresh_process):
    """Bad UTF-8 in the last split, found after helpers have prepared chunks: the error is the serial path's,
    and no helper is left running."""
    if not in_fresh_process:
        return
    folder = _lg_folder(tmp_path, seed=2)
    (folder / "test.txt").write_bytes(b"fine line\n" * 3000 + b"bad \xff byte\n")
    before = _children()
    answered = []
    real_receive = chunks.Helper.receive
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(chunks.Helper, "receive", lambda self: answered.append(1) or real_receive(self))
        with pytest.raises(data.DataError, match=r"test.txt line 3001 is not valid UTF-8"):
            data.load("language-generation", folder, workers=2, min_frequent_vocab_times=3)
    assert answered  # the helper had prepared chunks before the error
    assert _children() == before


@pytest.mark.skipif(not hasattr(os, "fork"), reason="helpers are forked")
def test_the_data_commands_progress_bar_runs_no_thread(
    tmp_path: Path, small_chunks, monkeypatch, in_fresh_process, forked
):
    """On a terminal `cotk-repro data hashes` draws a progress bar; Rich's default refresh thread would keep the
    load in one process (no fork beside a thread), so the bar redraws as it advances instead."""
    if not in_fresh_process:
        return
    import io

    from rich.console import Console
    from typer.testing import CliRunner

    from cotk_repro.cli import _load_commands, app, output

    folder = _lg_folder(tmp_path, seed=8)
    drawn = io.StringIO()
    monkeypatch.setattr(output, "err_console", Console(file=drawn, force_terminal=True, width=100), raising=False)
    monkeypatch.setenv("COTK_REPRO_DATA_WORKERS", "2")
    _load_commands()
    res = CliRunner().invoke(app, ["data", "hashes", str(folder), "--min-frequent-vocab-times", "3", "--json"])
    assert res.exit_code == 0, res.output
    assert forked and "loading" in drawn.getvalue()  # a helper ran while the bar was drawn
    one = data.load("language-generation", folder, workers=1, min_frequent_vocab_times=3)
    assert json.loads(res.stdout)["hash_codes"] == one.hash_codes
