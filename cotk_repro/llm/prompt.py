"""What a generator is asked: a :data:`Prompt`, plain text or chat messages, and the check of one.

A plain-text prompt is one string. Chat messages are a list of ``{"role": ..., "content": ...}`` dicts with
exactly those two keys, the role one of :data:`ROLES`; a generator applies its chat template to them.
"""

from __future__ import annotations

from typing import Any, Union

#: a plain-text prompt, or chat messages ``[{"role": "system"|"user"|"assistant", "content": "..."}]``
Prompt = Union[str, list[dict[str, str]]]  # noqa: UP007 - an alias used at run time on Python 3.10 too

ROLES = ("system", "user", "assistant")


def prompt_problem(prompt: Any) -> str | None:
    """Why ``prompt`` is not a :data:`Prompt` (a clause, e.g. ``"message 2 has role 'tool'"``); None when it is."""
    if isinstance(prompt, str):
        return None
    if not isinstance(prompt, list):
        return f"it is a {type(prompt).__name__}, not a string or a list of chat messages"
    if not prompt:
        return "it is an empty list of chat messages"
    for i, message in enumerate(prompt, 1):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            return f"message {i} is not a table of exactly 'role' and 'content'"
        if message["role"] not in ROLES:
            return f"message {i} has role {message['role']!r} (known: {', '.join(ROLES)})"
        if not isinstance(message["content"], str):
            return f"message {i}'s content is a {type(message['content']).__name__}, not a string"
    return None


def is_chat(prompt: Prompt) -> bool:
    """Whether ``prompt`` is chat messages rather than plain text."""
    return not isinstance(prompt, str)
