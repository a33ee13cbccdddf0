"""Plain reads of the study core. Each returns a queryset or plain data without N+1 queries.

What is due (the queue, its count and pages) is :mod:`cards.due`; leeches are
:mod:`cards.lapses`; the learner's statistics :mod:`cards.stats`.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import cast

from django.db.models import (
    Case,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from . import ladder
from .db.compiled import CompiledQuery
from .models import (
    Card,
    Deck,
    Enrollment,
    LearnerProfile,
    Report,
    ReviewDay,
    ReviewLog,
    ReviewLogQuerySet,
    ReviewState,
    Tag,
)

logger = logging.getLogger(__name__)


def learner_profile(user) -> LearnerProfile:
    """The learner's study profile; an unsaved one with the defaults for a user without one.

    Every account gets its profile when it is made (``cards.signals``); a user made
    around that (a bulk load, SQL by hand) reads as a new profile would. A write that
    needs the row calls ``services.profiles.profile_ensure``.
    """
    try:
        return user.profile
    except LearnerProfile.DoesNotExist:
        return LearnerProfile(user=user)  # cached on the user as its profile


def learner_today(*, learner, at: dt.datetime) -> dt.date:
    profile = learner_profile(learner)
    zone = ladder.zone_or_utc(profile.timezone)
    if zone.key != profile.timezone:
        logger.warning(
            "Learner %s has an unknown time zone %r; using UTC", learner.pk, profile.timezone
        )
    return ladder.study_day(at, zone, profile.day_starts_at)


def scheduled_states(*, learner) -> QuerySet[ReviewState]:
    """The learner's states for active cards of decks they are enrolled in.

    ``scheduled`` says so, kept by the services that (de)activate cards and
    (un)enrol learners: no join to cards or enrolments.
    """
    return ReviewState.objects.filter(learner=learner, scheduled=True)


def suspended_states(*, learner) -> QuerySet[ReviewState]:
    return (
        scheduled_states(learner=learner)
        .filter(suspended=True)
        .select_related("card", "card__deck")
        .order_by("card__deck__title", "card__position", "card_id")
    )


def reports_of(*, learner) -> QuerySet[Report]:
    return Report.objects.filter(learner=learner).order_by("-created_at", "-id")


def scheduled_state_query(*, learner_id: int, card_id: int) -> QuerySet[ReviewState]:
    """The learner's scheduled state of one card, with its card (at most one row)."""
    return ReviewState.objects.filter(
        learner_id=learner_id, card_id=card_id, scheduled=True
    ).select_related("card")


# A review reads it first: compiled once per connection (``cards.db.compiled``), as the
# due queue and the token are; the stand-ins are ids no row has.
_SCHEDULED_STATE = CompiledQuery(
    lambda: scheduled_state_query(learner_id=-7_919_313, card_id=-7_919_317),
    slots={"learner_id": -7_919_313, "card_id": -7_919_317},
    plain=scheduled_state_query,
)


def scheduled_state(*, learner, card_id: int) -> ReviewState | None:
    found = _SCHEDULED_STATE.instances(learner_id=learner.pk, card_id=card_id)
    return cast(ReviewState, found[0]) if found else None


def decks_for(*, learner) -> QuerySet[Deck]:
    """Every deck, with its active cards counted, whether ``learner`` is enrolled, and
    how many of its cards wait for the pace (``waiting``, 0 when not enrolled)."""
    unplaced = (
        Card.objects.filter(deck=OuterRef("pk"), is_active=True)
        .exclude(Exists(ReviewState.objects.filter(learner=learner, card=OuterRef("pk"))))
        .order_by()
        .values("deck")
        .annotate(n=Count("id"))
        .values("n")[:1]
    )
    enrolled = Exists(Enrollment.objects.filter(deck=OuterRef("pk"), learner=learner))
    return Deck.objects.annotate(
        card_count=Count("cards", filter=Q(cards__is_active=True)),
        enrolled=enrolled,
        waiting=Case(
            When(enrolled, then=Coalesce(Subquery(unplaced), 0)),
            default=Value(0),
            output_field=IntegerField(),
        ),
    ).order_by("title")


def cards_visible_to(*, user) -> QuerySet[Card]:
    cards = Card.objects.select_related("deck").prefetch_related(
        Prefetch("tags", queryset=Tag.objects.only("name"))
    )
    if not user.is_staff:
        cards = cards.filter(is_active=True)
    return cards.order_by("deck__slug", "position", "id")


def review_history(*, learner, card_id: int | None = None) -> ReviewLogQuerySet:
    logs = ReviewLog.objects.filter(learner=learner)
    if card_id is not None:
        logs = logs.filter(card_id=card_id)
    return logs.order_by("-reviewed_at", "-id")


def written_answers(*, learner, card_id: int) -> QuerySet[ReviewLog]:
    """The learner's written answers to a card, newest first, without undone reviews."""
    return review_history(learner=learner, card_id=card_id).kept().exclude(answer_text="")


def net_review_log(*, learner) -> QuerySet[ReviewLog]:
    """The learner's reviews oldest first, without undone ones or their undo entries."""
    return ReviewLog.objects.kept().filter(learner=learner).order_by("reviewed_at", "id")


def review_calendar(*, learner, start: dt.date, end: dt.date) -> dict[dt.date, int]:
    rows = ReviewDay.objects.filter(
        learner=learner, study_day__gte=start, study_day__lte=end, reviews__gt=0
    ).values_list("study_day", "reviews")
    return dict(rows)
