"""``manage.py export_deck SLUG``: write a deck as a YAML or JSON deck file."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from cards.anki import deck_apkg
from cards.models import Deck
from cards.services.decks import deck_dump, deck_export


class Command(BaseCommand):
    help = "Export a deck (format 1, see docs/deck-format.md) to standard output or a file."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="The deck's slug.")
        parser.add_argument("-o", "--output", help="Write to this file instead of standard output.")
        parser.add_argument(
            "--format",
            choices=("yaml", "json", "apkg"),
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
            fmt = {".json": "json", ".apkg": "apkg"}.get(suffix, "yaml")
        if fmt == "apkg":
            if not output:
                raise CommandError("--format apkg writes a binary file: give --output FILE.apkg.")
            Path(output).write_bytes(deck_apkg(deck=deck))
            count = deck.cards.filter(is_active=True).count()
            self.stderr.write(f"Wrote deck {slug!r} ({count} active cards) to {output}.")
            return
        text = deck_dump(deck_export(deck=deck), fmt=fmt)
        if output:
            Path(output).write_text(text, encoding="utf-8")
            count = deck.cards.count()
            self.stderr.write(f"Wrote deck {slug!r} ({count} cards) to {output}.")
        else:
            self.stdout.write(text, ending="")
