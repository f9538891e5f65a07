"""A test-only generator plugin for the protocol and ``generate`` tests (no torch): a real plugin distribution
(a dist-info folder with an entry point in group ``cotk_repro``), found by importlib.metadata like any installed
one, registering ``toy-prompts``: a generator that takes prompts (text or chat messages) the way ``hf`` does.

``toy-prompts`` answers each prompt with a deterministic function of it alone (never of its batch): the
prompt's words (chat: ``role:content`` of each message joined by `` | ``) reversed, cut to ``max_new_tokens``
words and at the first ``stop`` string. For the resume test it appends every prompt it answers to the file
``$TOY_LOG`` and raises KeyboardInterrupt (Ctrl-C) when asked for batch number ``$TOY_INTERRUPT_AFTER + 1``;
both are environment variables, not settings, so that they leave the cache key alone. ``pinned``: a setting.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from cotk_repro.plugins import reset_plugins

PLUGIN = """
import os

from cotk_repro.hookspecs import hookimpl


def answer(prompt, max_new_tokens, stop):
    if isinstance(prompt, str):
        text = prompt
    else:
        text = " | ".join(m["role"] + ":" + m["content"] for m in prompt)
    words = text.split()[::-1][:max_new_tokens]
    out = " ".join(words)
    for s in stop:
        if s and s in out:
            out = out[: out.index(s)]
    return out


class ToyPrompts:
    name = "toy-prompts"
    version = "1"
    accepts_prompts = True

    def __init__(self, chat=False, max_new_tokens=16, stop=(), batch_size=4, pinned=True):
        self.batch_size = batch_size
        self.pinned = pinned
        self.max_new_tokens = max_new_tokens
        self.stop = list(stop)
        self.settings = {"chat": chat, "max_new_tokens": max_new_tokens, "stop": list(stop),
                         "batch_size": batch_size}
        self.batches = 0

    def generate(self, prompts):
        self.batches += 1
        limit = os.environ.get("TOY_INTERRUPT_AFTER")
        if limit and self.batches > int(limit):
            raise KeyboardInterrupt
        log = os.environ.get("TOY_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as fh:
                for p in prompts:
                    fh.write(repr(p) + "\\n")
        return [answer(p, self.max_new_tokens, self.stop) for p in prompts]


@hookimpl
def register_generators(register):
    register("toy-prompts", ToyPrompts)
"""


def install(site: Path) -> Path:
    """Write the plugin distribution into ``site`` (a folder for sys.path / PYTHONPATH)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "cotk_llm_toy.py").write_text(PLUGIN, encoding="utf-8")
    dist = site / "cotk_llm_toy-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cotk-llm-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cotk_repro]\ncotk_llm_toy = cotk_llm_toy\n")
    return site


def activate(site: Path) -> None:
    """The plugin in this process (the plugins are loaded again)."""
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    reset_plugins()


def deactivate(site: Path) -> None:
    sys.path.remove(str(site))
    sys.modules.pop("cotk_llm_toy", None)
    reset_plugins()
