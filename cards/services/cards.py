"""Staff writes to cards. New or re-activated cards are placed on ladders by the beat job."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ..models import Card, Tag
from . import scheduling
from .scheduling import sync_scheduled


def _set_tags(card: Card, names: list[str]) -> None:
    existing = {tag.name: tag for tag in Tag.objects.filter(name__in=names)}
    missing = [Tag(name=name) for name in names if name not in existing]
    Tag.objects.bulk_create(missing, ignore_conflicts=True)
    card.tags.set(Tag.objects.filter(name__in=names))


def _schedule_soon(deck_id: int) -> None:
    # Learners enrolled in the deck get new cards without waiting for the next beat.
    scheduling.enqueue_schedule_new_cards(deck_id)


@transaction.atomic
def card_create(*, tags: list[str] | None = None, **fields: Any) -> Card:
    card = Card(**fields)
    card.full_clean(exclude=["tags"])
    card.save()
    _set_tags(card, tags or [])
    if card.is_active:
        _schedule_soon(card.deck_id)
    return card


@transaction.atomic
def card_update(*, card: Card, tags: list[str] | None = None, **fields: Any) -> Card:
    """Edit a card. Progress is never reset: review states are not touched."""
    was_active, was_deck = card.is_active, card.deck_id
    for name, value in fields.items():
        setattr(card, name, value)
    card.full_clean(exclude=["tags"])
    card.save()
    if tags is not None:
        _set_tags(card, tags)
    if (card.is_active, card.deck_id) != (was_active, was_deck):
        sync_scheduled(card_ids=[card.pk])
    if card.is_active and not was_active:
        _schedule_soon(card.deck_id)
    return card


@transaction.atomic
def cards_set_active(*, card_ids: list[int], active: bool) -> int:
    """Bulk activate or deactivate; deactivated cards leave queues but keep their history."""
    changed = Card.objects.filter(pk__in=card_ids).exclude(is_active=active)
    deck_ids = set(changed.values_list("deck_id", flat=True)) if active else set()
    count = changed.update(is_active=active)
    sync_scheduled(card_ids=card_ids)
    for deck_id in deck_ids:
        _schedule_soon(deck_id)
    return count
