"""The default beat schedule follows the code, except where staff edited a job in the admin.

``cards.beat.sync_default_schedule`` runs on every migrate and when beat starts: a job whose
default changed in ``CELERY_BEAT_SCHEDULE`` is brought to the new default; one staff changed
in the admin (the job, or the crontab it runs on) keeps what they set, and the log says why.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest
from celery.schedules import crontab
from django.contrib.admin.models import CHANGE, LogEntry
from django.urls import reverse
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from cards.beat import DefaultsOnceScheduler, sync_default_schedule

pytestmark = pytest.mark.django_db

REMINDERS = "send-due-reminders"


def defaults(**reminders) -> dict:
    """A schedule of two jobs; ``reminders`` replaces parts of the reminders' default."""
    return {
        "housekeeping": {
            "task": "cards.tasks.housekeeping",
            "schedule": crontab(minute=17, hour="*"),
        },
        REMINDERS: {
            "task": "cards.tasks.send_due_reminders",
            "schedule": crontab(minute="*/15"),
            "kwargs": {"retry_after_seconds": 900},
            "options": {"queue": "mail"},
        }
        | reminders,
    }


@pytest.fixture
def seeded(settings):
    PeriodicTask.objects.all().delete()
    settings.CELERY_BEAT_SCHEDULE = defaults()
    assert sync_default_schedule() == ["housekeeping", REMINDERS]
    return settings


@pytest.fixture
def beat_log():
    """What cards.beat logs, read from its own logger (an admin page loads the Celery app,
    which may set the root logger's handlers up again)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append
    logger = logging.getLogger("cards.beat")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lambda: "\n".join(record.getMessage() for record in records)
    logger.removeHandler(handler)
    logger.setLevel(level)


def reminders() -> PeriodicTask:
    return PeriodicTask.objects.select_related("crontab", "interval").get(name=REMINDERS)


def post_admin_form(client, url: str, **changes) -> None:
    """Post the admin form at ``url`` as its page fills it, with ``changes``, as staff would."""
    page = client.get(url).context
    forms = [page["adminform"].form]
    for inline in page["inline_admin_formsets"]:
        forms += [inline.formset.management_form, *inline.formset.forms]
    data = {
        form.add_prefix(name): str(form[name].value())
        for form in forms
        for name in form.fields
        if form[name].value() is not None
    }
    response = client.post(url, data | changes)
    assert response.status_code == 302, response.context["adminform"].form.errors


def edit_in_the_admin(client, task: PeriodicTask, **changes) -> None:
    post_admin_form(
        client, reverse("admin:django_celery_beat_periodictask_change", args=[task.pk]), **changes
    )


def test_a_changed_crontab_kwargs_and_queue_are_followed(seeded, beat_log):
    PeriodicTask.objects.filter(name=REMINDERS).update(
        enabled=False, total_run_count=7, last_run_at=dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    )
    seeded.CELERY_BEAT_SCHEDULE = defaults(
        schedule=crontab(minute="*/20"), kwargs={"retry_after_seconds": 600}, options={}
    )

    assert sync_default_schedule() == [REMINDERS]

    task = reminders()
    assert (task.crontab.minute, task.crontab.hour) == ("*/20", "*")
    assert json.loads(task.kwargs) == {"retry_after_seconds": 600}
    assert task.queue is None
    # What the job did and whether it runs are not the default's to change.
    assert (task.enabled, task.total_run_count) == (False, 7)
    assert f"{REMINDERS!r} follows its changed default: kwargs, schedule, queue" in beat_log()
    assert sync_default_schedule() == []


def test_a_crontab_that_became_an_interval_is_followed(seeded):
    seeded.CELERY_BEAT_SCHEDULE = defaults(schedule=dt.timedelta(minutes=5))

    assert sync_default_schedule() == [REMINDERS]

    task = reminders()
    assert task.crontab is None
    assert (task.interval.every, task.interval.period) == (300, IntervalSchedule.SECONDS)


def test_an_unchanged_default_changes_nothing(seeded):
    before = {t.name: (t.crontab_id, t.kwargs, t.queue) for t in PeriodicTask.objects.all()}
    assert sync_default_schedule() == []
    after = {t.name: (t.crontab_id, t.kwargs, t.queue) for t in PeriodicTask.objects.all()}
    assert after == before


def test_a_job_staff_edited_in_the_admin_keeps_their_edit_and_the_log_says_why(
    seeded, admin_client, admin_user, beat_log
):
    hourly, _ = CrontabSchedule.objects.get_or_create(minute="0", hour="*", timezone="UTC")
    edit_in_the_admin(
        admin_client, reminders(), crontab=hourly.pk, kwargs='{"retry_after_seconds": 60}'
    )
    assert LogEntry.objects.filter(object_id=str(reminders().pk), action_flag=CHANGE).exists()
    seeded.CELERY_BEAT_SCHEDULE = defaults(schedule=crontab(minute="*/20"))

    assert sync_default_schedule() == []

    task = reminders()
    assert task.crontab_id == hourly.pk
    assert json.loads(task.kwargs) == {"retry_after_seconds": 60}
    assert f"{REMINDERS!r} keeps what staff set in the admin" in beat_log()
    assert f"change by {admin_user.username}" in beat_log()
    assert "kwargs, schedule differ from the default" in beat_log()
    # The other job, untouched by staff, still follows its default.
    seeded.CELERY_BEAT_SCHEDULE["housekeeping"]["schedule"] = crontab(minute=23, hour="*")
    assert sync_default_schedule() == ["housekeeping"]


def test_a_crontab_staff_changed_in_the_admin_keeps_the_jobs_on_it(seeded, admin_client):
    row = reminders().crontab
    url = reverse("admin:django_celery_beat_crontabschedule_change", args=[row.pk])
    post_admin_form(admin_client, url, minute="*/5")
    seeded.CELERY_BEAT_SCHEDULE = defaults(schedule=crontab(minute="*/20"))

    assert sync_default_schedule() == []
    assert reminders().crontab.minute == "*/5"


def test_a_crontab_the_admin_only_added_is_no_edit_of_the_jobs_that_share_it(seeded, admin_client):
    # Staff added a crontab row that the next default happens to share.
    post_admin_form(
        admin_client, reverse("admin:django_celery_beat_crontabschedule_add"), minute="*/20"
    )
    seeded.CELERY_BEAT_SCHEDULE = defaults(schedule=crontab(minute="*/20"))

    assert sync_default_schedule() == [REMINDERS]
    assert reminders().crontab.minute == "*/20"


def test_an_edit_made_outside_the_admin_is_put_back(seeded):
    hourly, _ = CrontabSchedule.objects.get_or_create(minute="0", hour="*", timezone="UTC")
    PeriodicTask.objects.filter(name=REMINDERS).update(crontab=hourly)

    assert sync_default_schedule() == [REMINDERS]
    assert reminders().crontab.minute == "*/15"


def test_beat_start_follows_a_changed_default(seeded, monkeypatch):
    from django_celery_beat import schedulers

    from studyapp.celery import app

    # The scheduler drops connections inside a transaction, as the test case is in.
    monkeypatch.setattr(schedulers, "close_old_connections", lambda: None)
    seeded.CELERY_BEAT_SCHEDULE = defaults(schedule=crontab(minute="*/20"))

    scheduler = DefaultsOnceScheduler(app=app, lazy=True)
    scheduler.setup_schedule()

    assert reminders().crontab.minute == "*/20"
    assert REMINDERS in scheduler.schedule
