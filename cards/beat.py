"""The beat schedule lives in django-celery-beat's tables, seeded from settings.

``settings.CELERY_BEAT_SCHEDULE`` holds the defaults. :func:`sync_default_schedule`
creates the missing ones on every ``migrate`` (a ``post_migrate`` handler) and
when beat starts, and never touches a task that already exists, so what staff
set in the admin (another crontab, disabled, other kwargs) survives deploys.

django-celery-beat's own ``DatabaseScheduler`` writes ``beat_schedule`` over the
stored rows each time beat starts (``update_or_create``), which would undo those
edits; :class:`DefaultsOnceScheduler` seeds missing rows instead.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

from celery import schedules
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

logger = logging.getLogger(__name__)

_OPTION_FIELDS = ("queue", "exchange", "routing_key", "priority", "expire_seconds")


def _schedule_fields(schedule, using: str) -> dict:
    if isinstance(schedule, schedules.crontab):
        # One row per distinct crontab, as the admin would make it.
        row, _ = CrontabSchedule.objects.using(using).get_or_create(
            minute=schedule._orig_minute,
            hour=schedule._orig_hour,
            day_of_week=schedule._orig_day_of_week,
            day_of_month=schedule._orig_day_of_month,
            month_of_year=schedule._orig_month_of_year,
            timezone=str(settings.CELERY_TIMEZONE or "UTC"),
        )
        return {"crontab": row}
    if isinstance(schedule, schedules.schedule | dt.timedelta | int | float):
        seconds = (
            schedule.run_every.total_seconds()
            if isinstance(schedule, schedules.schedule)
            else schedule.total_seconds()
            if isinstance(schedule, dt.timedelta)
            else float(schedule)
        )
        row, _ = IntervalSchedule.objects.using(using).get_or_create(
            every=int(seconds), period=IntervalSchedule.SECONDS
        )
        return {"interval": row}
    raise ValueError(f"Unsupported schedule {schedule!r}: use crontab or an interval")


def sync_default_schedule(*, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Create the periodic tasks of ``settings.CELERY_BEAT_SCHEDULE`` that do not exist yet.

    Returns the names created. Existing tasks, edited or not, are left alone.
    """
    created = []
    defaults = getattr(settings, "CELERY_BEAT_SCHEDULE", {}) or {}
    with transaction.atomic(using=using):
        existing = set(
            PeriodicTask.objects.using(using)
            .filter(name__in=list(defaults))
            .values_list("name", flat=True)
        )
        for name, entry in defaults.items():
            if name in existing:
                continue
            options = entry.get("options") or {}
            if "expires" in options and "expire_seconds" not in options:
                options = {**options, "expire_seconds": options["expires"]}
            PeriodicTask.objects.using(using).create(
                name=name,
                task=entry["task"],
                args=json.dumps(list(entry.get("args") or [])),
                kwargs=json.dumps(dict(entry.get("kwargs") or {})),
                **_schedule_fields(entry["schedule"], using),
                **{key: options[key] for key in _OPTION_FIELDS if key in options},
            )
            created.append(name)
    if created:
        logger.info("Created default periodic tasks: %s", ", ".join(created))
    return created


def sync_default_schedule_on_migrate(sender, using: str = DEFAULT_DB_ALIAS, **kwargs) -> None:
    # A partial migrate (or one run before django-celery-beat's tables exist) skips quietly.
    tables = set(connections[using].introspection.table_names())
    if {PeriodicTask._meta.db_table, CrontabSchedule._meta.db_table} <= tables:
        sync_default_schedule(using=using)


class DefaultsOnceScheduler(DatabaseScheduler):
    """``DatabaseScheduler`` that seeds missing defaults and never overwrites stored tasks."""

    def setup_schedule(self):
        sync_default_schedule()
        self.install_default_entries(self.schedule)
