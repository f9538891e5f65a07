"""The dashboard API client (SPEC section 7): records, reproductions, health.

``requests`` with a timeout on every call and retries with exponential backoff on
connection errors, timeouts and 429/502/503/504. Uploading a record is idempotent
on the server (the same record twice is one record: 201 then 200), so it is safe to
retry; a reproduction is only retried when the request could not be sent.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

from ..errors import CotkError

RETRY_STATUS = (429, 502, 503, 504)


class DashboardError(CotkError):
    """The dashboard could not be reached or refused the request."""

    def __init__(self, message: str, *, hint: str | None = None, log: str | None = None,
                 status: int | None = None, unreachable: bool = False):
        super().__init__(message, hint=hint, log=log)
        self.status = status
        self.unreachable = unreachable


def _detail(resp) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text.strip()[:300]
    if isinstance(body, dict):
        detail = body.get("detail", body.get("error", body))
        if isinstance(detail, list):  # FastAPI validation errors
            detail = "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail[:3])
        return str(detail)[:300]
    return str(body)[:300]


class DashboardClient:
    """``DashboardClient(url, token)``; every method raises :class:`DashboardError` with one sentence."""

    def __init__(self, url: str, token: str | None = None, *, timeout: tuple[float, float] = (5.0, 30.0),
                 retries: int = 3, backoff: float = 0.5, session: Any = None):
        import requests

        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = max(1, retries)
        self.backoff = backoff
        self.session = session or requests.Session()
        self.session.headers.update({"Accept": "application/json", "User-Agent": "cotk-repro"})

    # -- plumbing ----------------------------------------------------------------
    def _headers(self, auth: bool) -> dict[str, str]:
        if not auth:
            return {}
        if not self.token:
            raise DashboardError(f"no token for the dashboard {self.url}",
                                 hint=f"run `cotk-repro login --dashboard {self.url} --token TOKEN` first")
        return {"Authorization": f"Bearer {self.token}"}

    def request(self, method: str, path: str, *, json: Any = None, auth: bool = False,
                idempotent: bool = True):
        import requests

        url = self.url + path
        headers = self._headers(auth)
        last = ""
        for attempt in range(self.retries):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)))
            try:
                resp = self.session.request(method, url, json=json, headers=headers, timeout=self.timeout)
            except requests.ConnectionError as exc:
                last = _reason(exc)
                # a refused or unresolvable connection was never sent: always safe to retry
                if not idempotent and not _not_sent(exc):
                    break
                continue
            except requests.Timeout:
                last = f"no answer within {self.timeout[1]:.0f} s"
                if not idempotent:
                    break
                continue
            except requests.RequestException as exc:
                raise DashboardError(f"cannot talk to the dashboard at {self.url}: {type(exc).__name__}") from None
            if resp.status_code in RETRY_STATUS and attempt + 1 < self.retries:
                last = f"HTTP {resp.status_code}"
                continue
            return resp
        raise DashboardError(f"cannot reach the dashboard at {self.url} ({last}) after {attempt + 1} attempt(s)",
                             unreachable=True)

    def _check(self, resp, what: str) -> Any:
        code = resp.status_code
        if code in (200, 201):
            try:
                return resp.json()
            except ValueError:
                raise DashboardError(f"the dashboard at {self.url} did not answer JSON to {what}") from None
        if code == 401 or code == 403:
            raise DashboardError(f"the dashboard at {self.url} refused the token ({code}) for {what}",
                                 hint=f"get a token from its admin and run `cotk-repro login --dashboard {self.url} --token TOKEN`",
                                 status=code)
        if code == 404:
            raise DashboardError(f"the dashboard at {self.url} has no such {what.split()[-1]} (404)", status=code)
        if code == 413:
            raise DashboardError(f"the dashboard at {self.url} refused {what}: it is too large (413)", status=code)
        if code == 422:
            raise DashboardError(f"the dashboard at {self.url} rejected {what} as invalid (422): {_detail(resp)}",
                                 status=code)
        raise DashboardError(f"the dashboard at {self.url} answered HTTP {code} to {what}: {_detail(resp)}",
                             status=code, unreachable=code in RETRY_STATUS)

    # -- API ---------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self._check(self.request("GET", "/api/v1/health"), "the health check")

    def whoami(self) -> str:
        """The user the token belongs to (``GET /api/v1/me``); raises when the token is refused."""
        return self._check(self.request("GET", "/api/v1/me", auth=True), "the token check")["user"]

    def upload_record(self, record: dict[str, Any]) -> dict[str, Any]:
        """POST the record; returns ``{"id", "url", "created"}`` (``created`` False when it was there)."""
        resp = self.request("POST", "/api/v1/records", json=record, auth=True, idempotent=True)
        body = self._check(resp, "the record upload")
        return {"id": body.get("id", record.get("id")), "url": body.get("url"), "created": resp.status_code == 201}

    def get_record(self, record_id: str) -> dict[str, Any]:
        return self._check(self.request("GET", f"/api/v1/records/{quote(record_id, safe=':')}"), "record")

    def submit_reproduction(self, record_id: str, verdict: dict[str, Any]) -> dict[str, Any]:
        resp = self.request("POST", f"/api/v1/records/{quote(record_id, safe=':')}/reproductions", json=verdict,
                            auth=True, idempotent=False)
        return self._check(resp, "the reproduction for this record")


def _reason(exc: Exception) -> str:
    text = str(exc)
    for key in ("Connection refused", "Name or service not known", "nodename nor servname", "timed out",
                "No route to host", "Network is unreachable", "Temporary failure in name resolution"):
        if key in text:
            return key.lower()
    return type(exc).__name__


def _not_sent(exc: Exception) -> bool:
    text = str(exc)
    return any(k in text for k in ("Connection refused", "NewConnectionError", "Name or service not known",
                                   "Temporary failure in name resolution", "No route to host"))
