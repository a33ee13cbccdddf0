"""A learner's progress by topic: per tag, per exercise kind and per lab of their decks.

A topic's cards are the active cards of the decks the learner is enrolled in that carry
the tag (``type: tag``), ask for the exercise kind (``type: kind``) or are reviewed by the
lab (``type: lab``). Of those, *learned* ones are placed on the learner's ladder (they
have a scheduled review state), *mastered* ones stand on the ladder's top rung
(``STUDY_LADDER_DAYS``' last index, through ``ladder.rung``) with their last kept review
passed, and the recall is the share of passes among the kept reviews
(``ReviewLog.objects.kept()``) of the last 30 study days.

Five reads whatever the number of topics: the cards, their tags, the states, the last
results of the states on the top rung, the window's reviews per card.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, OuterRef, Q, Subquery

from exercises.kinds import KINDS
from labs.selectors import labs_list

from . import ladder
from .models import Card, ReviewLog
from .selectors import scheduled_states

RECALL_DAYS = 30
TOPIC_TYPES = ("tag", "kind", "lab")


@dataclass
class Topic:
    type: str
    topic: str
    title: str
    cards: int = 0
    learned: int = 0
    mastered: int = 0
    reviews_30d: int = 0
    passes_30d: int = 0
    # Ids of the topic's cards, for the learner's reads; not part of the answer.
    card_ids: list[int] = field(default_factory=list, repr=False)

    @property
    def recall_30d(self) -> float | None:
        if not self.reviews_30d:
            return None
        return round(self.passes_30d / self.reviews_30d, 4)

    def as_dict(self) -> dict:
        return {
            "topic": self.topic,
            "type": self.type,
            "title": self.title,
            "cards": self.cards,
            "learned": self.learned,
            "mastered": self.mastered,
            "recall_30d": self.recall_30d,
            "reviews_30d": self.reviews_30d,
        }


@dataclass(frozen=True)
class CardFacts:
    """What the topics need of one of the learner's cards."""

    id: int
    kind: str
    deck_id: int
    exercise_kind: str | None
    lab: str | None
    placed: bool
    mastered: bool
    reviews_30d: int
    passes_30d: int


def enrolled_cards(*, learner):
    """The active cards of the decks the learner is enrolled in, in deck order."""
    return Card.objects.filter(is_active=True, deck__enrollments__learner=learner).order_by(
        "deck__title", "deck_id", "position", "id"
    )


def card_facts(*, learner, today: dt.date) -> list[CardFacts]:
    """Each of the learner's cards with its state and its last 30 days, in deck order."""
    rows = list(
        enrolled_cards(learner=learner).values_list("id", "kind", "deck_id", "exercise", "lab")
    )
    ids = [row[0] for row in rows]
    states = dict(
        scheduled_states(learner=learner).filter(card_id__in=ids).values_list("card_id", "step")
    )
    top = len(settings.STUDY_LADDER_DAYS) - 1
    on_top = [
        card_id
        for card_id, step in states.items()
        if ladder.rung(step, settings.STUDY_LADDER_DAYS) == top
    ]
    mastered = set(_last_passed(learner=learner, card_ids=on_top))
    window = _window_counts(learner=learner, card_ids=ids, today=today)
    facts = []
    for card_id, kind, deck_id, exercise, lab in rows:
        reviews, passes = window.get(card_id, (0, 0))
        exercise_kind = exercise.get("kind") if isinstance(exercise, dict) else None
        facts.append(
            CardFacts(
                id=card_id,
                kind=kind,
                deck_id=deck_id,
                exercise_kind=exercise_kind if isinstance(exercise_kind, str) else None,
                lab=lab or None,
                placed=card_id in states,
                mastered=card_id in mastered,
                reviews_30d=reviews,
                passes_30d=passes,
            )
        )
    return facts


def _last_passed(*, learner, card_ids: list[int]) -> Iterable[int]:
    """Those of ``card_ids`` whose latest kept review by the learner passed."""
    if not card_ids:
        return []
    latest = (
        ReviewLog.objects.kept()
        .filter(learner=learner, card_id=OuterRef("card_id"))
        .order_by("-reviewed_at", "-id")
        .values("result")[:1]
    )
    return (
        scheduled_states(learner=learner)
        .filter(card_id__in=card_ids)
        .annotate(last_result=Subquery(latest))
        .filter(last_result=ReviewLog.Result.PASS)
        .values_list("card_id", flat=True)
    )


def _window_counts(*, learner, card_ids: list[int], today: dt.date) -> dict[int, tuple[int, int]]:
    """``{card_id: (reviews, passes)}`` of the learner's kept reviews in the last 30 study days."""
    if not card_ids:
        return {}
    start = today - dt.timedelta(days=RECALL_DAYS - 1)
    rows = (
        ReviewLog.objects.kept()
        .filter(learner=learner, card_id__in=card_ids, study_day__gte=start, study_day__lte=today)
        .values("card_id")
        .annotate(n=Count("id"), passes=Count("id", filter=Q(result=ReviewLog.Result.PASS)))
        .values_list("card_id", "n", "passes")
    )
    return {card_id: (n, passes) for card_id, n, passes in rows}


def topics_of(*, learner, today: dt.date) -> list[Topic]:
    """The learner's topics: tags by name, then exercise kinds, then labs, in list order."""
    facts = card_facts(learner=learner, today=today)
    return [*tag_topics(facts), *kind_topics(facts), *lab_topics(facts)]


def tag_topics(facts: list[CardFacts]) -> list[Topic]:
    """One topic per tag of the cards, by name."""
    by_id = {fact.id: fact for fact in facts}
    rows = (
        Card.tags.through.objects.filter(card_id__in=list(by_id))
        .values_list("tag__name", "card_id")
        .order_by("tag__name", "card_id")
    )
    tags: dict[str, Topic] = {}
    for name, card_id in rows:
        _count(tags.setdefault(name, Topic("tag", name, name)), by_id[card_id])
    return list(tags.values())


def kind_topics(facts: list[CardFacts]) -> list[Topic]:
    """One topic per exercise kind the exercise cards ask for, in the kinds' order."""
    kinds: dict[str, Topic] = {}
    for fact in facts:
        if fact.exercise_kind:
            kind = KINDS.get(fact.exercise_kind)
            title = kind.title if kind is not None else fact.exercise_kind
            _count(
                kinds.setdefault(fact.exercise_kind, Topic("kind", fact.exercise_kind, title)), fact
            )
    ordered = [kinds[name] for name in KINDS if name in kinds]
    return ordered + [topic for name, topic in kinds.items() if name not in KINDS]


def lab_topics(facts: list[CardFacts]) -> list[Topic]:
    """One topic per lab the lab cards name, in the labs' list order (unknown slugs last)."""
    order = {lab.slug: (index, lab.title) for index, lab in enumerate(labs_list())}
    labs: dict[str, Topic] = {}
    for fact in facts:
        if fact.lab:
            title = order.get(fact.lab, (0, fact.lab))[1]
            _count(labs.setdefault(fact.lab, Topic("lab", fact.lab, title)), fact)
    return sorted(labs.values(), key=lambda t: (order.get(t.topic, (len(order), ""))[0], t.topic))


def _count(topic: Topic, fact: CardFacts) -> None:
    topic.cards += 1
    topic.learned += fact.placed
    topic.mastered += fact.mastered
    topic.reviews_30d += fact.reviews_30d
    topic.passes_30d += fact.passes_30d
    topic.card_ids.append(fact.id)
