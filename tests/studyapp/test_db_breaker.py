"""The database breaker's states on a clock of the test's own, and its hook in the middleware.

The real outage (a database that accepts connections and never answers) is in
``tests/cards/test_database_timeouts.py``.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from django.db import OperationalError

from studyapp.common import db_breaker
from studyapp.common.db_breaker import DatabaseBreaker, ProcessBreaker, run_probes


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += seconds


def _lost() -> OperationalError:
    return OperationalError("connection timeout expired")


def test_closed_asks_the_database_and_a_failure_opens_it_until_a_probe_answers():
    clock = Clock()
    breaker = DatabaseBreaker(clock=clock)
    assert breaker.retry_after() is None and not breaker.is_open

    assert breaker.trip(_lost(), window=5) is True
    assert breaker.is_open and breaker.openings == 1
    assert breaker.retry_after() == 5
    clock.now += 3.2
    assert breaker.retry_after() == 2  # whole seconds to the probe, rounded up
    clock.now += 10  # the probe is late (it waits its connect timeout): at least 1
    assert breaker.retry_after() == 1
    assert breaker.refused == 3
    assert "connection timeout expired" in breaker.describe()

    breaker.close()
    assert breaker.retry_after() is None
    assert breaker.describe() == "closed"


def test_a_failure_met_while_open_does_not_put_the_probe_off():
    clock = Clock()
    breaker = DatabaseBreaker(clock=clock)
    breaker.trip(_lost(), window=5)
    clock.now += 4
    assert breaker.trip(_lost(), window=5) is False
    assert breaker.openings == 1
    assert breaker.seconds_to_probe() == pytest.approx(1)


def test_probes_run_a_window_apart_until_one_answers():
    clock = Clock()
    breaker = DatabaseBreaker(clock=clock)
    breaker.trip(_lost(), window=5)
    tried: list[float] = []

    def probe() -> None:
        tried.append(clock.now - 1000)
        clock.now += 3  # a frozen server: the connect timeout
        if len(tried) < 3:
            raise _lost()

    run_probes(breaker, probe, wait=clock.wait)
    # At 5 s; failed at 8 s, so again at 13 s; failed at 16 s, so again at 21 s: answered.
    assert tried == [5, 13, 21]
    assert not breaker.is_open


def test_the_probe_thread_closes_the_breaker_and_a_later_failure_starts_another():
    answers = threading.Event()
    probes = []

    def probe() -> None:
        probes.append(1)
        if not answers.is_set():
            raise _lost()

    process = ProcessBreaker(probe=probe)
    process.failed(_lost(), window=0.01)
    assert process.breaker.is_open and process.probing
    answers.set()
    process.join(timeout=30)
    assert not process.breaker.is_open and not process.probing
    assert probes

    answers.clear()
    process.failed(_lost(), window=0.01)
    assert process.breaker.is_open and process.probing  # a thread of its own again
    answers.set()
    process.join(timeout=30)
    assert not process.breaker.is_open
    assert process.breaker.openings == 2


def _wrapper(vendor: str, raw: object) -> SimpleNamespace:
    return SimpleNamespace(vendor=vendor, connection=raw)


@pytest.mark.parametrize(
    ("sqlstate", "vendor", "raw", "opens"),
    [
        (None, "postgresql", None, True),  # the connection never opened
        (None, "postgresql", SimpleNamespace(broken=True, closed=False), True),  # cut
        (None, "postgresql", SimpleNamespace(broken=False, closed=True), True),
        ("08006", "postgresql", None, True),  # connection_failure
        ("57P01", "postgresql", None, True),  # admin_shutdown
        ("53300", "postgresql", None, True),  # too_many_connections
        ("57014", "postgresql", None, False),  # statement timeout: slow, not gone
        ("40P01", "postgresql", None, False),  # deadlock
        ("53100", "postgresql", None, False),  # disk full: answering
        # An error raised on a connection that is sound (a stand-in, a driver bug).
        (None, "postgresql", SimpleNamespace(broken=False, closed=False), False),
        (None, "sqlite", None, False),  # a file: nothing to probe
    ],
)
def test_what_opens_the_breaker(sqlstate, vendor, raw, opens):
    error = OperationalError("failed")
    error.sqlstate = sqlstate  # type: ignore[attr-defined]  # as psycopg's errors carry it
    assert db_breaker.is_connection_failure(error, _wrapper(vendor, raw)) is opens  # type: ignore[arg-type]


@pytest.fixture
def open_breaker(monkeypatch):
    """This process's breaker, open (its probe never runs during the test)."""
    process = ProcessBreaker(probe=lambda: None)
    process.breaker.trip(_lost(), window=60)
    monkeypatch.setattr(db_breaker, "default", process)
    return process.breaker


@pytest.mark.django_db
def test_while_open_requests_answer_503_without_the_database(
    api, open_breaker, django_assert_max_num_queries
):
    with django_assert_max_num_queries(0):
        response = api.get("/api/v1/stats/")
        page = api.get("/review/")
    assert response.status_code == 503
    assert response["Retry-After"] == "60"
    assert response.json()["detail"] == (
        "The database is not answering; nothing was changed. Try again in 60 s."
    )
    assert page.status_code == 503 and page["Retry-After"] == "60"
    assert open_breaker.refused == 2


@pytest.mark.django_db
def test_health_while_open_liveness_stays_and_readiness_says_why(client, open_breaker):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 503
    database = ready.json()["checks"]["database"]
    assert database.startswith("RuntimeError: breaker open: the database was unreachable")
    assert "connection timeout expired" in database
    open_breaker.close()
    assert client.get("/readyz").json()["checks"]["database"] == "ok"
