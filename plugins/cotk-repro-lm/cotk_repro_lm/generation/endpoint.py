"""Generator ``openai``: any OpenAI-compatible server (OpenAI, vLLM, ``transformers serve``, llama.cpp, ...) through
the ``openai`` client package.

A string prompt goes to the completions endpoint as it is; chat messages (or any prompt with ``chat=true``)
go to chat completions, rendered by the server's chat template. Greedy (``do_sample=false``, the default) is
``temperature=0``. Requests run on ``concurrency`` threads, results kept in input order; the client retries
429, 5xx, timeouts and connection errors with exponential backoff (honouring ``Retry-After``) up to
``max_retries`` times. ``generate`` on a batch returns every output or raises, and the batch size
(``batch_size``, default ``4 * concurrency``) stays modest, so an interrupted run loses at most one batch:
the caller keeps every finished one.

Every answer is bounded (:mod:`.bounded_http`): its size against ``max_new_tokens`` (``BYTES_PER_TOKEN`` per
token), read as a stream and abandoned past it; ``timeout`` bounds each request attempt as a whole, not each read;
an error answer's body is read to a bound.

A server's model id pins nothing (the weights behind it can change), so the system is **unpinned**. Its
identity (``settings``) holds the server's host and path (never credentials, a query or the API key) and the
model id; the API key comes from ``OPENAI_API_KEY`` (a placeholder for local servers) and is never recorded.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from . import (
    GenerationError,
    check_bool,
    check_float,
    check_int,
    check_prompt,
    check_stop,
    cut_at_stop,
    reject_unknown,
)

NAME = "openai"
#: the most stop sequences the OpenAI API takes in one request; with more, they are applied here only
API_MAX_STOP = 4
#: decoding settings of ``hf`` that the OpenAI API has no parameter for
NOT_IN_API = ("top_k", "num_beams", "repetition_penalty")
SETTINGS = (
    "base_url",
    "model",
    "chat",
    "max_new_tokens",
    "do_sample",
    "temperature",
    "top_p",
    "stop",
    "seed",
    "concurrency",
    "timeout",
    "max_retries",
    "batch_size",
)


def public_url(base_url: str) -> str:
    """``base_url`` without credentials, query or fragment: scheme, host, port and path."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _detail(exc: BaseException | str) -> str:
    text = " ".join(str(exc).split())
    return text[:200] if text else (type(exc).__name__ if isinstance(exc, BaseException) else "no detail")


def _server_message(exc: Any) -> str:
    """What the server said in its error body (OpenAI's ``{"error": {"message"}}``, FastAPI's ``{"detail"}``)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                return _detail(value)
    elif isinstance(body, str) and body.strip():
        return _detail(body)
    return _detail(exc.message)


class OpenAIGenerator:
    """One output per prompt from an OpenAI-compatible server (see the module's docstring)."""

    name = NAME
    version = "1"
    pinned = False
    accepts_prompts = True

    def __init__(
        self,
        base_url: Any = None,
        model: Any = None,
        *,
        chat: bool = False,
        max_new_tokens: int = 64,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_p: float = 1.0,
        stop: Any = None,
        seed: int = 0,
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 5,
        batch_size: int | None = None,
        **unknown: Any,
    ):
        for key in NOT_IN_API:
            if key in unknown:
                raise GenerationError(f"generator openai cannot set {key}: the OpenAI API has no such parameter")
        reject_unknown(NAME, unknown, [*SETTINGS])
        if not isinstance(base_url, str) or urlsplit(base_url).scheme not in ("http", "https"):
            raise GenerationError(
                f"generator openai needs base_url, the server's http(s) address (e.g. http://localhost:8000/v1), "
                f"not {base_url!r}"
            )
        if not urlsplit(base_url).hostname:
            raise GenerationError(f"generator openai: base_url {public_url(base_url)!r} names no host")
        if not isinstance(model, str) or not model:
            raise GenerationError("generator openai needs model, the model id the server knows (-g openai.model=...)")
        self.base_url = base_url
        self.model = model
        self.chat = check_bool(NAME, "chat", chat)
        self.max_new_tokens = check_int(NAME, "max_new_tokens", max_new_tokens, 1)
        self.do_sample = check_bool(NAME, "do_sample", do_sample)
        self.temperature = check_float(NAME, "temperature", temperature, 0.0, 2.0)
        self.top_p = check_float(NAME, "top_p", top_p, 0.0, 1.0)
        self.stop = check_stop(NAME, stop)
        self.seed = check_int(NAME, "seed", seed, 0)
        self.concurrency = check_int(NAME, "concurrency", concurrency, 1)
        self.timeout = check_float(NAME, "timeout", timeout, 0.001)
        self.max_retries = check_int(NAME, "max_retries", max_retries, 0)
        self.batch_size = check_int(NAME, "batch_size", batch_size if batch_size is not None else 4 * concurrency, 1)
        self.url = public_url(base_url)
        self.settings: dict[str, Any] = {
            "base_url": self.url,
            "model": self.model,
            "chat": self.chat,
            "max_new_tokens": self.max_new_tokens,
            "do_sample": self.do_sample,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "stop": self.stop,
            "seed": self.seed,
        }
        import openai

        from .bounded_http import AnswerTooLarge, bounded_client

        self._openai = openai
        self._too_large = AnswerTooLarge
        self.client = openai.OpenAI(
            base_url=base_url,
            api_key=os.environ.get("OPENAI_API_KEY") or "no-key",  # local servers take any key
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=bounded_client(self.timeout, self.max_new_tokens),
        )

    # ----- requests -----

    def _limit(self) -> int:
        from .bounded_http import answer_limit

        return answer_limit(self.max_new_tokens)

    def _retries(self) -> str:
        return f"{self.max_retries} {'retry' if self.max_retries == 1 else 'retries'}"

    def _decoding(self) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "max_tokens": self.max_new_tokens, "n": 1}
        if self.do_sample:
            params.update(temperature=self.temperature, top_p=self.top_p, seed=self.seed)
        else:
            params["temperature"] = 0.0  # greedy
        if self.stop and len(self.stop) <= API_MAX_STOP:
            params["stop"] = self.stop
        return params

    def _one(self, index: int, prompt: Any) -> str:
        params = self._decoding()
        try:
            if isinstance(prompt, str) and not self.chat:
                response = self.client.completions.create(prompt=prompt, **params)
                text = response.choices[0].text if response.choices else None
            else:
                messages: Any = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
                response = self.client.chat.completions.create(messages=messages, **params)
                text = response.choices[0].message.content if response.choices else None
        except self._too_large as exc:  # never retried: the same server would send the same answer
            raise GenerationError(
                f"the server at {self.url} {exc.message} to prompt {index + 1} (max_new_tokens={self.max_new_tokens}); "
                f"an answer may hold at most {self._limit()} bytes"
            ) from None
        except self._openai.APIConnectionError as exc:  # also a timeout, after every retry
            timed_out = isinstance(exc, self._openai.APITimeoutError)
            kind = f"did not answer within timeout={self.timeout:g} s" if timed_out else "is unreachable"
            raise GenerationError(
                f"the server at {self.url} {kind} after {self._retries()} ({_detail(exc.__cause__ or exc)})"
            ) from None
        except self._openai.APIStatusError as exc:
            retried = f" after {self._retries()}" if exc.status_code == 429 or exc.status_code >= 500 else ""
            raise GenerationError(
                f"the server at {self.url} answered prompt {index + 1} with HTTP {exc.status_code}{retried} "
                f"({_server_message(exc)})"
            ) from None
        except self._openai.APIError as exc:  # a malformed answer
            raise GenerationError(f"the server at {self.url} gave an unusable answer ({_detail(exc)})") from None
        if not isinstance(text, str):
            raise GenerationError(f"the server at {self.url} returned no text for prompt {index + 1}")
        return cut_at_stop(text, self.stop)

    def generate(self, prompts: list[Any]) -> list[str]:
        """One output per prompt (a string, or chat messages), in the prompts' order; all of them, or an error."""
        checked = [check_prompt(NAME, i, p) for i, p in enumerate(prompts)]
        if self.concurrency == 1 or len(checked) <= 1:
            return [self._one(i, p) for i, p in enumerate(checked)]
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(checked)))
        futures = [pool.submit(self._one, i, p) for i, p in enumerate(checked)]
        try:
            return [f.result() for f in futures]
        except BaseException:
            # nothing more is sent once one prompt failed (or on Ctrl-C); requests in flight are abandoned
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=False)
