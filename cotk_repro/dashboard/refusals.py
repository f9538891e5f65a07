"""The HTTP status of each way the store refuses an upload (one place for the API routes)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import HTTPException

from . import store
from .auth import AuthError
from .identity import BadSignature, Forbidden
from .key_proofs import ProofRefused


@contextmanager
def refusals() -> Iterator[None]:
    """Turn the store's refusals into HTTP errors with their one-sentence message."""
    try:
        yield
    except store.NotFound as exc:
        raise HTTPException(404, exc.message) from None
    except (store.Unsigned, Forbidden, ProofRefused) as exc:
        raise HTTPException(403, exc.message) from None
    except (store.Invalid, BadSignature, AuthError) as exc:
        raise HTTPException(422, exc.message) from None
