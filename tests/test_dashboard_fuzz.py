"""Fuzzing the API with schemathesis from /openapi.json: whatever it sends, no 5xx (SQLite and PostgreSQL).

Bounded and reproducible (derandomized, 60 examples per operation), with a valid token so that the
validation paths behind authentication are exercised too.
"""

from __future__ import annotations

import pytest
import schemathesis
from dashboard_support import fake_hash, make_record, pg_schema_url
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from cotk_repro.dashboard.auth import add_user
from cotk_repro.dashboard.db import open_database
from cotk_repro.dashboard.server import start_in_thread

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def live(request, tmp_path_factory):
    if request.param == "sqlite":
        gen = iter([f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'fuzz.sqlite3'}"])
    else:
        gen = pg_schema_url("fuzz")
    db_url = next(gen)
    db = open_database(db_url)
    token = add_user(db, "fuzzer")[0]
    db.dispose()
    url, stop = start_in_thread(db_url, rate_limit=None, allow_unsigned=True)
    # one real record, so that the read paths have data to serve
    import requests

    rec = make_record({"bleu": (0.3, fake_hash("f")), "perplexity": (12.0, None)})
    assert (
        requests.post(
            url + "/api/v1/records", json=rec, headers={"Authorization": f"Bearer {token}"}, timeout=10
        ).status_code
        == 201
    )
    yield url, token
    stop()
    for _ in gen:  # drop the PostgreSQL schema
        pass


@pytest.fixture(scope="module")
def api_schema(live):
    return schemathesis.openapi.from_url(live[0] + "/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_api_never_answers_5xx(case, live):
    url, token = live
    case.call_and_validate(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, checks=[not_a_server_error], timeout=30
    )
