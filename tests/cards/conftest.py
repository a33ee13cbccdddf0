import datetime as dt

import pytest

from cards.models import Card, Deck, ReviewLog


@pytest.fixture
def deck(db):
    deck = Deck.objects.create(slug="attention", title="Attention", description="Heads and masks")
    for i in range(3):
        Card.objects.create(
            deck=deck, kind="recall", prompt=f"Prompt {i}", answer=f"Answer {i}", position=i
        )
    Card.objects.create(deck=deck, kind="interview", prompt="Walk me through it", position=3)
    return deck


@pytest.fixture
def other_deck(db):
    deck = Deck.objects.create(slug="positions", title="Positions")
    Card.objects.create(deck=deck, kind="recall", prompt="Why add positions?")
    return deck


START = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)  # a Monday, noon UTC


def log_entry(learner, card, result="fail", undo_of=None, **fields) -> ReviewLog:
    """An unsaved review of ``card`` at START, for bulk_create."""
    day = START.date()
    return ReviewLog(
        learner=learner,
        card=card,
        reviewed_at=START,
        study_day=day,
        result=result,
        step_before=0,
        step_after=0,
        interval_days=1,
        due_before=day,
        due_after=day,
        undo_of=undo_of,
        **fields,
    )


def reviewed_on_study_day(user, at: dt.datetime) -> None:
    """Mark ``user`` as having reviewed on their study day at ``at``: the pace's placement
    job places new cards only for learners who reviewed that day."""
    from cards import ladder
    from cards.models import LearnerProfile, ReviewDay

    profile = LearnerProfile.objects.get(user=user)
    day = ladder.study_day(at, ladder.zone_or_utc(profile.timezone), profile.day_starts_at)
    ReviewDay.objects.get_or_create(
        learner=user, study_day=day, defaults={"reviews": 1, "passes": 1}
    )
