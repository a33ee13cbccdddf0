"""A write that adds cards asks for their placement by task name, after commit, never importing the tasks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.db import transaction

from cards.services import scheduling

ROOT = Path(__file__).resolve().parents[2]


class FakeApp:
    """Stands for ``celery.current_app``: records what is published and how."""

    def __init__(self, registered=None):
        self.tasks = {} if registered is None else registered
        self.sent = []

    def send_task(self, name, **options):
        self.sent.append((name, options))


class FakeTask:
    def __init__(self):
        self.applied = []

    def apply_async(self, **options):
        self.applied.append(options)


def test_an_unregistered_task_is_published_by_name_after_commit(
    db, monkeypatch, django_capture_on_commit_callbacks
):
    app = FakeApp()
    monkeypatch.setattr(scheduling, "current_app", app)

    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        scheduling.enqueue_schedule_new_cards(7)
        assert app.sent == []  # nothing before the commit

    assert app.sent == [
        (
            "cards.tasks.schedule_new_cards",
            {"kwargs": {"deck_id": 7}, "retry": True, "retry_policy": scheduling.PUBLISH_ONCE},
        )
    ]


def test_a_registered_task_is_applied_through_itself_so_eager_mode_holds(
    db, monkeypatch, django_capture_on_commit_callbacks
):
    task = FakeTask()
    app = FakeApp({"cards.tasks.schedule_new_cards": task})
    monkeypatch.setattr(scheduling, "current_app", app)

    with django_capture_on_commit_callbacks(execute=True):
        scheduling.enqueue_schedule_new_cards(7)

    assert app.sent == []
    assert task.applied == [
        {"kwargs": {"deck_id": 7}, "retry": True, "retry_policy": scheduling.PUBLISH_ONCE}
    ]


def test_a_rolled_back_write_publishes_nothing(db, monkeypatch, django_capture_on_commit_callbacks):
    app = FakeApp()
    monkeypatch.setattr(scheduling, "current_app", app)

    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        scheduling.enqueue_schedule_new_cards(7)
        raise RuntimeError("the write failed")

    assert callbacks == [] and app.sent == []


def test_the_card_services_import_without_the_tasks_module():
    # A fresh interpreter: importing the services must not pull in cards.tasks.
    code = (
        "import django; django.setup(); import sys; import cards.services.cards; "
        "import cards.services; print('cards.tasks' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip() == "False"
