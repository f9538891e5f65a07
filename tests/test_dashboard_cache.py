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
