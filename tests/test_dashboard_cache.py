"""The page cache serves the previous leaderboard while a new one is being built (no waiting behind a rebuild)."""

from __future__ import annotations

import asyncio
import threading

from cotk_repro.dashboard.app import Dashboard


class _FakeDB:
    def __init__(self):
        self.gen = 1

    def generation(self) -> int:
        return self.gen


def test_readers_get_the_previous_value_while_one_rebuild_runs():
    db = _FakeDB()
    dash = Dashboard(db, max_body=1024, generation_ttl=0.0)
    release = threading.Event()
    builds = []

    def build(tag):
        def compute():
            builds.append(tag)
            if tag == "new":
                release.wait(10)
            return tag

        return compute

    async def scenario():
        assert await dash.cached_async("board", build("old"), stale_ok=True) == "old"
        db.gen = 2  # a write happened
        first = asyncio.ensure_future(dash.cached_async("board", build("new"), stale_ok=True))
        await asyncio.sleep(0.05)  # the rebuild is in flight
        during = await asyncio.wait_for(dash.cached_async("board", build("other"), stale_ok=True), 2)
        strict = asyncio.ensure_future(dash.cached_async("board", build("other"), stale_ok=False))
        await asyncio.sleep(0.05)
        assert not strict.done()  # without stale_ok a reader waits for the rebuild
        release.set()
        return during, await first, await strict

    during, first, strict = asyncio.run(scenario())
    assert during == "old"  # served at once, from before the write
    assert first == "new" and strict == "new"  # the reader that started the rebuild reads its own write
    assert builds == ["old", "new"]  # one rebuild, not one per reader


class _SlowDB(_FakeDB):
    """generation() reads the counter, then takes 0.1 s to answer (a busy database), and counts its calls."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def generation(self) -> int:
        import time

        self.calls += 1
        value = self.gen
        time.sleep(0.1)
        return value


def test_readers_share_one_generation_read_and_still_see_a_write_made_here():
    db = _SlowDB()
    dash = Dashboard(db, max_body=1024, generation_ttl=10.0)

    async def scenario():
        values = await asyncio.gather(*(dash.cached_async("k", lambda: f"gen {db.gen}") for _ in range(20)))
        assert values == ["gen 1"] * 20 and db.calls == 1  # one re-read for twenty readers
        dash._gen_at = float("-inf")  # the ttl ran out: the next reader re-reads ...
        early = asyncio.ensure_future(dash.cached_async("k", lambda: f"gen {db.gen}"))
        await asyncio.sleep(0.03)  # ... and its re-read has read generation 1 when a write commits here
        db.gen = 2
        dash.wrote()
        after = await dash.cached_async("k", lambda: f"gen {db.gen}")
        await early
        later = await dash.cached_async("k", lambda: f"gen {db.gen}")
        return after, later

    after, later = asyncio.run(scenario())
    assert after == "gen 2"  # not the answer of the re-read that began before the write
    assert later == "gen 2"  # and that older re-read did not pass for fresh afterwards
