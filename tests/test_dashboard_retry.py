"""The dashboard client's retry policy (urllib3 ``Retry``) against a local HTTP double and a closed port."""

from __future__ import annotations

import pytest
from test_reproduce_support import free_port, http_double

from cotk_repro.remote.dashboard import DashboardClient, DashboardError


def test_busy_server_is_retried_for_uploads_but_a_reproduction_is_sent_once():
    def handler(method, path, headers, body):
        return 503, {"detail": "busy"}

    with http_double(handler) as (url, calls):
        with pytest.raises(DashboardError) as exc:
            DashboardClient(url, "tok", backoff=0.01, retries=4).upload_record({"id": "sha256:ab"})
        assert len(calls) == 4 and exc.value.status == 503
        calls.clear()
        with pytest.raises(DashboardError):
            DashboardClient(url, "tok", backoff=0.01, retries=4).submit_reproduction("sha256:ab", {"verdict": "x"})
        assert len(calls) == 1  # not idempotent: a request that reached the server is never repeated


def test_refused_connection_is_retried_and_said_in_one_sentence():
    url = f"http://127.0.0.1:{free_port()}"
    for call in (lambda c: c.health(), lambda c: c.submit_reproduction("sha256:ab", {})):
        with pytest.raises(DashboardError) as exc:
            call(DashboardClient(url, "tok", backoff=0.01, retries=3))
        assert exc.value.message == f"cannot reach the dashboard at {url} (connection refused) after 3 attempt(s)"
        assert exc.value.unreachable
