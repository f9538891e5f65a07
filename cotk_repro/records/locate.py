"""Turn what a user typed (a local id, a file, a URL) into a record or a result set."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.jsonbudget import DEFAULT, JSONBudgetError, loads
from ..core.results import normalize_results
from ..core.safe_read import UnsafeFileError, read_regular
from ..errors import RecordError
from .store import RECORD_SCHEMA, RunStore, validate_record

_RECORD_PAGE = re.compile(r"^(?P<base>https?://.+?)/(?:api/v1/)?records/(?P<id>[^/?#]+)/?$")


def api_url_for(url: str) -> str:
    """A dashboard record page URL -> its JSON API URL (unchanged when already an API URL)."""
    m = _RECORD_PAGE.match(url)
    if not m:
        return url
    return f"{m.group('base')}/api/v1/records/{m.group('id')}"


def fetch_json(url: str, timeout: float = 30.0) -> Any:
    """The JSON at ``url`` (a dashboard record page is read through its API URL); RecordError otherwise."""
    import requests

    from ..core.httpread import AnswerTooLarge, read_bounded

    try:
        resp = read_bounded(
            requests.get(api_url_for(url), timeout=timeout, headers={"Accept": "application/json"}, stream=True), url
        )
    except AnswerTooLarge as exc:
        raise RecordError(exc.message) from None
    except requests.RequestException as exc:
        raise RecordError(f"cannot fetch {url}: {type(exc).__name__}") from None
    if resp.status_code == 404:
        raise RecordError(f"{url} was not found (404)")
    if resp.status_code >= 400:
        raise RecordError(f"{url} answered {resp.status_code}")
    try:
        return loads(resp.content, what=f"the answer of {url[:200]}")
    except JSONBudgetError as exc:
        raise RecordError(exc.message) from None


def _as_document(data: Any, where: str) -> dict[str, Any]:
    """A record (validated) or a result file, as a dict with at least ``results``."""
    if isinstance(data, dict) and isinstance(data.get("record"), dict):
        data = data["record"]  # dashboard answer: {"record": ..., "reproductions": [...]}
    if isinstance(data, dict) and data.get("schema") == RECORD_SCHEMA:
        return validate_record(data, where)
    parsed = normalize_results(data, where)
    return {"id": None, "results": parsed["results"], "data": parsed["data"], "source": where}


def load_document(ref: str, store: RunStore | None) -> dict[str, Any]:
    """Load a record by local id/prefix/``latest``, from a JSON file, or from a URL."""
    if ref.startswith(("http://", "https://")):
        return _as_document(fetch_json(ref), ref)
    path = Path(ref)
    if path.suffix == ".json" or path.is_file() or (path.is_dir() and (path / "record.json").is_file()):
        if path.is_dir():
            path = path / "record.json"
        if not path.is_file():
            raise RecordError(f"no such file: {ref}")
        try:
            data = loads(read_regular(path, DEFAULT.bytes, ref, follow_links=True), what=ref)
        except (JSONBudgetError, UnsafeFileError) as exc:
            raise RecordError(exc.message) from None
        except OSError as exc:
            raise RecordError(f"cannot read {ref}: {exc.strerror}") from None
        return _as_document(data, ref)
    if store is None:
        raise RecordError(f"{ref!r} is not a file or URL, and there is no project here to look it up in")
    return store.get(ref)
