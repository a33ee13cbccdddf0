"""/readyz reports whether a lab sandbox can start, and never changes its status for it."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from labs import availability, sandbox
from studyapp import health
from tests.labs import require_sandbox


@pytest.fixture
def fresh_check():
    """No cached answer before the test, and none of the test's left after it."""
    sandbox._checked.update(at=-1e9, reason=None)
    cache.delete_many([availability.REPORT_KEY, availability.READY_KEY])
    yield
    sandbox._checked.update(at=-1e9, reason=None)


@pytest.mark.django_db
@pytest.mark.sandbox
def test_readyz_says_ok_when_a_sandbox_starts(client, fresh_check):
    require_sandbox()
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.content
    assert ready.json()["checks"]["sandbox"] == "ok"


@pytest.mark.django_db
def test_readyz_names_why_no_sandbox_starts_and_stays_200(client, monkeypatch, fresh_check):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, **kw: None)
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.content
    checks = ready.json()["checks"]
    # Nor can a labs worker, as none has reported: both are said.
    assert checks["sandbox"] == (
        "no labs worker has reported, and this process cannot start a sandbox: "
        "bubblewrap (bwrap) is not installed"
    )
    assert {checks[name] for name in ("database", "cache", "broker", "beat")} == {"ok"}


@pytest.mark.django_db
def test_readyz_stays_503_for_a_required_check_whatever_the_sandbox(client, monkeypatch):
    def down():
        raise ConnectionError("Connection refused")

    monkeypatch.setitem(health.CHECKS, "cache", down)
    monkeypatch.setitem(health.ADVISORY, "sandbox", lambda: None)
    failed = client.get("/readyz")
    assert failed.status_code == 503
    assert failed.json()["checks"]["sandbox"] == "ok"


@pytest.mark.django_db
def test_a_sandbox_check_that_breaks_is_a_reason_not_a_500(client, monkeypatch):
    def broken():
        raise OSError("bwrap vanished")

    monkeypatch.setitem(health.ADVISORY, "sandbox", broken)
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["sandbox"] == "OSError: bwrap vanished"
