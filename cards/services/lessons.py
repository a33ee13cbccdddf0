"""Writes of a deck's lesson outside deck files: a section saved or deleted in the admin.

A card points to a section by key, so a renamed key carries its cards along and a deleted
section leaves its cards pointing nowhere (null), never at a key the lesson lacks.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from cards.models import Card, LessonSection


@transaction.atomic
def section_save(*, section: LessonSection, previous_key: str | None) -> None:
    """Save ``section``; its deck's cards that named ``previous_key`` follow a new key."""
    section.save()
    if previous_key and previous_key != section.key:
        Card.objects.filter(deck_id=section.deck_id, lesson_section=previous_key).update(
            lesson_section=section.key, updated_at=timezone.now()
        )


@transaction.atomic
def section_delete(*, section: LessonSection) -> None:
    """Delete ``section``; the deck's cards that named it point to no section."""
    Card.objects.filter(deck_id=section.deck_id, lesson_section=section.key).update(
        lesson_section=None, updated_at=timezone.now()
    )
    section.delete()
