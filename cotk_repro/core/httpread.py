"""Reading an HTTP answer from a server somebody else may run, bounded before it is read.

A "dashboard" is whatever answers at a URL: a record page may point at a server that streams gigabytes.
:func:`read_bounded` reads a streamed ``requests`` response up to a limit (refusing it when its
``Content-Length`` already says more), then leaves the body on the response, so ``resp.json()`` and
``resp.text`` work as usual.
"""

from __future__ import annotations

from typing import Any

from ..errors import CotkError

#: the most a record, a record page's JSON or any dashboard answer may be
MAX_ANSWER_BYTES = 64 * 1024 * 1024


class AnswerTooLarge(CotkError):
    """The server's answer is over the limit."""


def read_bounded(resp: Any, where: str, limit: int = MAX_ANSWER_BYTES) -> Any:
    """``resp`` (made with ``stream=True``) with its body read, at most ``limit`` bytes; else
    :class:`AnswerTooLarge` naming ``where``, the connection closed."""
    refuse = f"{where} answered more than {limit:,} bytes, so the answer was not read"
    declared = resp.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        resp.close()
        raise AnswerTooLarge(refuse)
    chunks, size = [], 0
    for chunk in resp.iter_content(1 << 16):
        size += len(chunk)
        if size > limit:
            resp.close()
            raise AnswerTooLarge(refuse)
        chunks.append(chunk)
    resp._content = b"".join(chunks)  # what requests itself sets when it reads the body
    resp._content_consumed = True
    return resp
