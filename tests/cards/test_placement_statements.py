"""Placement's statements: ranges of learners without an empty tail, existing states left alone."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cards.models import Card, Enrollment, ReviewState
from cards.services.scheduling import id_ranges, schedule_new_cards

from .conftest import reviewed_on_study_day

AT = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def enrol(db, django_user_model, deck):
    def make(count):
        users = [django_user_model.objects.create(username=f"placed{i}") for i in range(count)]
        Enrollment.objects.bulk_create([Enrollment(learner=u, deck=deck) for u in users])
        for user in users:
            reviewed_on_study_day(user, AT)
        return users

    return make


@pytest.mark.parametrize(("learners", "ranges"), [(0, 1), (3, 2), (4, 2), (5, 3)])
def test_ranges_cover_every_row_and_end_without_an_empty_one(enrol, learners, ranges):
    users = enrol(learners)
    found = list(id_ranges(Enrollment.objects.all(), "learner_id", 2))

    assert len(found) == ranges
    assert found[0][0] == 0 and found[-1][1] is None
    assert all(up_to == found[i + 1][0] for i, (_, up_to) in enumerate(found[:-1]))
    covered = [u.pk for u in users for after, up_to in found if after < u.pk <= (up_to or u.pk)]
    assert sorted(covered) == sorted(u.pk for u in users)  # each learner in one range


def test_a_learner_enrolled_in_several_decks_stays_in_one_range(
    db, django_user_model, deck, other_deck
):
    users = [django_user_model.objects.create(username=f"both{i}") for i in range(3)]
    Enrollment.objects.bulk_create(
        [Enrollment(learner=u, deck=d) for u in users for d in (deck, other_deck)]
    )

    # Six rows, two per learner: bounds after the 2nd and 4th rows, none after the last.
    assert list(id_ranges(Enrollment.objects.all(), "learner_id", 2)) == [
        (0, users[0].pk),
        (users[0].pk, users[1].pk),
        (users[1].pk, None),
    ]
    # A bound falling inside a learner's rows is dropped: its range runs on to the next.
    assert list(id_ranges(Enrollment.objects.all(), "learner_id", 3)) == [(0, None)]


def test_an_exact_multiple_of_the_chunk_takes_no_statement_for_an_empty_tail(enrol, deck):
    enrol(4)
    cards = deck.cards.filter(is_active=True).count()

    with CaptureQueriesContext(connection) as queries:
        assert schedule_new_cards(at=AT, chunk_size=2) == 4 * cards

    inserts = [q for q in queries if q["sql"].lstrip().upper().startswith("INSERT")]
    assert len(inserts) == 2 * 2  # ranges of 2 and 2, nothing after; yesterday's and today's


def test_existing_states_keep_their_progress_and_only_missing_ones_are_placed(enrol, deck):
    (user,) = enrol(1)
    first, *rest = list(deck.cards.order_by("id"))
    ReviewState.objects.create(learner=user, card=first, step=3, due_on=dt.date(2026, 4, 1))
    Card.objects.create(deck=deck, prompt="Added later", position=99)

    placed = schedule_new_cards(at=AT)

    assert placed == len(rest) + 1
    kept = ReviewState.objects.get(learner=user, card=first)
    assert (kept.step, kept.due_on) == (3, dt.date(2026, 4, 1))
    assert schedule_new_cards(at=AT) == 0  # a rerun places nothing
