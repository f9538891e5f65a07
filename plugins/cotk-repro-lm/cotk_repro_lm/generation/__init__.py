"""Generators that run language models: ``hf`` (local weights, :mod:`.hf`) and ``openai`` (any
OpenAI-compatible server, :mod:`.endpoint`).

Both take a list of prompts — a plain string, or chat messages ``[{"role": ..., "content": ...}]`` — and
return one output text per prompt, cut at the first ``stop`` string. This module holds what they share: the
error a user can cause, the checks of the decoding settings, and the prompt checks. It imports neither
torch nor the ``openai`` client.
"""

from __future__ import annotations

from typing import Any

from cotk_repro.errors import CotkError

ROLES = ("system", "user", "assistant")


class GenerationError(CotkError):
    """A generator cannot run as asked (a missing model, no chat template, a prompt longer than the context,
    an unreachable or failing server): one sentence."""


def check_int(generator: str, name: str, value: Any, low: int) -> int:
    """An integer setting >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise GenerationError(f"generator {generator}: setting {name} must be an integer >= {low}, not {value!r}")
    return value


def check_float(generator: str, name: str, value: Any, low: float, high: float | None = None) -> float:
    """A number setting in ``[low, high]``."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        span = f"between {low} and {high}" if high is not None else f">= {low}"
        raise GenerationError(f"generator {generator}: setting {name} must be a number {span}, not {value!r}")
    return float(value)


def check_bool(generator: str, name: str, value: Any) -> bool:
    """A true/false setting."""
    if not isinstance(value, bool):
        raise GenerationError(f"generator {generator}: setting {name} must be true or false, not {value!r}")
    return value


def check_stop(generator: str, value: Any) -> list[str]:
    """``stop``: a list of non-empty strings (a single string is a list of one)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) and s for s in value):
        raise GenerationError(f"generator {generator}: setting stop must be a list of non-empty strings, not {value!r}")
    return list(value)


def reject_unknown(generator: str, unknown: dict[str, Any], known: list[str]) -> None:
    """One sentence naming the first setting the generator does not have."""
    if unknown:
        name = sorted(unknown)[0]
        raise GenerationError(
            f"generator {generator} has no setting {name!r}; its settings are {', '.join(sorted(known))}"
        )


def cut_at_stop(text: str, stop: list[str]) -> str:
    """``text`` up to (not including) the earliest occurrence of any stop string."""
    cut = len(text)
    for s in stop:
        i = text.find(s)
        if 0 <= i < cut:
            cut = i
    return text[:cut]


def check_prompt(generator: str, index: int, prompt: Any) -> str | list[dict[str, str]]:
    """A prompt is a string or chat messages (roles system/user/assistant, string contents, no other keys)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt:
        for message in prompt:
            if (
                not isinstance(message, dict)
                or set(message) != {"role", "content"}
                or message["role"] not in ROLES
                or not isinstance(message["content"], str)
            ):
                break
        else:
            return prompt
    raise GenerationError(
        f"generator {generator}: prompt {index + 1} is neither a string nor chat messages "
        f"(a list of {{role, content}} with role system, user or assistant)"
    )


def excerpt(text: str, width: int = 40) -> str:
    """The start of ``text`` on one line, for an error message."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


__all__ = ["GenerationError", "cut_at_stop"]
