"""Prometheus metrics: request latency by view, beat jobs, reminders, exercise checks."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

pytestmark = pytest.mark.django_db


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_metrics_are_not_public(client, make_user, settings):
    settings.STUDY_METRICS_TOKEN = "s3cret-scrape"
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    client.force_login(make_user("learner"))
    assert client.get("/metrics").status_code == 403


def test_metrics_without_a_configured_token_refuse_any_bearer(client, settings):
    settings.STUDY_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403


def test_staff_and_the_scrape_token_read_the_metrics(client, make_user, settings):
    settings.STUDY_METRICS_TOKEN = "s3cret-scrape"
    r = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-scrape")
    assert r.status_code == 200
    assert r["Content-Type"].startswith("text/plain")
    assert b"study_request_seconds" in r.content
    client.force_login(make_user("boss", staff=True))
    assert client.get("/metrics").status_code == 200


def test_request_latency_is_recorded_by_view_name_not_path(api):
    labels = {"view": "reviews-due", "method": "GET", "status": "200"}
    before = sample("study_request_seconds_count", **labels)
    assert api.get("/api/v1/reviews/due/?page_size=3").status_code == 200
    assert sample("study_request_seconds_count", **labels) == before + 1
    missing = {"view": "unmatched", "method": "GET", "status": "404"}
    before_missing = sample("study_request_seconds_count", **missing)
    api.get("/no/such/page/")
    # Unknown pages are counted under one label, so paths cannot blow up the series.
    assert sample("study_request_seconds_count", **missing) == before_missing + 1


def test_beat_jobs_report_duration_and_rows(make_user):
    from cards import tasks

    before = sample("study_beat_job_seconds_count", job="schedule_new_cards")
    rows_before = sample("study_beat_job_rows_total", job="schedule_new_cards")
    tasks.schedule_new_cards()
    assert sample("study_beat_job_seconds_count", job="schedule_new_cards") == before + 1
    assert sample("study_beat_job_rows_total", job="schedule_new_cards") == rows_before


def test_exercise_checks_are_counted_by_outcome(api):
    created = api.post(
        "/api/v1/exercises/", {"kind": "scaling", "params": {"seed": 1}}, format="json"
    )
    assert created.status_code == 201
    before = sample("study_exercise_checks_total", outcome="wrong")
    answers = {
        "variance": 1,
        "weights_scaled": [0.2, 0.3, 0.5],
        "weights_unscaled": [0.2, 0.3, 0.5],
    }
    r = api.post(
        f"/api/v1/exercises/{created.json()['id']}/submit/", {"answers": answers}, format="json"
    )
    assert r.status_code == 200 and r.json()["correct"] is False
    assert sample("study_exercise_checks_total", outcome="wrong") == before + 1
