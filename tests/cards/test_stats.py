"""Stats as the contract defines them: streak, retention, steps and the forecast."""

import datetime as dt

import pytest
import time_machine

from cards.models import Card, ReviewState
from cards.services import enroll, review_record
from cards.stats import learner_stats

pytestmark = pytest.mark.django_db

D0 = dt.date(2026, 3, 2)


def noon(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC)


def day(n: int) -> dt.date:
    return D0 + dt.timedelta(days=n)


def test_stats_endpoint_shape(api, deck):
    with time_machine.travel(noon(D0), tick=False):
        api.post("/api/v1/decks/attention/enroll/")
        body = api.get("/api/v1/stats/").json()
    assert body["today"] == "2026-03-02"
    assert body["due_today"] == 0 and body["reviewed_today"] == 0
    assert body["streak_days"] == 0 and body["retention_30d"] is None
    assert body["by_step"] == {"0": 4, "1": 0, "2": 0, "3": 0, "4": 0}
    assert len(body["forecast"]) == 30
    assert body["forecast"][0] == {"date": "2026-03-02", "count": 0, "new": 0}
    assert body["forecast"][1] == {"date": "2026-03-03", "count": 4, "new": 0}


def test_overdue_cards_are_forecast_on_today(learner, deck):
    enroll(learner=learner, deck=deck, at=noon(D0))
    cards = list(deck.cards.order_by("id"))
    ReviewState.objects.filter(learner=learner, card=cards[0]).update(due_on=day(-5))
    ReviewState.objects.filter(learner=learner, card=cards[1]).update(due_on=day(40))
    stats = learner_stats(learner=learner, today=D0)
    assert stats["forecast"][0]["count"] == 1
    assert stats["due_today"] == 1
    assert sum(d["count"] for d in stats["forecast"]) == 3  # the card due in 40 days is beyond


def test_retention_and_reviewed_today(learner, deck):
    enroll(learner=learner, deck=deck, at=noon(D0))
    cards = list(deck.cards.filter(kind="recall").order_by("id"))
    for card, result in zip(cards, ["pass", "pass", "fail"], strict=True):
        review_record(learner=learner, card=card, result=result, at=noon(day(1)))
    stats = learner_stats(learner=learner, today=day(1))
    assert stats["reviewed_today"] == 3
    assert stats["retention_30d"] == pytest.approx(2 / 3, abs=1e-4)
    assert stats["by_step"]["1"] == 2 and stats["by_step"]["0"] == 2
    # 31 days later the window no longer holds them.
    assert learner_stats(learner=learner, today=day(31))["retention_30d"] is None


def test_streak_counts_days_skips_free_days_and_breaks_on_missed_due_days(learner, db):
    from cards.models import Deck

    deck = Deck.objects.create(slug="one", title="One")
    card = Card.objects.create(deck=deck, kind="recall", prompt="Q")
    enroll(learner=learner, deck=deck, at=noon(D0))
    # Due day 1; pass -> due day 4; pass -> due day 11.
    review_record(learner=learner, card=card, result="pass", at=noon(day(1)))
    # Days 2 and 3 had nothing due: they neither count nor break.
    assert learner_stats(learner=learner, today=day(3))["streak_days"] == 1
    review_record(learner=learner, card=card, result="pass", at=noon(day(4)))
    assert learner_stats(learner=learner, today=day(4))["streak_days"] == 2
    # Today still open (nothing reviewed yet on day 5): the streak stands.
    assert learner_stats(learner=learner, today=day(5))["streak_days"] == 2
    # The card was due on day 11 and not reviewed until day 13: days 11 and 12 break it.
    review_record(learner=learner, card=card, result="pass", at=noon(day(13)))
    assert learner_stats(learner=learner, today=day(13))["streak_days"] == 1
    # With the card overdue and nothing reviewed yesterday, the streak is gone.
    assert learner_stats(learner=learner, today=day(50))["streak_days"] == 0


def test_stats_follow_the_learners_time_zone(api, learner, deck):
    learner.profile.timezone = "Pacific/Kiritimati"
    learner.profile.save()
    with time_machine.travel(dt.datetime(2026, 3, 2, 15, 0, tzinfo=dt.UTC), tick=False):
        assert api.get("/api/v1/stats/").json()["today"] == "2026-03-03"
        assert api.get("/api/v1/reviews/due/").json()["today"] == "2026-03-03"
