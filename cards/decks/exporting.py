"""Exporting a deck as a format-1 document; importing it reproduces the deck."""

from __future__ import annotations

from cards.models import Card, Deck

from .format import FORMAT_VERSION
from .validate import derived_key


def deck_export(*, deck: Deck) -> dict:
    """The deck as a format-1 document; importing it reproduces the deck.

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
        entries.append(entry)
    return {
        "format": FORMAT_VERSION,
        "deck": {"slug": deck.slug, "title": deck.title, "description": deck.description},
        "cards": entries,
    }
