"""The pace: how many new cards reach a learner's ladder on one study day.

A learner's *waiting* cards are the active cards of their enrolled decks that have no
review state yet, in one line: decks in the order the learner enrolled in them, cards
in deck order (``position``, then id). Cards join that line by enrolment, by being
added to an enrolled deck, or by being re-activated before they were ever placed.

Cards leave the line at the front, placed at step 0 with ``placed_on`` set to the study
day they were placed on:

- **enrolling** places up to ``new_cards_per_day`` of the deck's cards, due tomorrow;
- **the placement beat job** (:func:`cards.services.scheduling.schedule_new_cards`), on
  each study day on which the learner reviewed, places the rest of the day's allowance
  (``new_cards_per_day`` less what that day already placed), due the next day; a day
  without reviews places none, so an absence adds no wall;
- **"learn more today"** places a further batch at once, due today.

Enrolling and "learn more" are the learner's explicit asks; the beat job never takes a
day past its allowance. Every placement here runs under the learner's write lock
(:func:`cards.services.locks.learner_lock`) and inserts with ``ON CONFLICT DO
NOTHING``, so concurrent enrolments, placements and asks never place a card twice; the
beat job's one statement per range of learners takes the same line in the same order,
so a race with it places each card once too.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from .. import ladder
from ..models import Card, Deck, Enrollment, LearnerProfile, ReviewState
from ..selectors import learner_profile
from .locks import learner_lock

# "Learn more today" without a count, for a learner whose daily allowance is 0.
DEFAULT_BATCH = LearnerProfile._meta.get_field("new_cards_per_day").default
# The order of the line: decks as enrolled, then deck order.
LINE_ORDER = ("_enrolled_at", "_enrollment", "position", "id")


def waiting_cards(*, learner: Any, deck: Deck | None = None) -> QuerySet[Card]:
    """The learner's waiting cards (of ``deck``, or of every enrolled deck), in line order."""
    enrollments = Enrollment.objects.filter(learner=learner, deck=OuterRef("deck_id"))
    cards = (
        Card.objects.filter(is_active=True)
        .filter(Exists(enrollments))
        .exclude(Exists(ReviewState.objects.filter(learner=learner, card=OuterRef("pk"))))
    )
    if deck is not None:
        cards = cards.filter(deck=deck)
    return cards.alias(
        _enrolled_at=enrollments.values("created_at")[:1],
        _enrollment=enrollments.values("id")[:1],
    ).order_by(*LINE_ORDER)


def waiting_count(*, learner: Any, deck: Deck | None = None) -> int:
    return waiting_cards(learner=learner, deck=deck).order_by().count()


def placed_on_day(*, learner: Any, day: dt.date) -> int:
    """Cards the pace placed for the learner on study day ``day``."""
    return ReviewState.objects.filter(learner=learner, placed_on=day).count()


def new_per_day(learner: Any) -> int:
    return int(learner_profile(learner).new_cards_per_day)


@dataclass(frozen=True)
class Placed:
    deck: Deck
    scheduled: int
    waiting: int
    first_due_on: dt.date | None


def place_next(
    *, learner: Any, deck: Deck | None, count: int, today: dt.date, due_on: dt.date
) -> int:
    """Place the next ``count`` waiting cards (of ``deck``, or of the whole line) at step 0.

    The caller holds the learner's lock inside a transaction. Returns the cards placed.
    """
    if count <= 0:
        return 0
    ids = list(waiting_cards(learner=learner, deck=deck).values_list("id", flat=True)[:count])
    created = ReviewState.objects.bulk_create(
        [
            ReviewState(learner=learner, card_id=card_id, step=0, due_on=due_on, placed_on=today)
            for card_id in ids
        ],
        batch_size=1000,
        ignore_conflicts=True,
    )
    return len(created)


def _result(*, learner: Any, deck: Deck, scheduled: int) -> Placed:
    first_due_on = (
        ReviewState.objects.filter(learner=learner, card__deck=deck, card__is_active=True)
        .order_by("due_on")
        .values_list("due_on", flat=True)
        .first()
    )
    return Placed(
        deck=deck,
        scheduled=scheduled,
        waiting=waiting_count(learner=learner, deck=deck),
        first_due_on=first_due_on,
    )


def enrolment_place(*, learner: Any, deck: Deck, today: dt.date, new: bool) -> Placed:
    """Enrolment's batch: up to ``new_cards_per_day`` of the deck's waiting cards, due tomorrow.

    Only an enrolment that begins (``new``: the learner was not enrolled) places a batch;
    a repeat places nothing, and the deck's cards already placed today (a leave and a
    return on one day) count against it.
    """
    learner_lock(learner_id=learner.pk)
    first = ladder.first_schedule(today, settings.STUDY_LADDER_DAYS)
    count = 0
    if new:
        already = ReviewState.objects.filter(
            learner=learner, card__deck=deck, placed_on=today
        ).count()
        count = max(new_per_day(learner) - already, 0)
    scheduled = place_next(
        learner=learner, deck=deck, count=count, today=today, due_on=first.due_on
    )
    return _result(learner=learner, deck=deck, scheduled=scheduled)


@transaction.atomic
def learn_more(*, learner: Any, deck: Deck, today: dt.date, count: int | None = None) -> Placed:
    """ "Learn more today": the next ``count`` waiting cards of ``deck``, due today.

    ``count`` defaults to the learner's ``new_cards_per_day`` (or 20 when that is 0).
    The learner must be enrolled in ``deck`` (the caller checks).
    """
    learner_lock(learner_id=learner.pk)
    if count is None:
        count = new_per_day(learner) or DEFAULT_BATCH
    scheduled = place_next(learner=learner, deck=deck, count=count, today=today, due_on=today)
    return _result(learner=learner, deck=deck, scheduled=scheduled)


def forecast_new(
    *, waiting: int, per_day: int, placed_today: int, days: list[dt.date], today: dt.date
) -> dict[dt.date, int]:
    """The new cards each forecast day would bring if the learner studied every day.

    Cards placed on study day ``d`` fall due on ``d + 1``: tomorrow gets what is left
    of today's allowance, each later day a whole allowance, until the line is empty.
    Cards already placed are in the states' own forecast, not here.
    """
    out = dict.fromkeys(days, 0)
    left = waiting
    for day in days:
        if day <= today or left <= 0:
            continue
        allowance = per_day - placed_today if day == today + dt.timedelta(days=1) else per_day
        n = min(max(allowance, 0), left)
        out[day] = n
        left -= n
    return out
