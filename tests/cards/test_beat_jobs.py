"""The periodic jobs have one list, ``CELERY_BEAT_SCHEDULE``; what names them reads it or is
held to it: the README's list, the tasks Celery registers, the rows beat runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django_celery_beat.models import PeriodicTask

ROOT = Path(__file__).resolve().parents[2]


def registered_tasks() -> list[str]:
    """The task of each default job, by its function's name (``cards.tasks.housekeeping``:
    ``housekeeping``)."""
    return [entry["task"].rpartition(".")[2] for entry in settings.CELERY_BEAT_SCHEDULE.values()]


def readme_tasks() -> list[str]:
    """The tasks the README's Celery section says beat runs."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Celery\n", 1)[1].split("\n## ", 1)[0]
    paragraph = section.strip().split("\n\n", 1)[0]
    return re.findall(r"`([a-z_]+)`", paragraph)


def test_the_readme_names_every_beat_task_once_and_no_other():
    assert sorted(readme_tasks()) == sorted(registered_tasks())
    assert len(set(readme_tasks())) == len(readme_tasks())


@pytest.mark.django_db
def test_migrate_stored_every_default_job():
    # post_migrate ran when the test database was created.
    stored = dict(PeriodicTask.objects.values_list("name", "task"))
    assert {name: stored.get(name) for name in settings.CELERY_BEAT_SCHEDULE} == {
        name: entry["task"] for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
    }
