"""Deck files (format 1, see docs/deck-format.md): read, check, import and export.

A deck file is YAML or JSON with the same structure::

    {format: 1,
     deck: {slug, title, description},
     lesson: {title, sections: [{key, title, body}]},          # optional
     cards: [{key, kind, prompt, answer, tags: [...], exercise: {kind, params} | null,
              lesson_section: key | null, active: true}]}

``format`` reads and writes the text, ``validate`` checks a document against the
card rules shared with the API and the admin (``cards.rules``), ``importing``
writes it to the database and ``exporting`` reads a deck back out.
"""

from .exporting import deck_export
from .format import FORMAT_VERSION, DeckFileError, deck_dump, deck_load
from .importing import ImportReport, deck_import
from .validate import CardSpec, DeckSpec, deck_validate

__all__ = [
    "FORMAT_VERSION",
    "CardSpec",
    "DeckFileError",
    "DeckSpec",
    "ImportReport",
    "deck_dump",
    "deck_export",
    "deck_import",
    "deck_load",
    "deck_validate",
]
