"""Exporting a deck as a format-1 document; importing it reproduces the deck."""

from __future__ import annotations

from cards.models import Card, Deck, LessonSection

from .format import FORMAT_VERSION
from .validate import derived_key


def deck_export(*, deck: Deck) -> dict:
    """The deck as a format-1 document; importing it reproduces the deck.

    The lesson, when the deck has one, comes before the cards, its sections in order.
    Cards come in deck order (position, then id). A card made without a key (in the
    admin or the API) is written with one derived from its prompt; importing the
    document back adopts that card and stores the key.
    """
    cards = list(Card.objects.filter(deck=deck).order_by("position", "id").prefetch_related("tags"))
    taken = {card.key for card in cards if card.key}
    entries = []
    for card in cards:
        key = card.key
        if not key:
            key = derived_key(card.prompt, taken)
            taken.add(key)
        entry = {
            "key": key,
            "kind": card.kind,
            "prompt": card.prompt,
            "answer": card.answer,
            "tags": sorted(tag.name for tag in card.tags.all()),
            "exercise": card.exercise,
            "active": card.is_active,
        }
        if card.lab is not None:  # lab cards only, as files write them
            entry["lab"] = card.lab
        if card.points:
            entry["points"] = list(card.points)
        if card.lesson_section is not None:
            entry["lesson_section"] = card.lesson_section
        entries.append(entry)
    document: dict = {
        "format": FORMAT_VERSION,
        "deck": {"slug": deck.slug, "title": deck.title, "description": deck.description},
    }
    lesson = _lesson(deck)
    if lesson is not None:
        document["lesson"] = lesson
    document["cards"] = entries
    return document


def _lesson(deck: Deck) -> dict | None:
    """The deck's lesson as the file writes it; None for a deck without one."""
    sections = [
        {"key": section.key, "title": section.title, "body": section.body}
        for section in LessonSection.objects.filter(deck=deck).order_by("position", "id")
    ]
    if not sections and not deck.lesson_title:
        return None
    lesson: dict = {"title": deck.lesson_title} if deck.lesson_title else {}
    lesson["sections"] = sections
    return lesson
