import datetime as dt

import pytest

from cards.models import Card, Deck


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
