"""``manage.py export_deck SLUG``: write a deck as a YAML or JSON deck file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from cards.anki import deck_apkg
from cards.decks import deck_dump, deck_export
from cards.models import Deck

# Output formats: name -> writer of the whole deck (text or bytes). Another format is
# one entry here and, if it has one, its file extension in SUFFIXES.
WRITERS: dict[str, Callable[[Deck], str | bytes]] = {
    "yaml": lambda deck: deck_dump(deck_export(deck=deck), fmt="yaml"),
    "json": lambda deck: deck_dump(deck_export(deck=deck), fmt="json"),
    "apkg": lambda deck: deck_apkg(deck=deck),
}
SUFFIXES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".apkg": "apkg"}
DEFAULT_FORMAT = "yaml"


class Command(BaseCommand):
    help = "Export a deck (format 1, see docs/deck-format.md) to standard output or a file."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="The deck's slug.")
        parser.add_argument("-o", "--output", help="Write to this file instead of standard output.")
        parser.add_argument(
            "--format",
            choices=tuple(WRITERS),
            help=(
                "Output format (apkg: an Anki package, needs --output); by default taken from "
                "the output file's extension, else yaml."
            ),
        )

    def handle(self, *args, **options):
        slug = options["slug"]
        deck = Deck.objects.filter(slug=slug).first()
        if deck is None:
            known = ", ".join(Deck.objects.order_by("slug").values_list("slug", flat=True))
            raise CommandError(f"No deck with slug {slug!r}. Decks: {known or 'none yet'}.")

        output = options["output"]
        fmt = options["format"]
        if fmt is None:
            suffix = Path(output).suffix.lower() if output else ""
            fmt = SUFFIXES.get(suffix, DEFAULT_FORMAT)
        content = WRITERS[fmt](deck)
        if output:
            if isinstance(content, bytes):
                Path(output).write_bytes(content)
            else:
                Path(output).write_text(content, encoding="utf-8")
            count = deck.cards.count()
            self.stderr.write(f"Wrote deck {slug!r} ({count} cards) to {output}.")
        elif isinstance(content, bytes):
            raise CommandError(f"The {fmt} format is binary: give a file with -o (--output).")
        else:
            self.stdout.write(content, ending="")
