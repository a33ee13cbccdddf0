"""Where the lesson teaches what an exercise's diagnosis names: the study core's answer to
``exercises.reviews.ReviewSide.lesson_url``.

An exercise handed out for a card's review belongs to that card's deck: its lesson is the
one linked when it has the section. A practice exercise (or a deck whose lesson lacks
the section) links to the first deck, by slug, whose lesson has a section with that key.
"""

from __future__ import annotations

from django.urls import NoReverseMatch, reverse

from cards.models import Card, LessonSection
from cards.services.exercise_reviews import bound_card_id


def exercise_lesson_url(exercise_id: int, section: str) -> str | None:
    """``/decks/<slug>/lesson/#<section>``, or None when no lesson has the section."""
    sections = LessonSection.objects.filter(key=section)
    card_id = bound_card_id(exercise_id)
    slug = None
    if card_id is not None:
        deck_id = Card.objects.filter(pk=card_id).values_list("deck_id", flat=True).first()
        if deck_id is not None:
            slug = sections.filter(deck_id=deck_id).values_list("deck__slug", flat=True).first()
    if slug is None:
        slug = sections.order_by("deck__slug").values_list("deck__slug", flat=True).first()
    if slug is None:
        return None
    try:
        return reverse("deck-lesson", args=[slug]) + f"#{section}"
    except NoReverseMatch:  # the lesson page is not routed: no link rather than a broken one
        return None
