"""A judge's rubric is a stranger's template too (issue 45, item 1): the protocol's bounds hold for it.

The rubric used to be rendered in-process by a plain sandbox, with none of the protocol's guards: one
``center(10**9)`` filled the memory. It now goes through :func:`cotk_repro.core.untrusted.render_untrusted`
like a protocol template: a memory bomb or a runaway loop ends in one sentence within 30 s, in any thread, and a
name the rubric may not use is refused on a branch the probe never takes.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from cotk_repro.metrics import get_metric
from cotk_repro.metrics.base import MetricError


class FixedJudge:
    """TEST DOUBLE: answers "Score: 3" to every prompt; no model."""

    name = "fixed"
    pinned = True
    batch_size = 4

    def __init__(self) -> None:
        self.settings = {"weights_sha256": "a" * 64, "tokenizer_sha256": "b" * 64, "max_new_tokens": 4}

    def generate(self, prompts: list[Any]) -> list[str]:
        return ["Score: 3" for _ in prompts]


RUBRICS = {
    "center by a power": "{{ output|center(10**9) }}{{ input }}",
    "doubling in a namespace": (
        "{% set ns = namespace(s=output) %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}"
    ),
    "printf width": '{{ "%0999999999d" % 1 }}{{ input }}',
}


def test_a_rubric_bomb_is_one_sentence_in_any_thread():
    got: dict[str, tuple[str, float]] = {}

    def attack() -> None:
        for name, rubric in RUBRICS.items():
            start = time.monotonic()
            try:
                get_metric("llm-judge", judge=FixedJudge(), template=rubric)
                got[name] = ("built", 0.0)
            except MetricError as exc:
                got[name] = (exc.message, time.monotonic() - start)

    worker = threading.Thread(target=attack)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive()
    for name, (message, took) in got.items():
        assert "cannot be rendered (it needs more than 512 MiB of memory)" in message, (name, message)
        assert "\n" not in message and took < 30, (name, took)


def test_a_rubric_name_on_an_untaken_branch_is_refused_and_a_good_rubric_renders():
    hidden = "{% if input == 'never' %}{{ secret }}{% endif %}{{ input }}: {{ output }}"
    with pytest.raises(MetricError, match=r"'secret' is undefined"):
        get_metric("llm-judge", judge=FixedJudge(), template=hidden)
    metric = get_metric("llm-judge", judge=FixedJudge(), template="{{ input }} -> {{ output }} ({{ scale_max }})")
    assert metric.render(input="q", output="a", scale_min=1, scale_max=5) == "q -> a (5)"
    assert metric.compute(["a", "b"], queries=["q", "r"])["llm-judge"] == 3
