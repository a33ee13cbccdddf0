"""Deck files live in ``cards.decks``; this module keeps the older import path working."""

from cards.decks import (  # noqa: F401
    CardSpec,
    DeckFileError,
    DeckSpec,
    ImportReport,
    deck_dump,
    deck_export,
    deck_import,
    deck_load,
    deck_validate,
)
