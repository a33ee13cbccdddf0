"""Shared fixtures: users, API clients, and service guards.

PostgreSQL and Redis are used when ``make test`` finds them (``bin/services_env``).
Tests marked ``postgres`` or ``redis`` skip without them, and tests marked ``sandbox``
where no lab sandbox can start (bubblewrap missing, user namespaces off), except under
``REQUIRE_SERVICES=1`` (CI), where a missing service fails the run.
"""

from __future__ import annotations

import os
import uuid

import pytest
from django.conf import settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"

# Each pytest-xdist worker gives its lab sandbox runs a throwaway uid range of its own
# (labs.sandbox.bwrap draws one uid in [base, base + 100,000) per run), so a test that
# looks for processes its own runs left behind never sees the other worker's runs.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _XDIST_WORKER.startswith("gw") and _XDIST_WORKER[2:].isdigit():
    os.environ.setdefault(
        "STUDY_LAB_UID_BASE", str(1_800_000_000 + (int(_XDIST_WORKER[2:]) + 1) * 200_000)
    )


@pytest.fixture(scope="session")
def django_db_modify_db_settings(request, tmp_path_factory):
    """On SQLite, the test database is a file in write-ahead-log mode, not shared memory.

    Browser tests serve pages from a thread of the test process (``live_server``). On
    SQLite's shared in-memory database that thread and the test take table locks on
    one shared cache, and a page load meets "database table is locked". A file in WAL
    mode lets readers and the one writer proceed side by side, and ``timeout`` makes a
    second writer wait its turn. The file lives under pytest's temporary directory,
    one per xdist worker (the suffix pytest-django appends), and durability is off:
    nothing outlives the run.
    """
    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database.setdefault("TEST", {})["NAME"] = str(
            tmp_path_factory.getbasetemp() / "test.sqlite3"
        )
        options = database.setdefault("OPTIONS", {})
        options["init_command"] = "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF"
    request.getfixturevalue("django_db_modify_db_settings_parallel_suffix")


def _on_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


@pytest.fixture(scope="session", autouse=True)
def _flush_postgres_by_delete():
    """On PostgreSQL, a transactional test (every browser test) empties the tables with
    DELETE rather than Django's TRUNCATE.

    TRUNCATE gives each of the 40-odd tables a new file, 0.2-0.4 s a test; a DELETE of a
    test's few rows takes a tenth of that. ``session_replication_role = replica`` switches
    off, for that one transaction, the foreign-key checks (every table is emptied, so the
    order does not matter) and the count triggers (their tables are emptied too). It
    needs a superuser, as the test database's owner is here; any other user, and a flush
    that resets sequences, keeps Django's TRUNCATE.
    """
    if not _on_postgres():
        yield
        return
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or not tables or not _is_superuser(self.connection):
            return truncate(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        return [
            "SET LOCAL session_replication_role = replica;",
            *(f"DELETE FROM {self.quote_name(table)};" for table in tables),
        ]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "sql_flush", sql_flush)
        yield


def _is_superuser(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('is_superuser') = 'on'")
        return bool(cursor.fetchone()[0])


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "postgres" in item.keywords and not _on_postgres():
            if REQUIRE_SERVICES:
                raise pytest.UsageError("REQUIRE_SERVICES=1 but DATABASE_URL is not PostgreSQL")
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL)"))
        if "redis" in item.keywords and not os.environ.get("REDIS_URL"):
            if REQUIRE_SERVICES:
                raise pytest.UsageError("REQUIRE_SERVICES=1 but REDIS_URL is not set")
            item.add_marker(pytest.mark.skip(reason="needs Redis (set REDIS_URL)"))
        if "sandbox" in item.keywords:
            reason = _sandbox_missing()
            if reason and REQUIRE_SERVICES:
                raise pytest.UsageError(
                    f"REQUIRE_SERVICES=1 but no lab sandbox can start: {reason}"
                )
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"no lab sandbox: {reason}"))


def _sandbox_missing() -> str | None:
    from labs.sandbox import unavailable

    return unavailable()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The production hasher is slow on purpose; tests create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _no_rate_limits(settings):
    # Every test runs from one address and shares one cache: limits are switched
    # off here and switched on by the tests about them (tests/test_security_limits.py).
    settings.STUDY_THROTTLE_RATES = dict.fromkeys(settings.STUDY_THROTTLE_RATES)


@pytest.fixture
def limits(settings):
    """Switch scopes on for one test, with counters of their own in a private cache:
    ``limits(login="3/minute")``."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"limits-{uuid.uuid4()}",
        }
    }

    def set_rates(**rates):
        settings.STUDY_THROTTLE_RATES = {**settings.STUDY_THROTTLE_RATES, **rates}

    return set_rates


@pytest.fixture
def make_user(db, django_user_model):
    counter = {"n": 0}

    def make(username: str | None = None, *, staff: bool = False, password: str = "s3cret-pass!"):
        counter["n"] += 1
        name = username or f"learner{counter['n']}"
        return django_user_model.objects.create_user(
            username=name, password=password, is_staff=staff
        )

    return make


@pytest.fixture
def learner(make_user):
    return make_user("alice")


@pytest.fixture
def other_learner(make_user):
    return make_user("bob")


@pytest.fixture
def staff(make_user):
    return make_user("staffer", staff=True)


def _client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api(learner) -> APIClient:
    """An API client authenticated as ``learner`` by token."""
    return _client_for(learner)


@pytest.fixture
def other_api(other_learner) -> APIClient:
    return _client_for(other_learner)


@pytest.fixture
def staff_api(staff) -> APIClient:
    return _client_for(staff)


@pytest.fixture
def anon_api() -> APIClient:
    return APIClient()
