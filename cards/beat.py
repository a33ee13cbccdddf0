"""The beat schedule lives in django-celery-beat's tables, seeded from settings.

``settings.CELERY_BEAT_SCHEDULE`` is the one list of the periodic jobs: each entry names
a job and holds its default (task, schedule, args, kwargs, options).
:func:`sync_default_schedule` runs on every ``migrate`` (a ``post_migrate`` handler) and
when beat starts. It creates the jobs that are missing, and brings a stored job whose
default changed in the code to the new default, unless staff edited that job in the
admin: the admin's log records the change (of the job, or of the crontab or interval it
runs on), and then what staff set stays and the log says why. ``enabled`` and the run
history are never touched. An edit made outside the admin (a shell, SQL) leaves no such
record, so the next sync puts the default back.

django-celery-beat's own ``DatabaseScheduler`` writes ``beat_schedule`` over the
stored rows each time beat starts (``update_or_create``), which would undo staff
edits; :class:`DefaultsOnceScheduler` runs :func:`sync_default_schedule` instead.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

from celery import schedules
from django.conf import settings
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model, Q
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

logger = logging.getLogger(__name__)

_OPTION_FIELDS = ("queue", "exchange", "routing_key", "priority", "expire_seconds")
_SCHEDULE_FIELDS = ("interval", "crontab", "solar", "clocked")
_CRONTAB_FIELDS = ("minute", "hour", "day_of_week", "day_of_month", "month_of_year")


def _schedule_spec(schedule: Any) -> tuple[str, dict[str, Any]]:
    """A default's schedule as the row it is stored as: ``(field, the row's values)``."""
    if isinstance(schedule, schedules.crontab):
        # One row per distinct crontab, as the admin would make it: its fields are text.
        return "crontab", {
            "minute": str(schedule._orig_minute),
            "hour": str(schedule._orig_hour),
            "day_of_week": str(schedule._orig_day_of_week),
            "day_of_month": str(schedule._orig_day_of_month),
            "month_of_year": str(schedule._orig_month_of_year),
            "timezone": str(settings.CELERY_TIMEZONE or "UTC"),
        }
    if isinstance(schedule, schedules.schedule | dt.timedelta | int | float):
        seconds = (
            schedule.run_every.total_seconds()
            if isinstance(schedule, schedules.schedule)
            else schedule.total_seconds()
            if isinstance(schedule, dt.timedelta)
            else float(schedule)
        )
        return "interval", {"every": int(seconds), "period": IntervalSchedule.SECONDS}
    raise ValueError(f"Unsupported schedule {schedule!r}: use crontab or an interval")


def _default(entry: dict[str, Any]) -> dict[str, Any]:
    """The fields of the stored task a default sets, its schedule as a spec."""
    options = entry.get("options") or {}
    if "expires" in options and "expire_seconds" not in options:
        options = {**options, "expire_seconds": options["expires"]}
    return {
        "task": entry["task"],
        "args": list(entry.get("args") or []),
        "kwargs": dict(entry.get("kwargs") or {}),
        "schedule": _schedule_spec(entry["schedule"]),
        # An option the default leaves out is stored empty, as the model's default.
        **{key: options.get(key) for key in _OPTION_FIELDS},
    }


def _row_values(row: Model) -> dict[str, Any]:
    if isinstance(row, CrontabSchedule):
        return {**{f: getattr(row, f) for f in _CRONTAB_FIELDS}, "timezone": str(row.timezone)}
    if isinstance(row, IntervalSchedule):
        return {"every": row.every, "period": row.period}
    return {"pk": row.pk}  # a solar or clocked schedule: never a default's


def _stored(task: PeriodicTask) -> dict[str, Any]:
    """The same fields, as the task stores them now."""
    schedule = next(
        ((f, _row_values(getattr(task, f))) for f in _SCHEDULE_FIELDS if getattr(task, f)),
        None,
    )
    return {
        "task": task.task,
        "args": _json(task.args),
        "kwargs": _json(task.kwargs),
        "schedule": schedule,
        # The model stores an empty queue, exchange or routing key as null.
        **{key: getattr(task, key) or None for key in _OPTION_FIELDS},
    }


def _json(text: str | None) -> Any:
    try:
        return json.loads(text or "null")
    except ValueError:
        return text


def _staff_edit(task: PeriodicTask, using: str) -> LogEntry | None:
    """The admin's latest record of staff adding or changing this task, or changing the
    crontab or interval row it runs on (a row the admin merely added changes no task)."""
    types = ContentType.objects.db_manager(using)
    edits = Q(
        content_type=types.get_for_model(PeriodicTask),
        object_id=str(task.pk),
        action_flag__in=(ADDITION, CHANGE),
    )
    for field in _SCHEDULE_FIELDS:
        row = getattr(task, field)
        if row is not None:
            edits |= Q(
                content_type=types.get_for_model(type(row)),
                object_id=str(row.pk),
                action_flag=CHANGE,
            )
    return (
        LogEntry.objects.using(using)
        .filter(edits)
        .select_related("user")
        .order_by("-action_time")
        .first()
    )


def _fields(default: dict[str, Any], using: str) -> dict[str, Any]:
    """The model fields to store a default with, its schedule row found or made."""
    field, values = default["schedule"]
    model = CrontabSchedule if field == "crontab" else IntervalSchedule
    row, _ = model.objects.using(using).get_or_create(**values)
    return {
        "task": default["task"],
        "args": json.dumps(default["args"]),
        "kwargs": json.dumps(default["kwargs"]),
        **{f: row if f == field else None for f in _SCHEDULE_FIELDS},
        **{key: default[key] for key in _OPTION_FIELDS},
    }


def _follow_default(task: PeriodicTask, default: dict[str, Any], using: str) -> bool:
    """Bring a stored task to its default unless staff edited it; True when it changed."""
    stored = _stored(task)
    differ = [key for key, value in default.items() if stored[key] != value]
    if not differ:
        return False
    edit = _staff_edit(task, using)
    if edit is not None:
        logger.warning(
            "Periodic task %r keeps what staff set in the admin (%s by %s, %s): its %s "
            "differ from the default, which is not applied",
            task.name,
            edit.get_action_flag_display().lower(),
            edit.user,
            edit.action_time.isoformat(timespec="seconds"),
            ", ".join(differ),
        )
        return False
    for field, value in _fields(default, using).items():
        setattr(task, field, value)
    task.save(using=using)  # its signal tells a running beat to reload the schedule
    logger.info("Periodic task %r follows its changed default: %s", task.name, ", ".join(differ))
    return True


def sync_default_schedule(*, using: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Create the periodic tasks of ``settings.CELERY_BEAT_SCHEDULE`` that do not exist
    yet, and bring those whose default changed to it, unless staff edited them in the admin.

    Returns the names created or changed, in the order of the setting.
    """
    done = []
    defaults = getattr(settings, "CELERY_BEAT_SCHEDULE", {}) or {}
    with transaction.atomic(using=using):
        stored = {
            task.name: task
            for task in PeriodicTask.objects.using(using)
            .filter(name__in=list(defaults))
            .select_related(*_SCHEDULE_FIELDS)
        }
        for name, entry in defaults.items():
            default = _default(entry)
            if name not in stored:
                PeriodicTask.objects.using(using).create(name=name, **_fields(default, using))
                logger.info("Created the default periodic task %r", name)
                done.append(name)
            elif _follow_default(stored[name], default, using):
                done.append(name)
    return done


def sync_default_schedule_on_migrate(sender, using: str = DEFAULT_DB_ALIAS, **kwargs) -> None:
    # A partial migrate (or one run before these tables exist) skips quietly.
    tables = set(connections[using].introspection.table_names())
    needed = {PeriodicTask._meta.db_table, CrontabSchedule._meta.db_table, LogEntry._meta.db_table}
    if needed <= tables:
        sync_default_schedule(using=using)


class DefaultsOnceScheduler(DatabaseScheduler):
    """``DatabaseScheduler`` that syncs the defaults as above instead of writing them over
    the stored tasks."""

    def setup_schedule(self):
        sync_default_schedule()
        self.install_default_entries(self.schedule)
