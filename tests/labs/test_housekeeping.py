"""What the labs keep: a learner's 20 newest submissions of each lab, plus the pending ones
and those a review refers to; the rest go in one DELETE (``labs.housekeeping``)."""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cards.models import Card, Deck, LabBinding, ReviewLog
from labs import housekeeping, reviews, tasks
from labs.models import Submission

from .tiny_lab import install

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
CODE = "def double(x):\n    return 2 * x\n"


def made(learner, lab: str, count: int, *, start: dt.datetime = T0, **fields) -> list[int]:
    """``count`` judged submissions one minute apart from ``start``; their ids, oldest first."""
    rows = Submission.objects.bulk_create(
        Submission(learner=learner, lab=lab, code=CODE, seed=i, status="done", passed=False)
        for i in range(count)
    )
    for i, row in enumerate(rows):
        Submission.objects.filter(pk=row.pk).update(
            created_at=start + dt.timedelta(minutes=i), **fields
        )
    return [row.pk for row in rows]


def ids(**filters) -> set[int]:
    return set(Submission.objects.filter(**filters).values_list("pk", flat=True))


def test_the_newest_of_each_learner_and_lab_are_kept(learner, other_learner):
    mine = made(learner, "tiny", 25)
    my_other_lab = made(learner, "second", 3)
    theirs = made(other_learner, "tiny", 22)

    assert housekeeping.prune_submissions(keep=20) == 5 + 2

    assert ids(learner=learner, lab="tiny") == set(mine[5:])
    assert ids(learner=learner, lab="second") == set(my_other_lab)
    assert ids(learner=other_learner) == set(theirs[2:])
    assert housekeeping.prune_submissions(keep=20) == 0  # a second run finds nothing


def test_equal_times_are_ordered_by_id_as_the_learners_list_shows_them(learner):
    rows = made(learner, "tiny", 4)
    Submission.objects.update(created_at=T0)
    listed = list(
        Submission.objects.filter(learner=learner, lab="tiny").values_list("pk", flat=True)
    )
    assert listed == sorted(rows, reverse=True)

    assert housekeeping.prune_submissions(keep=3) == 1
    assert ids() == set(listed[:3])


def test_a_pending_submission_is_never_deleted_wherever_it_ranks(learner):
    rows = made(learner, "tiny", 6)
    Submission.objects.filter(pk=rows[0]).update(status="queued", passed=None)
    assert housekeeping.prune_submissions(keep=2) == 3
    assert ids() == {rows[0], rows[4], rows[5]}


def test_a_submission_that_recorded_a_review_is_kept_with_its_review(
    api, learner, monkeypatch, django_capture_on_commit_callbacks
):
    install(monkeypatch)
    monkeypatch.setattr(tasks.grade_submission, "delay", tasks.grade_submission)
    deck = Deck.objects.create(slug="labs-deck", title="Labs")
    card = Card.objects.create(deck=deck, key="tiny", kind="lab", lab="tiny", prompt="Tiny.")
    with time_machine.travel(T0, tick=False):
        assert api.post("/api/v1/decks/labs-deck/enroll/").status_code == 200
    due = T0 + dt.timedelta(days=1)
    with time_machine.travel(due, tick=False), django_capture_on_commit_callbacks(execute=True):
        posted = api.post("/api/v1/labs/tiny/submissions/", {"code": CODE}, format="json")
    assert posted.status_code == 202, posted.json()
    reviewed = posted.json()["id"]
    assert reviews.review_of(submission_id=reviewed) == "pass"
    practice = made(learner, "tiny", 22, start=T0 + dt.timedelta(days=2))

    assert housekeeping.prune_submissions(keep=20) == 2

    assert ids() == {reviewed, *practice[2:]}
    assert reviews.review_of(submission_id=reviewed) == "pass"
    binding = LabBinding.objects.get(submission_id=reviewed)
    assert ReviewLog.objects.get(pk=binding.review_id).card_id == card.pk


def test_the_prune_is_one_delete_statement(learner, other_learner):
    made(learner, "tiny", 30)
    made(other_learner, "second", 30)
    with CaptureQueriesContext(connection) as queries:
        assert housekeeping.prune_submissions(keep=20) == 20
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) == 1, statements
    assert statements[0].startswith("DELETE FROM")
    assert Submission.objects.count() == 40


@pytest.mark.parametrize("keep", [0, -3])
def test_keeping_fewer_than_one_is_refused(learner, keep):
    made(learner, "tiny", 2)
    with pytest.raises(ValueError, match="keep must be at least 1"):
        housekeeping.prune_submissions(keep=keep)
    assert Submission.objects.count() == 2


def test_the_hourly_beat_job_runs_the_task(learner):
    entry = settings.CELERY_BEAT_SCHEDULE["prune-lab-submissions"]
    assert entry["task"] == tasks.prune_submissions.name == "labs.tasks.prune_submissions"
    assert (entry["schedule"].minute, entry["schedule"].hour) == ({37}, set(range(24)))
    rows = made(learner, "tiny", housekeeping.KEEP_PER_LAB + 1)
    assert tasks.prune_submissions() == 1
    assert tasks.prune_submissions.apply(kwargs={"keep": 5}).get() == 15
    assert ids() == set(rows[-5:])
