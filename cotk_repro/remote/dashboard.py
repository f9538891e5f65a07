"""The dashboard API client (docs/spec.md section 7): records, reproductions, health.

``requests`` with a timeout on every call; retries with exponential backoff are urllib3's
:class:`~urllib3.util.Retry` on connection errors, timeouts and 429/502/503/504 (honouring
``Retry-After``). Uploading a record is idempotent on the server (the same record twice is one
record: 201 then 200), so it is safe to retry; a reproduction is only retried when the
connection could not be made (the request was never sent).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..core.httpread import AnswerTooLarge, read_bounded
from ..core.jsonbudget import JSONBudgetError, loads
from ..errors import CotkError
from ..records.view import RecordView

RETRY_STATUS = (429, 502, 503, 504)


class DashboardError(CotkError):
    """The dashboard could not be reached or refused the request."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        log: str | None = None,
        status: int | None = None,
        unreachable: bool = False,
    ):
        super().__init__(message, hint=hint, log=log)
        self.status = status
        self.unreachable = unreachable


def _detail(resp) -> str:
    try:
        body = loads(resp.content, what="the dashboard's answer")
    except JSONBudgetError:
        return resp.text[:300].strip()
    if isinstance(body, dict):
        detail = body.get("detail", body.get("error", body))
        if isinstance(detail, list):  # FastAPI validation errors
            detail = "; ".join(str(d.get("msg", d)) if isinstance(d, dict) else str(d) for d in detail[:3])
        return str(detail)[:300]
    return str(body)[:300]


class DashboardClient:
    """``DashboardClient(url, token)``; every method raises :class:`DashboardError` with one sentence."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: tuple[float, float] = (5.0, 30.0),
        retries: int = 3,
        backoff: float = 0.5,
        session: Any = None,
    ):
        import requests

        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = max(1, retries)
        self.backoff = backoff
        self.session = session or requests.Session()
        self.session.headers.update({"Accept": "application/json", "User-Agent": "cotk-repro"})
        # one session per retry policy: every failure retried (idempotent requests), or only failed connects
        self._sessions = {
            True: self._with_retries(self.session, idempotent=True),
            False: self._with_retries(requests.Session(), idempotent=False),
        }
        self._sessions[False].headers.update(self.session.headers)

    def _with_retries(self, session: Any, *, idempotent: bool) -> Any:
        from requests.adapters import HTTPAdapter
        from urllib3.util import Retry

        n = self.retries - 1
        retry = Retry(
            total=n,
            connect=n,
            read=n if idempotent else 0,
            status=n if idempotent else 0,
            other=0,
            status_forcelist=RETRY_STATUS,
            allowed_methods=None,
            backoff_factor=self.backoff,
            raise_on_status=False,
            respect_retry_after_header=True,
        )
        adapter = HTTPAdapter(max_retries=retry)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        return session

    # -- plumbing ----------------------------------------------------------------
    def _headers(self, auth: bool) -> dict[str, str]:
        if not auth:
            return {}
        if not self.token:
            raise DashboardError(
                f"no token for the dashboard {self.url}",
                hint=f"run `cotk-repro login --dashboard {self.url} --token TOKEN` first",
            )
        return {"Authorization": f"Bearer {self.token}"}

    def request(self, method: str, path: str, *, json: Any = None, auth: bool = False, idempotent: bool = True):
        import requests

        url = self.url + path
        headers = self._headers(auth)
        try:
            resp = self._sessions[idempotent].request(
                method, url, json=json, headers=headers, timeout=self.timeout, stream=True
            )
            return read_bounded(resp, f"the dashboard at {self.url}")
        except AnswerTooLarge as exc:
            raise DashboardError(exc.message) from None
        except requests.ConnectionError as exc:
            last = (
                f"no answer within {self.timeout[0]:.0f} s"
                if isinstance(exc, requests.ConnectTimeout)
                else _reason(exc)
            )
        except requests.Timeout:
            last = f"no answer within {self.timeout[1]:.0f} s"
        except requests.RequestException as exc:
            raise DashboardError(f"cannot talk to the dashboard at {self.url}: {type(exc).__name__}") from None
        attempts = self.retries if idempotent or _not_sent(last) else 1
        raise DashboardError(
            f"cannot reach the dashboard at {self.url} ({last}) after {attempts} attempt(s)", unreachable=True
        )

    def _check(self, resp, what: str) -> Any:
        code = resp.status_code
        if code in (200, 201):
            try:
                return loads(resp.content, what=f"the answer of the dashboard at {self.url} ({what})")
            except JSONBudgetError as exc:
                raise DashboardError(exc.message) from None
        if code == 403:
            raise DashboardError(
                f"the dashboard at {self.url} refused {what} (403): {_detail(resp).rstrip('.')}",
                status=code,
                hint="`cotk-repro keys add` registers your signing key for your token's user",
            )
        if code == 401:
            raise DashboardError(
                f"the dashboard at {self.url} refused the token ({code}) for {what}",
                hint=f"get a token from its admin and run `cotk-repro login --dashboard {self.url} --token TOKEN`",
                status=code,
            )
        if code == 404:
            raise DashboardError(f"the dashboard at {self.url} has no such {what.split()[-1]} (404)", status=code)
        if code == 413:
            raise DashboardError(f"the dashboard at {self.url} refused {what}: it is too large (413)", status=code)
        if code == 422:
            raise DashboardError(
                f"the dashboard at {self.url} rejected {what} as invalid (422): {_detail(resp)}", status=code
            )
        raise DashboardError(
            f"the dashboard at {self.url} answered HTTP {code} to {what}: {_detail(resp)}",
            status=code,
            unreachable=code in RETRY_STATUS,
        )

    # -- API ---------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self._check(self.request("GET", "/api/v1/health"), "the health check")

    def whoami(self) -> str:
        """The user the token belongs to (``GET /api/v1/me``); raises when the token is refused."""
        return self._check(self.request("GET", "/api/v1/me", auth=True), "the token check")["user"]

    def user_keys(self, user: str) -> list[dict[str, Any]]:
        """The SSH keys registered to ``user`` (``GET /api/v1/users/NAME/keys``; revoked ones too)."""
        keys = self._check(self.request("GET", f"/api/v1/users/{quote(user, safe='')}/keys"), "the key listing")
        if not isinstance(keys, list):
            raise DashboardError(f"the dashboard at {self.url} answered the key listing with something else")
        return [k for k in keys if isinstance(k, dict)]

    # -- leases (a volunteer reproducer, :mod:`cotk_repro.dashboard.volunteer`) --------------------------------
    def take_lease(self) -> dict[str, Any] | None:
        """``POST /api/v1/leases``: a job the server chose for this token's user, or None when none is offered."""
        resp = self.request("POST", "/api/v1/leases", json={}, auth=True, idempotent=False)
        if resp.status_code == 204:
            return None
        return self._check(resp, "the lease request")

    def heartbeat_lease(self, lease: int) -> dict[str, Any]:
        """``POST /api/v1/leases/{id}/heartbeat``: keep the lease alive."""
        return self._check(
            self.request("POST", f"/api/v1/leases/{int(lease)}/heartbeat", json={}, auth=True), "the heartbeat"
        )

    def send_lease_verdict(self, lease: int, verdict: dict[str, Any], signature: str) -> dict[str, Any]:
        """``POST /api/v1/leases/{id}/verdict`` with the signed verdict; the stored reproduction's answer."""
        resp = self.request(
            "POST",
            f"/api/v1/leases/{int(lease)}/verdict",
            json={"reproduction": verdict, "signature": signature},
            auth=True,
            idempotent=False,
        )
        return self._check(resp, "the lease's verdict")

    def upload_record(self, record: dict[str, Any], signature: str | None = None) -> dict[str, Any]:
        """POST the record (with its signature when there is one: ``{"record", "signature"}``);
        returns ``{"id", "url", "created"}`` (``created`` False when it was there)."""
        body = {"record": record, "signature": signature} if signature else record
        resp = self.request("POST", "/api/v1/records", json=body, auth=True, idempotent=True)
        body = self._check(resp, "the record upload")
        return {
            "id": body.get("id", RecordView.of(record).id),
            "url": body.get("url"),
            "created": resp.status_code == 201,
        }

    def register_key(self, key: Any) -> dict[str, Any]:
        """Register the signing key ``key`` (:class:`cotk_repro.core.signing.SigningKey`) for the token's user
        with proof of possession: ask for a challenge, check it names this dashboard and that user, sign it
        with the key (ssh-keygen or ssh-agent), send the signature. Returns the key's listing."""
        from urllib.parse import urlsplit

        from ..core.keyproof import NS_KEY_REGISTRATION, ChallengeError, check_challenge
        from ..core.signing import sign_bytes

        user = self.whoami()
        issued = self._check(
            self.request("POST", "/api/v1/keys/challenge", json={}, auth=True, idempotent=False),
            "the key registration challenge",
        )
        parts = urlsplit(self.url)
        try:
            challenge = check_challenge(
                issued.get("challenge") if isinstance(issued, dict) else None,
                dashboard=f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/"),
                user=user,
            )
        except ChallengeError as exc:
            raise DashboardError(
                exc.message,
                hint="if the dashboard runs behind a proxy, its operator sets "
                "`dashboard serve --public-url` to the URL you use",
            ) from None
        signature = sign_bytes(challenge.text().encode("utf-8"), NS_KEY_REGISTRATION, key)
        body = {"public_key": key.public.line, "challenge": challenge.nonce, "signature": signature}
        out = self._check(
            self.request("POST", "/api/v1/keys", json=body, auth=True, idempotent=False), "the key registration"
        )
        return {**out, "user": user} if isinstance(out, dict) else out

    def get_record(self, record_id: str) -> dict[str, Any]:
        return self._check(self.request("GET", f"/api/v1/records/{quote(record_id, safe=':')}"), "record")

    def upload_publication(self, record_id: str, attachment: dict[str, Any]) -> dict[str, Any]:
        """POST a record's publication (``{"publication", "signature"}``: its git remote taken at publish time)."""
        resp = self.request(
            "POST",
            f"/api/v1/records/{quote(record_id, safe=':')}/publication",
            json=attachment,
            auth=True,
            idempotent=True,
        )
        return self._check(resp, "the publication of this record")

    def submit_reproduction(
        self, record_id: str, verdict: dict[str, Any], signature: str | None = None
    ) -> dict[str, Any]:
        """POST a reproduction verdict (``{"reproduction", "signature"}`` when signed)."""
        body = {"reproduction": verdict, "signature": signature} if signature else verdict
        resp = self.request(
            "POST",
            f"/api/v1/records/{quote(record_id, safe=':')}/reproductions",
            json=body,
            auth=True,
            idempotent=False,
        )
        return self._check(resp, "the reproduction for this record")


def register_signing_key(dashboard: str | None, cwd: Any = None) -> dict[str, Any]:
    """Register this machine's signing key (:func:`cotk_repro.core.signing.find_signing_key`) on ``dashboard``
    (default: the one `login` saved) with proof of possession, using the stored token; returns the key's
    listing with ``user`` and ``dashboard``. Raises :class:`DashboardError` / :class:`CotkError` with one sentence."""
    from ..core import userconfig
    from ..core.signing import find_signing_key

    url = userconfig.normalize_url(dashboard) if dashboard else userconfig.default_dashboard()
    if not url:
        raise DashboardError(
            "no dashboard given and none saved",
            hint="pass --dashboard URL or run `cotk-repro login --dashboard URL --token TOKEN` first",
        )
    key = find_signing_key(cwd)
    if key is None:
        raise DashboardError(
            "there is no SSH key to register",
            hint="`cotk-repro keys` says where it looks; make one with `ssh-keygen -t ed25519`",
        )
    client = DashboardClient(url, userconfig.dashboard_token(url), retries=1)
    return {**client.register_key(key), "dashboard": url}


def _reason(exc: Exception) -> str:
    text = str(exc)
    for key in (
        "Connection refused",
        "Name or service not known",
        "nodename nor servname",
        "timed out",
        "No route to host",
        "Network is unreachable",
        "Temporary failure in name resolution",
    ):
        if key in text:
            return key.lower()
    return type(exc).__name__


def _not_sent(reason: str) -> bool:
    return reason in (
        "connection refused",
        "name or service not known",
        "nodename nor servname",
        "temporary failure in name resolution",
        "no route to host",
        "network is unreachable",
    )
