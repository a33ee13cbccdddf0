"""The fast renderers give their serializers' output exactly (``cards/renderers.py``)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from django.utils import timezone

from cards.models import ReviewLog
from cards.renderers import review_item
from cards.serializers import ReviewSerializer

AT = [
    dt.datetime(2026, 3, 29, 0, 30, tzinfo=dt.UTC),  # a DST change in Europe
    dt.datetime(2026, 12, 1, 23, 59, 59, 999_999, tzinfo=dt.UTC),
    dt.datetime(2027, 1, 1, 4, 0, 0, 1, tzinfo=dt.UTC),
]


def _log(learner, card, *, at, result, undo_of=None, answer_text=""):
    return ReviewLog.objects.create(
        learner=learner,
        card=card,
        reviewed_at=at,
        study_day=at.date(),
        result=result,
        step_before=2,
        step_after=0 if result == "fail" else 3,
        interval_days=1 if result == "fail" else 14,
        due_before=at.date(),
        due_after=at.date() + dt.timedelta(days=14),
        undo_of=undo_of,
        answer_text=answer_text,
    )


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "Pacific/Chatham"])
@pytest.mark.parametrize("at", AT)
def test_review_item_equals_the_review_serializer(learner, deck, zone, at):
    card = deck.cards.order_by("position").first()
    first = _log(learner, card, at=at, result="pass", answer_text="Scores grow with d_k: ✓")
    undo = _log(learner, card, at=at, result="fail", undo_of=first)
    with timezone.override(zoneinfo.ZoneInfo(zone)):
        for log in (first, undo, ReviewLog.objects.get(pk=undo.pk)):
            assert review_item(log) == ReviewSerializer(log).data


def test_a_review_submission_answers_with_the_serializers_fields(api, learner, deck):
    from cards import services

    services.enroll(learner=learner, deck=deck, at=timezone.now())
    state = learner.review_states.filter(card__kind="recall").first()
    # Overdue by a day: due whatever the hour and the learner's day start.
    learner.review_states.update(due_on=timezone.localdate() - dt.timedelta(days=2))
    response = api.post(
        "/api/v1/reviews/", {"card": state.card_id, "result": "pass"}, format="json"
    )
    assert response.status_code == 201, response.json()
    log = ReviewLog.objects.get(pk=response.json()["id"])
    assert response.json() == ReviewSerializer(log).data


# --- the state a review reads first, compiled once ----------------------------------


def test_scheduled_state_is_the_querysets_row_with_its_card_in_one_query(
    learner, other_learner, deck, django_assert_num_queries
):
    from cards import selectors, services

    services.enroll(learner=learner, deck=deck, at=timezone.now())
    card = deck.cards.order_by("position").first()
    expected = selectors.scheduled_state_query(learner_id=learner.pk, card_id=card.pk).get()
    with django_assert_num_queries(1):
        found = selectors.scheduled_state(learner=learner, card_id=card.pk)
        assert found.card.prompt == card.prompt  # loaded with the state
    assert found == expected
    assert {f.attname: getattr(found, f.attname) for f in found._meta.concrete_fields} == {
        f.attname: getattr(expected, f.attname) for f in expected._meta.concrete_fields
    }
    # Another learner's, an unscheduled one and an unknown card: none.
    assert selectors.scheduled_state(learner=other_learner, card_id=card.pk) is None
    assert selectors.scheduled_state(learner=learner, card_id=2**63 - 1) is None
    learner.review_states.filter(card=card).update(scheduled=False)
    assert selectors.scheduled_state(learner=learner, card_id=card.pk) is None
