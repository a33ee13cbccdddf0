"""Progress by topic (GET /api/v1/stats/topics/) on a history built by hand."""

from __future__ import annotations

import datetime as dt

import pytest
import time_machine

from cards import topics
from cards.models import Card, Deck, Enrollment, ReviewLog, ReviewState, Tag

from .conftest import START, log_entry

pytestmark = pytest.mark.django_db

TODAY = START.date()


def _card(deck, key, tags=(), position=0, **fields) -> Card:
    card = Card.objects.create(deck=deck, key=key, prompt=key, position=position, **fields)
    card.tags.set([Tag.objects.get_or_create(name=name)[0] for name in tags])
    return card


def _state(learner, card, step, due_on=TODAY) -> ReviewState:
    return ReviewState.objects.create(learner=learner, card=card, step=step, due_on=due_on)


def _log(learner, card, result, days_ago=0, **fields) -> ReviewLog:
    entry = log_entry(learner, card, result=result, **fields)
    entry.reviewed_at = START - dt.timedelta(days=days_ago)
    entry.study_day = TODAY - dt.timedelta(days=days_ago)
    entry.save()
    return entry


@pytest.fixture
def history(learner, other_learner):
    """Six cards of an enrolled deck, an inactive one, and a deck the learner never joined.

    - ``c1`` softmax: top rung, both reviews passed (mastered);
    - ``c2`` softmax, masks: top rung, but its last kept review failed (a later pass was
      undone): learned, not mastered;
    - ``c3`` masks: step 1, one fail 40 days ago (outside the window);
    - ``c4`` masks: waiting, no state;
    - ``c5`` an ``attention`` exercise tagged softmax, step 2, one pass;
    - ``c6`` the ``softmax`` lab, step 0, one fail.
    """
    deck = Deck.objects.create(slug="heads", title="Heads")
    Enrollment.objects.create(learner=learner, deck=deck)
    c1 = _card(deck, "c1", ["softmax"], 1)
    c2 = _card(deck, "c2", ["softmax", "masks"], 2)
    c3 = _card(deck, "c3", ["masks"], 3)
    c4 = _card(deck, "c4", ["masks"], 4)
    c5 = _card(
        deck,
        "c5",
        ["softmax"],
        5,
        kind="exercise",
        exercise={"kind": "attention", "params": {"n": 2}},
    )
    c6 = _card(deck, "c6", [], 6, kind="lab", lab="softmax")
    _card(deck, "gone", ["softmax"], 7, is_active=False)
    elsewhere = Deck.objects.create(slug="other", title="Other")
    stranger = _card(elsewhere, "x", ["softmax"], 1)

    _state(learner, c1, 4)
    _log(learner, c1, "pass", days_ago=20)
    _log(learner, c1, "pass", days_ago=2)
    _state(learner, c2, 4)
    _log(learner, c2, "fail", days_ago=3)
    undone = _log(learner, c2, "pass", days_ago=1)
    _log(learner, c2, "pass", days_ago=1, undo_of=undone)
    _state(learner, c3, 1)
    _log(learner, c3, "fail", days_ago=40)
    _state(learner, c5, 2)
    _log(learner, c5, "pass", days_ago=5)
    _state(learner, c6, 0)
    _log(learner, c6, "fail", days_ago=0)

    # Another learner, on the same cards and on their own deck: never counted.
    Enrollment.objects.create(learner=other_learner, deck=deck)
    Enrollment.objects.create(learner=other_learner, deck=elsewhere)
    for card in (c3, c4, stranger):
        _state(other_learner, card, 4)
        _log(other_learner, card, "pass", days_ago=1)
    _log(other_learner, c1, "fail", days_ago=1)
    return deck


def _by_topic(body):
    return {(row["type"], row["topic"]): row for row in body}


def test_topics_count_cards_learned_mastered_and_recall(api, history):
    with time_machine.travel(START, tick=False):
        response = api.get("/api/v1/stats/topics/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert [(row["type"], row["topic"]) for row in body] == [
        ("tag", "masks"),
        ("tag", "softmax"),
        ("kind", "attention"),
        ("lab", "softmax"),
    ]
    rows = _by_topic(body)
    assert rows[("tag", "softmax")] == {
        "topic": "softmax",
        "type": "tag",
        "title": "softmax",
        "cards": 3,  # c1, c2, c5: not the inactive card, not the other deck's
        "learned": 3,
        "mastered": 1,  # c1; c2's last kept review failed
        "recall_30d": round(3 / 4, 4),  # c1 pass, pass; c2 fail; c5 pass (the undone pass left out)
        "reviews_30d": 4,
    }
    assert rows[("tag", "masks")] == {
        "topic": "masks",
        "type": "tag",
        "title": "masks",
        "cards": 3,
        "learned": 2,
        "mastered": 0,
        "recall_30d": 0.0,  # c2's fail; c3's fail is 40 days old
        "reviews_30d": 1,
    }
    attention = rows[("kind", "attention")]
    assert (attention["cards"], attention["learned"], attention["mastered"]) == (1, 1, 0)
    assert (attention["recall_30d"], attention["reviews_30d"]) == (1.0, 1)
    assert attention["title"] != "attention"  # the kind's own title
    lab = rows[("lab", "softmax")]
    assert (lab["cards"], lab["learned"], lab["recall_30d"], lab["reviews_30d"]) == (1, 1, 0.0, 1)


def test_a_topic_without_reviews_has_no_recall(api, learner, history):
    with time_machine.travel(START + dt.timedelta(days=60), tick=False):
        rows = _by_topic(api.get("/api/v1/stats/topics/").json())
    assert rows[("tag", "softmax")]["recall_30d"] is None
    assert rows[("tag", "softmax")]["reviews_30d"] == 0
    assert rows[("tag", "softmax")]["mastered"] == 1


def test_the_other_learner_sees_only_their_own(other_api, history):
    with time_machine.travel(START, tick=False):
        rows = _by_topic(other_api.get("/api/v1/stats/topics/").json())
    # Their deck "other" adds its softmax card; their states and reviews alone count.
    softmax = rows[("tag", "softmax")]
    assert (softmax["cards"], softmax["learned"], softmax["mastered"]) == (4, 1, 1)
    assert (softmax["recall_30d"], softmax["reviews_30d"]) == (0.5, 2)
    masks = rows[("tag", "masks")]
    assert (masks["learned"], masks["mastered"], masks["reviews_30d"]) == (2, 2, 2)


def test_no_enrolment_no_topics(api, learner, history):
    Enrollment.objects.filter(learner=learner).delete()
    ReviewState.objects.filter(learner=learner).update(scheduled=False)
    assert api.get("/api/v1/stats/topics/").json() == []


def test_mastered_is_the_top_rung_of_the_ladder_setting(api, learner, history, settings):
    settings.STUDY_LADDER_DAYS = (1, 3, 7, 14, 30, 60)
    with time_machine.travel(START, tick=False):
        rows = _by_topic(api.get("/api/v1/stats/topics/").json())
    assert rows[("tag", "softmax")]["mastered"] == 0
    ReviewState.objects.filter(learner=learner, card__key="c1").update(step=5)
    with time_machine.travel(START, tick=False):
        rows = _by_topic(api.get("/api/v1/stats/topics/").json())
    assert rows[("tag", "softmax")]["mastered"] == 1


def test_topics_need_credentials(anon_api):
    response = anon_api.get("/api/v1/stats/topics/")
    assert response.status_code == 401
    assert "detail" in response.json()


def test_topics_read_in_a_fixed_number_of_queries(learner, history, django_assert_max_num_queries):
    deck = Deck.objects.get(slug="heads")
    for i in range(30):
        card = _card(deck, f"more-{i}", ["softmax", f"tag-{i}"], 10 + i)
        _state(learner, card, 4)
        _log(learner, card, "pass", days_ago=1)
    with django_assert_max_num_queries(6):
        rows = topics.topics_of(learner=learner, today=TODAY)
    assert len(rows) == 2 + 30 + 2


def test_topics_are_in_the_schema(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/stats/topics/"]["get"]
    assert "200" in operation["responses"] and "401" in operation["responses"]
