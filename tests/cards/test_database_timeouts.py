"""A database too slow to answer is a 503 within seconds, not a request that hangs.

PostgreSQL connections open with a connect timeout and statement and lock timeouts,
from the environment, well under gunicorn's 30 s worker timeout; long jobs (the Celery
worker's tasks, management commands) get the job statement timeout instead.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
import time_machine
from django.conf import settings
from django.db import close_old_connections, connection

from cards import services
from cards.models import ReviewLog
from cards.services.reviews import IDEMPOTENCY_LEASE
from studyapp.common import db_breaker
from studyapp.common.db import serve_requests_with_web_timeouts, watchdog
from tests.freezing_relay import FreezingRelay

from .conftest import START

ROOT = Path(__file__).resolve().parent.parent.parent
DAY1 = START + dt.timedelta(days=1)
GUNICORN_TIMEOUT_S = 30  # docker-compose.yml's --timeout

PRINT_OPTIONS = (
    "import json; from django.conf import settings; "
    "print(json.dumps(settings.DATABASES['default']['OPTIONS']))"
)


def _options(*, how: str, **env: str) -> dict:
    """The connection options of a process started ``how``: "manage.py" (a command),
    "script" (plain django.setup()) or "wsgi" (what gunicorn and runserver load)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STUDY_DB_")}
    environ.update(DATABASE_URL="postgres://study@db.example:5432/study", **env)
    setup = {
        "script": "django.setup(); ",
        "wsgi": "import studyapp.wsgi; ",
    }
    if how == "manage.py":
        argv = [sys.executable, "manage.py", "shell", "-c", PRINT_OPTIONS]
    else:
        argv = [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'studyapp.settings'; "
            + setup[how]
            + PRINT_OPTIONS,
        ]
    result = subprocess.run(argv, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_connections_open_with_timeouts_from_the_environment():
    default = _options(how="wsgi")
    assert default["connect_timeout"] == 3
    assert "-c statement_timeout=5000" in default["options"]
    assert "-c lock_timeout=3000" in default["options"]
    # A request's last statement ends well before its Idempotency-Key can be taken over.
    assert IDEMPOTENCY_LEASE.total_seconds() > 5 + GUNICORN_TIMEOUT_S

    tuned = _options(
        how="wsgi",
        STUDY_DB_CONNECT_TIMEOUT="2",
        STUDY_DB_STATEMENT_TIMEOUT_MS="1500",
        STUDY_DB_LOCK_TIMEOUT_MS="700",
    )
    assert tuned["connect_timeout"] == 2
    assert "-c statement_timeout=1500 -c lock_timeout=700" in tuned["options"]

    # A management command, a script (a benchmark seeding its data) and the Celery worker
    # run long jobs: the job statement timeout, the same lock timeout.
    for how in ("manage.py", "script"):
        job = _options(how=how, STUDY_DB_JOB_STATEMENT_TIMEOUT_MS="120000")
        assert "-c statement_timeout=120000 -c lock_timeout=3000" in job["options"]


@pytest.fixture
def short_statement_timeout():
    """This test's connection reopened with a 400 ms statement timeout and no lock timeout."""
    options = connection.settings_dict["OPTIONS"]
    saved = options["options"]
    options["options"] = "-c statement_timeout=400 -c lock_timeout=0"
    connection.close()
    yield
    connection.close()
    options["options"] = saved


HOLD_AT_MOST = 30  # seconds: a failure guard, reached only when no timeout answers first


def _hold_learner_row(
    user_id: int, *, held: threading.Event, let_go: threading.Event, letting_go: threading.Event
) -> None:
    """Another connection locks the learner's row (a stuck writer) until ``let_go`` is set,
    or for ``HOLD_AT_MOST`` seconds; it sets ``letting_go`` just before it lets go."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("options", None)
    with psycopg.connect(**params, autocommit=False) as other:
        other.execute("SELECT 1 FROM auth_user WHERE id = %s FOR UPDATE", [user_id])
        held.set()
        let_go.wait(HOLD_AT_MOST)
        letting_go.set()
        other.rollback()


def _submit_while_the_learner_is_locked(api, learner, deck):
    """A review posted while another connection holds the learner's row, answered before
    the holder lets go: the answer and how long it took."""
    with time_machine.travel(START, tick=False):
        services.enroll(learner=learner, deck=deck, at=START)
    card = deck.cards.order_by("position").first()
    held, let_go, letting_go = threading.Event(), threading.Event(), threading.Event()
    holder = threading.Thread(
        target=_hold_learner_row,
        args=(learner.pk,),
        kwargs={"held": held, "let_go": let_go, "letting_go": letting_go},
    )
    holder.start()
    try:
        assert held.wait(10)
        began = time.monotonic()
        with time_machine.travel(DAY1, tick=True):
            response = api.post(
                "/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json"
            )
        took = time.monotonic() - began
        # An answer that waited for the row (no timeout) comes only after the holder lets go.
        while_held = not letting_go.is_set()
    finally:
        let_go.set()
        holder.join()
    assert while_held, "the answer waited for the holder to let go of the row"
    assert not ReviewLog.objects.filter(learner=learner).exists()
    # The next request finds the database answering again.
    with time_machine.travel(DAY1, tick=False):
        again = api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
    assert again.status_code == 201
    return response, took


def _too_slow(caplog) -> list[str]:
    """What the middleware logged of the requests the database did not answer in time."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "studyapp.middleware" and r.getMessage().startswith("Database too slow")
    ]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_write_stuck_behind_a_lock_is_a_503_after_the_lock_timeout(api, learner, deck, caplog):
    lock_timeout = settings.STUDY_DB_LOCK_TIMEOUT_MS / 1000
    response, took = _submit_while_the_learner_is_locked(api, learner, deck)
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    assert "did not answer in time" in response.json()["detail"]
    assert took >= lock_timeout
    # The lock timeout ended the wait, not a statement timeout or the request's deadline.
    assert ["due to lock timeout" in message for message in _too_slow(caplog)] == [True]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_statement_over_the_statement_timeout_is_a_503_with_retry_after(
    api, learner, deck, short_statement_timeout, caplog
):
    response, _ = _submit_while_the_learner_is_locked(api, learner, deck)
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    assert "did not answer in time" in response.json()["detail"]
    # With no lock timeout, the statement timeout ended the wait.
    assert ["due to statement timeout" in message for message in _too_slow(caplog)] == [True]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_jobs_run_with_the_job_timeout_and_served_requests_with_the_web_one():
    options = settings.DATABASES["default"]["OPTIONS"]
    saved = options["options"]
    try:
        # A connection as a job opens it (what settings give every process but the web
        # server's; _options above shows it for a script and a command).
        options["options"] = "-c statement_timeout=600000 -c lock_timeout=3000"
        connection.close()
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "10min"
        serve_requests_with_web_timeouts()
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "5s"
            cursor.execute("SHOW lock_timeout")
            assert cursor.fetchone()[0] == "3s"
    finally:
        options["options"] = saved
        connection.close()


@pytest.fixture
def through_proxy():
    """This test's connection to PostgreSQL goes through a proxy that can freeze."""
    saved = (connection.settings_dict["HOST"], connection.settings_dict["PORT"])
    proxy = FreezingRelay(saved[0] or "127.0.0.1", int(saved[1] or 5432))
    connection.close()
    connection.settings_dict["HOST"], connection.settings_dict["PORT"] = "127.0.0.1", proxy.port
    yield proxy
    proxy.frozen.clear()
    connection.close()
    connection.settings_dict["HOST"], connection.settings_dict["PORT"] = saved
    proxy.close()


@pytest.fixture
def breaker(settings, monkeypatch):
    """A breaker of this test's own in place of the process's, probing every 0.3 s."""
    settings.STUDY_DB_BREAKER_SECONDS = 0.3
    process = db_breaker.ProcessBreaker()
    monkeypatch.setattr(db_breaker, "default", process)
    yield process
    process.join(timeout=30)


def _wait_closed(process: db_breaker.ProcessBreaker, *, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while process.breaker.is_open:
        assert time.monotonic() < deadline, process.breaker.describe()
        time.sleep(0.05)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_frozen_database_is_a_503_before_it_thaws(
    api, learner, deck, settings, through_proxy, breaker
):
    settings.STUDY_DB_STATEMENT_TIMEOUT_MS = 500  # the client's deadline: 0.5 s + 2 s
    with time_machine.travel(START, tick=False):
        services.enroll(learner=learner, deck=deck, at=START)
    card = deck.cards.order_by("position").first()
    cut_before = watchdog.cut
    with time_machine.travel(DAY1, tick=True):
        assert api.get("/api/v1/reviews/due/").status_code == 200  # through the proxy
        through_proxy.frozen.set()
        # Without a deadline the request would wait for the thaw: a failure guard, 60 s on.
        thaw = threading.Timer(60, through_proxy.frozen.clear)
        thaw.start()
        try:
            response = api.post(
                "/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json"
            )
            answered_frozen = through_proxy.frozen.is_set()
        finally:
            thaw.cancel()
            through_proxy.frozen.clear()
    assert answered_frozen, "the answer waited for the database to thaw"
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "1"  # the breaker's first probe
    assert watchdog.cut > cut_before
    # The cut connection opened the breaker; its probe, through the thawed proxy, closes it.
    assert breaker.breaker.openings == 1
    _wait_closed(breaker)
    # At the end of the request the server's handler drops the cut connection (the test
    # client leaves that out), and the next request opens a fresh one and is served.
    close_old_connections()
    with time_machine.travel(DAY1, tick=False):
        again = api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
    assert again.status_code == 201, again.content


@pytest.fixture
def unreachable(breaker):
    """This test's connection pointed at a server that accepts connections and never
    answers (a frozen PostgreSQL: the kernel completes the handshake, nobody reads), with
    the breaker's probe following the same settings. Yields a function that points the
    connection back at PostgreSQL."""
    blackhole = socket.create_server(("127.0.0.1", 0), backlog=128)
    # The probe opens its connections from the same settings as requests do.
    assert db_breaker.connections.settings["default"] is connection.settings_dict
    saved = (connection.settings_dict["HOST"], connection.settings_dict["PORT"])
    connection.close()
    connection.settings_dict["HOST"] = "127.0.0.1"
    connection.settings_dict["PORT"] = blackhole.getsockname()[1]

    def answer_again() -> None:
        connection.settings_dict["HOST"], connection.settings_dict["PORT"] = saved

    yield answer_again
    answer_again()
    _wait_closed(breaker)
    connection.close()
    blackhole.close()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_after_one_connect_timeout_requests_answer_503_at_once_until_it_answers(
    api, learner, breaker, unreachable
):
    connect_timeout = connection.settings_dict["OPTIONS"]["connect_timeout"]
    began = time.monotonic()
    first = api.get("/api/v1/reviews/due/")
    first_took = time.monotonic() - began
    assert first.status_code == 503, first.content
    assert first_took >= connect_timeout - 0.5  # it did wait for the database
    assert breaker.breaker.is_open and breaker.probing

    for _ in range(10):
        response = api.get("/api/v1/reviews/due/")
        assert response.status_code == 503, response.content
        assert int(response["Retry-After"]) >= 1
    # The open breaker answered all ten without a connection, and so without the connect
    # timeout each would otherwise wait (3 s).
    assert breaker.breaker.refused == 10

    unreachable()
    _wait_closed(breaker)
    assert api.get("/api/v1/reviews/due/").status_code == 200
    assert breaker.breaker.openings == 1
