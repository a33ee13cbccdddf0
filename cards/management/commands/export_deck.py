"""``manage.py export_deck SLUG``: write a deck as a YAML or JSON deck file."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from cards.decks import deck_dump, deck_export
from cards.models import Deck


class Command(BaseCommand):
    help = "Export a deck (format 1, see docs/deck-format.md) to standard output or a file."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="The deck's slug.")
        parser.add_argument("-o", "--output", help="Write to this file instead of standard output.")
        parser.add_argument(
            "--format",
            choices=("yaml", "json"),
            help="Output format; by default taken from the output file's extension, else yaml.",
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
            fmt = "json" if output and Path(output).suffix.lower() == ".json" else "yaml"
        text = deck_dump(deck_export(deck=deck), fmt=fmt)
        if output:
            Path(output).write_text(text, encoding="utf-8")
            count = deck.cards.count()
            self.stderr.write(f"Wrote deck {slug!r} ({count} cards) to {output}.")
        else:
            self.stdout.write(text, ending="")
