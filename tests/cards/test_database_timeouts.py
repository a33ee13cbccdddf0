"""A database too slow to answer is a 503 within seconds, not a request that hangs.

PostgreSQL connections open with a connect timeout and statement and lock timeouts,
from the environment, well under gunicorn's 30 s worker timeout; long jobs (the Celery
worker's tasks, management commands) get the job statement timeout instead.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
import time_machine
from django.conf import settings
from django.db import connection

from cards import services
from cards.models import ReviewLog
from cards.services.reviews import IDEMPOTENCY_LEASE

from .conftest import START

ROOT = Path(__file__).resolve().parent.parent.parent
DAY1 = START + dt.timedelta(days=1)
GUNICORN_TIMEOUT_S = 30  # docker-compose.yml's --timeout

PRINT_OPTIONS = (
    "import json; from django.conf import settings; "
    "print(json.dumps(settings.DATABASES['default']['OPTIONS']))"
)


def _options(*, via_manage: bool, **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STUDY_DB_")}
    environ.update(DATABASE_URL="postgres://study@db.example:5432/study", **env)
    if via_manage:
        argv = [sys.executable, "manage.py", "shell", "-c", PRINT_OPTIONS]
    else:
        argv = [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'studyapp.settings'; "
            "django.setup(); " + PRINT_OPTIONS,
        ]
    result = subprocess.run(argv, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_connections_open_with_timeouts_from_the_environment():
    default = _options(via_manage=False)
    assert default["connect_timeout"] == 3
    assert "-c statement_timeout=5000" in default["options"]
    assert "-c lock_timeout=3000" in default["options"]
    # A request's last statement ends well before its Idempotency-Key can be taken over.
    assert IDEMPOTENCY_LEASE.total_seconds() > 5 + GUNICORN_TIMEOUT_S

    tuned = _options(
        via_manage=False,
        STUDY_DB_CONNECT_TIMEOUT="2",
        STUDY_DB_STATEMENT_TIMEOUT_MS="1500",
        STUDY_DB_LOCK_TIMEOUT_MS="700",
    )
    assert tuned["connect_timeout"] == 2
    assert "-c statement_timeout=1500 -c lock_timeout=700" in tuned["options"]

    # A management command is a long job: the job statement timeout, the same lock timeout.
    command = _options(via_manage=True, STUDY_DB_JOB_STATEMENT_TIMEOUT_MS="120000")
    assert "-c statement_timeout=120000 -c lock_timeout=3000" in command["options"]


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


def _hold_learner_row(user_id: int, *, seconds: float, held: threading.Event) -> None:
    """Another connection locks the learner's row for ``seconds`` (a stuck writer)."""
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("options", None)
    with psycopg.connect(**params, autocommit=False) as other:
        other.execute("SELECT 1 FROM auth_user WHERE id = %s FOR UPDATE", [user_id])
        held.set()
        time.sleep(seconds)
        other.rollback()


def _submit_while_the_learner_is_locked(api, learner, deck, *, hold: float):
    """A review posted while another connection holds the learner's row for ``hold`` s:
    the answer and how long it took."""
    with time_machine.travel(START, tick=False):
        services.enroll(learner=learner, deck=deck, at=START)
    card = deck.cards.order_by("position").first()
    held = threading.Event()
    holder = threading.Thread(
        target=_hold_learner_row, args=(learner.pk,), kwargs={"seconds": hold, "held": held}
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
    finally:
        holder.join()
    assert not ReviewLog.objects.filter(learner=learner).exists()
    # The next request finds the database answering again.
    with time_machine.travel(DAY1, tick=False):
        again = api.post("/api/v1/reviews/", {"card": card.pk, "result": "pass"}, format="json")
    assert again.status_code == 201
    return response, took


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_write_stuck_behind_a_lock_is_a_503_after_the_lock_timeout(api, learner, deck):
    lock_timeout = settings.STUDY_DB_LOCK_TIMEOUT_MS / 1000
    response, took = _submit_while_the_learner_is_locked(api, learner, deck, hold=lock_timeout + 2)
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    assert "did not answer in time" in response.json()["detail"]
    assert lock_timeout <= took < lock_timeout + 1.5  # not the time the row was held


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_statement_over_the_statement_timeout_is_a_503_with_retry_after(
    api, learner, deck, short_statement_timeout
):
    response, took = _submit_while_the_learner_is_locked(api, learner, deck, hold=3)
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    assert "did not answer in time" in response.json()["detail"]
    assert took < 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_celery_worker_runs_tasks_with_the_job_statement_timeout():
    from studyapp.celery import _patient_worker_statements

    options = settings.DATABASES["default"]["OPTIONS"]
    saved = options["options"]
    try:
        _patient_worker_statements()
        assert "statement_timeout=600000" in options["options"]
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "10min"
            cursor.execute("SHOW lock_timeout")
            assert cursor.fetchone()[0] == "3s"
    finally:
        options["options"] = saved
        connection.close()
